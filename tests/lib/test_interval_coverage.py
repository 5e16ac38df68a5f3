"""Coverage of the study's interval of a mean on dependent series: the check that chose it.

Stationary AR(1) series of n = 1000 values with coefficient φ chosen so that the effective sample
size ``n (1 − φ) / (1 + φ)`` is 10 to 300, as the states of one greedy trajectory are worth; the true
mean is 0. An interval of the mean must cover 0 in about 95 % of the series at 95 %. The study's
default interval (:func:`saliency_lib.metrics.mean_ci`, the t interval on the effective sample size)
must cover at least 88 % where the trajectory is worth 15 states; the percentile moving-block
bootstrap, which the study used before, does not, and that is why it is no longer the default.
"""

import numpy as np
import pytest
from scipy.signal import lfilter

from saliency_lib.metrics import mean_ci

N = 1000


def ar1_batch(ess: float, reps: int, seed: int, n: int = N) -> np.ndarray:
    """``reps`` independent stationary AR(1) series of length ``n`` (rows) whose ESS is ``ess``."""
    phi = (n - ess) / (n + ess)
    rng = np.random.default_rng(seed)
    start = phi * rng.normal(size=(reps, 1)) / np.sqrt(1 - phi**2)  # x₀ = φ x₋₁ + e₀ with x₋₁ stationary
    return lfilter([1.0], [1.0, -phi], rng.normal(size=(reps, n)), axis=1, zi=start)[0]


def coverage(series: np.ndarray, **kw) -> tuple[float, float]:
    """Fraction of the rows whose 95 % :func:`mean_ci` covers the true mean 0, and the median width.

    A series estimated to be worth fewer than 2 states has no interval (NaN); it counts as not covered.
    """
    ci = np.array([mean_ci(x, **kw) for x in series])
    return float(np.mean((ci[:, 0] <= 0) & (0 <= ci[:, 1]))), float(np.nanmedian(ci[:, 1] - ci[:, 0]))


def ideal_width(ess: float, n: int = N) -> float:
    """Width of the 95 % interval that knows the variance of the mean: 2 · 1.96 · sd(x̄)."""
    phi = (n - ess) / (n + ess)
    k = np.arange(1, n)
    var_mean = (1 + 2 * np.sum((1 - k / n) * phi**k)) / (1 - phi**2) / n
    return 2 * 1.959964 * float(np.sqrt(var_mean))


@pytest.mark.slow
def test_the_default_interval_covers_the_mean_of_dependent_series():
    """1000 series per ESS. Measured: 0.90 (ESS 10), 0.91 (15), 0.93 (30), 0.95 (100), 0.95 (300).
    The bar at ESS 15 is the issue's: 0.88. The interval must not buy its coverage with width: its
    median width stays within 25 % of the ideal one."""
    for i, ess in enumerate((10, 15, 30, 100, 300)):
        cov, width = coverage(ar1_batch(ess, 1000, seed=100 + i))
        floor = 0.85 if ess == 10 else 0.88 if ess == 15 else 0.90
        assert cov >= floor, (ess, cov)
        assert cov <= 0.985, (ess, cov)
        assert width == pytest.approx(ideal_width(ess), rel=0.25), (ess, width, ideal_width(ess))


@pytest.mark.slow
def test_the_percentile_block_bootstrap_undercovers_where_a_trajectory_is_worth_few_states():
    """300 series at ESS 15 (999 resamples each would be slower than this test may be; 499 suffice for
    a percentile). Measured: block bootstrap 0.79, ESS t interval 0.91 on the same series."""
    series = ar1_batch(15, 300, seed=7)
    block, _ = coverage(series, interval="block", n_resamples=499)
    ess_t, _ = coverage(series)
    assert block < 0.88, block
    assert ess_t - block >= 0.05, (ess_t, block)
