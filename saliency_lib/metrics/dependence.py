"""Statistics for states of one trajectory, which are not independent.

The study explains consecutive states of one greedy game: a map's score at step ``t``
is strongly correlated with the score at ``t + 1``. Resampling such states as if they
were independent gives confidence intervals that are far too narrow. This module
resamples *blocks* of consecutive states instead (the moving-block bootstrap, Künsch
1989), with the block length chosen from the measured autocorrelation (Politis & White
2004, with the correction of Patton, Politis & White 2009), and reports how many
independent states the trajectory is worth (the effective sample size).

* :func:`autocorrelation`: the sample autocorrelation function;
* :func:`effective_sample_size`: ``n / (1 + 2 Σ ρ_k)`` over Geyer's initial positive sequence;
* :func:`block_length`: the automatic block length of the moving-block bootstrap;
* :func:`block_indices`: the row indices of moving-block resamples (to resample whole curves);
* :func:`block_bootstrap_ci`: a percentile CI of the mean from moving blocks;
* :func:`paired_block_test`: the CI and a two-sided p-value of the mean paired difference
  of two methods on the same states, resampling the same blocks for both;
* :func:`pooled_block_ci`: the mean of several trajectories pooled (e.g. the four games of
  Huber et al.'s figures) with a CI from moving blocks resampled within each trajectory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..validation import check_float, check_int

__all__ = ["autocorrelation", "effective_sample_size", "block_length", "block_indices", "block_bootstrap_ci",
           "paired_block_test", "pooled_block_ci"]


def _finite_series(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    # a state without a value is dropped; its neighbours close up, which shortens one block a little
    return v[np.isfinite(v)]


def autocorrelation(values, max_lag: int | None = None) -> np.ndarray:
    """Sample autocorrelation ``ρ_0 … ρ_max_lag`` (``ρ_0 = 1``) of a series in time order.

    The biased estimator (divides by ``n`` at every lag), which keeps the sequence
    positive semi-definite. A constant series has ``ρ_k = 0`` for ``k ≥ 1``.
    """
    v = _finite_series(values)
    n = v.size
    if n < 2:
        raise ValueError(f"autocorrelation needs at least 2 finite values, got {n}")
    max_lag = n - 1 if max_lag is None else int(max_lag)
    if not 0 <= max_lag < n:
        raise ValueError(f"max_lag must lie in [0, {n - 1}], got {max_lag}")
    d = v - v.mean()
    c0 = float(d @ d) / n
    if c0 == 0:
        out = np.zeros(max_lag + 1)
        out[0] = 1.0
        return out
    return np.array([float(d[: n - k] @ d[k:]) / n / c0 for k in range(max_lag + 1)])


def effective_sample_size(values) -> float:
    """How many independent values the series is worth for estimating its mean.

    ``n / (1 + 2 Σ_k ρ_k)``, summing Geyer's (1992) initial positive sequence: pairs
    ``ρ_{2m} + ρ_{2m+1}`` while they stay positive. Equals ``n`` for white noise and is
    about ``n (1 − φ) / (1 + φ)`` for an AR(1) series with coefficient ``φ``; capped at ``n``.
    """
    v = _finite_series(values)
    n = v.size
    if n < 3:
        return float(n)
    rho = autocorrelation(v)
    tau = -1.0  # τ = −ρ_0 + 2 Σ_m (ρ_{2m} + ρ_{2m+1}) = 1 + 2 Σ_{k≥1} ρ_k
    for m in range(0, (n - 1) // 2):
        pair = rho[2 * m] + rho[2 * m + 1]
        if pair <= 0:
            break
        tau += 2 * pair
    return float(min(n, n / max(tau, 1e-12)))


def _flat_top(t: np.ndarray) -> np.ndarray:
    t = np.abs(t)
    return np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2.0 * (1.0 - t), 0.0))


def block_length(values) -> int:
    """Automatic block length of the moving-block bootstrap of the mean (Politis & White 2004).

    ``b = (2 G² / D)^{1/3} n^{1/3}`` with ``G = Σ λ(k/M) |k| R(k)`` and ``D = 4/3 g(0)²``,
    ``g(0) = Σ λ(k/M) R(k)`` (``R``: autocovariance, ``λ``: the flat-top window), where
    ``M = 2 m̂`` and ``m̂`` is the first lag after which ``K_n = max(5, √log10 n)``
    autocorrelations in a row stay inside ``± 2 √(log10 n / n)``. The result is at least
    1 and at most ``min(3 √n, n / 3)``. White noise gets 1 (the ordinary bootstrap); a
    slowly decorrelating trajectory gets long blocks.
    """
    v = _finite_series(values)
    n = v.size
    if n < 4:
        return 1
    cap = max(1, math.ceil(min(3 * math.sqrt(n), n / 3)))
    max_lag = min(n - 1, cap + max(5, math.ceil(math.sqrt(math.log10(n)))) + 1)
    rho = autocorrelation(v, max_lag)
    bound = 2.0 * math.sqrt(math.log10(n) / n)
    kn = max(5, math.ceil(math.sqrt(math.log10(n))))
    m_hat = None
    for m in range(0, max_lag - kn + 1):
        if np.all(np.abs(rho[m + 1: m + 1 + kn]) < bound):
            m_hat = m
            break
    if m_hat is None:
        m_hat = max_lag - kn
    big_m = min(2 * max(m_hat, 1), max_lag)
    d = v - v.mean()
    k = np.arange(-big_m, big_m + 1)
    acov = np.array([float(d[: n - abs(j)] @ d[abs(j):]) / n for j in k])
    lam = _flat_top(k / big_m)
    g0 = float(np.sum(lam * acov))
    g = float(np.sum(lam * np.abs(k) * acov))
    if g0 <= 0 or g == 0:
        return 1
    b = (2 * g * g / (4.0 / 3.0 * g0 * g0)) ** (1 / 3) * n ** (1 / 3)
    return int(min(cap, max(1, math.ceil(b))))


def block_indices(n: int, block: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n_resamples`` moving-block resamples of a series of length ``n``, shape ``(n_resamples, n)``.

    Each resample concatenates ``⌈n / block⌉`` blocks of ``block`` consecutive indices with
    uniformly drawn starts and is cut to ``n``. Index rows of a table (e.g. one curve per state)
    with them to resample whole rows in blocks of consecutive states.
    """
    check_int("block", block, minimum=1, maximum=max(int(n), 1))
    k = math.ceil(n / block)
    starts = rng.integers(0, n - block + 1, size=(n_resamples, k))
    return (starts[:, :, None] + np.arange(block)).reshape(n_resamples, k * block)[:, :n]


def _block_means(v: np.ndarray, b: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` moving-block resamples of ``v`` (length ``n``, blocks of ``b``)."""
    return v[block_indices(v.size, b, n_resamples, rng)].mean(axis=1)


def block_bootstrap_ci(values, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                       block: int | None = None) -> tuple[float, float]:
    """Percentile confidence interval of the mean of a series in time order, from moving blocks.

    Parameters
    ----------
    values : array_like, 1-D
        Values in the order of the trajectory (NaNs are dropped).
    confidence : float
        Confidence level in (0, 1).
    n_resamples : int
        Bootstrap resamples.
    seed : int
        Seed of the resampling.
    block : int, optional
        Block length; default :func:`block_length` of the values. ``1`` is the ordinary
        (independent) bootstrap.

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` for fewer than 2 finite values; ``(v, v)`` if all values equal ``v``.
    """
    check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    check_int("n_resamples", n_resamples, minimum=1)
    v = _finite_series(values)
    if v.size < 2:
        return float("nan"), float("nan")
    if np.ptp(v) == 0:
        return float(v[0]), float(v[0])
    b = block_length(v) if block is None else int(block)
    if not 1 <= b <= v.size:
        raise ValueError(f"block must lie in [1, {v.size}], got {block}")
    means = _block_means(v, b, n_resamples, np.random.default_rng(seed))
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def paired_block_test(a, b, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                      block: int | None = None) -> dict:
    """Mean difference ``a − b`` of two methods on the same states, with a block-bootstrap CI and p-value.

    The same blocks of states are resampled for both methods (the differences are
    resampled), so the dependence between consecutive states is kept. The two-sided
    p-value compares the observed mean with the resampled means centred on zero (the
    null distribution of the mean): twice the fraction of them beyond the observed mean,
    on its side.

    Returns
    -------
    dict
        ``mean``, ``ci_low``, ``ci_high``, ``p``, ``n`` (finite pairs), ``n_eff``
        (effective sample size of the differences) and ``block``.
    """
    check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    check_int("n_resamples", n_resamples, minimum=1)
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b_ = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.shape != b_.shape:
        raise ValueError(f"paired values need equal lengths, got {a.size} and {b_.size}")
    d = a - b_
    d = d[np.isfinite(d)]
    n = d.size
    if n < 2:
        return {"mean": float(d.mean()) if n else float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                "p": float("nan"), "n": n, "n_eff": float(n), "block": 1}
    blk = block_length(d) if block is None else int(block)
    if np.ptp(d) == 0:
        m = float(d[0])
        return {"mean": m, "ci_low": m, "ci_high": m, "p": 1.0 if m == 0 else 0.0, "n": n, "n_eff": float(n), "block": blk}
    means = _block_means(d, blk, n_resamples, np.random.default_rng(seed))
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    centred = means - d.mean()  # the null distribution of the mean, shifted to zero
    p = 2 * min(np.mean(centred >= d.mean()), np.mean(centred <= d.mean()))
    return {"mean": float(d.mean()), "ci_low": float(lo), "ci_high": float(hi), "p": float(min(1.0, p)), "n": n,
            "n_eff": effective_sample_size(d), "block": blk}


def pooled_block_ci(series: Mapping[str, Sequence[float]] | Sequence[Sequence[float]], *, confidence: float = 0.99,
                    n_resamples: int = 2000, seed: int = 0) -> dict:
    """Mean over the states of several trajectories pooled together, with a stratified moving-block CI.

    Huber et al. pool the states of their four games and draw the mean with a 99 % CI
    (reference notes §5; ``sanity_checks_plot.py``: ``combine_game``, ``ci=99``). The pooled
    mean here is theirs: every state counts once, so a game weighs by its number of states.
    The interval is not: their bootstrap resamples the pooled states as if independent. Here
    each trajectory (game) is resampled on its own, in moving blocks of its own
    :func:`block_length`, and the resampled pooled mean is ``Σ n_g m*_g / Σ n_g``.

    Why within each game and then combined, rather than blocks over the concatenated
    series: the games are independent of each other, so no block may straddle the end of
    one game and the start of the next (that would invent a dependence), and each game
    keeps its own autocorrelation and hence its own block length; a game's share of the
    pool stays fixed at ``n_g``, as in the pooled mean itself (a stratified bootstrap).

    Parameters
    ----------
    series : mapping of name to 1-D array, or sequence of 1-D arrays
        Values of each trajectory in time order; NaNs are dropped.
    confidence : float
        Confidence level in (0, 1); default 0.99, the paper's.
    n_resamples : int
        Bootstrap resamples.
    seed : int
        Seed of the resampling.

    Returns
    -------
    dict
        ``mean``, ``ci_low``, ``ci_high``, ``n`` (pooled finite values), ``n_eff`` (sum of the
        trajectories' :func:`effective_sample_size`), ``groups`` (names of the trajectories
        with at least one value) and ``blocks`` (block length per trajectory). A trajectory
        with one value enters the mean but adds no spread; the CI is NaN when no trajectory
        has two values.
    """
    check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    check_int("n_resamples", n_resamples, minimum=1)
    items = series.items() if isinstance(series, Mapping) else enumerate(series)
    parts = {str(k): _finite_series(v) for k, v in items}
    parts = {k: v for k, v in parts.items() if v.size}
    n = sum(v.size for v in parts.values())
    if n == 0:
        return {"mean": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": 0, "n_eff": 0.0,
                "groups": [], "blocks": {}}
    mean = float(sum(v.sum() for v in parts.values()) / n)
    rng = np.random.default_rng(seed)
    total = np.zeros(n_resamples)
    blocks, spread = {}, False
    for k, v in parts.items():
        if v.size < 2 or np.ptp(v) == 0:
            blocks[k] = 1
            total += v.sum()  # a constant (or single) trajectory resamples to itself
            continue
        blocks[k] = block_length(v)
        total += v.size * _block_means(v, blocks[k], n_resamples, rng)
        spread = True
    if not spread:
        lo = hi = mean if all(v.size >= 2 for v in parts.values()) else float("nan")
    else:
        alpha = (1 - confidence) / 2
        lo, hi = (float(q) for q in np.quantile(total / n, [alpha, 1 - alpha]))
    return {"mean": mean, "ci_low": lo, "ci_high": hi, "n": n,
            "n_eff": float(sum(effective_sample_size(v) for v in parts.values())), "groups": list(parts),
            "blocks": blocks}
