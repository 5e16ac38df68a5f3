"""``load_agent``: one entry point for every kind of agent spec.

=================================  ===========================================================
spec                               loader
=================================  ===========================================================
``<directory>``                    our checkpoint (:func:`~saliency_lib.agents.checkpoint.load_checkpoint`)
``official:<Game>``                official Mask-A3C checkpoint (:func:`~saliency_lib.agents.official.load_official`)
``sb3:[<Game>:]<model.zip>``       Stable-Baselines3 model (:func:`~saliency_lib.agents.sb3.load_sb3`)
``cleanrl:[<Game>:]<file>``        CleanRL ``.cleanrl_model`` (:func:`~saliency_lib.agents.cleanrl.load_cleanrl`)
``keras:[<Game>:]<file.h5>``       Keras HDF5 Q-network, e.g. Huber et al.'s agents
                                   (:func:`~saliency_lib.agents.keras.load_keras`)
``advstream:<spec>``               advantage stream of a dueling DQN agent
                                   (:func:`~saliency_lib.agents.checkpoint.advantage_stream_agent`)
=================================  ===========================================================
"""

from __future__ import annotations

import os

import torch

from .base import Agent
from .checkpoint import advantage_stream_agent, load_checkpoint
from .cleanrl import load_cleanrl
from .keras import load_keras
from .official import load_official
from .sb3 import load_sb3

__all__ = ["load_agent", "SCHEMES"]

#: The ``<scheme>:`` prefixes :func:`load_agent` understands (anything else is a checkpoint path).
SCHEMES = ("official", "sb3", "cleanrl", "keras", "advstream")


def load_agent(spec: str | os.PathLike, *, device: str | torch.device = "cpu") -> Agent:
    """Load an agent from a spec.

    Parameters
    ----------
    spec : str or path
        A checkpoint directory (or its ``model.safetensors`` / ``meta.json``),
        ``"official:<Game>"`` for an official Mask-A3C checkpoint,
        ``"sb3:[<Game>:]<model.zip>"`` for a Stable-Baselines3 model or
        ``"cleanrl:[<Game>:]<file>"`` for a CleanRL ``.cleanrl_model``
        (:mod:`saliency_lib.agents.sb3`, :mod:`saliency_lib.agents.cleanrl`; without
        ``<Game>`` the game is read from an environment id such as
        ``BreakoutNoFrameskip-v4`` in the path), ``"keras:[<Game>:]<file.h5>"`` for a
        Keras HDF5 Q-network such as Huber et al.'s (:mod:`saliency_lib.agents.keras`;
        without ``<Game>`` the game is the one the file name starts with, as in
        ``BreakoutIngame_5M.h5``), or ``"advstream:<spec>"`` for the
        advantage stream alone of a dueling DQN agent
        (:func:`~saliency_lib.agents.checkpoint.advantage_stream_agent`).
    device : str or torch.device
        Where to put the network.

    Raises
    ------
    FileNotFoundError
        The checkpoint or one of its files is missing.
    ValueError
        An unknown scheme, or weights that are corrupted (sha256 or format) or do
        not match the architecture.
    """
    spec_s = str(spec)
    if ":" not in spec_s or os.path.exists(spec_s):
        return load_checkpoint(spec, device=device)
    scheme, _, rest = spec_s.partition(":")
    if scheme == "official":
        return load_official(rest).to(device)
    if scheme == "advstream":
        return advantage_stream_agent(load_agent(rest, device=device))
    if scheme in ("sb3", "cleanrl", "keras"):
        game, sep, path = rest.partition(":")
        if not sep or os.path.exists(rest):  # "sb3:PATH": the game is read from the path
            game, path = None, rest
        loader = {"sb3": load_sb3, "cleanrl": load_cleanrl, "keras": load_keras}[scheme]
        return loader(path, game=game, device=device)
    raise ValueError(
        f"unknown agent spec scheme {scheme!r} in {spec_s!r}; use a checkpoint directory, official:<Game>, "
        "sb3:[<Game>:]<model.zip>, cleanrl:[<Game>:]<file.cleanrl_model>, keras:[<Game>:]<file.h5> or "
        "advstream:<dueling DQN spec>"
    )
