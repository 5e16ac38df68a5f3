# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# (chapter-mask-attention)=
# # Mask attention
#
# The Mask-A3C agents of {cite:t}`itaya2021visual` explain themselves. Their policy and
# value branches each multiply the shared 10 × 10 feature map with a learned sigmoid mask
# M, so every decision comes with two maps: where the policy looks and where the value
# estimate looks. The masks are trained only through the actor-critic loss, with no term
# that asks them to be sparse or readable.
#
# This chapter asks three questions about these masks:
#
# 1. How do the policy and value masks behave over play, and how much do they agree?
# 2. Judged by the same sanity check and insertion/deletion tests as the perturbation
#    methods, on the same states, are the masks better explanations than those methods?
# 3. Do the masks also help the agent play better, as the paper claims, at the training
#    budget we can afford?
#
# All the work is done by `saliency_book.ch5_mask_attention`; the cells below only call it.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/05_mask_attention.ipynb out.ipynb -p game MsPacman`. `None` means
# "the value of the execution profile" ({doc}`../reproduce` describes the profiles).

# %% tags=["parameters"]
game = "Breakout"  # Atari game with an official Mask-A3C checkpoint
steps = None  # agent steps of the played game segment; None: the profile's
filmstrip = 6  # frames shown in each filmstrip
top = 0.1  # fraction of mask cells compared between the policy and the value mask
substrate = "black"  # insertion/deletion substrate of the ranking table
profile = "quick"  # "tiny", "quick" or "full"
seed = 0  # seed of the played game
device = "cpu"  # torch device
executor = "local"  # executor of the study's sweep: "local", "processes" or "ray"
results_dir = "data/results"  # result cache, relative to the repository
agents_dir = "data/agents"  # our shipped agents (A3C and Mask-A3C are looked up here)
runs_dir = "runs"  # training runs in progress (their learning curves are shown too)
seeds_profile = "full"  # profile of the seed sweep whose stored units the seed section reads (it computes none)
study_profile = "full"  # profile of the study whose packed units the official agents' section reads (it computes none)

# %% [markdown]
# The parameters become the chapter's frozen configuration. The profile decides how long
# the played segment is and which of the study's result tables the chapter reads. Numbers
# quoted in the text are computed in the cells and glued into it.

# %%
from myst_nb import glue

from saliency_book.ch5_mask_attention import (
    MaskAttentionChapter,
    official_play,
    our_mask_plays,
    show_filmstrip,
    show_mask_summary,
    show_our_plays,
    show_series,
)
from saliency_book.ch5_rankings import (
    chapter_ranking,
    coarse_numbers,
    official_studies,
    our_rankings,
    seed_study,
    show_agreement,
    show_mask_ranks,
    show_our_rankings,
    show_ranking,
    show_seed_ranks,
)
from saliency_book.ch5_scores import (
    comparison_verdicts,
    seed_comparisons,
    show_comparison,
    show_curves,
    show_scores,
    show_verdicts,
)
from saliency_study.masks import series_numbers, series_summary
from saliency_study.rankings import rank_agreement, ranking_numbers, seed_numbers
from saliency_study.variants import actor_critic_runs, final_scores


def glue_all(values: dict) -> None:
    """Glue each named value, as a plain Python value, for the text."""
    for name, value in values.items():
        glue(name, value.item() if hasattr(value, "item") else value, display=False)


cfg = MaskAttentionChapter(game=game, steps=steps, filmstrip=filmstrip, top=top, substrate=substrate,
                           profile=profile, seed=seed, device=device, executor=executor,
                           results_dir=results_dir, agents_dir=agents_dir, runs_dir=runs_dir)
glue_all({"play_steps": cfg.play_steps})
cfg

# %% [markdown]
# Each agent plays a segment of {glue:text}`play_steps` agent steps. In the `tiny` profile,
# used by the test suite, that is a few seconds of play and the result table covers two
# states, so the numbers mean little.
#
# ## Policy and value masks over play
#
# The official Mask-A3C agent plays greedily from the start of a game, and we record both
# masks at every step. With the default seed 0 the first steps of this game are the states
# that the study explains in the next section. The filmstrip shows a few evenly spaced
# frames. As in the official visualiser, each mask is upsampled back through the crop of the
# agent's input and normalised over the whole segment, one scale per branch. We draw it
# with the perceptually uniform *inferno* colormap and show the real mask M, which the
# network multiplies in, rather than the official display's sigmoid(5·z), which has more
# contrast.

# %% mystnb={"figure": {"caption": "The official Mask-A3C agent playing greedily: a few frames with the policy mask (top) and the value mask (bottom) overlaid. Each branch is normalised over the whole segment; the colour bars give the mask values M. Titles: step in the game, greedy action and state value V.", "name": "fig-mask-filmstrip-official"}}
official = official_play(cfg)
show_filmstrip(official)

# %% [markdown]
# The filmstrip shows where each mask looks in a few frames. To follow the masks over the
# whole segment, we reduce each mask to a few numbers per step:
#
# * the **mean of M**, the share of each feature the branch lets through on average, and
#   the share of cells with M > 0.5;
# * the **normalised entropy** of M read as a distribution over the 100 cells: 1 is a
#   uniform mask, lower values a mask concentrated on few cells;
# * the agreement between the two masks: the **IoU of their top cells** (the `top`
#   fraction of the cells with the highest M) and the **Spearman correlation** over all
#   cells.

# %% mystnb={"figure": {"caption": "Mask statistics of the official Mask-A3C agent at every step of the segment: mean mask value, normalised spatial entropy, and the agreement of the policy and value masks (IoU of the top cells, dotted: two random sets of cells; Spearman rank correlation). Dashed lines mark ConvLSTM resets, grey bands the filmstrip's frames.", "name": "fig-mask-series-official"}}
show_series(official, top=cfg.top)

# %% [markdown]
# The next cell averages these statistics over the steps of the segment.

# %%
glue_all({f"official_{name}": value for name, value in series_numbers(official, top=cfg.top).items()})

# %% [markdown]
# Over the {glue:text}`official_steps` steps, the official agent's policy mask lets on
# average {glue:text}`official_policy_mass:.2f` of each feature through and opens
# {glue:text}`official_policy_open:.1%` of its cells (M > 0.5); the value mask lets
# {glue:text}`official_value_mass:.2f` through and opens {glue:text}`official_value_open:.1%`.
# Their normalised entropies are {glue:text}`official_policy_entropy:.2f` (policy) and
# {glue:text}`official_value_entropy:.2f` (value), where 1 is a uniform mask. Their top cells
# overlap with a mean IoU of {glue:text}`official_iou:.2f`, where two random sets of as many
# cells would overlap with {glue:text}`official_chance_iou:.2f`, and the mean Spearman
# correlation of the two masks is {glue:text}`official_spearman:.2f`. The ConvLSTM state was
# reset {glue:text}`official_resets` times after the first step (a lost life or a new game).
#
# ### Our own Mask-A3C agents
#
# We also train actor-critic agents of our own with `saliency_lib.train.a2c`, a synchronous
# version of the official trainer that supports every variant of the paper: no mask (A3C),
# a policy mask, a value mask, or both (Mask-A3C). Its loss and hyper-parameters are the
# official ones (20-step rollouts, GAE with λ = 1, Adam with AMSGrad), with three deliberate
# deviations:
#
# * **Synchronous, not asynchronous.** Instead of Hogwild worker processes, 16
#   environments are stepped in one batch and their A3C losses are summed into one
#   update. On the study's 2-core machine, 16 worker processes would share two cores;
#   the batched version runs one process per core, with one forward pass over all 16
#   environments. An update carries the gradients that 16 workers would have applied one
#   after another, without their staleness, so there are 16 times fewer optimiser steps
#   per frame.
# * **A larger learning rate.** To make up for the fewer optimiser steps, the learning
#   rate of one batched update is the official 1e-4 times √16 = 4e-4, the square-root
#   scaling rule for Adam {cite}`malladi2022sdes`. A 2 M-frame pilot on Breakout
#   (Mask-A3C, 16 environments, committed in `data/benchmarks/a2c_lr_pilot`) decided
#   it: at 1e-4 the last 100 training games averaged 4.4 points and three greedy games
#   4.0; at 4e-4, 14.0 and 45.0. The official run's test games between 1.5 M and 2 M
#   frames averaged 17.0.
# * **bf16 convolutions.** The forward and backward passes run under bf16 autocast.
#   Weights, the ConvLSTM cell state, the loss and the optimiser stay in float32. The
#   runtime chapter measures the speed-up, and a test checks that the gradient keeps its
#   direction.
#
# When our agents with masks are shipped in `data/agents`, the tabs below show the same
# filmstrip and statistics for each of them, on a game with the same seed.

# %%
ours = our_mask_plays(cfg)
show_our_plays(ours, top=cfg.top)

# %% [markdown]
# The table puts the segments side by side, with the statistics the project's reference
# notes measured for the released checkpoint over whole games. Mean ± sd is taken over
# the steps of the segment.

# %%
caption = (f"Mask statistics over play on {cfg.game}: mean ± sd over the steps of each segment. "
           "The last row is the reference notes' re-evaluation of the released checkpoint over whole games.")
show_mask_summary(series_summary(official, ours, top=cfg.top), cfg.game, caption)

# %% [markdown]
# A short segment from the start of a game need not match whole-game averages, since what
# is on the screen changes as the game goes on; the time series above show how much the
# statistics move within the segment.
#
# ## The masks as saliency maps
#
# The masks are explanations, so we can test them like any saliency map. The study scores
# every method, the two masks included, on the same states of the official agent's game,
# with the cascading parameter randomisation of {cite:t}`adebayo2018sanity` and the
# insertion metric of {cite:t}`huber2022benchmarking` and its deletion counterpart
# {cite}`petsiuk2018rise`. The chapter reads these results from the study's result table.

# %%
glue_all(coarse_numbers(cfg.profile))

# %% [markdown]
# In this profile the study explains the first {glue:text}`coarse_states` states of the
# official agent's greedy game. A Mask-A3C forward pass costs many DQN forward passes, so
# below the `full` profile its perturbation methods run with coarser parameters than the
# paper's, and the numbers below are not the full profile's. The parameters that differ
# from the paper's here: {glue:text}`coarse_params`.
#
# For the actor-critic agent, the insertion and deletion curves follow two outputs: the
# probability π(a) of the action the agent took, and the state value V. V is degenerate
# under insertion and deletion (the substrate leaves it at its clean level; chapter 4
# shows why), so no map is ranked on it and the insertion and deletion columns use π(a),
# on which a policy mask should do well. The sanity column is the Spearman
# similarity between a method's map on the original agent and on the agent with all
# layers re-drawn at random; a method that passes the check has a low similarity.

# %%
ranking = chapter_ranking(cfg)
caption = (f"Methods on the official Mask-A3C agent ({cfg.game}, substrate {cfg.substrate}): mean over states "
           "[95 % bootstrap CI] and rank among the methods (↑ higher is better, ↓ lower is better; the random "
           "map takes part in insertion and deletion only); n / ESS: states and effective sample size. The masks "
           "are in bold.")
show_ranking(ranking, caption)

# %% [markdown]
# The next table is the verdict on the masks: each mask's rank on each criterion, and how
# many maps the paired Wilcoxon tests over the states find significantly better (↑) and
# significantly worse (↓) than it.

# %%
glue_all(ranking_numbers(ranking))
caption = ("The masks' ranks on the official agent (as above): #rank of the ranked maps; ↑k ↓j: k maps significantly "
           "better than the mask, j significantly worse (paired Wilcoxon tests over the states, Holm-corrected, "
           "α = 0.05).")
show_mask_ranks(ranking, caption)

# %% [markdown]
# Each mean is over at most {glue:text}`rank_states` states. With n states, the smallest
# two-sided p-value an exact Wilcoxon test can reach is 2/2ⁿ, here
# {glue:text}`rank_min_p:.3g`, and the Holm correction multiplies the smallest p-value by
# the number of pairs: with a handful of states no difference can be significant, and the
# ranks can change with more states.
#
# The same ranking for each of our own shipped Mask-A3C agents, on states of its own
# greedy game (the `tiny` smoke profile ranks the first agent only):

# %%
ours_ranked = our_rankings(cfg)
show_our_rankings(ours_ranked, f"Methods on our Mask-A3C agent ({cfg.game}, substrate {cfg.substrate}), as above.")

# %% [markdown]
# A mask sees the input only through the agent's own features, at a resolution of 10 × 10
# cells, and it does not depend on the explained action. Insertion and deletion reward a
# map that finds the few pixels the output depends on most. The sanity check rewards a
# map that changes when the weights change; a mask is computed by the weights, so we expect
# it to pass, and the table shows whether it does.
#
# ### The official agents on the full study's states
#
# The tables above rest on the states and explainer parameters of the `profile` (below
# `full`: a few states and coarse parameters). The study's `study_profile` explains each
# official agent of the three games that Huber et al. and Itaya et al. share on 100 states
# spread over a whole greedy game (in the `full` profile), with every method at
# the paper's parameters, the full cascade and insertion/deletion on the black, blur and random
# substrates. This section reads its packed units and computes none; a game the study has
# not finished is named in the caption instead. The ranks compare means over the states; the paired
# tests resample moving blocks of consecutive states, because the states of one game are
# correlated. A cell gives the mask's rank, then (↑k ↓j) the number of maps the tests find
# significantly better and significantly worse than it.

# %%
studies = official_studies(study_profile, results_dir=cfg.results_dir)
caption = ("The two masks of each official Mask-A3C agent among all maps of the full study: rank by the mean over "
           "the states (#1 is the best map; insertion and deletion of π(a) per substrate, and the Spearman similarity "
           "after full randomisation, where lower is better); ↑k ↓j: k maps significantly better than the mask, j "
           "significantly worse (paired moving-block bootstrap, Holm-corrected, α = 0.05). n / ESS: states and "
           "effective sample size.")
show_mask_ranks(studies, caption)

# %% [markdown]
# Every method on this chapter's game, as in the first table but on the full study's states:

# %%
caption = (f"Methods on the official Mask-A3C agent ({cfg.game}), full study: mean over states [95 % moving-block "
           "bootstrap CI] and rank, per criterion and substrate. The masks are in bold.")
show_ranking(studies.get(cfg.game), caption)

# %% [markdown]
# The official code holds no quantitative test of the maps: no insertion or deletion, no
# comparison with gradient saliency (the reference notes on Itaya et al., §4.3, which leave
# open whether the paper itself has one), and Huber et al. do not test mask attention. So
# neither paper's released material has a number to set beside these ranks.
#
# ### Do the masks' ranks hold across seeds?
#
# A rank is a finding about mask attention only if it does not belong to one training run.
# The study's seed sweep explains every shipped Mask-A3C agent of the game, one per seed and
# variant, on 50 states spread over one greedy game: the masks next to the gradient,
# Integrated Gradients and Grad-CAM (and the random map in insertion and deletion), under the
# sanity check and insertion/deletion of π(a) on every substrate. The section reads the
# stored units of the `seeds_profile` sweep and computes none: a Mask-A3C state costs
# minutes, and where the units are missing the note below names the command that makes
# them. Each cell is the mean over the states with its moving-block bootstrap 95 % CI (the
# states of one game are correlated; n / ESS gives their number and effective number).

# %%
seeds = seed_study(seeds_profile, cfg.game, results_dir=cfg.results_dir, agents_dir=cfg.agents_dir)
agreement = rank_agreement(seeds)
glue_all(seed_numbers(seeds, agreement))
caption = ("Every method in every seed of our Mask-A3C agents: mean over states [95 % moving-block bootstrap CI] "
           "and rank, per criterion and substrate; n / ESS of the first insertion criterion. The masks are in bold.")
show_ranking(seeds, caption, by=("variant", "seed", "method"))

# %% [markdown]
# The sweep has {glue:text}`seed_units_stored` of its {glue:text}`seed_units_planned` units
# packed, at most {glue:text}`seed_states` states per seed. Side by side, the rank of each
# mask in every seed of its variant, the range of its ranks and Kendall's W, the agreement
# of the seeds' whole orderings (1: every seed orders the methods alike). The verdict needs
# two seeds and at least 50 states in each.

# %%
show_agreement(agreement, "Each mask's rank per seed of its variant, per criterion and substrate, and the verdict.")

# %% mystnb={"figure": {"caption": "Rank of each method per seed of our Mask-A3C agents (1 = best; insertion, deletion of π(a) per substrate, and the Spearman similarity after full randomisation). Thick lines: the masks; one marker per seed.", "name": "fig-mask-seed-ranks"}}
show_seed_ranks(seeds)

# %% [markdown]
# Over the variants with at least two seeds, a mask keeps its rank in every seed on
# {glue:text}`seed_holds` (criterion, substrate) cells of the table and changes it on
# {glue:text}`seed_moves`; the verdict column says which, and a variant with a single seed
# gets no verdict.
#
# ## Do the masks help the agent play?
#
# {cite:t}`itaya2021visual` claim in their abstract that the attention mechanism improves
# the score. The project's reference notes quote this claim, but do not hold the paper's
# score table, and the official repository releases only runs with both masks, one seed per
# game. We can therefore only test the direction of the claim, with our own runs of the
# paper's four models on the same trainer and budget: A3C without a mask, a mask on the
# policy branch only, on the value branch only, and on both (Mask-A3C). The comparison is
# between A3C and Mask-A3C, the pair with several seeds each; the single-mask variants are
# shown beside them. Every variant trains with the learning rate that the pilot above chose
# on Mask-A3C alone; if that choice favours a variant, it favours the masked one. The grey
# line is the official Mask-A3C run over the same number of frames.
#
# The official run trained far longer than ours. The right panel follows it over its whole
# course and marks the milestones at which the reference notes read its learning curve
# (§3.2: the mean greedy test score within ±5 M global steps of each point), at equal
# frames. A global step is one agent step of one worker, 4 emulator frames, so the first
# milestone (5 M steps) lies at 20 M frames, beyond the end of our 10 M-frame runs (dotted). Because
# each milestone averages a window of ±20 M frames, the early ones sit below the curve where
# it climbs steeply. Our variants appear at their own budget as the mean over seeds with the
# t-interval over seeds from the comparison below.

# %% mystnb={"figure": {"caption": "Left: learning curves of our actor-critic runs, one colour per mask variant (no mask, policy mask, value mask, both masks), every seed: rolling mean of the training games and greedy evaluations (mean ± sd); dashed: runs still in progress. Grey: the official Mask-A3C run's greedy test games over the same number of frames. Right: the official run over its whole course (log axis of emulator frames), its milestones from the reference notes as diamonds at 4 frames per global step, and each of our variants' greedy score at its training budget (squares, side by side): the mean over seeds with its 95 % t-interval over seeds (no interval for a variant with one seed).", "name": "fig-mask-a3c-curves"}}
runs = actor_critic_runs(cfg.game, cfg.agents_dir, cfg.runs_dir)
comparisons = seed_comparisons(cfg.game, cfg.agents_dir)
show_curves(runs, cfg.game, comparisons=comparisons)

# %% [markdown]
# The final scores come from the greedy evaluation of each shipped agent.

# %%
caption = (f"Final scores on {cfg.game} of our actor-critic agents (greedy games, raw score, all lives), "
           "and the official Mask-A3C run at the same number of frames.")
show_scores(final_scores(runs, cfg.game), caption)

# %% [markdown]
# Whether attention makes the agent score higher is a question about training runs, so the
# unit of the comparison is the seed: each agent's evaluation is averaged to one number, and
# the confidence intervals are t-intervals over seeds. Games are never counted as samples:
# under the papers' greedy protocol many of them replay each other, which the table shows
# as the number of distinct games. A second protocol, sticky actions
# (`repeat_action_probability` = 0.25, {cite:t}`machado2018revisiting`), makes every game
# differ; it is the headline. The single-mask variants have one seed each, so they are
# shown but not compared.
#
# A final score uses the end of each run only. The learning-curve aggregates use all of it:
# for each seed, the mean or the interquartile mean (IQM, {cite:t}`agarwal2021deep`: the mean
# of the middle half) of the greedy evaluations at the training checkpoints, every 0.5 M
# frames.

# %%
show_comparison(comparisons, f"Our actor-critic agents on {cfg.game}, per mask variant: the final score under both "
                "evaluation protocols and the learning-curve aggregates of the evaluation checkpoints, per seed, the "
                "mean over seeds and its t-interval over seeds.")

# %% [markdown]
# The verdict compares Mask-A3C (both masks) with A3C (no mask): their difference and the
# Welch t-interval of the difference over seeds. Beside it stands the minimum detectable
# effect: the difference that a two-sample t-test with these seeds and their pooled spread
# would detect with 80 % power at the two-sided 5 % level. The verdict gives a direction
# where the interval excludes zero; "equivalent within 20 %" where the interval lies inside
# ± 20 % of A3C's mean; and otherwise "no detectable difference", which rules out only
# effects larger than the detectable one.

# %%
verdicts = comparison_verdicts(comparisons)
glue_all({f"{r['key']}_{k}": v for r in verdicts.to_dict("records") for k, v in r.items() if k != "key"})
show_verdicts(verdicts, f"Mask-A3C against A3C on {cfg.game}, over training seeds: the final score under each "
              "evaluation protocol and the learning-curve aggregates.")

# %% [markdown]
# Under sticky actions, where every game differs, Mask-A3C scored
# {glue:text}`sticky_mean_treatment:,.1f` and A3C {glue:text}`sticky_mean_baseline:,.1f` at
# {glue:text}`sticky_frames:,.0f` frames, over {glue:text}`sticky_n_treatment` and
# {glue:text}`sticky_n_baseline` seeds: a difference of {glue:text}`sticky_diff:+,.1f`
# points, with a {glue:text}`sticky_level:.0%` interval over seeds from
# {glue:text}`sticky_ci_low:+,.1f` to {glue:text}`sticky_ci_high:+,.1f`. Verdict:
# **{glue:text}`sticky_verdict`**. This design detects differences above
# {glue:text}`sticky_mde:,.0f` points; 20 % of A3C's mean is {glue:text}`sticky_margin:,.0f`
# points. Under the papers' greedy protocol the difference is
# {glue:text}`greedy_diff:+,.1f` points ({glue:text}`greedy_mean_treatment:,.1f` against
# {glue:text}`greedy_mean_baseline:,.1f`; interval {glue:text}`greedy_ci_low:+,.1f` to
# {glue:text}`greedy_ci_high:+,.1f`, {glue:text}`greedy_n_treatment` and
# {glue:text}`greedy_n_baseline` seeds; detectable above {glue:text}`greedy_mde:,.0f`). Verdict:
# **{glue:text}`greedy_verdict`**. Over the whole learning curve, the mean of the checkpoints
# differs by {glue:text}`curve_mean_diff:+,.1f` points (interval
# {glue:text}`curve_mean_ci_low:+,.1f` to {glue:text}`curve_mean_ci_high:+,.1f`, detectable
# above {glue:text}`curve_mean_mde:,.0f`; verdict: **{glue:text}`curve_mean_verdict`**), and
# their IQM by {glue:text}`curve_iqm_diff:+,.1f` (verdict:
# **{glue:text}`curve_iqm_verdict`**). With fewer than two seeds of either variant there is
# no verdict, and the table says why.
#
# ## Summary
#
# * The filmstrips show where the official agent's policy and value masks look; the time
#   series show how their size, spread and agreement change over play.
# * On the study's states, the tables place the masks among the perturbation methods for
#   insertion, deletion and the sanity check, with confidence intervals and paired tests.
# * Whether the masks keep their ranks from one training run to the next is judged only for
#   a variant with at least two seeds, on 50 states of each; the agreement table gives the
#   verdicts and the seeds they rest on.
# * Whether the masks improve the score is tested over training seeds of our own A3C and
#   Mask-A3C runs at our budget of 10 M frames, under the greedy and the sticky-action
#   protocol; the verdict table gives the result, the number of seeds it rests on, and no
#   direction where the interval over seeds includes zero. The official run
#   trained for about 44 times as many frames (1.1 × 10⁸ global steps, reference notes
#   §3.2), and its first learning-curve milestone lies beyond our budget, so the verdict
#   is one about early training.
