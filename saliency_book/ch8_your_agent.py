"""Chapter 8 (Explain your own agent): the model files the page loads, made during the build, and what each explains.

The page (``notebooks/08_your_agent.py``) shows the lines a reader writes for their own agent; the files it
runs them on are real, and made here, so that the page never shows code that no longer runs:

* :func:`sb3_dqn_file`: a Stable-Baselines3 DQN trained by SB3 itself for a few hundred steps on its own
  Atari wrappers (``make_atari_env`` + ``VecFrameStack(4)``), saved with ``model.save``;
* :func:`cleanrl_file`: a ``ppo_atari`` checkpoint with CleanRL's parameter names, written as CleanRL writes
  it (``torch.save(agent.state_dict())``); its weights are an untrained initialisation;
* :func:`module_weights`: the state dict of a reader's own ``torch.nn.Module``;
* :func:`keras_file`: the network of Huber et al.'s agents built and saved by Keras 3 (torch backend) as
  ``.h5``, named like the authors' files; a :class:`~saliency_book.common.Note` when Keras is not installed.

The trained file is cached under ``<results_dir>/_local/media`` by the versions of the packages that made
it; the others are written on every build (they take a second).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.common import Note, figure_image
from saliency_book.config import ChapterConfig, as_int
from saliency_study.cache import MEDIA, cached_file
from saliency_study.paths import repo_path

__all__ = ["YourAgentChapter", "sb3_dqn_file", "cleanrl_file", "module_weights", "keras_file", "outputs_table",
           "show_maps", "OUTPUT_MEANINGS"]

OUTPUT_MEANINGS = {
    "q": "Q(s, a): the action's value, the state's value V(s) included",
    "advantage": "A(s, a) = Q(s, a) − mean over actions: the choice of action alone",
    "logits": "π: the policy's preference for the action (logits; output='probs' for π(a|s))",
    "probs": "π(a|s): the policy's probability of the action",
    "value": "V(s): the critic's value of the state, the same for every action",
}
"""What an explained output is, for the page's table."""


@dataclass(frozen=True)
class YourAgentChapter(ChapterConfig):
    """Chapter 8's configuration: the common fields, then how long the page's SB3 DQN trains."""

    sb3_steps: int = 300
    """Environment steps of the Stable-Baselines3 DQN trained for the page."""

    def _profile_markdown(self) -> str:
        return "nothing: the page's maps are Occlusion with 8 × 8 patches in every profile"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "sb3_steps", as_int("sb3_steps", self.sb3_steps, minimum=1))

    def media(self, name: str) -> Path:
        """A file of the page under ``<results_dir>/_local/media/your_agent/`` (the folder is created)."""
        d = repo_path(self.results_dir) / MEDIA / "your_agent"
        d.mkdir(parents=True, exist_ok=True)
        return d / name


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def sb3_dqn_file(cfg: YourAgentChapter) -> Path:
    """A Stable-Baselines3 DQN (``CnnPolicy``) trained by SB3 for ``cfg.sb3_steps`` steps on ``cfg.game``, saved by
    ``model.save``; cached by the steps, the seed and the versions of SB3, Gymnasium, ALE and torch."""
    config = {"what": "your_agent_sb3_dqn", "game": cfg.game, "steps": cfg.sb3_steps, "seed": cfg.seed,
              **{p: _version(p) for p in ("stable-baselines3", "gymnasium", "ale-py", "torch")}}

    def make(path):
        import torch
        from stable_baselines3 import DQN
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.logger import Logger
        from stable_baselines3.common.vec_env import VecFrameStack

        from saliency_lib import envs  # noqa: F401  (registers the ALE environments with gymnasium)

        torch.set_num_threads(1)
        env = VecFrameStack(make_atari_env(f"{cfg.game}NoFrameskip-v4", n_envs=1, seed=cfg.seed), n_stack=4)
        try:
            model = DQN("CnnPolicy", env, buffer_size=1_000, learning_starts=100, seed=cfg.seed, device="cpu")
            model.set_logger(Logger(folder=None, output_formats=[]))  # no log folder per call
            model.learn(cfg.sb3_steps)
            model.save(f"{path}.zip")  # SB3 appends .zip to a name without it
        finally:
            env.close()
        os.replace(f"{path}.zip", path)

    return cached_file("your_agent_sb3_dqn", config, ".zip", make, results_dir=cfg.results_dir)


def cleanrl_file(cfg: YourAgentChapter, n_actions: int = 4) -> Path:
    """A CleanRL ``ppo_atari`` checkpoint (``network.*``, ``actor.*``, ``critic.*``), seeded, as CleanRL saves it."""
    import torch

    from saliency_lib.agents.cleanrl import CleanRLActorCritic

    torch.manual_seed(cfg.seed)
    path = cfg.media(f"{cfg.game}NoFrameskip-v4__ppo_atari__1__0/ppo_atari.cleanrl_model")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(CleanRLActorCritic(n_actions).state_dict(), path)
    return path


def module_weights(cfg: YourAgentChapter, module, name: str) -> Path:
    """``module``'s state dict saved as ``<name>.pt`` (what a reader's training script writes)."""
    import torch

    path = cfg.media(f"{name}.pt")
    torch.save(module.state_dict(), path)
    return path


def keras_file(cfg: YourAgentChapter, n_actions: int = 4, hidden: int = 256) -> Path | Note:
    """Huber et al.'s network (three 'same' convolutions, ``hidden`` units, ``n_actions`` Q-values) built by Keras 3
    with seeded weights and saved as ``<Game>Ingame_5M.h5``, the authors' file name; a Note without Keras."""
    if "keras" not in __import__("sys").modules:
        os.environ.setdefault("KERAS_BACKEND", "torch")  # Keras 3 then needs no TensorFlow
    try:
        import keras
    except ImportError:
        return Note("Keras is not installed here, so the page cannot write a file in the authors' format; with "
                    "`pip install keras h5py` it does. The lines above load the authors' files with h5py alone.",
                    title="No Keras")
    keras.utils.set_random_seed(cfg.seed)
    L = keras.layers
    model = keras.Sequential([keras.Input((84, 84, 4)),
                              L.Conv2D(32, 8, strides=4, padding="same", activation="relu"),
                              L.Conv2D(64, 4, strides=2, padding="same", activation="relu"),
                              L.Conv2D(64, 3, strides=1, padding="same", activation="relu"),
                              L.Flatten(), L.Dense(hidden, activation="relu"), L.Dense(n_actions)])
    path = cfg.media(f"{cfg.game}Ingame_5M.h5")
    model.save(path)
    return path


def outputs_table(agents: dict) -> pd.DataFrame:
    """Per agent (name → :class:`~saliency_lib.agents.Agent`): its class, the output an explainer explains by
    default, what that output is, and the other outputs an explainer can be asked for (``output=``)."""
    from saliency_lib.explainers import explainable_outputs, get_explainer

    rows = []
    for name, agent in agents.items():
        default = get_explainer("occlusion", agent).output
        rows.append({"file": name, "agent": f"{type(agent).__name__} ({agent.kind})", "network": type(agent.net).__name__,
                     "explained": default, "meaning": OUTPUT_MEANINGS.get(default, default),
                     "also": ", ".join(o for o in explainable_outputs(agent) if o != default)})
    return pd.DataFrame(rows)


def show_maps(frame: np.ndarray, maps: dict, *, alpha: float = 0.6):
    """One state's raw frame with each agent's map over it (name → ``(84, 84)`` map), as an image."""
    import cv2
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2.2 * (len(maps) + 1), 2.9))
    axes = fig.subplots(1, len(maps) + 1)
    axes[0].imshow(frame)
    axes[0].set_title("state", fontsize=9)
    for ax, (name, m) in zip(axes[1:], maps.items()):
        m = np.asarray(m, dtype=np.float64)
        span = m.max() - m.min()
        m = (m - m.min()) / span if span > 0 else np.zeros_like(m)
        ax.imshow(frame)
        ax.imshow(cv2.resize(m, frame.shape[1::-1], interpolation=cv2.INTER_LINEAR), cmap="inferno", alpha=alpha)
        ax.set_title(name, fontsize=9)
    for ax in axes:
        ax.set_axis_off()
    return figure_image(fig)
