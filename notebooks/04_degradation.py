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
# (chapter-degradation)=
# # Input degradation
#
# A faithful saliency map ranks the pixels by how much the agent's output depends on them.
# **Input degradation** tests this directly: reveal the pixels of a state in the order of
# the map, starting from an uninformative image (**insertion**), or destroy them in that
# order (**deletion**), and watch the agent's output. If the map is faithful, the output
# recovers quickly under insertion and collapses quickly under deletion. The metrics come
# from {cite:t}`petsiuk2018rise`, in the tradition of the pixel-flipping evaluation of
# {cite:t}`samek2017evaluating`; {cite:t}`huber2022benchmarking` used insertion to compare
# perturbation-based saliency maps of Atari agents.
#
# This chapter repeats their insertion benchmark, adds deletion and a third substrate, puts
# the paper's numbers beside ours and asks which of the paper's findings hold. The numbers
# come from the study's sweep (`saliency_study.study`); `saliency_study.degradation` tabulates and
# ranks them, `saliency_study.agreement` compares them with the paper, and
# `saliency_book.ch4_figures` shows them. The cells below only call them.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/04_degradation.ipynb out.ipynb -p game MsPacman`.

# %% tags=["parameters"]
game = "Breakout"  # Atari game
agent = None  # agent spec(s), comma-separated; None: the study's agents
profile = "quick"  # "tiny", "quick" or "full": the sweep's size
seed = 0  # seed of the sweep and of the bootstrap
device = "cpu"  # torch device of the illustration
results_dir = "data/results"  # stored results, relative to the repository
executor = "local"  # runs missing sweep units: "local", "processes" or "ray"
alpha = 0.05  # family-wise level of the Holm-corrected paired tests
study_profile = "full"  # the stored study that the per-game comparisons with the paper read (computes nothing)
methods = None  # the study's methods to sweep, e.g. "occlusion,rise"; None: all
n_states = None  # states per agent of the sweep; None: the profile's

# %% [markdown]
# With `agent=None` the chapter explains the study's agents of the game: the DQN agent once
# one is trained, and the official Mask-A3C agent. The parameters become the chapter's
# frozen configuration. The profile decides how many states the sweep explains and with
# which explainer parameters; the sweep's units run on the CPU, the device only serves the
# illustration.

# %%
from IPython.display import display
from myst_nb import glue

from saliency_book.ch4_degradation import (
    DegradationChapter,
    agreement_counts,
    auc_summary,
    chapter_sweep_table,
    clean_outputs,
    degradation_results,
    factors,
    mean_curve_table,
    measure_degeneracy,
    pick_agent,
    rank_agreement,
    ranking_detail,
    rankings,
    side_by_side,
    significance_counts,
    stream_agreement,
    stream_better,
    stream_results,
    study_agreement,
)
from saliency_book.ch4_figures import (
    show_agreement,
    show_auc_table,
    show_comparison,
    show_curves,
    show_factors,
    show_paper_table,
    show_paths,
    show_ranking_detail,
    show_rankings,
    show_side_by_side,
    show_table,
)
from saliency_book.common import versions_note
from saliency_study.agreement import insertion_aucs, paper_factor_counts, per_game, pooled
from saliency_study.catalog import ABLATION_METHODS
from saliency_study.degradation import PAPER_METHODS, ablation_table, robust_aucs
from saliency_study.evidence import MIN_ESS, verdict_counts
from saliency_study.paper import GAME_LABELS, GAME_ORDER

cfg = DegradationChapter(game=game, agent=agent, profile=profile, seed=seed, device=device,
                         results_dir=results_dir, executor=executor, alpha=alpha, study_profile=study_profile,
                         methods=methods, n_states=n_states)
glue("min_ess", MIN_ESS, display=False)
glue("alpha", cfg.alpha, display=False)
cfg

# %% [markdown]
# In the `tiny` profile, used by the test suite, the sweep explains very few states with
# coarse parameters, and the numbers mean nothing.
#
# The explained states are consecutive steps of one greedy game, so neighbouring states
# have similar AUCs. The tables give the effective sample size (ESS) beside the number of
# states: how many independent states the trajectory is worth. Every confidence interval and
# paired test below is a t interval or test on the ESS (`saliency_lib.metrics.dependence`),
# and no verdict or significant difference rests on fewer than {glue:text}`min_ess` effective
# states (`saliency_study.evidence.MIN_ESS`).
#
# ## The metric
#
# The procedure follows Huber et al.'s code (reference notes §6). For a state $x$ and a
# saliency map $s$:
#
# 1. Sort the pixel locations by $s$, most salient first.
# 2. Build a **substrate** $z$: **black** (all zeros), **random** (uniform noise in
#    $[0, 1)$, drawn anew for every state) or, our addition, **blur** ($x$ blurred with a
#    Gaussian of 5 pixels inside each frame).
# 3. In $T$ steps of 84 pixel locations (all stacked frames at once), **insertion**
#    copies the pixels of $x$ into $z$; **deletion** writes the pixels of $z$ into $x$.
#    The agent is evaluated after every step, $T + 1$ times in all (85 for 84 × 84 states).
# 4. Score each step for the action $a$ that the agent takes on $x$.
#
# The measures depend on the agent. For the DQN agent they are Huber et al.'s:
#
# * the **Q-ratio** $Q_t(a) / Q_x(a)$, the chosen action's Q-value relative to its value
#   on the clean state: it follows how much the agent expects to gain;
# * the **advantage** $Q_t(a) - \frac{1}{|A|}\sum_j Q_t(j)$: it follows how clearly the agent
#   prefers its action.
#
# The Mask-A3C agent has no Q-values. In the same two roles we use its **state value** $V_t$
# and the **policy probability** $\pi_t(a)$ of its action (V turns out to be a degenerate
# measure here; a section below shows why, and no map is ranked on it). The area under a curve (AUC) is the
# plain mean of its $T + 1$ values, as in the paper. Insertion AUCs are better when higher,
# deletion AUCs when lower. A **random map** (uniform noise) is the chance baseline.

# %% [markdown]
# ## The results
#
# The next cell reads the study's stored insertion and deletion results for the chapter's
# agents and computes only the units that are missing. Below the `full` profile some
# explainers run with coarser parameters than Huber et al.'s final ones; their numbers are
# then not those of the final methods.

# %%
results = degradation_results(cfg)
dqn, mask_a3c = pick_agent(results, "dqn"), pick_agent(results, "mask_a3c")
show_table(chapter_sweep_table(cfg, results), f"The chapter's agents: their states and the explainer parameters that differ "
           f"from Huber et al.'s final ones in the profile `{cfg.profile}`.")

# %% [markdown]
# The package versions that made the stored results, against the ones running now:

# %%
versions_note(cfg.profile, cfg.game, results_dir=cfg.results_dir)

# %% [markdown]
# A forward pass of the Mask-A3C network costs many times that of the DQN network, so
# below the `full` profile its perturbation methods use the coarser parameters listed
# above. Its observations are standardised: zero is the running mean of the pixels, not
# black, and uniform noise in $[0, 1)$ is not on the data's scale. For this agent "black"
# therefore means "average grey", and only the blur substrate is free of such choices.
#
# ## What the agent sees
#
# The figure shows the inputs along the insertion and deletion paths of one explained state,
# in the order of its occlusion map, for the three substrates. The title names the agent:
# the study's DQN agent when it exists, otherwise the official Mask-A3C agent.

# %% mystnb={"figure": {"caption": "Inputs along the insertion (top three rows) and deletion (bottom three rows) paths of one state, ordered by its occlusion map (top left), for the black, random and blur substrates; the percentages are the share of pixel locations changed. The newest stacked frame is shown, on the grey scale of the clean state.", "name": "fig-degradation-paths"}}
show_paths(cfg, dqn or mask_a3c)

# %% [markdown]
# For the DQN agent, insertion from black starts from an empty screen, so the first pixels
# revealed can make the agent's output jump; insertion from noise and blur starts from an
# image that already carries some of the state's statistics.
#
# ## Insertion curves
#
# Each panel shows the mean curve of every method over the explained states with a 95 %
# moving-block bootstrap band (states resampled as whole curves, in blocks of consecutive
# states). The dashed black line is the random
# map. A faithful method rises above it early. First the DQN agent:

# %% mystnb={"figure": {"caption": "Insertion curves of the study's DQN agent: mean over the explained states and 95 % moving-block bootstrap band, per substrate (columns) and measure (rows); dashed black: random map.", "name": "fig-degradation-insertion-dqn"}}
show_curves(results, "dqn", "insertion", confidence=cfg.confidence, n_resamples=cfg.n_resamples, seed=cfg.seed)

# %% [markdown]
# Then the official Mask-A3C agent, with the state value and the policy probability:

# %% mystnb={"figure": {"caption": "Insertion curves of the official Mask-A3C agent: mean over the explained states and 95 % moving-block bootstrap band, per substrate (columns) and measure (rows: state value V, policy probability of the action); dashed black: random map.", "name": "fig-degradation-insertion-mask-a3c"}}
show_curves(results, "mask_a3c", "insertion", confidence=cfg.confidence, n_resamples=cfg.n_resamples, seed=cfg.seed)

# %% [markdown]
# A curve need not rise monotonically: a half-revealed state can look more promising to
# the agent than the state itself, and the Q-ratio and the value can overshoot their clean
# level. The AUC then rewards maps that reveal such pixels first. For the state value V
# this goes so far that the measure is useless for ranking maps; the section on the state
# value below shows why.
#
# ## Deletion curves
#
# Deletion runs the same paths backwards: the most salient pixels are destroyed first, so
# a faithful method makes the curve fall early, below the random map.

# %% mystnb={"figure": {"caption": "Deletion curves of the study's DQN agent: mean over the explained states and 95 % moving-block bootstrap band; lower is better; dashed black: random map.", "name": "fig-degradation-deletion-dqn"}}
show_curves(results, "dqn", "deletion", confidence=cfg.confidence, n_resamples=cfg.n_resamples, seed=cfg.seed)

# %% [markdown]
# And for the official Mask-A3C agent:

# %% mystnb={"figure": {"caption": "Deletion curves of the official Mask-A3C agent: mean over the explained states and 95 % moving-block bootstrap band; lower is better; dashed black: random map.", "name": "fig-degradation-deletion-mask-a3c"}}
show_curves(results, "mask_a3c", "deletion", confidence=cfg.confidence, n_resamples=cfg.n_resamples, seed=cfg.seed)

# %% [markdown]
# Huber et al. did not use deletion. It asks the complementary question: not "which pixels
# suffice" but "which pixels are necessary".
#
# ## AUC tables beside the paper's
#
# Huber et al. report one table per substrate and measure: the mean ± standard deviation of
# the insertion AUC over 997 states per game, the best non-random method in bold. The
# tables below keep their layout and their numbers (reference notes §6.1) and add our
# agents as further rows, bold marking our best non-random method the same way. Our methods
# that the paper did not run are extra columns; the paper's LIME variants that the study
# does not run are NA in our rows. The Mask-A3C rows show the measure in the same role
# (named in the row), on another scale; its state value V has no row (see the section on
# the state value).

# %%
summary = auc_summary(results, confidence=cfg.confidence, n_resamples=cfg.n_resamples, seed=cfg.seed)
show_paper_table(summary, "black", "q_ratio", "Black insertion, Q-value measure: insertion AUC, mean ± std over states.")

# %% [markdown]
# The same substrate with the advantage measure:

# %%
show_paper_table(summary, "black", "advantage",
                 "Black insertion, advantage measure: insertion AUC, mean ± std over states.")

# %% [markdown]
# Random insertion, first with the Q-value measure:

# %%
show_paper_table(summary, "random", "q_ratio",
                 "Random insertion, Q-value measure: insertion AUC, mean ± std over states.")

# %% [markdown]
# and with the advantage measure:

# %%
show_paper_table(summary, "random", "advantage",
                 "Random insertion, advantage measure: insertion AUC, mean ± std over states.")

# %% [markdown]
# The paper's standard deviations are large compared with the differences between the
# methods. The Q-ratio is unstable when the clean Q-value is near zero or negative; the
# reference notes take this to explain the paper's negative means under random insertion.
#
# The blur substrate and deletion have no counterpart in the paper. The next two tables
# list every setting of each of our agents.

# %%
show_auc_table(summary, "dqn", "Study's DQN agent: AUC (mean ± std over states) in every setting; "
               "bold: best non-random method (insertion: highest, deletion: lowest).")

# %% [markdown]
# The same for the official Mask-A3C agent:

# %%
show_auc_table(summary, "mask_a3c", "Official Mask-A3C agent: AUC (mean ± std over states) in every "
               "setting; bold: best non-random method (insertion: highest, deletion: lowest).")

# %% [markdown]
# ## The state value V is degenerate
#
# Insertion and deletion assume that the substrate takes away what the measure follows:
# the curve should run from the measure's level on the substrate to its level on the clean
# state, and a faithful map makes it get there early (insertion) or leave early
# (deletion). The next table checks this for every measure and substrate from the stored
# curves: the mean of the measure on the clean state and on the substrate, their gap
# relative to the largest swing of a method's mean curve along the path, the highest point
# of a mean curve relative to the clean value, and where the random map ranks. The rule,
# fixed before looking: a measure is **degenerate** on a substrate when the random map has
# the best insertion AUC *and* the worst deletion AUC, that is, when the metric rewards
# disturbing the image rather than the order of the map.

# %%
show_table(measure_degeneracy(results, mean_curve_table(cfg, results)),
           "Does the substrate move the measure? Mean on the clean state and on the substrate, their gap over the "
           "largest swing of a mean curve, the highest point of a mean curve over the clean value, and the random "
           "map's rank by mean AUC (1 = best) under insertion and deletion among the methods.", digits=2,
           formats={"peak": "{:.1f}", "random_insertion": "{:.0f}", "random_deletion": "{:.0f}", "methods": "{:.0f}"},
           names={"substrate_value": "Substrate value", "gap_share": "Gap / swing", "peak": "Peak / clean",
                  "random_insertion": "Random map, insertion", "random_deletion": "Random map, deletion"})

# %% [markdown]
# Where a row is degenerate, its numbers say why: the substrate leaves the measure near its
# clean level, while half-revealed inputs push it far above. The Mask-A3C agent's "black"
# substrate is the running mean of its standardised input, an average grey screen, and to the
# value head that screen looks about as promising as the real one. V therefore stays out of
# every ranking, every bold "best method" and the comparison with the paper, whatever the
# check says for one agent: a normalised measure (V − V on the substrate) / (V on the clean
# state − V on the substrate) would divide by about zero, and a substrate that moves V would
# need a new sweep. Its curves and AUCs above are shown for what they are. The policy
# probability, the Mask-A3C agent's measure in the action role, is not affected. The check
# compares means only, so a row on a handful of states (the column "States") says little.
#
# ## Rankings and significance
#
# A difference of means says little with few states and large spreads. For each agent,
# experiment, substrate and measure we therefore rank the methods by their mean AUC and
# compare every pair on the same states with a paired test on the differences, a t test on
# their effective sample size, Holm-corrected over all pairs of the setting
# {cite}`holm1979simple` (`saliency_lib.metrics.ranking_table`). A Wilcoxon signed-rank test
# {cite}`wilcoxon1945individual` would treat the states as independent and find differences
# that the trajectory does not support. A pair whose differences are worth fewer than
# {glue:text}`min_ess` effective states is not tested, so no difference is called significant
# there. The table counts, per agent,
# the pairwise differences significant at a family-wise level of {glue:text}`alpha` per setting,
# the method × setting cells significantly better or worse than the random map, and the
# settings where the random map has the best mean. The state value V is not ranked.

# %%
ranks = rankings(results, alpha=cfg.alpha, confidence=cfg.confidence, n_resamples=cfg.n_resamples, seed=cfg.seed)
show_table(significance_counts(ranks), "Significant differences per agent (paired tests on the ESS, Holm): "
           "states, the range of the ESS, settings, significant pairs of all pairs, cells better or worse than the "
           "random map of all method × setting cells, and settings where the random map has the best mean.",
           names={"ess": "ESS"})

# %% [markdown]
# In the tables below, each cell holds a method's rank and mean AUC in one setting. **Bold**:
# the method is in the top group (no method is significantly better). Green: significantly
# better than the random map; red: significantly worse. Rows are sorted by the mean rank.

# %%
show_rankings(ranks, "dqn", "insertion", "Study's DQN agent, insertion: rank (mean AUC) per substrate and measure.")

# %% [markdown]
# The Mask-A3C agent under insertion:

# %%
show_rankings(ranks, "mask_a3c", "insertion",
              "Official Mask-A3C agent, insertion: rank (mean AUC) per substrate and measure.")

# %% [markdown]
# And both agents under deletion, where lower AUCs rank first:

# %%
show_rankings(ranks, "dqn", "deletion",
              "Study's DQN agent, deletion: rank (mean AUC, lower is better) per substrate and measure.")

# %%
show_rankings(ranks, "mask_a3c", "deletion",
              "Official Mask-A3C agent, deletion: rank (mean AUC, lower is better) per substrate and measure.")

# %% [markdown]
# The full ranking of the paper's first setting, black insertion with the value measure,
# lists the confidence intervals and every significant difference.
# The Mask-A3C agent's value measure is V, which is not ranked, so its detail uses the
# action measure, the policy probability.

# %%
show_ranking_detail(ranking_detail(ranks, "dqn"), "ranking with 95 % CIs, the effective sample sizes and the "
                    "significant differences (Holm-corrected paired tests).")

# %%
show_ranking_detail(ranking_detail(ranks, "mask_a3c", role="action"), "ranking with 95 % CIs, the effective sample "
                    "sizes and the significant differences (Holm-corrected paired tests).")

# %% [markdown]
# ## The two factors
#
# Huber et al. conclude that two factors decide which saliency method to choose for
# fidelity (reference notes §7). The first is **what is explained**: the agent's estimate
# of the state's value (their Q-value measure) or its choice of action (the advantage).
# The second is the **substrate**: which kind of "missing information" the insertion
# starts from. The next table reads both off their tables and ours: per source and
# substrate, the best non-random method under the value and under the action measure, the
# rank correlation of the method means under the two measures (factor 1), the rank
# correlation with the black substrate's order (factor 2), and whether the random map has the
# highest mean of all methods.

# %%
factor_table = factors(summary)
for key, value in paper_factor_counts(factor_table).items():
    glue(f"paper_{key}", value, display=False)
show_factors(factor_table, "The two factors under insertion: best non-random method per measure role, Spearman ρ of "
             "the method means between the two measures and with the black substrate, and whether the random map "
             "has the best mean.")

# %% [markdown]
# In Huber et al.'s tables, the best non-random method differs between the Q-value and the
# advantage measure in {glue:text}`paper_roles_differ_black` of {glue:text}`paper_games` games under black
# insertion and in {glue:text}`paper_roles_differ_random` under random insertion; it differs between the
# black and the random substrate in {glue:text}`paper_substrates_differ_value` games for the Q-value and
# {glue:text}`paper_substrates_differ_action` for the advantage. SARFA is best under black insertion
# with the advantage in {glue:text}`paper_sarfa_best`; under random insertion with the advantage the
# random map has the highest mean of all columns in {glue:text}`paper_random_first`.
#
# Our rows ask the same questions of our agents (an agent whose value measure is degenerate has
# none). They give the order of the means only, and the rankings above say which differences
# are significant. The reference notes read the paper's substrate
# factor as a match between perturbation and substrate (§6.2): occlusion, SARFA and LIME black
# out regions and look better under black insertion, while RISE and Noise Sensitivity (which
# blurs) look better under random insertion. A winner that changes while few differences are
# significant is weak evidence for a factor at this number of states.
#
# ## Against the paper
#
# Huber et al.'s numbers come from their own agents and 997 states per game, ours from the
# study's agents and the states of the profile. Absolute AUCs therefore need not agree, but
# the order of the methods should, if the finding is robust. For the chapter's game, the
# table puts both side by side for the methods that both studies ran: the mean insertion
# AUC and, in brackets, the rank among these methods (1 = highest).

# %%
side = side_by_side(summary, cfg.game)
show_side_by_side(side, f"{cfg.game}, insertion: Huber et al.'s mean AUC (997 states) beside ours, with the rank "
                  "among the common methods in brackets; columns: substrate and the paper's measure.")

# %% [markdown]
# The rank correlation between the paper's and our means summarises each setting. With only
# the few methods that both studies ran, a rank correlation needs to be large to be
# significant, and it says nothing where our means rest on fewer than {glue:text}`min_ess`
# effective states (the column ESS). The last columns say whether the random map comes first, or last, among the
# common methods, in the paper's table and in ours: where ours comes first and the paper's
# does too, that is their finding as much as ours.

# %%
agreement = rank_agreement(side)
show_agreement(agreement, "Rank agreement between Huber et al.'s and our insertion AUCs over the common methods: "
               "states and effective states behind our means, Spearman ρ and Kendall τ with p-values, best "
               "non-random method, random map first and last.")

# %% [markdown]
# The same comparison on the stored paper-scale study, over every state it holds of this
# game (nothing is computed here; a game it has not reached says so):

# %%
study = study_agreement(cfg, cfg.game)
show_agreement(study, f"The paper-scale study, {cfg.game}: rank agreement with Huber et al.'s insertion AUCs, as above.")

# %% [markdown]
# Counted per source:

# %%
show_table(agreement_counts({"this chapter": agreement, "paper-scale study": study}),
           "Settings where our order of the mean AUCs agrees with the paper's significantly (Spearman ρ > 0, p < "
           "0.05, on means worth the minimum ESS; withheld: settings below it), the best non-random common method "
           "is the same, whether the random map comes last agrees, and the random map comes first (in ours; in the "
           "paper's too).", names={"ess": "ESS"})

# %% [markdown]
# ## Per game: the paper's AUCs beside ours
#
# Rank agreement compares orders. The next tables compare the values themselves, for
# every game of the paper: the paper's mean insertion AUC over 997 states beside our DQN
# agent's mean, with its 95 % CI, the number of states and their effective number (ESS). The
# verdict is an equivalence test with a margin stated before looking: a quarter of the
# paper's per-state standard deviation of that AUC (`saliency_study.evidence.INSERTION_MARGIN_SD`),
# since the AUCs' scales differ by two orders of magnitude between games, measures and
# substrates. The difference between ours and the paper's, with its 90 % interval widened by
# the paper's own sampling error, is **reproduced** when the interval lies inside the margin,
# **differs** when it lies outside, **inconclusive** when it straddles it, **withheld** below
# {glue:text}`min_ess` effective states, and **not yet run** for a game the study has not
# reached. The margin and the difference are in the table. The paper's numbers come from the
# committed extract of its result files (`data/reference/huber2021/`); ours are the stored
# paper-scale study (the parameter `study_profile`, `full` unless changed), whatever profile
# builds the chapter, and nothing is computed here. Only the DQN agent is compared: its measures are
# the paper's own, while the Mask-A3C agent's are analogues on another scale.

# %%
aucs = insertion_aucs(cfg.study_profile, seed=cfg.seed, results_dir=cfg.results_dir)
games_table = per_game(aucs, confidence=cfg.confidence)
for g in GAME_ORDER:
    display(show_comparison(games_table, f"{GAME_LABELS[g]}, insertion AUC: Huber et al.'s mean over 997 states "
                            "beside our DQN agent's mean [95 % CI], the states and their effective number (ESS), "
                            "the margin, the difference [90 % interval] and the verdict.", game=g))

# %% [markdown]
# Counted per game:

# %%
show_table(verdict_counts(games_table, by="game"), "Verdicts against Huber et al.'s insertion AUCs, per game, with the most "
           "states behind one.")

# %% [markdown]
# Pooled over the games we have run, every state counting once, with a 99 % interval that
# keeps each game's own dependence (each game's standard error on its own ESS, then
# combined), beside the paper's mean over the same games:

# %%
show_comparison(pooled(aucs), "Insertion AUC pooled over the games we have run, every state counting once: Huber et "
                "al.'s mean over the same games beside ours [99 % CI: each game on its own ESS, then combined], "
                "states and ESS, the margin, the difference and the verdict.")

# %% [markdown]
# ## A mean that a few states can carry
#
# A Q-ratio AUC divides by the clean Q(a) of its state, so a state whose Q(a) is near zero
# gives an AUC of thousands, and a mean over 997 states follows those few. The paper reports
# means; beside ours, the median and the interquartile mean (the mean of the middle half of
# the states) are aggregates that such states cannot carry. For the chapter's game, per
# method, substrate and measure of the stored study:

# %%
robust = robust_aucs(aucs[aucs["game"] == cfg.game])
show_table(robust.drop(columns="game"), f"{GAME_LABELS.get(cfg.game, cfg.game)}, insertion AUC of the stored study: "
           "the mean (the paper's aggregate), the median and the interquartile mean over the states, beside Huber et "
           "al.'s mean.", digits=3)

# %% [markdown]
# ## Huber et al.'s §6.2 ablation
#
# The paper's ablation replaces Occlusion's black patch by a gray one and SARFA's black disks
# by blurred ones, and reports how the insertion AUCs move. The study computes both variants
# on the same states as the main methods, so each change is a paired difference. The table
# puts the paper's change beside ours, with our 95 % interval and paired test, for every game
# the stored study holds; "agrees" and "opposite" are said only for our changes significant
# at 5 %. Ours agree in direction with the paper's in {glue:text}`ablation_agree` of our
# {glue:text}`ablation_significant` significant changes ({glue:text}`ablation_changes`
# changes in all).

# %%
ablation = ablation_table(insertion_aucs(cfg.study_profile, seed=cfg.seed, results_dir=cfg.results_dir,
                                         methods=(*PAPER_METHODS, *ABLATION_METHODS)))
significant = ablation[ablation["direction"] != "not significant"]
glue("ablation_changes", len(ablation), display=False)
glue("ablation_significant", len(significant), display=False)
glue("ablation_agree", int((significant["direction"] == "agrees").sum()), display=False)
show_table(ablation.drop(columns=["ablated"]), "Huber et al.'s §6.2 ablation beside ours: the paper's mean AUC "
           "with the main method and with its ablated variant and their change; our change (ablated − main on the "
           "same states) [95 % interval], its p-value, states and effective states, and whether its direction agrees "
           "with the paper's.", digits=3)

# %% [markdown]
# For the DQN agent the measures are the paper's own, so agreement means that the paper's
# order carries over to another agent of the same architecture. For the Mask-A3C agent the
# comparison is by role only: another network, another training algorithm and other
# measures.
#
# ## Which output did the paper explain?
#
# One difference between the paper's agents and ours may matter more than the rest. Our
# DQN agents are dueling networks, and their Q-value is V(s) + A(s, a) − mean A. Huber et
# al.'s Keras agents may be the *advantage stream* alone of dueling networks: the converter
# they used builds the dueling graph but saves only the action stream (reference notes §1.3
# leave this open). Their "Q-value" would then be the un-centred advantage A(s, a). Its
# greedy action is the same, but its level carries no meaning: it can be small or negative,
# and the Q-ratio divides by it.
#
# Our agents are dueling too, so we can read the same network both ways. The agent spec
# `advstream:<agent>` loads the advantage stream alone of a dueling DQN agent
# (`saliency_lib.agents.advantage_stream_agent`). The next cell explains it with the paper's
# methods, on the same states and with the same parameters as above, and runs the paper's
# insertion benchmark on it (black and random substrates).

# %%
stream = stream_results(cfg, results)
show_table(clean_outputs(cfg, stream), "The explained output on the clean states (the Q-ratio's denominator), for "
           "the action the agent takes, in both readings of the study's DQN agent. Near 0: |output| below a tenth of "
           "the median |Q(a)|.", index=["reading"], formats={"negative": "{:.0%}", "near_zero": "{:.0%}"},
           names={"reading": "Explained output", "mean": "Mean", "negative": "Below 0", "near_zero": "Near 0"})

# %% [markdown]
# The rank agreement with the paper, as in the previous section, now for both readings;
# the last column counts the common methods whose mean AUC is negative.

# %%
both = stream_agreement(results, stream, cfg.game, confidence=cfg.confidence, n_resamples=cfg.n_resamples,
                        seed=cfg.seed)
for key, value in stream_better(both).items():
    glue(f"stream_{key}", value, display=False)
show_agreement(both, "Rank agreement with Huber et al.'s insertion AUCs for the full Q-values of the study's DQN "
               "agent and for its advantage stream alone (states and effective states, Spearman ρ and Kendall τ with "
               "p-values, best non-random method, random map first and last, negative means).")

# %% [markdown]
# The advantage stream's method order agrees better with the paper's (a higher Spearman ρ)
# in {glue:text}`stream_better` of {glue:text}`stream_settings` settings.
#
# The advantage measure, A(a) − mean A, is the same function of the network in both
# readings, so there only the maps differ: the explainers follow A(a) instead of Q(a). The
# Q-ratio changes in both its maps and its values. If the advantage-stream reading agrees
# better with the paper, in particular if it turns the Q-ratio AUCs under random insertion
# negative as in the paper, that supports the reading of the paper's agents as advantage
# streams; it would also mean that the paper's Q-value measure followed the advantage, not
# the agent's estimate of the state's value. One agent and one game cannot settle it.
#
# ## Summary
#
# * Insertion and deletion score a saliency map by how fast the agent's output recovers
#   (insertion) or collapses (deletion) when pixels are revealed or destroyed in the map's
#   order. The substrate that stands in for missing pixels is a choice: black, noise or blur.
# * The tables put Huber et al.'s insertion AUCs beside ours in their layout and, per game,
#   with our CIs, the effective sample size, the margin, the difference and an equivalence
#   verdict; the rankings say which differences are significant after the Holm correction,
#   and none is called significant on fewer than {glue:text}`min_ess` effective states.
# * The state value V of the Mask-A3C agents is degenerate as an insertion/deletion
#   measure: the substrate leaves it at its clean level, and the random map scores best on
#   insertion and worst on deletion. No map is ranked on it.
# * The tables say whether the best method depends on what is explained (value or action)
#   and on the substrate, in the paper and here, and how far the paper's method order carries
#   over to the study's agents.
