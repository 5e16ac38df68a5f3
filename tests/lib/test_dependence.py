"""Block-bootstrap statistics for the states of one trajectory, checked on series with known answers."""

import numpy as np
import pytest

from saliency_lib.metrics.dependence import (
    autocorrelation,
    block_bootstrap_ci,
    block_length,
    effective_sample_size,
    paired_block_test,
    pooled_block_ci,
)


def ar1(n, phi, *, mean=0.0, seed=0, rng=None):
    rng = rng or np.random.default_rng(seed)
    e = rng.normal(size=n + 200)
    x = np.empty_like(e)
    x[0] = e[0] / np.sqrt(1 - phi**2)
    for t in range(1, x.size):
        x[t] = phi * x[t - 1] + e[t]
    return mean + x[200:]  # burn-in: stationary from the start


def test_autocorrelation_of_ar1_and_of_a_constant():
    rho = autocorrelation(ar1(20_000, 0.7, seed=1), 3)
    np.testing.assert_allclose(rho, [1, 0.7, 0.49, 0.343], atol=0.03)
    np.testing.assert_array_equal(autocorrelation(np.ones(10), 2), [1, 0, 0])
    with pytest.raises(ValueError, match="at least 2 finite"):
        autocorrelation([1.0])
    with pytest.raises(ValueError, match="max_lag"):
        autocorrelation([1.0, 2.0, 3.0], 5)


def test_effective_sample_size_matches_the_ar1_formula():
    n = 20_000
    assert effective_sample_size(np.random.default_rng(2).normal(size=n)) == pytest.approx(n, rel=0.05)
    phi = 0.8
    assert effective_sample_size(ar1(n, phi, seed=3)) == pytest.approx(n * (1 - phi) / (1 + phi), rel=0.15)


def test_block_length_grows_with_dependence():
    white = [block_length(np.random.default_rng(s).normal(size=500)) for s in range(8)]
    b5 = [block_length(ar1(500, 0.5, seed=s)) for s in range(8)]
    b9 = [block_length(ar1(500, 0.9, seed=s)) for s in range(8)]
    assert np.median(white) <= 3 < np.median(b5) < np.median(b9) <= np.ceil(min(3 * np.sqrt(500), 500 / 3))


def _coverage(ci, reps=200, n=200, phi=0.8, mean=1.0):
    rng = np.random.default_rng(6)
    hits = 0
    for r in range(reps):
        lo, hi = ci(ar1(n, phi, mean=mean, rng=rng), r)
        hits += lo <= mean <= hi
    return hits / reps


def test_block_bootstrap_covers_the_mean_of_an_ar1_series_and_the_naive_bootstrap_does_not():
    """AR(1), φ = 0.8, n = 200, 95 % intervals: the variance of the mean is (1 + φ)/(1 − φ) = 9 times
    the independent one, so an interval that ignores the dependence is about 3 times too narrow."""
    block = _coverage(lambda x, r: block_bootstrap_ci(x, n_resamples=499, seed=r))
    naive = _coverage(lambda x, r: block_bootstrap_ci(x, n_resamples=499, seed=r, block=1))
    assert 0.82 <= block <= 0.99, block
    assert naive < 0.65, naive


def test_block_bootstrap_edge_cases():
    assert np.isnan(block_bootstrap_ci([1.0])).all()
    assert block_bootstrap_ci([2.0, 2.0, np.nan, 2.0]) == (2.0, 2.0)
    with pytest.raises(ValueError, match="block must lie"):
        block_bootstrap_ci([1.0, 2.0, 3.0], block=4)
    with pytest.raises(ValueError, match="confidence"):
        block_bootstrap_ci([1.0, 2.0], confidence=95)
    # the same seed gives the same interval
    x = ar1(100, 0.5, seed=7)
    assert block_bootstrap_ci(x, seed=3) == block_bootstrap_ci(x, seed=3)


@pytest.mark.parametrize("interval", ["ess_t", "block"])
def test_paired_block_test_holds_its_level_and_finds_a_shift(interval):
    """Two methods that follow the same trajectory plus their own AR(1) noise: the test must not reject
    like an independent one would (nominal 5 of 100; measured: ESS t 6, block 11), and it finds a shift
    of 1 (measured: 27 and 29 of 30)."""
    rng = np.random.default_rng(8)
    false = found = 0
    for r in range(100):
        common = ar1(150, 0.8, rng=rng)  # both methods follow the same trajectory
        a, b = common + ar1(150, 0.6, rng=rng), common + ar1(150, 0.6, rng=rng)
        false += paired_block_test(a, b, n_resamples=500, seed=r, interval=interval)["p"] < 0.05
    for r in range(30):
        common = ar1(150, 0.8, rng=rng)
        res = paired_block_test(common + 1.0 + ar1(150, 0.6, rng=rng), common + ar1(150, 0.6, rng=rng),
                                n_resamples=500, seed=r, interval=interval)
        found += res["p"] < 0.05 and res["ci_low"] > 0
    assert false <= 15, false
    assert found >= 24, found
    assert res["n"] == 150 and res["n_eff"] < 150 and res["block"] >= 1
    with pytest.raises(ValueError, match="equal lengths"):
        paired_block_test([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="unknown interval 'bca'"):
        paired_block_test([1, 2], [1, 2], interval="bca")


@pytest.mark.parametrize("interval", ["ess_t", "block"])
def test_pooled_ci_covers_the_pooled_mean_of_independent_ar1_games(interval):
    """Four games of different lengths, means and dependence, pooled as Huber et al. pool their games:
    the 99 % interval covers the pooled (state-weighted) true mean near nominally; treating the
    pooled states as independent (block 1 per game) does not."""
    means, phis, sizes = [0.0, 1.0, 2.0, -1.0], [0.8, 0.6, 0.9, 0.7], [150, 100, 200, 120]
    truth = sum(m * n for m, n in zip(means, sizes)) / sum(sizes)
    rng = np.random.default_rng(12)
    hits = naive_hits = 0
    reps = 100
    for r in range(reps):
        games = {f"g{i}": ar1(n, p, mean=m, rng=rng) for i, (m, p, n) in enumerate(zip(means, phis, sizes))}
        res = pooled_block_ci(games, n_resamples=499, seed=r, interval=interval)
        hits += res["ci_low"] <= truth <= res["ci_high"]
        flat = np.concatenate(list(games.values()))
        idx = np.random.default_rng(r).integers(0, flat.size, size=(999, flat.size))
        lo, hi = np.quantile(flat[idx].mean(axis=1), [0.005, 0.995])  # the paper's independent pooled bootstrap
        naive_hits += lo <= truth <= hi
    assert hits / reps >= 0.85, (hits, naive_hits)
    assert naive_hits / reps < 0.7, naive_hits
    assert res["n"] == sum(sizes) and res["groups"] == ["g0", "g1", "g2", "g3"] and res["n_eff"] < res["n"]
    assert res["mean"] == pytest.approx(np.concatenate(list(games.values())).mean())


def test_pooled_ci_edge_cases():
    empty = pooled_block_ci({"a": [np.nan]})
    assert empty["n"] == 0 and np.isnan(empty["mean"]) and empty["groups"] == []
    single = pooled_block_ci([[1.0], [3.0]])
    assert single["mean"] == 2.0 and np.isnan(single["ci_low"])
    const = pooled_block_ci({"a": [1.0, 1.0], "b": [3.0, 3.0, 3.0, 3.0]})
    assert const["mean"] == pytest.approx(7 / 3) and const["ci_low"] == const["ci_high"] == pytest.approx(7 / 3)
    with pytest.raises(ValueError, match="confidence"):
        pooled_block_ci([[1.0, 2.0]], confidence=99)
