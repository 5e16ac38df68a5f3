"""HIGHLIGHTS-DIV: a few important, mutually different states of a trajectory.

Reference §2.2; Amir & Amir 2018, as adapted in HIGHLIGHTS-LRP. :func:`importance` scores each
state (best minus second-best output), :func:`highlights_div` picks states greedily by importance
while keeping them apart in the agent's feature space, and :func:`select_highlights` applies it to
a :class:`~saliency_lib.states.StateSet`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .states import StateSet

__all__ = ["importance", "diversity_threshold", "Highlights", "highlights_div", "select_highlights"]


def importance(scores) -> np.ndarray:
    """HIGHLIGHTS importance: best minus second-best output per state (``compare_to='second'``).

    Parameters
    ----------
    scores : array_like, shape (N, A), A >= 2
        Q-values (or policy logits) per state.
    """
    s = np.asarray(scores.detach().cpu() if isinstance(scores, torch.Tensor) else scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"scores must have shape (N, A) with A >= 2 actions, got {s.shape}")
    top2 = np.sort(s, axis=1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


def _features(features) -> np.ndarray:
    f = np.asarray(features.detach().cpu() if isinstance(features, torch.Tensor) else features, dtype=np.float64)
    if f.ndim < 2:
        raise ValueError(f"features must have shape (N, D), got {f.shape}")
    return f.reshape(f.shape[0], -1)


def diversity_threshold(features, *, percentile: float = 3.0, n_sample: int = 1000, seed: int = 42) -> float:
    """The ``percentile``-th percentile of pairwise Euclidean feature distances.

    Distances are taken among ``n_sample`` states drawn without replacement
    (all states if there are fewer), over all unordered pairs.
    """
    from scipy.spatial.distance import pdist

    f = _features(features)
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must lie in [0, 100], got {percentile!r}")
    if isinstance(n_sample, bool) or not isinstance(n_sample, (int, np.integer)) or n_sample < 2:
        raise ValueError(f"n_sample must be an integer >= 2, got {n_sample!r}")
    if f.shape[0] < 2:
        raise ValueError(f"need at least 2 states to compute a diversity threshold, got {f.shape[0]}")
    if f.shape[0] > n_sample:
        f = f[np.random.default_rng(seed).choice(f.shape[0], n_sample, replace=False)]
    return float(np.percentile(pdist(f), percentile))


@dataclass(frozen=True)
class Highlights:
    """Result of :func:`highlights_div`.

    Attributes
    ----------
    states : list of int
        The chosen states, in ascending order.
    with_context : list of int
        The chosen states with ``context_length`` neighbours on each side
        (clipped to the trajectory), ascending, no duplicates.
    threshold : float
        The diversity threshold used.
    """

    states: list[int]
    with_context: list[int]
    threshold: float


def _context(chosen: list[int], context_length: int, n: int) -> list[int]:
    out: set[int] = set()
    for s in chosen:
        out.update(range(max(s - context_length, 0), min(s + context_length, n - 1) + 1))
    return sorted(out)


def highlights_div(
    importance_scores,
    features,
    *,
    budget: int = 5,
    context_length: int = 10,
    minimum_gap: int = 10,
    percentile: float = 3.0,
    n_sample: int = 1000,
    seed: int = 42,
    threshold: float | None = None,
) -> Highlights:
    """HIGHLIGHTS-DIV summary states (reference §2.2).

    Greedy loop over the states in descending importance (ties: lower index first):

    1. skip a state if an already chosen state lies closer than
       ``context_length + minimum_gap`` steps (strictly) to it;
    2. otherwise accept it if nothing is chosen yet, or if its minimum Euclidean
       feature distance to every chosen state *and their ±context_length
       neighbours* exceeds the diversity threshold;
    3. stop when ``budget`` states are chosen.

    Parameters
    ----------
    importance_scores : array_like, shape (N,)
        E.g. :func:`importance` of the Q-values.
    features : array_like, shape (N, D)
        Penultimate-layer activations (the ``features`` output).
    budget, context_length, minimum_gap : int
        Paper: 5, 10, 10.
    percentile : float
        Diversity threshold = this percentile of the pairwise distances among up
        to ``n_sample`` random states (paper: 3; its Breakout figures: 75).
    n_sample : int
        States sampled for the threshold (paper: 1000).
    seed : int
        Seed of that sample.
    threshold : float, optional
        Use this threshold instead of computing it.

    Returns
    -------
    Highlights

    Raises
    ------
    ValueError
        For mismatched lengths, negative context or gap, or a budget below 1.
    """
    imp = np.asarray(importance_scores.detach().cpu() if isinstance(importance_scores, torch.Tensor) else importance_scores,
                     dtype=np.float64).reshape(-1)
    f = _features(features)
    n = imp.shape[0]
    if f.shape[0] != n:
        raise ValueError(f"importance_scores ({n}) and features ({f.shape[0]}) must have one entry per state")
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}")
    for name, v in (("context_length", context_length), ("minimum_gap", minimum_gap)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    if np.isnan(imp).any():
        raise ValueError("importance_scores contain NaN")
    thr = (float(threshold) if threshold is not None
           else diversity_threshold(f, percentile=percentile, n_sample=n_sample, seed=seed))
    span = context_length + minimum_gap
    chosen: list[int] = []
    for s in np.argsort(-imp, kind="stable"):
        s = int(s)
        if any(abs(s - c) < span for c in chosen):
            continue
        if chosen:
            ctx = _context(chosen, context_length, n)
            dmin = float(np.sqrt(((f[ctx] - f[s]) ** 2).sum(axis=1)).min())
            if not dmin > thr:
                continue
        chosen.append(s)
        if len(chosen) == budget:
            break
    chosen.sort()
    return Highlights(states=chosen, with_context=_context(chosen, context_length, n), threshold=thr)


def select_highlights(states: StateSet, **kwargs) -> Highlights:
    """:func:`highlights_div` on a :class:`StateSet`: importance of its ``q``/``logits``, its ``features``."""
    scores = states.outputs.get("q", states.outputs.get("logits"))
    if scores is None or "features" not in states.outputs:
        raise ValueError("the StateSet needs 'q' or 'logits' and 'features' outputs for HIGHLIGHTS-DIV")
    return highlights_div(importance(scores), states.outputs["features"], **kwargs)
