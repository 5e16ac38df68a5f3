"""Statistics for states of one trajectory, which are not independent.

The study explains consecutive states of one greedy game: a map's score at step ``t``
is strongly correlated with the score at ``t + 1``. Intervals that treat such states as
independent are far too narrow. This module measures how many independent states a
trajectory is worth (the effective sample size, ESS) and builds intervals of the mean
that account for the dependence, on top of well-kept libraries:

* :func:`autocorrelation`: the sample autocorrelation function (statsmodels ``acf``);
* :func:`effective_sample_size`: the ESS of the mean (arviz-stats, ``method="mean"``);
* :func:`ess_t_ci`: the t interval of the mean on the ESS (statsmodels ``DescrStatsW``);
* :func:`block_length`: the Politis–White block length (arch ``optimal_block_length``);
* :func:`block_indices`, :func:`block_bootstrap_ci`: moving-block resamples and the percentile
  interval (arch ``MovingBlockBootstrap``);
* :func:`mean_ci`: the study's interval of a mean, :data:`DEFAULT_INTERVAL` unless told otherwise;
* :func:`paired_block_test`: the interval and two-sided p-value of the mean paired difference of
  two methods on the same states;
* :func:`pooled_block_ci`: the mean of several trajectories pooled (e.g. the four games of
  Huber et al.'s figures), with an interval that respects each trajectory's dependence.

Which interval: ``"ess_t"`` (default) or ``"block"``
----------------------------------------------------
Both were run on stationary AR(1) series of n = 1000 whose ESS spans 10–300, 95 % intervals,
true mean covered (``tests/lib/test_interval_coverage.py`` keeps the check, on fewer series; here
2000 series per row for the t interval and the first 400 of them for the bootstrap, with 999
resamples each):

======  ========================  ==============  =================================
ESS     percentile block bootst.  ESS t interval  median width: bootstrap, t, ideal
======  ========================  ==============  =================================
10      0.73                      0.91            3.57, 6.09, 6.10
15      0.74                      0.92            2.77, 4.12, 4.12
30      0.85                      0.94            1.62, 2.15, 2.11
100     0.89                      0.94            0.61, 0.69, 0.68
300     0.92                      0.95            0.25, 0.27, 0.27
======  ========================  ==============  =================================

The percentile moving-block bootstrap under-covers at every dependence tested, and worst where the
trajectory is worth fewest states: its intervals are too narrow (the variance of block means is
biased low, and the percentiles ignore the uncertainty of that variance). The t interval on the
ESS covers near nominal, with a median width within 2 % of the ideal one (the one that knows the
variance of the mean). So every interval here defaults to ``"ess_t"``; ``"block"`` stays
available (and is what :func:`block_bootstrap_ci` always computes) for comparison and for
statistics that have no t form, such as whole curves resampled in blocks (:func:`block_indices`).

What is ours, and why
---------------------
The libraries compute the estimates; this module adds only what the study needs beyond them:
NaNs dropped (a state without a value closes up with its neighbours), constant and very short
series handled, the ESS capped at n (arviz-stats lets an anti-correlated series exceed n; a t
interval narrower than the independent one is not wanted here), the block length rounded up and
capped at ``min(3 √n, n / 3)``, the t interval on the ESS (no library offers one; see
:func:`ess_t_ci`), and the pooled interval over independent trajectories.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..validation import check_choice, check_float, check_int

__all__ = ["INTERVALS", "DEFAULT_INTERVAL", "finite_series", "ess_weighted", "autocorrelation", "effective_sample_size",
           "ess_t_ci", "block_length",
           "block_indices", "block_bootstrap_ci", "mean_ci", "paired_block_test", "pooled_block_ci"]

INTERVALS = ("ess_t", "block")
"""Intervals of a mean: the t interval on the effective sample size (:func:`ess_t_ci`) and the
percentile moving-block bootstrap (:func:`block_bootstrap_ci`)."""

DEFAULT_INTERVAL = "ess_t"
"""The interval that covers on dependent series (see the module's coverage table)."""


def finite_series(values) -> np.ndarray:
    """``values`` as a flat float64 array without its non-finite entries, in order."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    # a state without a value is dropped; its neighbours close up, which shortens one block a little
    return v[np.isfinite(v)]


def autocorrelation(values, max_lag: int | None = None) -> np.ndarray:
    """Sample autocorrelation ``ρ_0 … ρ_max_lag`` (``ρ_0 = 1``) of a series in time order.

    statsmodels' ``acf`` with ``adjusted=False``: the biased estimator (divides by ``n`` at
    every lag), which keeps the sequence positive semi-definite. A constant series, for which
    ``acf`` is undefined, has ``ρ_k = 0`` for ``k ≥ 1`` here.
    """
    v = finite_series(values)
    n = v.size
    if n < 2:
        raise ValueError(f"autocorrelation needs at least 2 finite values, got {n}")
    max_lag = n - 1 if max_lag is None else int(max_lag)
    if not 0 <= max_lag < n:
        raise ValueError(f"max_lag must lie in [0, {n - 1}], got {max_lag}")
    if np.ptp(v) == 0:
        out = np.zeros(max_lag + 1)
        out[0] = 1.0
        return out
    from statsmodels.tsa.stattools import acf

    return acf(v, nlags=max_lag, adjusted=False, fft=n > 500)


def effective_sample_size(values) -> float:
    """How many independent values the series is worth for estimating its mean.

    arviz-stats' ESS of the mean (``method="mean"``; Vehtari et al. 2021, BDA3 §11.5): the series
    is split into halves, and ``n / τ`` with ``τ = 1 + 2 Σ ρ_k`` summed over Geyer's (1992)
    initial monotone sequence of the halves' autocorrelations, combined with the spread between
    the halves' means. Splitting is what a trajectory needs: a game that drifts (a new level, a
    new phase) makes its halves differ, and the ESS says the mean is less certain. About
    ``n (1 − φ) / (1 + φ)`` for a stationary AR(1) series with coefficient ``φ``; ``n`` for white
    noise and for a constant series.

    Ours: NaNs are dropped; fewer than 4 values give their count (too few to split and pair);
    the result is capped at ``n`` (arviz-stats reaches ``n log10 n`` on anti-correlated series).
    """
    v = finite_series(values)
    n = v.size
    if n < 4 or np.ptp(v) == 0:
        return float(n)
    from arviz_stats.base import array_stats

    return float(min(n, float(array_stats.ess(v, chain_axis=None, draw_axis=-1, method="mean"))))


def ess_weighted(v: np.ndarray, n_eff: float):
    """The ``DescrStatsW`` (statsmodels) of ``v`` with frequency weights that sum to ``n_eff``."""
    from statsmodels.stats.weightstats import DescrStatsW

    return DescrStatsW(v, weights=np.full(v.size, n_eff / v.size))


def ess_t_ci(values, *, confidence: float = 0.95, n_eff: float | None = None) -> tuple[float, float]:
    """The t interval of the mean of a series in time order, on its effective sample size.

    ``x̄ ± t_{1−α/2, ν} · σ̂ / √(n_eff − 1)`` with ``ν = n_eff − 1``, where ``σ̂`` is the
    population standard deviation of the values and ``n_eff`` their
    :func:`effective_sample_size`. Computed by statsmodels: ``DescrStatsW`` with frequency
    weights ``n_eff / n`` on every value (so the sample counts ``n_eff`` values) and its
    ``tconfint_mean``. The ``n_eff − 1`` is Bessel's correction on the effective count, and it is
    the right one for dependent values: ``E[σ̂²] = σ² − Var(x̄) = σ² (1 − 1/n_eff)``.

    Ours, because no library offers an interval of the mean on an ESS: the weights. See the
    module's coverage table for why this is the default interval.

    Parameters
    ----------
    values : array_like, 1-D
        Values in the order of the trajectory (NaNs are dropped).
    confidence : float
        Confidence level in (0, 1).
    n_eff : float, optional
        The :func:`effective_sample_size` of the finite values, where the caller has it already.

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` for fewer than 2 finite values or an effective sample size below 2 (a
        trajectory worth one state has no spread to measure); ``(v, v)`` if all values equal ``v``.
    """
    check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    v = finite_series(values)
    if v.size < 2:
        return float("nan"), float("nan")
    if np.ptp(v) == 0:
        return float(v[0]), float(v[0])
    n_eff = effective_sample_size(v) if n_eff is None else float(n_eff)
    if not n_eff >= 2:
        return float("nan"), float("nan")
    lo, hi = ess_weighted(v, n_eff).tconfint_mean(alpha=1 - confidence)
    return float(lo), float(hi)


def block_length(values) -> int:
    """Automatic block length of the moving-block bootstrap of the mean (Politis & White 2004).

    arch's ``optimal_block_length`` (with the correction of Patton, Politis & White 2009), the
    ``circular`` estimate, whose constant ``D = 4/3 g(0)²`` is the moving-block one too. It looks
    for the dependence up to lag ``⌈√n⌉ + max(5, ⌊log10 n⌋)``.

    Ours: rounded up to an integer and kept in ``[1, ⌈min(3 √n, n / 3)⌉]``; a constant series
    and fewer than 4 values get 1; a series too short for arch's lag window (fewer than about
    12 values) gets the cap, the cautious choice when the dependence cannot be measured.
    """
    v = finite_series(values)
    n = v.size
    if n < 4 or np.ptp(v) == 0:
        return 1
    cap = max(1, math.ceil(min(3 * math.sqrt(n), n / 3)))
    if n < math.ceil(math.sqrt(n)) + max(5, int(math.log10(n))) + 2:
        return cap
    from arch.bootstrap import optimal_block_length

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a lag with no correlation left divides 0 by 0
        b = float(optimal_block_length(v)["circular"].iloc[0])
    return int(min(cap, max(1, math.ceil(b)))) if math.isfinite(b) else 1


def _moving_block(block: int, v: np.ndarray, rng: np.random.Generator):
    from arch.bootstrap import MovingBlockBootstrap

    return MovingBlockBootstrap(block, v, seed=rng)


def block_indices(n: int, block: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n_resamples`` moving-block resamples of a series of length ``n``, shape ``(n_resamples, n)``.

    arch's ``MovingBlockBootstrap.update_indices``: each resample concatenates ``⌈n / block⌉``
    blocks of ``block`` consecutive indices with uniformly drawn starts, cut to ``n``. Index rows
    of a table (e.g. one curve per state) with them to resample whole rows in blocks of
    consecutive states.
    """
    check_int("block", block, minimum=1, maximum=max(int(n), 1))
    check_int("n_resamples", n_resamples, minimum=1)
    bs = _moving_block(int(block), np.arange(int(n)), rng)
    return np.stack([bs.update_indices() for _ in range(n_resamples)])


def block_bootstrap_ci(values, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                       block: int | None = None) -> tuple[float, float]:
    """Percentile confidence interval of the mean of a series in time order, from moving blocks.

    arch's ``MovingBlockBootstrap(block, values).conf_int(np.mean, method="percentile")``. It
    under-covers on strongly dependent series (see the module's table); :func:`mean_ci` is the
    study's interval.

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
    v = finite_series(values)
    if v.size < 2:
        return float("nan"), float("nan")
    if np.ptp(v) == 0:
        return float(v[0]), float(v[0])
    b = block_length(v) if block is None else int(block)
    if not 1 <= b <= v.size:
        raise ValueError(f"block must lie in [1, {v.size}], got {block}")
    ci = _moving_block(b, v, np.random.default_rng(seed)).conf_int(np.mean, reps=n_resamples, method="percentile",
                                                                    size=confidence)
    return float(ci[0, 0]), float(ci[1, 0])


def mean_ci(values, *, confidence: float = 0.95, interval: str = DEFAULT_INTERVAL, n_resamples: int = 2000,
            seed: int = 0, n_eff: float | None = None) -> tuple[float, float]:
    """The study's confidence interval of the mean of a series in time order.

    Parameters
    ----------
    values : array_like, 1-D
        Values in the order of the trajectory (NaNs are dropped).
    confidence : float
        Confidence level in (0, 1).
    interval : {"ess_t", "block"}
        :func:`ess_t_ci` (default: it covers on dependent series) or :func:`block_bootstrap_ci`.
    n_resamples, seed
        Of the block bootstrap (unused by ``"ess_t"``).
    n_eff : float, optional
        For ``"ess_t"``: the effective sample size of the finite values, where the caller has it.
    """
    check_choice("interval", interval, INTERVALS)
    if interval == "ess_t":
        return ess_t_ci(values, confidence=confidence, n_eff=n_eff)
    return block_bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)


def paired_block_test(a, b, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                      block: int | None = None, interval: str = DEFAULT_INTERVAL) -> dict:
    """Mean difference ``a − b`` of two methods on the same states, with an interval and a two-sided p-value.

    The differences, in trajectory order, carry the dependence between consecutive states.

    * ``interval="ess_t"`` (default): the one-sample t test and t interval of the differences
      on their effective sample size (statsmodels ``DescrStatsW`` with frequency weights summing
      to the ESS: ``ttest_mean(0)`` and ``tconfint_mean``; see :func:`ess_t_ci`).
    * ``interval="block"``: arch's moving-block bootstrap of the differences (the same blocks of
      states for both methods); the percentile interval, and as p-value twice the fraction of the
      resampled means, centred on zero, beyond the observed mean on its side.

    Returns
    -------
    dict
        ``mean``, ``ci_low``, ``ci_high``, ``p``, ``n`` (finite pairs), ``n_eff`` (effective sample
        size of the differences) and ``block`` (the :func:`block_length` of the differences, or the
        ``block`` given; the block bootstrap's block length).
    """
    check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    check_int("n_resamples", n_resamples, minimum=1)
    check_choice("interval", interval, INTERVALS)
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
    n_eff = effective_sample_size(d)
    if interval == "ess_t":
        if n_eff >= 2:
            w = ess_weighted(d, n_eff)
            lo, hi = w.tconfint_mean(alpha=1 - confidence)
            p = w.ttest_mean(0.0)[1]
        else:
            lo = hi = p = float("nan")
    else:
        if not 1 <= blk <= n:
            raise ValueError(f"block must lie in [1, {n}], got {block}")
        means = _moving_block(blk, d, np.random.default_rng(seed)).apply(np.mean, n_resamples).ravel()
        alpha = (1 - confidence) / 2
        lo, hi = np.quantile(means, [alpha, 1 - alpha])
        centred = means - d.mean()  # the null distribution of the mean, shifted to zero
        p = min(1.0, 2 * min(np.mean(centred >= d.mean()), np.mean(centred <= d.mean())))
    return {"mean": float(d.mean()), "ci_low": float(lo), "ci_high": float(hi), "p": float(p), "n": n,
            "n_eff": n_eff, "block": blk}


def pooled_block_ci(series: Mapping[str, Sequence[float]] | Sequence[Sequence[float]], *, confidence: float = 0.99,
                    n_resamples: int = 2000, seed: int = 0, interval: str = DEFAULT_INTERVAL) -> dict:
    """Mean over the states of several trajectories pooled together, with an interval that keeps each one's dependence.

    Huber et al. pool the states of their four games and draw the mean with a 99 % CI
    (reference notes §5; ``sanity_checks_plot.py``: ``combine_game``, ``ci=99``). The pooled
    mean here is theirs: every state counts once, so a game weighs by its number of states,
    ``m = Σ n_g m_g / Σ n_g``. The interval is not: their bootstrap resamples the pooled states
    as if independent. Here the games are independent of each other and each keeps its own
    dependence (a stratified estimate; no library offers one for dependent strata):

    * ``interval="ess_t"`` (default): ``Var(m) = Σ (n_g / N)² s²_g`` with each game's squared
      standard error ``s²_g`` on its effective sample size (as :func:`ess_t_ci`), and a t
      quantile with Welch–Satterthwaite degrees of freedom ``Var(m)² / Σ ((n_g / N)² s²_g)² / (n_eff,g − 1)``;
    * ``interval="block"``: each game resampled on its own in moving blocks of its own
      :func:`block_length` (arch), the resampled pooled mean ``Σ n_g m*_g / Σ n_g``, percentiles.
      No block straddles the end of one game and the start of the next.

    Parameters
    ----------
    series : mapping of name to 1-D array, or sequence of 1-D arrays
        Values of each trajectory in time order; NaNs are dropped.
    confidence : float
        Confidence level in (0, 1); default 0.99, the paper's.
    n_resamples, seed
        Of the block bootstrap (unused by ``"ess_t"``).
    interval : {"ess_t", "block"}
        See above.

    Returns
    -------
    dict
        ``mean``, ``ci_low``, ``ci_high``, ``n`` (pooled finite values), ``n_eff`` (sum of the
        trajectories' :func:`effective_sample_size`), ``groups`` (names of the trajectories with at
        least one value) and ``blocks`` (:func:`block_length` per trajectory). A trajectory with one
        value enters the mean but adds no spread; the interval is NaN when no trajectory has two
        values, and with ``"ess_t"`` also when a trajectory with spread is worth fewer than 2 states.
    """
    check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    check_int("n_resamples", n_resamples, minimum=1)
    check_choice("interval", interval, INTERVALS)
    items = series.items() if isinstance(series, Mapping) else enumerate(series)
    parts = {str(k): finite_series(v) for k, v in items}
    parts = {k: v for k, v in parts.items() if v.size}
    n = sum(v.size for v in parts.values())
    if n == 0:
        return {"mean": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": 0, "n_eff": 0.0,
                "groups": [], "blocks": {}}
    mean = float(sum(v.sum() for v in parts.values()) / n)
    spread = {k: v for k, v in parts.items() if v.size >= 2 and np.ptp(v) > 0}
    blocks = {k: block_length(v) if k in spread else 1 for k, v in parts.items()}
    n_effs = {k: effective_sample_size(v) for k, v in parts.items()}
    if not spread:
        lo = hi = mean if all(v.size >= 2 for v in parts.values()) else float("nan")
    elif interval == "ess_t":
        lo, hi = _pooled_t(spread, n_effs, n, mean, confidence)
    else:
        rng = np.random.default_rng(seed)
        total = np.zeros(n_resamples)
        for k, v in parts.items():
            if k in spread:
                total += v.size * _moving_block(blocks[k], v, rng).apply(np.mean, n_resamples).ravel()
            else:
                total += v.sum()  # a constant (or single) trajectory resamples to itself
        alpha = (1 - confidence) / 2
        lo, hi = (float(q) for q in np.quantile(total / n, [alpha, 1 - alpha]))
    return {"mean": mean, "ci_low": float(lo), "ci_high": float(hi), "n": n, "n_eff": float(sum(n_effs.values())),
            "groups": list(parts), "blocks": blocks}


def _pooled_t(spread: dict[str, np.ndarray], n_effs: dict[str, float], n: int, mean: float,
              confidence: float) -> tuple[float, float]:
    """Stratified t interval of the pooled mean (see :func:`pooled_block_ci`)."""
    from scipy.stats import t as student_t

    if any(n_effs[k] < 2 for k in spread):
        return float("nan"), float("nan")
    terms = {k: (v.size / n) ** 2 * ess_weighted(v, n_effs[k]).std_mean ** 2 for k, v in spread.items()}
    var = sum(terms.values())
    dof = var**2 / sum(t**2 / (n_effs[k] - 1) for k, t in terms.items())
    half = float(student_t.ppf(0.5 + confidence / 2, dof)) * math.sqrt(var)
    return mean - half, mean + half
