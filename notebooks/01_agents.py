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
# (chapter-agents)=
# # Agents
#
# Every explanation in this book explains one particular agent, so we first meet the
# agents. There are two kinds. The **DQN agents** are our own: a Nature-DQN network
# {cite}`mnih2015human` with double and dueling heads, on the preprocessing and rewards of
# {cite:t}`huber2022benchmarking`. They were *not* trained the way Huber et al. trained
# theirs: our trainer, budget, replay and network layout differ from the paper's, and
# {ref}`agents-deviations` lists every difference. The **Mask-A3C agents** are the
# checkpoints released by {cite:t}`itaya2021visual`: actor-critics whose policy
# and value branches each carry a spatial attention mask, which is their explanation. On
# Breakout we add actor-critic agents of our own, trained with a synchronous version of
# Itaya et al.'s trainer; the same section lists how it differs.
#
# This chapter checks that the agents play well enough for their explanations to matter,
# shows how they learned, and lets you watch them play. All the work is done by
# `saliency_book.ch1_agents` and `saliency_book.ch1_deviations`; the cells below only call them.

# %% [markdown]
# ## Parameters
#
# The next cell holds the chapter's parameters. Papermill replaces them, for instance
# `papermill notebooks/01_agents.ipynb out.ipynb -p game MsPacman`; `None` means "the
# value of the execution profile" ({doc}`../reproduce` describes the profiles).

# %% tags=["parameters"]
game = "Breakout"  # Atari game
agent = None  # agent spec (directory, official:<Game>, ...); None: the study's
train = False  # train a DQN agent here; later chapters then explain it
frames = None  # frames to train for; None: the profile's value
profile = "quick"  # "tiny", "quick" or "full"
seed = 0  # seed of the evaluation games, GIFs and training
device = "cpu"  # torch device
results_dir = "data/results"  # result cache, relative to the repository

# %% [markdown]
# The parameters become the chapter's frozen configuration. The profile adds how many
# games to play, how long the GIFs run and which official games to re-evaluate.

# %%
from myst_nb import glue

from saliency_book.ch1_agents import (
    AgentsChapter,
    agent_gif,
    all_scores,
    chapter_scores,
    choose_agent,
    learning_curves,
    official_curve,
    official_curves_tabs,
    official_scores,
    show_official,
    show_scores,
)
from saliency_book.ch1_deviations import methods_table, show_methods, show_training, training_table
from saliency_study.scores import beats_random

cfg = AgentsChapter(game=game, agent=agent, train=train, frames=frames,
                    profile=profile, seed=seed, device=device,
                    results_dir=results_dir)
cfg

# %% [markdown]
# Every number below depends on these settings. In the `tiny` profile, used by the test
# suite, the games are cut short and the scores mean nothing.
#
# ## The agent explained
#
# `choose_agent` takes the `agent` parameter if one is given. If `train` is true, it trains
# a DQN agent with `saliency_lib.train.train_dqn`. Otherwise it uses the agent recorded for
# the study, or the one shipped in `data/agents`.

# %%
choice = choose_agent(cfg)
choice

# %% [markdown]
# A trained agent is recorded in `_local/study_agents.json` in the results directory,
# so every later chapter explains it too, through `saliency_study.catalog.study_agent`.
#
# ## How well do the agents play?
#
# Explanations of an agent that has not learned the game tell us little, so we first check
# the scores. Huber et al. did not publish their agents' scores. We therefore compare
# with random play, the professional human tester and Nature DQN after its full 200 M
# frames {cite}`mnih2015human`. Our agents train for 10 M frames, so two columns give DQN
# at that budget: the Nature-DQN baseline of {cite:t}`pritzel2017neural` (their Table 3),
# and Dopamine's DQN {cite}`castro2018dopamine` over frames 9–10 M. Dopamine plays with
# sticky actions and reports the return of an iteration, so read it as a second opinion
# on the level, not as the same protocol. We also add the official Mask-A3C checkpoint, as
# re-evaluated in the last section.

# %%
official = official_scores(cfg)
scores = chapter_scores(cfg, choice, official)
caption = (f"Scores on {cfg.game}: greedy games, raw game score (all lives). "
           "Random, human and Nature DQN (200M frames): Mnih et al. (2015); DQN at 10M frames: "
           "Pritzel et al. (2017, Table 3) and Dopamine (Castro et al. 2018, mean of 5 runs).")
show_scores(scores, caption)

# %% [markdown]
# The human-normalised column puts all agents on one scale: 0 % is random play and 100 %
# is the human tester. Scores marked "here" were evaluated in this chapter, on the few
# games of the profile. They show that the agent plays; they are not a benchmark.

# %% [markdown] tags=["all-games"]
# The table below lists every agent we trained and shipped, for all games. Each was
# scored over 10 greedy games when it was shipped, with the evaluation protocol of its
# network: a DQN agent's first game starts from Huber et al.'s fixed start and the others
# after 1 to 30 NOOPs; an actor-critic agent plays with Itaya et al.'s wrappers.

# %% tags=["all-games"]
shipped = all_scores(cfg)
caption = ("All shipped agents: greedy games when shipped (data/agents/scores.csv), raw game score; "
           "× random: the score divided by random play's.")
show_scores(shipped, caption)

# %% [markdown] tags=["all-games"]
# We count a DQN agent as having learned its game when it scores at least three times as much as
# random play (the "× random" column; a game where random play scores zero or less, such as Pong,
# gives no ratio).

# %% tags=["all-games"]
for key, n in beats_random(shipped, factor=3.0).items():
    glue(f"dqn_{key}", n, display=False)

# %% [markdown] tags=["all-games"]
# Of the {glue:text}`dqn_scored` shipped DQN agents with a score, {glue:text}`dqn_judged` can be
# compared with random play, and {glue:text}`dqn_beat` of those score at least three times as much.

# %% [markdown]
# ## How the agent learned
#
# The training log shows how the score grew over the run. Dots are single training games,
# played with ε-greedy exploration. The line is their rolling mean. Orange points are
# the greedy evaluations made during training.

# %% mystnb={"figure": {"caption": "Learning curve of the chapter's DQN agent (or of the training run in progress for the game): training games, their rolling mean and greedy evaluations, with random play and Nature DQN as references.", "name": "fig-agents-learning-curve"}}
learning_curves(cfg, choice)

# %% [markdown]
# When the run is still in progress, the x-axis covers the whole planned run, so the
# curve shows how far training has got. Training games score below the greedy
# evaluations because of their exploration.
#
# ## Watching the agents play
#
# Numbers hide how an agent plays. The GIF shows the first steps of a greedy game of our
# DQN agent, from the fixed start that Huber et al. use for their benchmark states.

# %% mystnb={"figure": {"caption": "The chapter's DQN agent playing greedily from Huber et al.'s fixed start (every third step shown).", "name": "fig-agents-gif-dqn"}}
agent_gif(choice.spec, cfg)

# %% [markdown]
# The Mask-A3C agent carries its explanation with it. Next to each frame, the GIF shows the
# policy mask (middle) and the value mask (right). Each mask is upsampled back through the
# crop, as the official visualiser does, and drawn with the perceptually uniform *inferno*
# colormap, normalised over the episode.

# %% mystnb={"figure": {"caption": "The official Mask-A3C agent playing greedily: frame, policy mask and value mask (inferno colormap: dark = low, yellow = high attention).", "name": "fig-agents-gif-mask-a3c"}}
agent_gif(f"official:{cfg.game}", cfg)

# %% [markdown]
# The policy mask is sparse and follows a few objects, while the value mask covers more of
# the screen. A later chapter asks whether perturbation saliency maps agree with these masks.
#
# ## The official Mask-A3C checkpoints
#
# Itaya et al. released one training run per game, with its best checkpoint and a log of
# greedy test games played during training. We re-evaluate each checkpoint on today's
# emulator and compare with the level its log reached: the mean of the last 100 test games.

# %%
caption = ("Official Mask-A3C checkpoints: our greedy re-evaluation next to "
           "the level logged by the official runs (last 100 test games).")
show_official(official, caption)

# %% [markdown]
# A ratio near 1 means that the checkpoint still plays at its logged level. Few games make
# the ratio noisy. Games capped at 10 000 agent steps (Breakout, BeamRider and Space
# Invaders often reach the cap) bound the score from above.
#
# The official test log of the chapter's game shows the whole training run behind its
# checkpoint.

# %% mystnb={"figure": {"caption": "Official Mask-A3C test log: each dot is one greedy test game played during training; the line is the rolling mean over 100 games; the dashed line is the level of the last 100 games.", "name": "fig-agents-official-curve"}}
official_curve(cfg.game)

# %% [markdown]
# The test games keep a wide spread until the end of training. One checkpoint's score
# from a few games is therefore a rough estimate of the run's level. The tabs below show
# the logs of all official games.

# %%
official_curves_tabs(cfg.official_games)

# %% [markdown]
# The games differ widely in how fast and how steadily the agent learned. Space Invaders,
# for instance, improves late in training.

# %% [markdown] tags=["all-games"]
# (agents-deviations)=
# ## How our agents differ from the papers' agents
#
# Our agents were trained here, not taken from the papers, so their training differs from
# Huber et al.'s DQN agents and from Itaya et al.'s released runs. The table lists every
# setting that differs, with the paper's value as the project's reference notes on each
# paper give it (their section and, where the value is inferred rather than stated, that
# mark). Our values are read from the shipped agents' metadata (`data/agents/*/meta.json`),
# so the table follows the agents.

# %% tags=["all-games"]
training = training_table(cfg.agents_dir)
caption = ("How our shipped agents were trained, where it differs from the papers' agents. Theirs: the reference "
           "notes on Huber et al. (2022) and Itaya et al. (2021), with their sections; ours: data/agents/*/meta.json.")
show_training(training, caption)

# %% [markdown] tags=["all-games"]
# The same comparison also finds the settings that are the papers':

# %% tags=["all-games"]
show_training(training, "Settings of our shipped agents that are the papers' (same comparison, same sources).",
              matching=True)

# %% [markdown] tags=["all-games"]
# We expect two deviations to matter most for the explanations. Our DQN agents learned for fewer
# frames, so their maps may explain weaker players. Their network is dueling and pads
# differently, so the Q-values that the explainers and the insertion metric read are not
# computed the way the paper's were; chapter 4 explains the advantage stream alone to
# measure how much that changes.
#
# (methods-deviations)=
# ### Explainers and metrics
#
# The explainers and metrics follow Huber et al.'s code, parameter for parameter, with the
# deviations and additions below. Each row names the docstring that documents it, and the
# rows that depend on the execution profile are generated from it. Both tables come from one
# data file, `saliency_study/data/deviations.yaml`.

# %% tags=["all-games"]
caption = (f"Deliberate deviations (changed) and additions (added) of the explainers and metrics, profile "
           f"'{cfg.profile}'. Theirs: the reference notes on Huber et al. (2022) and Itaya et al. (2021).")
show_methods(methods_table(cfg.profile), caption)

# %% [markdown]
# ## Summary
#
# * The study explains one DQN agent per game (shipped in `data/agents`, or trained here
#   with `-p train true`) and the official Mask-A3C agents.
# * Our agents were not trained as the papers' were; {ref}`agents-deviations` lists each
#   difference, and {ref}`methods-deviations` those of the explainers and metrics.
# * The score table compares them with random play, the human tester and Nature DQN. The
#   official table checks that the released checkpoints still reach their logged level.
# * The next chapters compute saliency maps for these agents and test how far the maps
#   can be trusted.
