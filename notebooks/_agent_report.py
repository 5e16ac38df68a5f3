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
# (agent-report)=
# # One agent, explained
#
# This report explains one agent with the study's methods and tests: how well it plays,
# whether its saliency maps depend on what it learned, and which maps point at the pixels
# that drive its decisions. `saliency-study report` executed this page and the chapters
# that follow for the agent below; the chapters are the study's own, so every table there
# is explained in their text. The work is done by `saliency_book.report.page`; the cells
# below only call it.

# %% tags=["parameters"]
agent = "data/agents/dqn-Breakout-s0"  # the agent of the report (any spec load_agent accepts)
game = "Breakout"  # its game
profile = "quick"  # "tiny", "quick" or "full"
methods = None  # the study's methods of the report, e.g. "occlusion,rise"; None: every applicable one
n_states = None  # states per agent of the sweep; None: the profile's
seed = 0  # seed of the states, the randomisation, the bootstrap and the games
device = "cpu"  # torch device of the maps computed on this page
results_dir = "data/results"  # stored results, relative to the repository
executor = "local"  # executor of sweep units that are not stored yet
threshold = 0.5  # chapter 3's verdict threshold on the Spearman similarity after full randomisation
study_profile = "full"  # the stored study whose agent the verdicts stand beside (computes nothing)

# %%
from myst_nb import glue

from saliency_book.ch4_figures import show_rankings
from saliency_book.report.page import (
    ReportPage,
    agent_scores,
    agent_table,
    degradation_ranks,
    episode_video,
    run_configuration,
    sanity_beside,
    show_sanity_beside,
)
from saliency_book.tables import show_table

cfg = ReportPage(game=game, agent=agent, profile=profile, methods=methods, n_states=n_states, seed=seed,
                 device=device, results_dir=results_dir, executor=executor, threshold=threshold,
                 study_profile=study_profile)
cfg

# %% [markdown]
# ## The agent
#
# What the report explains. The row "explained by default" names the output that every
# explainer and metric of the report reads: the Q-values `q` of a Q-network, the policy
# logits (π) of an actor-critic. A Q-value contains the state's value, which does not
# depend on the action; the chapters therefore also read the advantage (Q minus the mean
# Q) where a measure asks about the choice of action.

# %%
show_table(agent_table(cfg), "The agent of the report.", names={"property": "", "value": ""})

# %% [markdown]
# ## How well does it play?
#
# Greedy games on the deterministic emulator (the papers' protocol), and the same number of
# games with sticky actions (each action repeated with probability 0.25), which a policy
# that memorised one trajectory does not survive. Human-normalised: 0 % is random play,
# 100 % the professional human tester {cite}`mnih2015human`.

# %%
scores = agent_scores(cfg)
show_table(scores, f"Scores of the agent on {cfg.game} (raw game score, all lives), at most "
           f"{cfg.settings['eval_max_steps'] or 'no'} agent steps per game.",
           names={"mean": "Mean", "std": "SD", "normalised": "Human-normalised (%)", "distinct": "Distinct games"},
           formats={"games": "{:.0f}", "distinct": "{:.0f}", "capped": "{:.0f}"})

# %% [markdown]
# The profile sets the number of games (the column "Games"): enough to see whether the agent
# plays, not a benchmark.
#
# ## Do its maps depend on what it learned?
#
# Chapter 3's cascading parameter randomisation, read once every layer is random: the
# Spearman similarity of each method's map to the trained agent's map, with its 95 %
# moving-block bootstrap interval and chapter 3's verdict, beside the same test of the
# study's agent of the same kind on the stored paper-scale study of this game, and beside
# Huber et al.'s mean for the game. Lower is better; a method **passes** when its whole
# interval lies below the threshold, and no verdict rests on fewer states than chapter 3
# asks for.

# %%
beside = sanity_beside(cfg)
show_sanity_beside(beside, "Similarity to the trained agent's map once every layer is random (mean [95 % CI]) and "
                   "chapter 3's verdict: this agent, the study's agent of its kind (stored paper-scale study), and "
                   "Huber et al.'s mean for the game (DQN agents only).")

# %% [markdown]
# Chapter 3 ({ref}`chapter-sanity`) shows every level of the cascade, the three similarity
# measures and the test of the black-screen ties for this agent.
#
# ## Which maps find the pixels that matter?
#
# Chapter 4's insertion and deletion of the pixels in the order of each map, ranked by the
# mean area under the curve (insertion: higher is better; deletion: lower). Bold: no
# method is significantly better; green or red: significantly better or worse than a
# random map (none below chapter 4's minimum of states).

# %%
ranks = degradation_ranks(cfg)
kind = "mask_a3c" if str(cfg.agent).startswith("official:") else "dqn"
show_rankings(ranks, kind, "insertion", "Insertion: the rank of each method (mean AUC) per substrate and measure.")

# %%
show_rankings(ranks, kind, "deletion", "Deletion: the rank of each method (mean AUC) per substrate and measure.")

# %% [markdown]
# Chapter 4 ({ref}`chapter-degradation`) draws the curves and gives the intervals and the
# paired tests behind these ranks.
#
# ## One game, explained frame by frame
#
# A greedy game with one method's map over every frame, the chosen action and the
# agent's output for every action beside it (`saliency_lib.video`; `saliency-study video`
# makes the same for any method and length).

# %% mystnb={"figure": {"caption": "A greedy game of the agent: the map of the method named below over every frame (inferno), the chosen action, and the agent's Q-values or policy beside it.", "name": "fig-report-video"}}
video, video_summary = episode_video(cfg)
glue("video_method", video_summary.get("method") or "–", display=False)
glue("video_frames", video_summary.get("frames") or 0, display=False)
glue("video_rate", float(video_summary.get("maps_per_second") or float("nan")), display=False)
video

# %% [markdown]
# The method is {glue:text}`video_method`: {glue:text}`video_frames` maps, computed at
# {glue:text}`video_rate:.1f` maps per second when the video was made.
#
# ## The run
#
# The parameters of this report and the versions of the packages that computed it.

# %%
show_table(run_configuration(cfg), "Configuration and package versions of the report.",
           names={"setting": "", "value": ""})
