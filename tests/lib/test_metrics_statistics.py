"""Summaries with block-bootstrap CIs, paired block and Wilcoxon tests and the ranking table."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from saliency_lib.metrics import holm, paired_block_tests, paired_wilcoxon, ranking_table, summarise
from saliency_lib.results import to_table


def _auc_table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    shift = {"good": 1.0, "same_a": 0.0, "same_b": 0.0, "bad": -1.0}
    rows = [{"state": i, "measure": "q_ratio_auc", "value": base[i] + s + 0.3 * rng.normal()}
            for m, s in shift.items() for i in range(n)]
    df = pd.DataFrame(rows)
    df["method"] = np.repeat(list(shift), n)
    return to_table(df, experiment="insertion", agent="toy", game="Breakout", substrate="black")


def _ar1_table(n=300, phi=0.9, seed=0):
    """One method whose per-state values follow an AR(1) trajectory (mean 0), rows shuffled."""
    rng = np.random.default_rng(seed)
    x = np.empty(n)
    x[0] = rng.normal() / np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + rng.normal()
    df = pd.DataFrame({"state": np.arange(n), "measure": "q_ratio_auc", "value": x, "method": "m"})
    return to_table(df.sample(frac=1.0, random_state=seed), experiment="insertion", agent="toy", game="Breakout",
                    substrate="black"), x


def test_summarise_resamples_blocks_in_state_order_and_reports_the_effective_sample_size():
    from saliency_lib.metrics import block_bootstrap_ci, effective_sample_size, mean_ci
    from saliency_lib.metrics.dependence import block_length

    t, x = _ar1_table()
    s = summarise(t, by=["method"], n_resamples=500).iloc[0]
    assert s["n"] == 300 and s["n_eff"] == pytest.approx(effective_sample_size(x)) and s["n_eff"] < 100
    assert (s["ci_low"], s["ci_high"]) == mean_ci(x)  # the ESS t interval, in the state order, not the rows'
    blk = summarise(t, by=["method"], n_resamples=500, interval="block").iloc[0]
    assert (blk["ci_low"], blk["ci_high"]) == block_bootstrap_ci(x, n_resamples=500)
    iid = block_bootstrap_ci(x, n_resamples=500, block=1)
    assert s["ci_high"] - s["ci_low"] > 2 * (iid[1] - iid[0])  # φ = 0.9: the honest interval is far wider
    assert s["block"] == block_length(x) > 1
    with pytest.raises(ValueError, match="unknown interval 'percentile'"):
        summarise(t, by=["method"], interval="percentile")


def test_summarise_mean_std_ci():
    t = _auc_table()
    s = summarise(t, n_resamples=500)
    assert len(s) == 4 and set(s.columns) >= {"method", "measure", "n", "mean", "std", "ci_low", "ci_high"}
    assert "step" not in s.columns and "level" not in s.columns  # all-NA group columns are dropped
    g = s.set_index("method").loc["good"]
    v = t[t["method"] == "good"]["value"]
    assert g["mean"] == pytest.approx(v.mean()) and g["std"] == pytest.approx(v.std(ddof=0))
    assert g["ci_low"] < g["mean"] < g["ci_high"] and g["n"] == 40
    with pytest.raises(ValueError, match="group columns \\['colour'\\] are not in the table"):
        summarise(t, by=["colour"])


def test_nan_values_are_counted_not_averaged():
    t = _auc_table(10)
    t.loc[0, "value"] = np.nan
    s = summarise(t, by=["method"], n_resamples=200).set_index("method")
    assert s.loc["good", "n"] == 9 and s.loc["good", "n_nan"] == 1 and np.isfinite(s.loc["good", "mean"])


def test_holm():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    assert np.isnan(holm([0.01, np.nan])[1])
    assert holm([0.9, 0.8]).max() <= 1.0


def test_paired_wilcoxon_matches_scipy():
    t = _auc_table()
    w = paired_wilcoxon(t)
    assert len(w) == 6
    row = w[(w["a"] == "bad") & (w["b"] == "good")].iloc[0]
    x = t[t["method"] == "bad"].sort_values("state")["value"].to_numpy()
    y = t[t["method"] == "good"].sort_values("state")["value"].to_numpy()
    ref = wilcoxon(x, y)
    assert row["p_value"] == pytest.approx(ref.pvalue) and row["statistic"] == pytest.approx(ref.statistic)
    assert row["mean_diff"] == pytest.approx((x - y).mean())
    assert (w["p_holm"] >= w["p_value"]).all()
    with pytest.raises(ValueError, match="several rows per \\(state, method\\)"):
        paired_wilcoxon(pd.concat([t, t.assign(measure="advantage_auc")]))


def test_exact_signed_rank_by_hand_and_against_scipys_permutation_test():
    from saliency_lib.metrics.statistics import _signed_rank_exact

    # |d| = 1, 2, 2, 3 → mid-ranks 1, 2.5, 2.5, 4; all positive: T⁺ = 10 is the largest of 16 sign patterns
    d = np.array([1.0, 2.0, 2.0, 3.0])
    assert _signed_rank_exact(d, "greater") == (10.0, 1 / 16)
    assert _signed_rank_exact(d, "two-sided") == (0.0, 2 / 16)  # statistic min(T⁺, T⁻), as scipy
    assert _signed_rank_exact(-d, "less") == (0.0, 1 / 16)
    assert _signed_rank_exact(np.array([0.0, 0.0, 1.0, -1.0]), "two-sided")[1] == 1.0  # zeros are dropped
    rng = np.random.default_rng(3)
    for n in (3, 6, 9, 13):  # scipy enumerates all 2ⁿ sign flips for these tied samples
        x, y = np.round(rng.normal(size=n)), np.round(rng.normal(size=n))
        for alt in ("two-sided", "less", "greater"):
            ref = wilcoxon(x, y, alternative=alt)
            assert _signed_rank_exact(x - y, alt) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue, abs=1e-12))


def test_paired_wilcoxon_with_ties_equals_scipy(monkeypatch):
    import scipy.stats

    rng = np.random.default_rng(4)
    vals = {m: np.round(rng.normal(loc=i, size=10)) for i, m in enumerate(("a", "b", "c"))}  # rounded: ties
    t = pd.DataFrame([{"state": s, "method": m, "value": v[s]} for m, v in vals.items() for s in range(10)])
    refs = {(a, b): wilcoxon(vals[a], vals[b]) for a, b in (("a", "b"), ("a", "c"), ("b", "c"))}
    monkeypatch.setattr(scipy.stats, "wilcoxon", lambda *a, **k: pytest.fail("took scipy's slow permutation path"))
    w = paired_wilcoxon(t).set_index(["a", "b"])
    for (a, b), row in w.iterrows():
        ref = refs[(a, b)]
        assert row["p_value"] == pytest.approx(ref.pvalue, abs=1e-12) and row["statistic"] == pytest.approx(ref.statistic)


@pytest.mark.parametrize("test", ["block", "wilcoxon"])
def test_ranking_table_marks_significant_differences(test):
    r = ranking_table(_auc_table(), n_resamples=300, test=test)
    assert r["method"].tolist()[0] == "good" and r["method"].tolist()[-1] == "bad"
    assert r["rank"].tolist() == [1, 2, 3, 4]
    good = r.set_index("method").loc["good"]
    assert set(good["better_than"].split(", ")) == {"same_a", "same_b", "bad"}
    same = r.set_index("method").loc["same_a"]
    assert same["tied_with"] == "same_b" and same["worse_than"] == "good" and same["better_than"] == "bad"
    # lower-is-better flips the order (e.g. deletion AUC)
    r2 = ranking_table(_auc_table(), higher_is_better=False, n_resamples=300, test=test)
    assert r2["method"].tolist()[0] == "bad"
    assert set(r2.set_index("method").loc["bad", "better_than"].split(", ")) == {"same_a", "same_b", "good"}
    with pytest.raises(ValueError, match="alpha must lie in \\(0, 1\\), got 5"):
        ranking_table(_auc_table(), alpha=5)


def test_paired_block_tests_find_a_shift_and_respect_min_n():
    w = paired_block_tests(_auc_table(), n_resamples=300).set_index(["a", "b"])
    assert set(w.columns) >= {"n", "n_eff", "block", "mean_diff", "ci_low", "ci_high", "p_value", "p_holm"}
    assert w.loc[("bad", "good"), "p_holm"] < 0.01 and w.loc[("bad", "good"), "ci_high"] < 0
    assert w.loc[("same_a", "same_b"), "p_holm"] > 0.05
    few = paired_block_tests(_auc_table(), n_resamples=100, min_n=50)
    assert few["p_value"].isna().all()
    r = ranking_table(_auc_table(), n_resamples=100, min_n=50)
    assert (r["better_than"] == "").all() and "n_eff" in r.columns
    # the bar on the effective sample size of the differences: above every pair's ESS, nothing is tested
    ess = w["n_eff"]
    assert paired_block_tests(_auc_table(), n_resamples=100, min_ess=ess.max() + 1)["p_value"].isna().all()
    kept = paired_block_tests(_auc_table(), n_resamples=100, min_ess=ess.median()).set_index(["a", "b"])
    assert kept["p_value"].notna().tolist() == (ess >= ess.median()).reindex(kept.index).tolist()
    assert (ranking_table(_auc_table(), n_resamples=100, min_ess=ess.max() + 1)["better_than"] == "").all()
    with pytest.raises(ValueError, match="unknown test 'ttest'"):
        ranking_table(_auc_table(), test="ttest")


def test_block_test_does_not_separate_two_methods_that_follow_one_trajectory():
    """Two methods that share a slowly drifting trajectory and differ only by independent AR(1) noise:
    the paired block test keeps its level where the Wilcoxon test, which treats the states as
    independent, rejects far too often."""
    rng = np.random.default_rng(5)

    def ar(n, phi):
        x = np.empty(n)
        x[0] = rng.normal() / np.sqrt(1 - phi**2)
        for t in range(1, n):
            x[t] = phi * x[t - 1] + rng.normal()
        return x

    block = wilc = 0
    for r in range(40):
        common = ar(120, 0.8)
        rows = pd.DataFrame({"state": np.tile(np.arange(120), 2), "method": np.repeat(["a", "b"], 120),
                             "value": np.concatenate([common + ar(120, 0.7), common + ar(120, 0.7)])})
        block += paired_block_tests(rows, n_resamples=300, seed=r)["p_value"].iloc[0] < 0.05
        wilc += paired_wilcoxon(rows)["p_value"].iloc[0] < 0.05
    assert block <= 8 and wilc >= 2 * block, (block, wilc)
