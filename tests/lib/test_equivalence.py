"""Equivalence verdicts: reproduced / differs / inconclusive / withheld, on synthetic data with known answers."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.signal import lfilter

from saliency_lib.metrics import (
    MIN_ESS,
    VERDICTS,
    compare_with_reference,
    effective_sample_size,
    equivalence_verdict,
)


def noise(n=500, sd=0.05, seed=0):
    """Independent values around 0: their effective sample size is about n, far above the minimum."""
    return np.random.default_rng(seed).normal(scale=sd, size=n)


def test_the_interval_verdict_flips_at_the_margin():
    v = lambda lo, hi: equivalence_verdict((lo + hi) / 2, lo, hi, margin=0.1, n_eff=100).verdict  # noqa: E731
    assert v(-0.05, 0.0999) == "reproduced"
    assert v(-0.05, 0.1) == "inconclusive"  # touching the margin is not inside it
    assert v(-0.1, 0.05) == "inconclusive"
    assert v(0.1, 0.2) == "inconclusive"
    assert v(0.1001, 0.2) == "differs"
    assert v(-0.3, -0.1001) == "differs"
    assert v(-0.3, 0.3) == "inconclusive"  # straddles both margins
    r = equivalence_verdict(0.02, -0.01, 0.05, margin=0.1, n_eff=100, n=400)
    assert r.reason == "90 % interval inside ±0.1" and r.as_dict()["n"] == 400 and set(VERDICTS) >= {r.verdict}
    assert equivalence_verdict(0.3, 0.2, 0.4, margin=0.1, n_eff=100).reason == "90 % interval above +0.1"


def test_the_data_verdict_flips_where_the_90_percent_interval_crosses_the_margin():
    """Shift the same noise so that one end of its 90 % interval sits just inside or just outside the
    margin: the verdict flips there, and the TOST p-value crosses 5 % at the same shift."""
    x, margin = noise(), 0.1
    base = compare_with_reference(x, 0.0, margin=margin)
    assert base.verdict == "reproduced" and base.confidence == pytest.approx(0.90) and base.n_eff > 300
    eps = 1e-7
    inside = compare_with_reference(x + (margin - base.ci_high - eps), 0.0, margin=margin)
    touching = compare_with_reference(x + (margin - base.ci_high + eps), 0.0, margin=margin)
    assert (inside.verdict, touching.verdict) == ("reproduced", "inconclusive")
    assert inside.p_tost < 0.05 < touching.p_tost
    beyond = compare_with_reference(x + (margin - base.ci_low + eps), 0.0, margin=margin)
    straddling = compare_with_reference(x + (margin - base.ci_low - eps), 0.0, margin=margin)
    assert (straddling.verdict, beyond.verdict) == ("inconclusive", "differs")
    below = compare_with_reference(x - (margin + base.ci_high + eps), 0.0, margin=margin)
    assert below.verdict == "differs" and below.reason == "90 % interval below −0.1"
    # the interval moves with the shift and keeps its width; the difference is ours minus the reference
    assert inside.ci_high - inside.ci_low == pytest.approx(base.ci_high - base.ci_low)
    assert compare_with_reference(x + 0.3, 0.1, margin=margin).difference == pytest.approx(x.mean() + 0.2)


def test_the_reference_sampling_error_enters_as_welchs_t_test():
    """Cross-check against scipy's Welch t test from summary statistics: our values count as n_eff values
    whose variance has Bessel's correction on n_eff; the reference as reference_n values."""
    x = 0.96 + noise(n=997, sd=0.03, seed=1)
    ref, sd, n_ref = 0.99, 0.02, 103.0
    for ddof in (0, 1):
        r = compare_with_reference(x, ref, margin=0.1, reference_sd=sd, reference_n=n_ref, reference_ddof=ddof)
        e = effective_sample_size(x)
        s1 = x.std() * math.sqrt(e / (e - 1))
        s2 = sd * math.sqrt((n_ref - ddof) / (n_ref - 1))  # as a sample (ddof 1) standard deviation
        lower = stats.ttest_ind_from_stats(x.mean(), s1, e, ref - 0.1, s2, n_ref, equal_var=False, alternative="greater")
        upper = stats.ttest_ind_from_stats(x.mean(), s1, e, ref + 0.1, s2, n_ref, equal_var=False, alternative="less")
        assert r.p_tost == pytest.approx(max(lower.pvalue, upper.pvalue), rel=1e-9)
        se2 = (s1**2 / e, s2**2 / n_ref)
        dof = sum(se2) ** 2 / (se2[0] ** 2 / (e - 1) + se2[1] ** 2 / (n_ref - 1))
        half = stats.t.ppf(0.95, dof) * math.sqrt(sum(se2))
        assert (r.ci_low, r.ci_high) == pytest.approx((x.mean() - ref - half, x.mean() - ref + half), rel=1e-9)
        assert r.verdict == "reproduced"
    exact = compare_with_reference(x, ref, margin=0.1)
    assert exact.ci_high - exact.ci_low < r.ci_high - r.ci_low  # the reference's own error widens the interval
    # a margin that the paper's error alone makes unreachable: inconclusive rather than differs
    noisy = compare_with_reference(x, ref, margin=0.05, reference_sd=0.2, reference_n=20, reference_ddof=1)
    assert noisy.verdict == "inconclusive" and compare_with_reference(x, ref, margin=0.05).verdict == "reproduced"


def test_the_verdict_is_withheld_below_the_effective_sample_size_minimum():
    """1000 consecutive states of an AR(1) trajectory with φ = 0.97 are worth about 15 independent ones."""
    phi = 0.97
    rng = np.random.default_rng(3)
    x = lfilter([1.0], [1.0, -phi], rng.normal(scale=0.01, size=1000),
                zi=[phi * rng.normal(scale=0.01) / math.sqrt(1 - phi**2)])[0]
    r = compare_with_reference(x, 0.0, margin=0.5)
    assert r.n == 1000 and r.n_eff < MIN_ESS
    assert r.verdict == "withheld" and r.reason == f"effective sample size {r.n_eff:.0f} < 30"
    assert math.isfinite(r.ci_low) and r.ci_high < 0.5  # the numbers are still there for the reader
    assert compare_with_reference(x, 0.0, margin=0.5, min_ess=5).verdict == "reproduced"
    assert equivalence_verdict(0.0, -0.01, 0.01, margin=0.1, n_eff=29.9).verdict == "withheld"
    assert equivalence_verdict(0.0, -0.01, 0.01, margin=0.1, n_eff=30).verdict == "reproduced"
    assert equivalence_verdict(0.0, -0.01, 0.01, margin=0.1, n_eff=float("nan")).verdict == "withheld"
    nan = equivalence_verdict(0.0, float("nan"), float("nan"), margin=0.1, n_eff=100)
    assert (nan.verdict, nan.reason) == ("withheld", "no interval")
    one = compare_with_reference([0.5], 0.0, margin=0.1, min_ess=0)
    assert one.verdict == "withheld" and one.reason == "no interval" and one.difference == 0.5


def test_a_constant_series_compares_exactly():
    r = compare_with_reference(np.full(100, 0.95), 0.99, margin=0.1)
    assert (r.verdict, r.ci_low, r.ci_high, r.p_tost) == ("reproduced", pytest.approx(-0.04), pytest.approx(-0.04), 0.0)
    assert compare_with_reference(np.full(100, 0.75), 0.99, margin=0.1).verdict == "differs"
    with_sd = compare_with_reference(np.full(100, 0.95), 0.99, margin=0.1, reference_sd=0.05, reference_n=100,
                                     reference_ddof=1)
    assert with_sd.ci_low < -0.04 < with_sd.ci_high and with_sd.verdict == "reproduced"


def test_bad_inputs_say_what_is_wrong():
    x = noise()
    with pytest.raises(ValueError, match="margin must be a real number in \\(0, inf\\), got 0.0"):
        compare_with_reference(x, 0.0, margin=0)
    with pytest.raises(ValueError, match="margin"):
        equivalence_verdict(0.0, -0.1, 0.1, margin=-0.1, n_eff=100)
    with pytest.raises(ValueError, match="reference_sd and reference_n go together"):
        compare_with_reference(x, 0.0, margin=0.1, reference_sd=0.1)
    with pytest.raises(ValueError, match="reference_ddof must be 0 .* or 1"):
        compare_with_reference(x, 0.0, margin=0.1, reference_sd=0.1, reference_n=100)
    with pytest.raises(ValueError, match="reference_n must be a real number in \\[2"):
        compare_with_reference(x, 0.0, margin=0.1, reference_sd=0.1, reference_n=1, reference_ddof=1)
    with pytest.raises(ValueError, match="alpha must be a real number in \\(0, 0.5\\)"):
        compare_with_reference(x, 0.0, margin=0.1, alpha=0.6)
    with pytest.raises(ValueError, match="reference must be a real number"):
        compare_with_reference(x, float("nan"), margin=0.1)
    with pytest.raises(ValueError, match="ci_low must not exceed ci_high"):
        equivalence_verdict(0.0, 0.1, -0.1, margin=0.1, n_eff=100)
    with pytest.raises(ValueError, match="min_ess"):
        equivalence_verdict(0.0, -0.1, 0.1, margin=0.1, n_eff=100, min_ess=-1)
