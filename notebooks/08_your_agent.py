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
# (chapter-your-agent)=
# # Explain your own agent
#
# The question RL researchers ask most often about saliency maps is how to explain *their*
# agent: a DQN or PPO from Stable-Baselines3 or CleanRL, a network of their own, or the
# agents of a paper. This page gives the lines for each, and runs them on files made when
# the book was built: a Stable-Baselines3 DQN that SB3 trained for a few hundred steps, a
# CleanRL checkpoint, the weights of a plain PyTorch module, and a Keras file in the layout
# of Huber et al.'s agents. Every loader reads the weights without running code from the
# file (no pickle is unpickled).
#
# The lines are short; the pitfall is which **output** a map explains. A Q-network gives
# Q-values, which contain the value of the state itself; an actor-critic gives a policy π
# and a value V. The same method explains different things on each, and the last section
# says which.
#
# To get the whole study for one agent (its scores, a gallery of every method, the sanity
# checks beside the study's agent and the paper, insertion and deletion, a video) as a small
# offline book of its own, one command does it:
#
# ```bash
# saliency-study report sb3:Breakout:model.zip --out my_report   # then open my_report/index.html
# ```
#
# Options: `--states N`, `--methods occlusion rise`, `--profile tiny|quick|full`, `--executor local|processes|ray`,
# `--game` where the spec does not name it; `--estimate-only` prints how long the sweep takes, from the
# measured costs, and runs nothing.

# %% tags=["parameters"]
game = "Breakout"  # the game of the files made for this page
profile = "quick"  # "tiny", "quick" or "full" (the page does the same work in each)
seed = 0  # seed of the training, the weights and the game
device = "cpu"  # torch device
results_dir = "data/results"  # where the page keeps its files (under _local/media)
sb3_steps = 300  # environment steps of the Stable-Baselines3 DQN trained for this page

# %%
import torch
from IPython.display import display
from myst_nb import glue
from torch import nn

from saliency_book.ch8_your_agent import (
    YourAgentChapter,
    cleanrl_file,
    keras_file,
    module_weights,
    outputs_table,
    sb3_dqn_file,
    show_maps,
)
from saliency_book.common import Note
from saliency_book.tables import show_table

cfg = YourAgentChapter(game=game, profile=profile, seed=seed, device=device, results_dir=results_dir,
                       sb3_steps=sb3_steps)
torch.set_num_threads(1)
cfg

# %% [markdown]
# ## A Stable-Baselines3 model
#
# The file is what `model.save("model.zip")` writes, for DQN, QR-DQN, PPO or A2C with
# `CnnPolicy` on SB3's Atari wrappers (`make_atari_env` with `VecFrameStack(n_stack=4)`).
# The spec `sb3:<Game>:<path>` names the game; without it the game is read from an
# environment id in the path, as in the RL Zoo's `BreakoutNoFrameskip-v4.zip`. The file
# here is a DQN trained by SB3 for the number of steps below, when the book was built.

# %%
model_zip = sb3_dqn_file(cfg)
glue("sb3_steps", cfg.sb3_steps, display=False)

# %% [markdown]
# Trained for {glue:text}`sb3_steps` steps, it plays badly; its maps are real maps of a real
# SB3 network all the same. Loading it, playing it greedily and explaining four of its states
# takes these lines:

# %%
from saliency_lib.agents import load_agent
from saliency_lib.explainers import get_explainer
from saliency_lib.states import collect_states

sb3_agent = load_agent(f"sb3:{cfg.game}:{model_zip}")
states = collect_states(sb3_agent, 4, seed=cfg.seed, frames=True)  # 4 states of a greedy game
occlusion = get_explainer("occlusion", sb3_agent, patch=8)  # Huber et al.'s default patch is 2
result = occlusion.attribute(states.states)  # for the action the agent takes in each state
print(result.output, tuple(result.maps.shape), result.forward_passes, "forward passes per state")

# %% [markdown]
# The maps explain `q`, the chosen action's Q-value. `get_explainer(..., output="advantage")`
# explains the advantage instead (the Q-value minus the mean over actions), which leaves out
# the part of Q that does not depend on the action.
#
# ## A CleanRL checkpoint
#
# CleanRL's `dqn_atari.py` and `ppo_atari.py` save `agent.state_dict()` as
# `<run>/<script>.cleanrl_model`, their run folder named after the environment id. The
# loader tells the two scripts apart by their parameter names. The file here has the
# parameter names of `ppo_atari.py` and an untrained initialisation, written as CleanRL
# writes it.

# %%
checkpoint = cleanrl_file(cfg)
cleanrl_agent = load_agent(f"cleanrl:{checkpoint}")  # the game comes from the run folder's name
result = get_explainer("occlusion", cleanrl_agent, patch=8).attribute(states.states)
print(type(cleanrl_agent).__name__, result.output)

# %% [markdown]
# A PPO agent is an actor-critic: the maps explain `logits`, the policy π, by default.
# `output="probs"` explains π(a|s), and `output="value"` the critic's V(s), which is the
# same for every action.
#
# ## Any `torch.nn.Module`
#
# A network of your own becomes an agent when you declare what it returns. It must take
# the states of the `dqn` preset, `(N, 4, 84, 84)` in [0, 1] with the newest frame last;
# if it divides by 255 itself, pass `input_scale=255`. Here a small actor-critic, its
# weights saved and read back as a training script would:


# %%
class MyPolicy(nn.Module):
    def __init__(self, n_actions: int = 4):
        super().__init__()
        self.trunk = nn.Sequential(nn.Conv2d(4, 16, 8, stride=4), nn.ReLU(), nn.Conv2d(16, 32, 4, stride=2), nn.ReLU(),
                                   nn.Flatten(), nn.Linear(32 * 9 * 9, 256), nn.ReLU())
        self.pi, self.v = nn.Linear(256, n_actions), nn.Linear(256, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.pi(h), self.v(h)


weights = module_weights(cfg, MyPolicy(), "my_policy")

# %%
from saliency_lib.agents import wrap_agent

net = MyPolicy()
net.load_state_dict(torch.load(weights, weights_only=True))  # tensors only: no code from the file runs
my_agent = wrap_agent(net, outputs=("logits", "value"), game=cfg.game)  # a Q-network: outputs="q"
result = get_explainer("occlusion", my_agent, patch=8).attribute(states.states)
print(type(my_agent).__name__, result.output)

# %% [markdown]
# The outputs you declare decide what is explained: `outputs="q"` makes a Q-agent (Q and
# the advantage), `("logits", "value")` an actor-critic (π and V). The sanity checks
# randomise a network layer by layer; for that, give the module a `layer_groups()` method
# that lists its layers from the output down.
#
# ## Huber et al.'s Keras files
#
# The authors published their four agents as Keras 2 HDF5 files (`BreakoutIngame_5M.h5`
# and so on, in their repository; they may not be redistributed, so the study does not ship
# them). `keras:<path>` reads such a file with h5py alone, no TensorFlow, and rebuilds the
# network in PyTorch; the game is read from the file name. No authors' file is at hand
# here, so the page writes one with Keras 3 in the same network layout (three convolutions
# with TensorFlow's "same" padding, a hidden layer, the Q-values) under the authors' file
# name, and loads it:

# %%
h5 = keras_file(cfg)  # a Note where Keras is not installed
if isinstance(h5, Note):
    keras_agent = None
    display(h5)
else:
    keras_agent = load_agent(f"keras:{h5}")  # the game comes from the file name
    result = get_explainer("occlusion", keras_agent, patch=8).attribute(states.states)
    print(h5.name, keras_agent.meta["architecture"]["padding"], result.output)

# %% [markdown]
# A Keras file holds one output stream. The authors' agents come from a training script
# with a dueling head, of which their converter saved only the action stream (reference
# notes §1.3): what such a file calls Q-values is then the advantage stream, not centred,
# and the greedy action is the same. The loader cannot tell from the file; it records what
# it found in `agent.meta["architecture"]`.
#
# ## Which output does each map explain?
#
# The same `get_explainer(...)` line explains a different quantity on each agent. The table
# reads it from the explainers themselves:

# %%
agents = {"SB3 DQN": sb3_agent, "CleanRL PPO": cleanrl_agent, "wrap_agent module": my_agent}
if keras_agent is not None:
    agents["Keras (authors' layout)"] = keras_agent
explained = outputs_table(agents)
glue("n_agents", len(agents), display=False)
show_table(explained, "What an explainer explains by default on each agent of this page, and what else it can be "
           "asked for with output=.", names={"file": "File", "agent": "Agent", "network": "Network",
                                             "explained": "Explained by default", "meaning": "What it is",
                                             "also": "Other outputs"})

# %% [markdown]
# On the Q-networks a map explains Q(s, a) unless you ask for the advantage; on the
# actor-critics it explains π. Huber et al. measured insertion on both Q and the advantage
# (chapter 4), and the two rank the methods differently, so say which one a map explains.
#
# The maps of the {glue:text}`n_agents` agents on the first state, Occlusion with 8 × 8 patches:

# %% mystnb={"figure": {"caption": "Occlusion (8 × 8 patches) on one state of the SB3 DQN's greedy game, for every agent of this page; inferno, min-max normalised per map. The untrained agents' maps show where their random weights react.", "name": "fig-your-agent-maps"}}
maps = {name: get_explainer("occlusion", a, patch=8).attribute(states.states[:1]).maps[0].numpy()
        for name, a in agents.items()}
show_maps(states.frames[0], maps)

# %% [markdown]
# ## Summary
#
# * `load_agent("sb3:<Game>:model.zip")`, `load_agent("cleanrl:<path>")` and
#   `load_agent("keras:<path>.h5")` read the three formats without unpickling;
#   `wrap_agent(module, outputs=...)` takes any module.
# * `get_explainer(name, agent).attribute(states)` explains the Q-value on a Q-network and π on
#   an actor-critic; `output=` chooses another.
# * `saliency-study report <spec> --out DIR` runs the whole study on one agent.
