"""Shared helpers of the metrics: input checks, maps from explainers, per-state seeds."""

from __future__ import annotations

import numpy as np
import torch

from ..agents.base import Agent

__all__ = ["as_states", "as_hidden", "as_maps", "as_state_ids", "as_targets", "state_rng", "explain"]


def as_states(agent: Agent, states) -> torch.Tensor:
    """Validate a batch of states for ``agent`` (``(N, C, H, W)`` float)."""
    if isinstance(states, np.ndarray):
        states = torch.from_numpy(states)
    return agent.check_states(states)


def as_hidden(agent: Agent, hidden, n: int):
    """Validate a recurrent state for ``n`` states of ``agent``: every tensor's whole shape (:meth:`Agent.check_hidden`)."""
    return agent.check_hidden(hidden, n)


def as_maps(maps, n: int, hw: tuple[int, int], name: str = "saliency") -> np.ndarray:
    """Validate saliency maps: ``(N, H, W)`` finite floats, one per state."""
    if hasattr(maps, "maps"):  # an Attribution
        maps = maps.maps
    if isinstance(maps, torch.Tensor):
        maps = maps.detach().cpu().numpy()
    a = np.asarray(maps, dtype=np.float64)
    if a.ndim == 2:
        a = a[None]
    if a.shape != (n, *hw):
        raise ValueError(f"{name} must have shape (N, H, W) = {(n, *hw)} (one map per state), got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinite values; check the explainer")
    return a


def as_state_ids(state_ids, n: int) -> np.ndarray:
    if state_ids is None:
        return np.arange(n, dtype=np.int64)
    ids = np.asarray(state_ids, dtype=np.int64).reshape(-1)
    if ids.shape != (n,):
        raise ValueError(f"state_ids must hold one id per state ({n}), got {ids.shape[0]}")
    if len(np.unique(ids)) != n:
        raise ValueError("state_ids must be unique")
    return ids


def as_targets(target, n: int, n_actions: int) -> np.ndarray | None:
    if target is None:
        return None
    t = np.asarray(target.detach().cpu() if isinstance(target, torch.Tensor) else target, dtype=np.int64).reshape(-1)
    if t.size == 1 and n != 1:
        t = np.full(n, int(t[0]), dtype=np.int64)
    if t.shape != (n,):
        raise ValueError(f"target must be one action index or one per state ({n}), got shape {t.shape}")
    if (t < 0).any() or (t >= n_actions).any():
        raise ValueError(f"target actions must lie in [0, {n_actions}), got {sorted(set(t.tolist()))}")
    return t


def state_rng(seed: int, state_id: int, stream: int = 0) -> np.random.Generator:
    """A generator that depends only on (seed, state id, stream), not on batching or chunking."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int(state_id), int(stream)])


@torch.no_grad()
def explain(explainer, states: torch.Tensor, *, target=None, hidden=None) -> np.ndarray:
    """Run an explainer (an object with ``attribute`` or a callable) and return ``(N, H, W)`` maps."""
    if hasattr(explainer, "attribute"):
        out = explainer.attribute(states, target=target, hidden=hidden)
    elif callable(explainer):
        out = explainer(states, target=target, hidden=hidden)
    else:
        raise TypeError(f"explainer must have an attribute() method or be callable, got {type(explainer).__name__}")
    if hasattr(out, "maps"):
        out = out.maps
    if isinstance(out, torch.Tensor):
        out = out.detach().cpu().numpy()
    return np.asarray(out, dtype=np.float64)
