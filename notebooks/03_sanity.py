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
# (chapter-sanity)=
# # Sanity checks
#
# A saliency map that explains an agent should change when the agent changes. If a map
# looks the same for a trained network and for one with random weights, it describes the
# input, not what the agent learned. {cite:t}`adebayo2018sanity` turned this into a test,
# **cascading parameter randomisation**, and {cite:t}`huber2022benchmarking` applied it to
# perturbation-based saliency maps of Atari agents. They found that the original Noise
# Sensitivity of {cite:t}`greydanus2018visualizing` hardly changes when the output layer
# is randomised, and they fixed it.
#
# This chapter repeats the test for every method of the study, on the study's DQN agent
# and on the official Mask-A3C agent of {cite:t}`itaya2021visual`. The similarities come
# from the study's sweep (`saliency_study.study`); `saliency_study.sanity` tabulates and
# judges them, `saliency_book.ch3_figures` shows them. The cells below only call them.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/03_sanity.ipynb out.ipynb -p game MsPacman -p threshold 0.4`.

# %% tags=["parameters"]
game = "Breakout"  # Atari game
agent = None  # agent spec; None: the study's DQN agent (an official:<Game> spec replaces the Mask-A3C agent)
profile = "quick"  # "tiny", "quick" or "full": states and explainer parameters of the sweep
seed = 0  # seed of the randomisation, the random reference maps and the bootstrap
device = "cpu"  # torch device of the example maps
results_dir = "data/results"  # stored results, relative to the repository
executor = "local"  # executor of sweep units that are not stored yet: "local", "processes" or "ray"
threshold = 0.5  # a method passes when its Spearman CI after full randomisation lies below this
study_profile = "full"  # the stored study that the per-game comparisons with the paper read (computes nothing)
methods = None  # the study's methods to sweep, e.g. "occlusion,rise"; None: all
n_states = None  # states per agent of the sweep; None: the profile's

# %% [markdown]
# The parameters become the chapter's frozen configuration. The profile decides how many
# states the sweep explains and with which explainer parameters.

# %%
from IPython.display import display
from myst_nb import glue

from saliency_book.ch3_figures import (
    show_comparison,
    show_curves,
    show_ns_curves,
    show_ns_example,
    show_table,
    show_tied_block_test,
    show_tied_blocks,
    show_verdicts,
)
from saliency_book.ch3_sanity import (
    SanityChapter,
    chapter_results,
    chapter_sweep_table,
    chapter_verdicts,
    extremes,
    layer_groups_table,
    ns_example,
    ns_findings,
    precedents,
    study_tied_block_tests,
    tied_block_summary,
    tied_block_test,
    tied_blocks,
    verdict_counts,
    zero_share,
)
from saliency_book.common import describe_agents, versions_note
from saliency_study.evidence import MIN_ESS
from saliency_study.paper import GAME_LABELS, GAME_ORDER
from saliency_study.sanity import per_game, pooled, sanity_rows

cfg = SanityChapter(game=game, agent=agent, profile=profile, seed=seed, device=device,
                    results_dir=results_dir, executor=executor, threshold=threshold, study_profile=study_profile,
                    methods=methods, n_states=n_states)
glue("tau", cfg.threshold, display=False)
glue("min_ess", MIN_ESS, display=False)
cfg

# %% [markdown]
# In the `tiny` profile, used by the test suite, the sweep explains very few states with
# coarse parameters, and the numbers mean nothing.
#
# ## How much the states are worth
#
# The states are consecutive steps of one greedy game, and a map's similarity at one step
# is close to its similarity at the next. Treating them as independent samples would give
# confidence intervals that are far too narrow. Every table therefore gives the **effective
# sample size** (ESS) beside the number of states: how many independent states the trajectory
# is worth, measured from its autocorrelation. The intervals of the means are t intervals on
# the ESS, which keep their coverage on such series (`saliency_lib.metrics.dependence`). No
# verdict is given on fewer than {glue:text}`min_ess` effective states
# (`saliency_study.evidence.MIN_ESS`); below that a row says "withheld" and why.
#
# ## The test
#
# The test follows Huber et al.'s protocol (reference notes §5):
#
# 1. Explain each state with the trained agent, for the action the agent takes.
# 2. Copy the agent and re-initialise its layers **from the output towards the input,
#    cumulatively**: first the output layer, then also the layer below it, and so on,
#    until every layer is random. Weights are redrawn Glorot-uniform with zero biases,
#    the Keras initialisers of Huber et al.'s agents.
# 3. Explain each state again with every partly randomised model, still for the trained
#    agent's action, and compare the map with the trained agent's map.
#
# Three measures compare two maps. Both maps are first min-max normalised, and each
# measure is computed for the map and for its inverse, keeping the larger value, so that
# a map that only flips its sign counts as unchanged:
#
# Spearman rank correlation
# : how far the two maps rank the pixels in the same order.
#
# SSIM
# : the structural similarity index. Huber et al. computed it on the flattened maps, a
#   quirk of their code that we keep so that the numbers are comparable.
#
# HOG
# : the Pearson correlation of the maps' histograms of oriented gradients (3 × 3-pixel
#   cells), which compares the shapes of the salient regions.
#
# A method passes the test when its maps become dissimilar as the network is randomised:
# **lower is better**. As a floor, every original map is also compared with a
# uniform-random map.
#
# ## The agents and their layers
#
# The chapter explains two agents for its game; either may be missing.

# %%
res = chapter_results(cfg)
agents = list(res.agents.values())
describe_agents(agents)

# %% [markdown]
# The cascade runs through each agent's layer groups in this order. Level 1 randomises
# the first group, level 2 the first two, and so on.

# %%
show_table(layer_groups_table(agents, cfg.device), "Layer groups of the cascade, from the output down, with their "
           "modules and parameter counts.", formats={"Parameters": "{:,}"})

# %% [markdown]
# The study's DQN agents have Huber et al.'s five groups: output, fully connected layer and three
# convolutions. For the Mask-A3C agent, the first group holds the policy and value heads,
# including their 1 × 1 branch convolutions. The attention masks come from their own
# 1 × 1 convolutions, which form the second group, so randomising the heads cannot
# change the masks.
#
# The results cover the first states of each agent's greedy game. Outside the `full` profile
# some explainers run with coarser parameters than Huber et al.'s final ones (every other
# method as in the paper):

# %%
show_table(chapter_sweep_table(cfg, agents), f"The states of each agent's results and the explainer parameters that differ "
           f"from Huber et al.'s in the profile `{cfg.profile}`.")

# %% [markdown]
# The package versions that made the stored results, against the ones running now:

# %%
versions_note(cfg.profile, cfg.game, results_dir=cfg.results_dir)

# %% [markdown]
# ## The study's DQN agent
#
# The first figure shows, for every method, how similar the map of each partly
# randomised DQN agent is to the trained agent's map.

# %% mystnb={"figure": {"caption": "Cascading parameter randomisation of the study's DQN agent: similarity between each method's map of the trained agent and of the agent whose layers are randomised down to the layer on the x-axis. Mean over the states with 95 % confidence intervals on the effective sample size; one panel per measure; dotted grey: similarity with a uniform-random map.", "name": "fig-sanity-curves-dqn"}}
show_curves(res, "dqn")

# %% [markdown]
# A curve that falls quickly as the layers are randomised belongs to a method whose map
# depends on the learned parameters. A curve that stays high shows a map that depends
# mostly on the input, or on layers that are not yet random.
#
# ## The official Mask-A3C agent
#
# The same test on the Mask-A3C agent, which adds its own attention masks to the
# methods.

# %% mystnb={"figure": {"caption": "Cascading parameter randomisation of the official Mask-A3C agent: similarity between each method's map of the trained agent and of the agent whose layers are randomised down to the layer on the x-axis. Mean over the states with 95 % confidence intervals on the effective sample size; one panel per measure; dotted grey: similarity with a uniform-random map.", "name": "fig-sanity-curves-mask-a3c"}}
show_curves(res, "mask_a3c")

# %% [markdown]
# The policy and value masks cannot change at the first level, where only the heads are
# random: they are computed before the heads. Their test starts with the attention layer.
#
# ## Noise Sensitivity: the failure and its fix
#
# Noise Sensitivity blurs a small disk around each point of a grid and scores how much
# that changes the network's output. The two variants differ only in the score:
#
# NS original {cite}`greydanus2018visualizing`
# : half the squared change of the **whole output vector**,
#   $S = \tfrac12 \sum_b \left(y_b(I) - y_b(I')\right)^2$, with $y$ the Q-values (DQN) or
#   the policy logits (Mask-A3C). It does not depend on which action is explained.
#
# NS chosen action (Huber et al.'s fix)
# : the drop of the **explained action's** probability, $S = 1 - \mathrm{softmax}(y(I'))_a$,
#   for the action $a$ that the trained agent takes.
#
# Huber et al. found that the original score shows little dependence on the output layer
# (abstract; reference notes §5). A plausible reason, which the reference notes give as an
# inference: when only the output layer is random, the change of the whole output vector
# is still driven by how much the blur changes the features below it, and a random linear
# read-out roughly preserves such distances. The map then still shows where the features
# react, whatever the output weights. The chosen-action score depends on how the output
# weights of action $a$ compare with those of the other actions, so it has to change.
#
# The figure puts the two variants side by side for every agent. The shaded column is the
# level at which only the output layer (DQN) or the heads (Mask-A3C) are random.

# %% mystnb={"figure": {"caption": "NS original against NS chosen action under cascading randomisation, one row per available agent (the study's DQN agent and/or the official Mask-A3C agent), one panel per measure. Lines: mean over the states; bands: 95 % confidence intervals on the effective sample size; shaded column: only the output layer or heads randomised.", "name": "fig-sanity-ns-curves"}}
show_ns_curves(res)

# %% [markdown]
# The table reads the shaded column. Huber et al.'s finding holds for an agent when NS
# original stays more similar to its original map than NS chosen action and the two
# intervals do not overlap; with overlapping intervals the states do not settle it, and
# below {glue:text}`min_ess` effective states of either variant the verdict is withheld.

# %%
show_table(ns_findings(res), "NS original and NS chosen action once only the output layer (the heads) is random: mean "
           "Spearman similarity to the trained agent's map [95 % CI on the ESS], the states and each "
           "variant's ESS, and whether Huber et al.'s finding holds.",
           names={"layer": "Randomised", "original": "NS original", "chosen": "NS chosen action",
                  "original_ess": "ESS, original", "chosen_ess": "ESS, chosen"})

# %% [markdown]
# An example makes the difference visible. For one state, the figure shows both
# variants' maps for the trained agent, for the agent with a random output layer (or
# heads), and for the fully random agent. The state is the one whose NS-original
# similarity after the first level is the median over the states, so it is typical rather
# than chosen for effect. Each panel's ρ is the Spearman similarity with the map in its
# row's first panel; up to floating-point rounding, these are the sweep's numbers for
# that state.

# %% mystnb={"figure": {"caption": "The study's DQN agent: NS original (top) and NS chosen action (bottom) on one state for the trained agent, the agent with a random output layer and the fully random agent, overlaid on the raw frame (inferno, min-max normalised per map). ρ: Spearman similarity with the trained agent's map.", "name": "fig-sanity-ns-example-dqn"}}
show_ns_example(ns_example(cfg, res.agents["dqn"], res.tables["dqn"]), res.agents["dqn"].label)

# %% mystnb={"figure": {"caption": "The official Mask-A3C agent: NS original (top) and NS chosen action (bottom) on one state for the trained agent, the agent with random heads and the fully random agent, overlaid on the agent's crop of the raw frame (inferno, min-max normalised per map). ρ: Spearman similarity with the trained agent's map.", "name": "fig-sanity-ns-example-mask-a3c"}}
show_ns_example(ns_example(cfg, res.agents["mask_a3c"], res.tables["mask_a3c"]), res.agents["mask_a3c"].label)

# %% [markdown]
# Both variants perturb the input in the same way and differ only in how they score the
# change of the output. Any difference between the two rows therefore comes from the
# score, and the middle column shows how much each score depends on the output weights.
# Keep in mind that ρ compares the ranks of all pixels, most of them background. Two maps
# can therefore have a high ρ although their brightest spots differ, which is why the
# figure with the curves also shows SSIM and HOG.
#
# ## Huber et al.'s numbers beside ours, per game
#
# Huber et al.'s result files hold, for each of their four games, the similarity of every
# method's map after each level of the cascade. The project's extract of them
# (`data/reference/huber2021/`, with its README) covers about 100 early and 33 late states
# of each game. Their DQN agents and ours randomise the same five layer groups in the same
# order, so the levels compare one to one; the Mask-A3C agent has other layers and is left
# out. The tables give, for every game, the paper's mean Spearman similarity with only the
# output layer random and with every layer random, beside our DQN agent's mean with its
# 95 % CI, the number of states and their effective number. The verdict is an equivalence
# test with a margin stated before looking (±0.10 for a similarity,
# `saliency_study.evidence.SIMILARITY_MARGIN`): the difference between ours and the paper's,
# with its 90 % interval widened by the paper's own sampling error, is **reproduced** when the
# interval lies inside the margin, **differs** when it lies outside, **inconclusive** when it
# straddles it, **withheld** below {glue:text}`min_ess` effective states, and **not yet run** for
# a game the study has not reached. The margin and the difference are in the table, so a reader
# can apply another margin. Our results are the stored paper-scale study (the parameter
# `study_profile`, `full` unless changed), whatever profile builds the chapter; nothing is
# computed here.

# %%
rows = sanity_rows(cfg.study_profile, seed=cfg.seed, results_dir=cfg.results_dir, measures=("spearman", "spearman_untied"))
games_table = per_game(rows)
for g in GAME_ORDER:
    display(show_comparison(games_table, f"{GAME_LABELS[g]}: mean Spearman rank correlation to the trained agent's "
                            "map, Huber et al.'s (≈ 135 states of their DQN agent) beside our DQN agent's [95 % CI], "
                            "the states and their effective number (ESS), the margin, the difference [90 % interval] "
                            "and the verdict.", game=g))

# %% [markdown]
# Counted per game:

# %%
show_table(verdict_counts(games_table, by="game"), "Verdicts against Huber et al.'s similarities, per game, "
           "with the most states behind one.")

# %% [markdown]
# Huber et al.'s figures pool the states of their four games and draw the mean with a 99 %
# confidence interval. The next table does the same over the games we have run, with an
# interval that keeps each game's own dependence (each game's standard error on its own ESS,
# then combined), beside the paper's mean over the same games.

# %%
show_comparison(pooled(rows), "Spearman rank correlation pooled over the games we have run, every state counting "
                "once as in Huber et al.'s figures: their mean over the same games beside ours [99 % CI: each game "
                "on its own ESS, then combined], states and ESS, the margin, the difference and the verdict.")

# %% [markdown]
# The extract's states are partial (two stretches of 997), and the paper's means are
# themselves estimates from correlated states of other agents: "differs" says that our
# agent's mean is not theirs, not that either is wrong. Huber et al.'s overall conclusion
# (abstract; reference notes §7): every method except the original Noise Sensitivity
# depends on the learned parameters, and Noise Sensitivity needs the chosen-action score to
# depend on the output layer.
#
# ## Verdicts
#
# The table below lists every method's similarity to the trained agent's map once **all**
# layers are random, with a verdict on the Spearman similarity against a threshold
# τ = {glue:text}`tau:.2f` (parameter `threshold`). A method
#
# * **passes** when the whole 95 % confidence interval of the mean Spearman similarity
#   lies below τ;
# * **fails** when the whole interval lies at or above τ;
# * is **undecided** when the interval contains τ;
# * is **withheld** when its similarities are worth fewer than {glue:text}`min_ess` effective
#   states (the ESS in the table): consecutive states of one game are worth far fewer
#   independent ones, and below that bar an interval does not keep its coverage.
#
# Why 0.5 by default? At ρ < 0.5, the ranking of the pixels by the randomised map
# explains less than a quarter (ρ² < 0.25) of the variance of the trained agent's
# ranking. The value also
# separates Huber et al.'s failure case, NS original with a random output layer at
# ρ = 0.73–0.84 in every state listed, from the range 0.1–0.4 where most states of the
# fixed variant lie (reference notes §5). The threshold is well above the random-map
# floor on purpose. {cite:t}`adebayo2018sanity` observed that maps of a random network
# keep some structure of the input, so even a method that depends on the parameters
# stays above the floor. The column "Spearman, random map" shows the floor for
# comparison. The verdict uses Spearman only, because the three measures have different
# scales.

# %%
verdicts = chapter_verdicts(res, cfg.threshold)
most, least = extremes(verdicts, res.agents["dqn"].label)
glue("most_similar", most, display=False)
glue("least_similar", least, display=False)
show_verdicts(verdicts, "Similarity to the trained agent's map once every layer is randomised: mean [95 % CI] "
              "over the states, with their effective sample size (ESS). Verdict on the Spearman CI against the "
              "threshold τ of the configuration above; withheld below the minimum ESS. 'Spearman, random map': the "
              "original map against a uniform-random map.")

# %% [markdown]
# ## Discussion
#
# Counted per agent, once every layer down to the input is random:

# %%
show_table(verdict_counts(verdicts, by="title"), "Methods per verdict and agent after full randomisation, with the most states "
           "behind one.")

# %% [markdown]
# For the study's DQN agent, the map that stays most similar to its original is that of
# {glue:text}`most_similar`, the least similar that of {glue:text}`least_similar` (by the means; the
# verdicts say which differences the states support).
#
# Where a map stays similar once every layer is random, Huber et al.'s own numbers may
# already show it. The next table lists every method whose mean Spearman similarity stays at
# or above τ, beside the paper's mean for this game with every layer random: where the paper
# shows it too, it is their finding as much as ours, not a new one. Our means come from the
# stored paper-scale study where it has this game, else from the table above (the column
# "Source" says which).

# %%
show_table(precedents(verdicts, res.agents["dqn"], cfg.game, threshold=cfg.threshold, study=rows),
           f"Methods whose map of the study's DQN agent keeps a mean Spearman similarity of at least τ once every "
           f"layer is random, beside Huber et al.'s mean for {GAME_LABELS.get(cfg.game, cfg.game)} (≈ 135 states of "
           f"their agent).")

# %% [markdown]
# Three limits apply to every verdict here. First, outside the full profile the sweep
# explains few states, and the Mask-A3C agent's perturbation methods run on a coarser
# grid than Huber et al.'s (see the list of states and parameters above). Second, a verdict depends on τ; the
# curves show how the similarities fall at every level, which says more than one number.
# Third, passing the test only shows that a map depends on the learned parameters. It
# does not show that the map is faithful to the agent's decision. The insertion and
# deletion metrics test that.
#
# ## Ties on a black screen
#
# A failed test says that the map of the random network resembles the map of the trained
# one. It does not say why, and one reason has nothing to do with the weights. On a black
# region many maps take one value whatever the network computes. Integrated Gradients
# multiplies the averaged gradient by the input minus its black baseline, so it is exactly
# zero there. SARFA's black disk changes nothing where the screen is already black, and
# neither does Occlusion's black patch, whose score 1 − f_a(I′) is then the constant
# 1 − f_a(I). The trained and the random network's maps share a block of tied pixels.
#
# Whether the block raises the rank correlation over all pixels depends on where it sits
# in each map. Zeros at the bottom of both non-negative maps make the two rankings agree
# on most pixels, and ρ is high because of the block alone. A plateau at the bottom of one
# map and halfway up the other adds nothing.
#
# The next table recomputes, for the first states of the sweep, the maps of the
# trained agent and of the fully randomised agent (the sweep's models and parameters). For
# each map it finds its largest tie (the pixels at its most frequent value) and where that
# value sits among the other pixels. It then splits the similarity: over all pixels (the
# test's number for these states), over the pixels outside the shared block, and what the
# block alone gives two maps that are tied on it, placed as measured, and independent noise
# elsewhere.

# %%
tied = {kind: tied_blocks(cfg, who) for kind, who in res.agents.items()}
tests = {kind: tied_block_test(t, threshold=cfg.threshold, seed=cfg.seed, game=cfg.game) for kind, t in tied.items()}
glue("zero_share", zero_share(tied["dqn"]), display=False)
caption = ("{}: share of the pixels in the largest tie of the trained map, of the fully randomised map and of "
           "both; share of each map's other pixels below its tied value; and the Spearman similarity of the "
           "two maps over all pixels, outside the shared block, and of the block alone. Mean over the first "
           "states of the sweep.")
show_tied_blocks(tied_block_summary(tied["dqn"]), caption.format("The study's DQN agent"))

# %% [markdown]
# In these states of the study's DQN agent, {glue:text}`zero_share` of the pixel locations
# are zero in every stacked frame. A block that covers a large share of the pixels and sits
# at the bottom of both maps gives a high similarity on its own (last column); one that sits
# away from both ends of a ranking, or covers few pixels, gives almost none.
#
# The same split for the Mask-A3C agent, whose input is standardised by a running mean
# rather than scaled from black:

# %%
show_tied_blocks(tied_block_summary(tied["mask_a3c"]), caption.format("The official Mask-A3C agent"))

# %% [markdown]
# The claim "this method fails because of the black screen, not because of the weights" is
# tested the same way for every method, with a rule fixed before looking at the numbers
# (`saliency_study.tied_blocks.tied_block_test`). It holds for a method only when (1) the CI of
# its similarity over all pixels lies at or above τ, (2) the CI outside the shared block lies
# below τ, and (3) the paired difference of the two has a CI above zero. The verdict column says
# where it holds; it is withheld where any of the three rests on fewer than
# {glue:text}`min_ess` effective states.

# %%
caption = ("{}, {}: the test of the black-screen claim per method: Spearman similarity after full randomisation "
           "over all pixels and outside the shared tied block, and their paired difference, each mean [95 % CI], "
           "with the states and the smallest effective sample size of the three.")
display(show_tied_block_test(tests["dqn"], caption.format("The study's DQN agent", cfg.game)))
display(show_tied_block_test(tests["mask_a3c"], caption.format("The official Mask-A3C agent", cfg.game)))

# %% [markdown]
# The tables above recompute maps for the first states of this chapter's sweep. The stored
# paper-scale study measures the same split for every state it explained: its sweep stores,
# beside the Spearman similarity over all pixels, the Spearman similarity outside the block
# where both maps sit at their largest tie (`spearman_untied`). The same pre-stated test
# runs on those numbers, per game, for the study's DQN agents; nothing is computed here.
# A method that fails outside the block as well keeps its failure whatever the block does.

# %%
show_tied_block_test(study_tied_block_tests(rows, threshold=cfg.threshold, seed=cfg.seed),
                     "The study's DQN agents: the test of the black-screen claim on every stored state of the "
                     "paper-scale study, per game, as in the tables above.")

# %% [markdown]
# {cite:t}`adebayo2018sanity` noted that maps which multiply by the input, such as
# Gradient ⊙ Input and Integrated Gradients, keep the input's structure after
# randomisation. On Atari screens that are mostly black, that structure becomes a block
# of exact ties. Where the table finds such a block carrying the similarity, the verdict
# says more about the screen than about the weights. A similarity computed outside the
# block, or a baseline other than the screen's background, would separate the two.
#
# ## Summary
#
# * Cascading parameter randomisation re-initialises an agent's layers from the output
#   towards the input and measures how far each method's map moves away from the trained
#   agent's map (Spearman, SSIM, HOG).
# * The curves and the verdict table show which methods depend on the learned
#   parameters, for the study's DQN agent and the official Mask-A3C agent.
# * Noise Sensitivity's original score is compared with Huber et al.'s chosen-action fix,
#   in curves and in an example state.
# * Per game, the paper's similarities stand beside ours with CIs, the effective sample size,
#   the margin, the difference and an equivalence verdict, and pooled over the games as the
#   paper pools them. No verdict rests on fewer than {glue:text}`min_ess` effective states.
