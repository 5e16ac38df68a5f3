"""Our checkpoint format (safetensors weights + JSON metadata): :func:`save_agent`, :func:`load_checkpoint`.

A checkpoint is a directory holding ``model.safetensors`` and ``meta.json``. The
metadata records the game, preset, architecture (class and config), frames
trained, evaluation score, library version and the sha256 of the weights file;
:func:`load_checkpoint` checks all of them before it builds the network.
:func:`saliency_lib.agents.load_agent` (in :mod:`~saliency_lib.agents.loading`)
reads these directories and every other kind of agent spec.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .. import __version__
from .._io import atomic_write
from ..versions import environment_versions
from ._meta import check_against_weights, check_meta
from ._weights import load_state_strict, sha256_file
from .base import ActorCriticAgent, Agent, QAgent
from .dqn import AdvantageStream, DQNConfig, DQNNet
from .mask_a3c import MaskA3CConfig, MaskA3CNet

__all__ = ["save_agent", "load_checkpoint", "build_agent", "advantage_stream_agent", "ARCHITECTURES"]

ARCHITECTURES = {
    "DQNNet": (DQNNet, DQNConfig, QAgent),
    "MaskA3CNet": (MaskA3CNet, MaskA3CConfig, ActorCriticAgent),
}
WEIGHTS, META = "model.safetensors", "meta.json"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def build_agent(arch: str, config: dict, *, game: str, preset: str, meta: dict | None = None) -> Agent:
    """Instantiate an (untrained) agent of a registered architecture."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    net_cls, cfg_cls, agent_cls = ARCHITECTURES[arch]
    cfg = cfg_cls(**config)
    return agent_cls(net_cls(cfg), game=game, preset=preset, n_actions=cfg.n_actions, meta=meta)


def save_agent(agent: Agent, directory: str | os.PathLike, **meta) -> Path:
    """Write ``agent`` to ``directory`` atomically (weights first, then metadata).

    Extra keyword arguments (``frames``, ``eval_score`` …) are stored in the metadata.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    net = agent.net
    arch = type(net).__name__
    if arch not in ARCHITECTURES:
        raise TypeError(f"cannot save a {arch}; only {', '.join(ARCHITECTURES)} have a checkpoint format")
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in net.state_dict().items()}
    tmp = directory / (WEIGHTS + ".tmp")
    save_file(tensors, str(tmp))
    digest = sha256_file(tmp)
    os.replace(tmp, directory / WEIGHTS)
    info = {k: v for k, v in agent.meta.items() if k not in ("sha256", "checkpoint")}
    info.update(meta)
    info.update(
        game=agent.game,
        preset=agent.preset,
        arch=arch,
        config=asdict(net.config),
        library_version=__version__,
        versions=environment_versions(),
        sha256=digest,
        saved=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
    _atomic_write_bytes(directory / META, (json.dumps(info, indent=2, sort_keys=True) + "\n").encode())
    return directory


def _resolve(spec: str | os.PathLike) -> Path:
    """The checkpoint directory named by ``spec`` (the directory itself or one of its two files)."""
    path = Path(spec)
    if path.is_dir():
        return path
    if path.name in (WEIGHTS, META) or path.suffix in (".safetensors", ".json"):
        return path.parent
    raise FileNotFoundError(
        f"no agent checkpoint at {str(spec)!r}: expected a directory with {WEIGHTS} and {META}, "
        "or 'official:<Game>' for an official Mask-A3C checkpoint"
    )


def load_checkpoint(path: str | os.PathLike, *, device: str | torch.device = "cpu") -> Agent:
    """Load an agent from one of our checkpoints (:func:`save_agent`).

    Most callers want :func:`saliency_lib.agents.load_agent`, which takes every kind
    of agent spec and hands checkpoint directories to this function.

    Parameters
    ----------
    path : str or path
        A checkpoint directory, or its ``model.safetensors`` / ``meta.json``.
    device : str or torch.device
        Where to put the network.

    Raises
    ------
    FileNotFoundError
        The checkpoint or one of its files is missing.
    ValueError
        The metadata does not follow its schema (:mod:`~saliency_lib.agents._meta`: types, a
        known game, preset and architecture), or the weights are corrupted (sha256 or format),
        do not match the architecture, or contradict the metadata (input frames, action count).
    """
    directory = _resolve(path)
    wpath, mpath = directory / WEIGHTS, directory / META
    for p in (wpath, mpath):
        if not p.is_file():
            raise FileNotFoundError(f"checkpoint {str(directory)!r} lacks {p.name}")
    try:
        meta = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{mpath} is not valid JSON ({e}); the checkpoint is corrupted") from e
    check_meta(meta, str(mpath), ARCHITECTURES)  # the schema, before anything is built from it
    digest = sha256_file(wpath)
    if digest != meta["sha256"]:
        raise ValueError(
            f"{wpath} is corrupted: its sha256 {digest[:12]}… does not match {meta['sha256'][:12]}… in {META}"
        )
    try:
        state = load_file(str(wpath))
    except (SafetensorError, OSError) as e:
        raise ValueError(f"{wpath} is not a readable safetensors file: {e}") from e
    meta["checkpoint"] = str(directory)
    agent = build_agent(meta["arch"], meta["config"], game=meta["game"], preset=meta["preset"], meta=meta)
    load_state_strict(agent.net, state, source=str(wpath))
    check_against_weights(meta, agent.net, str(mpath))
    return agent.to(device)


def advantage_stream_agent(agent: Agent) -> QAgent:
    """The agent whose Q-values are the un-centred advantage stream of a dueling DQN agent.

    See :class:`saliency_lib.agents.dqn.AdvantageStream`. The network's weights are shared
    with ``agent``; the metadata gains ``"output": "advantage_stream"``.
    """
    if not isinstance(agent.net, DQNNet) or not agent.net.config.dueling:
        raise ValueError(
            f"advstream: needs a dueling DQN agent (DQNNet with dueling=True), got {type(agent.net).__name__}"
            + (" without a dueling head" if isinstance(agent.net, DQNNet) else ""))
    meta = {**agent.meta, "output": "advantage_stream"}
    return QAgent(AdvantageStream(agent.net), game=agent.game, preset=agent.preset, n_actions=agent.n_actions, meta=meta)

