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
# (chapter-gallery)=
# # The explainer gallery
#
# Before we test how far saliency maps can be trusted, we look at them. This chapter
# computes every saliency method of the study on the same few states of a game and shows
# the maps side by side, for the official Mask-A3C agent of {cite:t}`itaya2021visual` and
# for the study's DQN agent when one exists. The states are chosen by HIGHLIGHTS-DIV
# {cite}`amir2018highlights`, as in the example figures of {cite:t}`huber2022benchmarking`.
#
# All the work is done by `saliency_book.ch2_gallery`; the cells below only call it.
# Maps are cached under the results directory, so a second run only draws them.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/02_gallery.ipynb out.ipynb -p game MsPacman`. `None` means "the
# value of the execution profile" ({doc}`../reproduce` describes the profiles).

# %% tags=["parameters"]
game = "Breakout"  # Atari game
agent = None  # agent spec; None: the study's DQN agent (an official:<Game> spec replaces the Mask-A3C agent)
methods = None  # registry names, e.g. "occlusion,rise"; None: every applicable method
n_states = None  # HIGHLIGHTS-DIV states per agent; None: the profile's (at most 5)
profile = "quick"  # "tiny", "quick" or "full"
seed = 0  # seed of the greedy trajectory
device = "cpu"  # torch device
results_dir = "data/results"  # result cache, relative to the repository

# %% [markdown]
# The parameters become the chapter's frozen configuration. The profile decides how many
# states are explained and how long the trajectory is that they are chosen from.

# %%
from saliency_book.ch2_gallery import (
    GalleryChapter,
    agreement_extremes,
    compute_gallery,
    games_gallery,
    show_agreement,
    show_extremes,
    show_gallery,
    show_gallery_tabs,
    show_games,
    show_states,
)
from saliency_book.common import chapter_agents, describe_agents

cfg = GalleryChapter(game=game, agent=agent, methods=methods, n_states=n_states, profile=profile,
                     seed=seed, device=device, results_dir=results_dir)
cfg

# %% [markdown]
# In the `tiny` profile, used by the test suite, the methods run with coarse parameters on
# a short trajectory, and the maps mean little.
#
# ## The agents and their states
#
# The chapter explains two agents for its game: the study's DQN agent (or the `agent`
# parameter) and the official Mask-A3C checkpoint. Either may be missing.

# %%
dqn, mask_a3c = chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)
describe_agents([dqn, mask_a3c])

# %% [markdown]
# Each agent plays one greedy trajectory from the fixed start of Huber et al. (Mask-A3C:
# from its own reset). HIGHLIGHTS-DIV then picks the states where the agent's best action
# beats the runner-up by the widest margin (the difference of the two highest Q-values or
# policy logits). It skips states less than 20 steps away from a chosen one, and states
# that look too much like a chosen one (or its neighbours) in the network's penultimate
# layer. Huber et al. use a budget of 5 states, context 10, gap 10 and the 3rd percentile
# of the pairwise feature distances as the diversity threshold. The states are ordered
# from the most important one.
#
# ## The methods
#
# Every method returns one map per state at the agent's input resolution (84 × 84 for the
# DQN agent, 80 × 80 for Mask-A3C), higher meaning more important. All explain the action
# the agent takes, unless said otherwise.
#
# Occlusion {cite}`zeiler2014visualizing`
# : covers one 2 × 2 patch at a time with black (in all stacked frames) and records how
#   far the score of the explained action falls.
#
# Noise Sensitivity, original {cite}`greydanus2018visualizing`
# : blurs a small disk around each point of a grid and measures how much the whole vector
#   of action scores changes. It does not depend on which action is explained.
#
# Noise Sensitivity, chosen action
# : Huber et al.'s fix of the original: the same blur, but the score is the drop of the
#   explained action's softmax probability.
#
# SARFA {cite}`puri2020explain`
# : blacks out disks and combines how much the explained action's probability falls with
#   how little the other actions' relative probabilities change.
#
# RISE {cite}`petsiuk2018rise`
# : multiplies the state with 1 000 random masks (coarse random binary grids, upsampled
#   smoothly) and averages the masks, each weighted by the score it leaves the explained
#   action.
#
# LIME (SLIC) {cite}`ribeiro2016why`
# : cuts the state into superpixels, switches random subsets of them to black and fits a
#   linear model of the score on which superpixels were kept; a superpixel's weight is its
#   saliency.
#
# Gradient {cite}`simonyan2014deep`
# : the absolute gradient of the score with respect to each input pixel, summed over the
#   stacked frames.
#
# Integrated Gradients {cite}`sundararajan2017axiomatic`
# : gradients averaged along the straight path from a black state to the state, times the
#   difference between the two.
#
# Grad-CAM {cite}`selvaraju2017gradcam`
# : the feature maps of the last convolutional layer weighted by their mean gradient,
#   positive part, upsampled to the input.
#
# Random
# : uniform noise, the chance reference of Huber et al.
#
# Policy mask and value mask {cite}`itaya2021visual`
# : the Mask-A3C agent's own attention masks: the 10 × 10 sigmoid masks that multiply the
#   features of its policy and value branches. They are part of the network, not computed
#   after the fact, and exist only for Mask-A3C agents. The value mask explains the value
#   branch rather than the action.
#
# The first five methods and their parameters are Huber et al.'s final ones; the gradient
# methods (through Captum {cite}`kokhlikyan2020captum`) are cheap baselines. For display,
# each map is min-max normalised on its own and drawn over the raw frame with the
# perceptually uniform *inferno* colormap: the colour's weight grows with the saliency,
# so unimportant pixels keep the game's colours. Colours therefore compare pixels within
# one map, not magnitudes across methods.
#
# ## The official Mask-A3C agent
#
# We first compute every applicable method on the Mask-A3C agent's states. The figure
# strip shows which states HIGHLIGHTS-DIV chose.

# %% mystnb={"figure": {"caption": "The HIGHLIGHTS-DIV states of the official Mask-A3C agent, most important first: step of the game, the agent's action and the importance (best minus second-best policy logit).", "name": "fig-gallery-states-mask-a3c"}}
mask_gallery = compute_gallery(cfg, mask_a3c)
show_states(mask_gallery)

# %% [markdown]
# The most important state comes first. Here is every method's map of it.

# %% mystnb={"figure": {"caption": "Every method on the most important HIGHLIGHTS-DIV state of the official Mask-A3C agent, explaining the action it takes. NS original explains all actions at once, the value mask the value branch. Each map is min-max normalised and overlaid on the raw frame (inferno: dark = low, yellow = high); Mask-A3C maps cover the agent's crop of the screen only.", "name": "fig-gallery-mask-a3c"}}
show_gallery(mask_gallery)

# %% [markdown]
# The tabs hold the same figure for the other chosen states.

# %%
show_gallery_tabs(mask_gallery)

# %% [markdown]
# ## The study's DQN agent
#
# The same methods, except the masks that only Mask-A3C has, explain the DQN agent.

# %% mystnb={"figure": {"caption": "The HIGHLIGHTS-DIV states of the study's DQN agent, most important first: step of the game, the agent's action and the importance (best minus second-best Q-value).", "name": "fig-gallery-states-dqn"}}
dqn_gallery = compute_gallery(cfg, dqn)
show_states(dqn_gallery)

# %% [markdown]
# Again the first state, with every method's map.

# %% mystnb={"figure": {"caption": "Every method on the most important HIGHLIGHTS-DIV state of the study's DQN agent, explaining the action it takes; NS original explains all actions at once. Each map is min-max normalised and overlaid on the raw frame (inferno: dark = low, yellow = high).", "name": "fig-gallery-dqn"}}
show_gallery(dqn_gallery)

# %% [markdown]
# The tabs hold the other chosen states.

# %%
show_gallery_tabs(dqn_gallery)

# %% [markdown]
# ## What the maps have in common, and where they differ
#
# Some differences follow from how the methods work, whatever the state. Occlusion, Noise
# Sensitivity and SARFA score a grid of perturbations (every 2 or 3 pixels), so their maps
# have that grid's resolution. RISE's masks vary on the scale of an 8 × 8 grid. LIME gives each
# superpixel one value, so its map is piecewise constant. Gradients vary from pixel to
# pixel. Grad-CAM and the Mask-A3C masks live on a coarse feature grid and are upsampled.
# The random map has no structure at all.
#
# To compare the maps themselves, we compute the Spearman rank correlation between the
# maps of every pair of methods on each state and average it over the states.

# %% mystnb={"figure": {"caption": "Agreement between the methods for the official Mask-A3C agent: Spearman rank correlation between two methods' maps of the same state, averaged over the chosen states.", "name": "fig-gallery-agreement-mask-a3c"}}
show_agreement(mask_gallery)

# %% [markdown]
# The table picks out of the same numbers the most and the least similar pair of methods, how
# far the random map correlates with the others (a chance level for these states), and which
# methods agree most and least with all the others on average.

# %%
show_extremes(agreement_extremes(mask_gallery), "Agreement between the methods for the official Mask-A3C agent: "
              "the extremes of the mean Spearman ρ over the chosen states.")

# %% [markdown]
# The same comparison for the DQN agent:

# %% mystnb={"figure": {"caption": "Agreement between the methods for the study's DQN agent: Spearman rank correlation between two methods' maps of the same state, averaged over the chosen states.", "name": "fig-gallery-agreement-dqn"}}
show_agreement(dqn_gallery)

# %% [markdown]
# And its extremes:

# %%
show_extremes(agreement_extremes(dqn_gallery), "Agreement between the methods for the study's DQN agent: "
              "the extremes of the mean Spearman ρ over the chosen states.")

# %% [markdown]
# These correlations are taken over a handful of states, so they describe these states,
# not the methods in general. Agreement between two methods also does not make either of
# them faithful to the agent; the next chapters test that directly.

# %% [markdown] tags=["all-games"]
# ## Across the four games
#
# Huber et al. benchmark four games that look very different: a ball and a paddle
# (Breakout), a maze with many small objects (Ms. Pac-Man), rows of enemies (Space
# Invaders) and a scene of moving ice floes (Frostbite). Each tab shows every method on
# the most important HIGHLIGHTS-DIV state of the study's DQN agent for that game, chosen
# and computed exactly as above.

# %% tags=["all-games"]
show_games(games_gallery(cfg))

# %% [markdown] tags=["all-games"]
# The methods' parameters are the same for every game, so each map keeps the resolution
# its method gives it: LIME is piecewise constant, the gradients vary from pixel to pixel,
# and the perturbation methods follow their grids. Where a map puts its weight depends
# on the agent and the game. A tab without an agent says how to train one.

# %% [markdown]
# ## Summary
#
# * Every method of the study, perturbation-based, gradient-based, random and, for
#   Mask-A3C, the built-in masks, was computed on the same HIGHLIGHTS-DIV states.
# * The maps differ in resolution and smoothness by construction, and the correlation
#   matrices show how far their rankings of the pixels agree on these states.
# * {doc}`07_explorer` lets you browse the maps by state, method, target and overlay
#   strength.
