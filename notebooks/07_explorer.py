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
# (chapter-explorer)=
# # The explorer
#
# The gallery of {doc}`02_gallery` shows every method at once on a few states. This chapter
# turns the same maps into an explorer: pick a game, an agent, a state, a method, what the
# map should explain and how strongly it is overlaid on the frame.
#
# The explorer works in two ways. On this static page, without a Python kernel, it switches
# between images rendered when the chapter was executed: the chapter's game, a few states
# and three targets. Run the chapter in Jupyter and the same controls compute any other
# combination on demand: another game, another state of the game, or the map of one
# particular action. All the work is done by `saliency_book.ch7_explorer`.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/07_explorer.ipynb out.ipynb -p game MsPacman`. `None` means "the
# value of the execution profile" ({doc}`../reproduce` describes the profiles).

# %% tags=["parameters"]
game = "Breakout"  # Atari game pre-rendered for the static page
agent = None  # agent spec; None: the study's DQN agent (an official:<Game> spec replaces the Mask-A3C agent)
methods = None  # registry names, e.g. "occlusion,rise"; None: every applicable method
n_states = None  # states pre-rendered for the static page; None: 3 (at most chapter 2's)
profile = "quick"  # "tiny", "quick" or "full"
seed = 0  # seed of the greedy trajectory (as in chapter 2)
device = "cpu"  # torch device
results_dir = "data/results"  # result cache, relative to the repository

# %% [markdown]
# The parameters become the chapter's frozen configuration. The states are those of
# {doc}`02_gallery` with the same profile and seed, so the maps of the agent's action come
# from that chapter's cache.

# %%
from myst_nb import glue

from saliency_book.ch7_explorer import ExplorerChapter, explorer, explorer_stats

cfg = ExplorerChapter(game=game, agent=agent, methods=methods, n_states=n_states, profile=profile,
                      seed=seed, device=device, results_dir=results_dir)
cfg

# %% [markdown]
# ## The controls
#
# * **game** and **agent**: the study's DQN agent or the official Mask-A3C agent. A game
#   other than the chapter's is computed only in Jupyter.
# * **method**: every method of the gallery; the masks exist for Mask-A3C only.
# * **target**: what the map explains. *Agent's action* is the action the agent takes in
#   the state. The *runner-up action* is the one with the second-highest score, the
#   alternative the agent rejected; HIGHLIGHTS-DIV chose states where the two differ most.
#   *State value* explains the value estimate, which only the actor-critic agent has. The
#   entries below these name each action of the game; they are computed in Jupyter only.
#   The random map and the Mask-A3C masks do not depend on the target.
# * **state**: the HIGHLIGHTS-DIV states, most important first.
# * **overlay α**: the colour's weight where the saliency is highest; 1 paints the
#   most salient pixels fully in the colormap's colour.
#
# The next cell renders the images and builds the explorer. Maps that are not yet
# cached are computed first.

# %%
ex = explorer(cfg)
ex

# %% [markdown]
# The frame on the left is the raw screen of the state; the map on the right is
# normalised on its own, as in the gallery, so its colours rank the pixels of one map.

# %%
for key, value in explorer_stats(ex).items():
    glue(f"explorer_{key}", value, display=False)

# %% [markdown]
# The page embeds {glue:text}`explorer_images` distinct images
# ({glue:text}`explorer_megabytes:.2f` MB as WebP) in {glue:text}`explorer_stacks` nested stacks, for
# the chapter's game: {glue:text}`explorer_states` states of the {glue:text}`explorer_agents`,
# {glue:text}`explorer_methods` methods, {glue:text}`explorer_targets` targets and
# {glue:text}`explorer_alphas` overlay strengths. A map that does not depend on the target is
# stored once.
#
# Each control is linked to the `selected_index` of its level of nested
# `ipywidgets.Stack` containers by `ipywidgets.jslink`, a link that runs in the browser;
# that is why the static page needs no kernel. In Jupyter, the controls also have Python
# observers: a combination that is not pre-rendered is computed (and cached) when it is
# chosen and shown in place of the grid.
#
# ## Things to try
#
# * Switch between the agent's action and the runner-up action. Methods that explain one
#   action change their map; the original Noise Sensitivity, which measures the change of
#   all action scores together, keeps it.
# * Compare the value target with the value mask of the Mask-A3C agent: both concern the
#   value branch.
# * Raise the overlay to α = 1 to see where a map puts its maximum, and lower it to see
#   the objects underneath.
