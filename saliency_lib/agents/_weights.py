"""Weights bookkeeping shared by every loader: sha256 of files and of state dicts, strict loading.

Private to :mod:`saliency_lib.agents` (its names are public inside the package). It
imports nothing from the package, so the checkpoint, official, SB3, CleanRL and
``wrap_agent`` loaders all depend on it and never on each other.
"""

from __future__ import annotations

import hashlib
import os

import torch
from torch import nn

__all__ = ["sha256_file", "weights_sha256", "load_state_strict"]


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weights_sha256(module: nn.Module) -> str:
    """Hex sha256 of a module's state dict: names, shapes and bytes, in sorted name order."""
    h = hashlib.sha256()
    for k, v in sorted(module.state_dict().items()):
        h.update(k.encode())
        h.update(str(tuple(v.shape)).encode())
        h.update(v.detach().to("cpu").contiguous().numpy().tobytes() if v.dtype != torch.bfloat16
                 else v.float().numpy().tobytes())
    return h.hexdigest()


def load_state_strict(net: nn.Module, state: dict, *, source: str) -> None:
    """Load ``state`` into ``net`` requiring identical names and shapes, with a readable error."""
    own = net.state_dict()
    missing = sorted(set(own) - set(state))
    extra = sorted(set(state) - set(own))
    shapes = [f"{k}: {tuple(state[k].shape)} vs {tuple(own[k].shape)}"
              for k in own if k in state and state[k].shape != own[k].shape]
    if missing or extra or shapes:
        raise ValueError(
            f"weights in {source} do not match {type(net).__name__}: missing {missing}, unexpected {extra}, "
            f"shape mismatches {shapes}"
        )
    net.load_state_dict(state)
