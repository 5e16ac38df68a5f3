"""The statistics routines against the libraries that replace them (arch, statsmodels, arviz-stats, scipy).

The ``_ref_*`` functions are the routines this project wrote by hand before it used the libraries,
kept here as independent implementations: each library-backed function must agree with its old
counterpart exactly where the algorithm is the same (Holm, moving-block indices, percentile CI,
autocorrelation) and closely where the estimator is a documented variant (block length, ESS).
"""

import math

import numpy as np
import pytest
from scipy.signal import lfilter


def ar1(n, phi, *, seed=0):
    """A stationary AR(1) series (unit innovations), generated with a stationary start."""
    rng = np.random.default_rng(seed)
    zi = phi * rng.normal(size=1) / np.sqrt(1 - phi**2)
    return lfilter([1.0], [1.0, -phi], rng.normal(size=n), zi=zi)[0]


# --- the old hand-written routines (reference implementations) ---------------------------------------------

def _ref_holm(p):
    p = np.asarray(p, dtype=np.float64)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        out[order] = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    return out


def _ref_block_indices(n, block, n_resamples, rng):
    k = math.ceil(n / block)
    starts = rng.integers(0, n - block + 1, size=(n_resamples, k))
    return (starts[:, :, None] + np.arange(block)).reshape(n_resamples, k * block)[:, :n]


def _ref_percentile_ci(v, block, confidence, n_resamples, seed):
    means = v[_ref_block_indices(v.size, block, n_resamples, np.random.default_rng(seed))].mean(axis=1)
    alpha = (1 - confidence) / 2
    return tuple(float(q) for q in np.quantile(means, [alpha, 1 - alpha]))


def _ref_autocorrelation(v, max_lag):
    d = v - v.mean()
    c0 = float(d @ d) / v.size
    return np.array([float(d[: v.size - k] @ d[k:]) / v.size / c0 for k in range(max_lag + 1)])


def _ref_block_length(v):
    """Politis & White (2004) with the 2009 correction, as written here before: m̂ searched up to the cap."""
    n = v.size
    cap = max(1, math.ceil(min(3 * math.sqrt(n), n / 3)))
    kn = max(5, math.ceil(math.sqrt(math.log10(n))))
    max_lag = min(n - 1, cap + kn + 1)
    rho = _ref_autocorrelation(v, max_lag)
    bound = 2.0 * math.sqrt(math.log10(n) / n)
    m_hat = next((m for m in range(0, max_lag - kn + 1) if np.all(np.abs(rho[m + 1: m + 1 + kn]) < bound)),
                 max_lag - kn)
    big_m = min(2 * max(m_hat, 1), max_lag)
    d = v - v.mean()
    k = np.arange(-big_m, big_m + 1)
    acov = np.array([float(d[: n - abs(j)] @ d[abs(j):]) / n for j in k])
    t = np.abs(k / big_m)
    lam = np.where(t <= 0.5, 1.0, np.where(t <= 1.0, 2.0 * (1.0 - t), 0.0))
    g0, g = float(np.sum(lam * acov)), float(np.sum(lam * np.abs(k) * acov))
    if g0 <= 0 or g == 0:
        return 1
    return int(min(cap, max(1, math.ceil((2 * g * g / (4.0 / 3.0 * g0 * g0)) ** (1 / 3) * n ** (1 / 3)))))


def _ref_geyer_ess(v):
    """n / (1 + 2 Σ ρ_k) over Geyer's initial positive sequence, capped at n."""
    n = v.size
    rho = _ref_autocorrelation(v, n - 1)
    tau = -1.0
    for m in range(0, (n - 1) // 2):
        pair = rho[2 * m] + rho[2 * m + 1]
        if pair <= 0:
            break
        tau += 2 * pair
    return float(min(n, n / max(tau, 1e-12)))


# --- Holm ----------------------------------------------------------------------------------------------------

def test_holm_is_statsmodels_holm_and_the_old_routine():
    from statsmodels.stats.multitest import multipletests

    from saliency_lib.metrics import holm

    rng = np.random.default_rng(0)
    for m in (1, 2, 5, 40):
        p = rng.uniform(size=m) ** 3
        p[: m // 3] = p[0]  # ties
        np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=0, atol=1e-15)
        np.testing.assert_allclose(holm(p), _ref_holm(p), rtol=0, atol=1e-15)
    p = np.array([0.01, np.nan, 0.04, 0.03, np.nan])
    np.testing.assert_allclose(holm(p), _ref_holm(p), rtol=0, atol=1e-15)  # NaNs stay NaN and do not count


# --- moving-block bootstrap ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n, block", [(100, 1), (100, 7), (997, 40), (50, 50)])
def test_block_indices_are_arch_moving_block_indices(n, block):
    from arch.bootstrap import MovingBlockBootstrap

    from saliency_lib.metrics.dependence import block_indices

    ours = block_indices(n, block, 30, np.random.default_rng(5))
    bs = MovingBlockBootstrap(block, np.arange(n), seed=np.random.default_rng(5))
    np.testing.assert_array_equal(ours, np.stack([bs.update_indices() for _ in range(30)]))
    np.testing.assert_array_equal(ours, _ref_block_indices(n, block, 30, np.random.default_rng(5)))


def test_percentile_block_ci_is_archs_percentile_interval():
    from arch.bootstrap import MovingBlockBootstrap

    from saliency_lib.metrics.dependence import block_bootstrap_ci

    x = ar1(300, 0.8, seed=2)
    for block in (1, 9, 25):
        ours = block_bootstrap_ci(x, block=block, n_resamples=999, seed=3, confidence=0.9)
        bs = MovingBlockBootstrap(block, x, seed=np.random.default_rng(3))
        lib = bs.conf_int(np.mean, reps=999, method="percentile", size=0.9).ravel()
        np.testing.assert_allclose(ours, lib, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours, _ref_percentile_ci(x, block, 0.9, 999, 3), rtol=0, atol=1e-12)


def test_block_length_is_archs_politis_white_circular_length():
    """arch's ``optimal_block_length`` (circular: the moving-block constant 4/3), rounded up and capped at
    ``min(3√n, n/3)``. The old routine searched for the last correlated lag up to the cap, arch up to
    ``√n + 5``: on moderately dependent series the two agree within a few states; on strongly dependent
    ones the old one reached its cap (in 31 % of the study's 997-state sanity series, against 1 % now)."""
    from arch.bootstrap import optimal_block_length

    from saliency_lib.metrics.dependence import block_length

    cap = math.ceil(min(3 * math.sqrt(997), 997 / 3))
    for phi in (0.0, 0.3, 0.5, 0.7):
        for s in range(5):
            x = ar1(997, phi, seed=s)
            assert block_length(x) == min(cap, max(1, math.ceil(optimal_block_length(x)["circular"].iloc[0])))
            assert abs(block_length(x) - _ref_block_length(x)) <= 8, (phi, s)
    assert block_length(np.ones(50)) == 1 and block_length([1.0, 2.0, 3.0]) == 1
    assert block_length(ar1(10, 0.9, seed=1)) == math.ceil(10 / 3)  # too short to measure: the cautious cap


# --- autocorrelation and effective sample size ---------------------------------------------------------------

def test_autocorrelation_is_statsmodels_acf():
    from statsmodels.tsa.stattools import acf

    from saliency_lib.metrics.dependence import autocorrelation

    x = ar1(1000, 0.7, seed=4)
    np.testing.assert_allclose(autocorrelation(x, 60), acf(x, nlags=60, adjusted=False, fft=False), atol=1e-12)
    np.testing.assert_allclose(autocorrelation(x, 60), _ref_autocorrelation(x, 60), atol=1e-12)


def test_effective_sample_size_agrees_with_geyers_estimate_on_stationary_series():
    """arviz-stats' ESS of the mean (split series, initial monotone sequence) and the old estimate
    (whole series, initial positive sequence) agree within a few per cent on most stationary AR(1)
    series; splitting makes the new one smaller where the two halves' means drift apart."""
    from arviz_stats.base import array_stats

    from saliency_lib.metrics.dependence import effective_sample_size

    x = ar1(1000, 0.9, seed=0)
    assert effective_sample_size(x) == float(array_stats.ess(x, chain_axis=None, draw_axis=-1, method="mean"))
    assert effective_sample_size(np.r_[np.nan, x, np.nan]) == effective_sample_size(x)  # NaNs are dropped
    assert effective_sample_size(np.ones(9)) == 9.0 and effective_sample_size([1.0, 2.0, 4.0]) == 3.0
    assert effective_sample_size(np.tile([1.0, -1.0], 200)) == 400  # anti-correlated: capped at n
    for phi in (0.0, 0.5, 0.9):
        r = np.array([effective_sample_size(x) / _ref_geyer_ess(x) for x in (ar1(1000, phi, seed=s) for s in range(12))])
        assert np.median(r) == pytest.approx(1.0, abs=0.05), (phi, r)
        assert r.max() < 1.3, (phi, r)
