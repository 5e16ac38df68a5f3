"""Training variants compared over seeds (saliency_study.variants): the minimum detectable effect, the
equivalence verdict, the learning-curve aggregates, our runs and their final scores.

compare_variants' intervals over seeds are tested in tests/study/test_scores.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats
from toy_study import ship_fake_run

import saliency_study.variants as va
from saliency_lib.train.scores import SCORES_COLUMNS


def _scores(per_seed: dict, protocol="sticky") -> pd.DataFrame:
    return pd.DataFrame([{"agent": f"a3c-Breakout-{v}-s{s}", "algo": "a3c-sync", "game": "Breakout", "variant": v,
                          "seed": s, "frames": 10_000_000, "protocol": protocol, "episodes": 30, "mean": m}
                         for v, means in per_seed.items() for s, m in enumerate(means)]).reindex(columns=SCORES_COLUMNS)


def _d_at_power(n1: int, n2: int, power: float = 0.8, alpha: float = 0.05) -> float:
    """The standardised effect a two-sided pooled t-test detects with ``power``, solved here from the t-statistic's
    definition: T = (Z + δ) / √(V / ν), Z standard normal, V χ²(ν), δ = d √(n₁n₂ / (n₁ + n₂)), ν = n₁ + n₂ − 2."""
    nu, scale = n1 + n2 - 2, math.sqrt(n1 * n2 / (n1 + n2))
    q = stats.t.ppf(1 - alpha / 2, nu)

    def rejects(d):  # P(|T| > q) = E_V[Φ(−q s − δ) + 1 − Φ(q s − δ)], s = √(V / ν)
        def given(v):
            s = math.sqrt(v / nu)
            return (stats.norm.cdf(-q * s - d * scale) + stats.norm.sf(q * s - d * scale)) * stats.chi2.pdf(v, nu)
        return integrate.quad(given, 0, np.inf, epsabs=1e-12, epsrel=1e-10)[0]

    return optimize.brentq(lambda d: rejects(d) - power, 1e-3, 20.0, xtol=1e-10)


# -- the minimum detectable effect ------------------------------------------------------------------

@pytest.mark.parametrize("n1,n2", [(3, 3), (8, 8), (3, 5), (64, 64)])
def test_mde_solves_the_power_equation_of_the_noncentral_t(n1, n2):
    assert va.minimum_detectable_effect(10.0, n1, n2) == pytest.approx(10.0 * _d_at_power(n1, n2), rel=1e-5)


def test_mde_known_answers():
    # Cohen's table: 64 per group detect d = 0.5 at 80 % power, two-sided 5 %
    assert va.minimum_detectable_effect(10.0, 64, 64) == pytest.approx(5.0, abs=0.01)
    # the normal approximation (z_.975 + z_.8) · sd · √(1/n₁ + 1/n₂) for large samples
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert va.minimum_detectable_effect(1.0, 2000, 2000) == pytest.approx(z * math.sqrt(2 / 2000), rel=1e-3)
    # 3 seeds per arm detect about 3.07 pooled sds, 8 per arm about 1.5: the 100 and 45 points at sd 31
    assert va.minimum_detectable_effect(1.0, 3, 3) == pytest.approx(3.0709, abs=1e-3)
    assert va.minimum_detectable_effect(31.19, 3, 3) == pytest.approx(95.8, abs=0.1)
    assert va.minimum_detectable_effect(1.0, 8, 8) < 0.5 * va.minimum_detectable_effect(1.0, 3, 3)
    # more power or a stricter level need a larger effect
    assert va.minimum_detectable_effect(1.0, 8, 8, power=0.9) > va.minimum_detectable_effect(1.0, 8, 8)
    assert va.minimum_detectable_effect(1.0, 8, 8, alpha=0.01) > va.minimum_detectable_effect(1.0, 8, 8)
    assert math.isnan(va.minimum_detectable_effect(1.0, 1, 8)) and math.isnan(va.minimum_detectable_effect(np.nan, 3, 3))
    for kw in ({"power": 1.0}, {"alpha": 0.0}):
        with pytest.raises(ValueError, match="must lie in"):
            va.minimum_detectable_effect(1.0, 3, 3, **kw)
    with pytest.raises(ValueError, match="sd must be >= 0"):
        va.minimum_detectable_effect(-1.0, 3, 3)


def test_the_comparison_carries_the_mde_of_its_pooled_sd():
    none, double = [216.7, 245.9, 198.7], [204.2, 133.4, 149.5]
    c = va.compare_variants(_scores({"none": none, "double": double}), protocol="sticky")
    d = c.difference
    pooled = math.sqrt((2 * np.var(none, ddof=1) + 2 * np.var(double, ddof=1)) / 4)
    assert d["pooled_sd"] == pytest.approx(pooled)
    assert d["mde"] == pytest.approx(pooled * _d_at_power(3, 3), rel=1e-5)
    assert d["margin"] == pytest.approx(0.2 * np.mean(none))
    assert c.verdict == "no detectable difference" and d["ci_low"] < 0 < d["ci_high"]
    assert d["mde"] > d["margin"]  # this design cannot show equivalence within 20 %: the interval is too wide


# -- the verdict --------------------------------------------------------------------------------------

@pytest.mark.parametrize("ci,verdict", [
    ((-19.9, 19.9), "equivalent within 20 %"),
    ((-20.1, 10.0), "no detectable difference"),  # the interval crosses −20 % of the baseline's mean
    ((-10.0, 20.1), "no detectable difference"),
    ((-20.0, 0.0), "no detectable difference"),  # on the bound is not inside
    ((1.0, 19.0), "higher"),  # a direction comes first, even inside the margin
    ((-30.0, -1.0), "lower"),
])
def test_equivalence_flips_at_twenty_percent_of_the_baseline(ci, verdict):
    assert va.decide(*ci, 100.0) == verdict
    assert va.decide(*ci, -100.0) == verdict  # the bound is on the size of the baseline's mean


def test_equivalence_from_seeds():
    """Seeds that agree within a few points: the interval lies inside ± 20 % of A3C's mean."""
    tight = _scores({"none": [100.0, 102.0, 98.0], "double": [101.0, 99.0, 100.5]})
    c = va.compare_variants(tight, protocol="sticky")
    assert c.verdict == va.equivalent() == "equivalent within 20 %"
    assert -20 < c.difference["ci_low"] < 0 < c.difference["ci_high"] < 20
    narrow = va.compare_variants(tight, protocol="sticky", margin=0.01)  # ± 1 point: the same interval is too wide
    assert narrow.verdict == "no detectable difference" and narrow.difference["margin"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="margin must be > 0"):
        va.compare_variants(tight, protocol="sticky", margin=0)


# -- learning curves ----------------------------------------------------------------------------------

def test_iqm_known_answers():
    assert va.iqm(range(8)) == pytest.approx(3.5)  # the middle half: 2, 3, 4, 5
    assert va.iqm([1, 2, 3, 4, 100, -100, 5, 6]) == pytest.approx(3.5)  # the outliers are trimmed
    x = np.random.default_rng(0).normal(size=20)
    assert va.iqm(x) == pytest.approx(np.sort(x)[5:15].mean())  # 20 checkpoints: 5 trimmed from each end
    assert math.isnan(va.iqm([])) and va.iqm([np.nan, 1.0, 1.0, 1.0]) == 1.0


def test_curve_aggregates_read_the_evaluation_checkpoints(tmp_path):
    curves = {"none": ([0, 10, 20, 30, 100], [0, 20, 40, 60, 200]), "double": ([0, 5, 10, 15, 50], [0, 0, 10, 20, 30])}
    for v, seeds in curves.items():
        for s, evals in enumerate(seeds):
            ship_fake_run(tmp_path, v, s, float(evals[-1]), evals=evals)
    t = va.curve_aggregates(tmp_path, "Breakout").set_index("agent")
    r = t.loc["a3c-Breakout-none-s0"]
    assert r["curve_mean"] == pytest.approx(32.0) and r["curve_iqm"] == pytest.approx(20.0)  # iqm: trims 1 from each end
    assert (r["checkpoints"], r["games"], r["frames"]) == (5, 15, 2_000_000) and r["seed"] == 0
    assert set(t["variant"]) == {"none", "double"}
    assert va.curve_aggregates(tmp_path, "MsPacman").empty
    c = va.compare_curves(va.curve_aggregates(tmp_path), aggregate="curve_mean")
    means = c.table.set_index("variant")["per_seed"]
    assert means["none"] == pytest.approx([32.0, 64.0]) and means["double"] == pytest.approx([16.0, 12.0])
    assert c.measure == "curve_mean" and c.difference["diff"] == pytest.approx(14.0 - 48.0)
    assert c.verdict in ("lower", "no detectable difference") and np.isfinite(c.difference["mde"])
    iqm = va.compare_curves(va.curve_aggregates(tmp_path), aggregate="curve_iqm")
    assert iqm.table.set_index("variant").loc["none", "per_seed"] == pytest.approx([20.0, 40.0])
    with pytest.raises(ValueError, match="aggregate must be one of"):
        va.compare_curves(t.reset_index(), aggregate="curve_max")
    with pytest.raises(ValueError, match="no evaluation checkpoints"):
        va.compare_curves(t.reset_index(), game="Pong")


def test_a_replayed_checkpoint_counts_once(tmp_path):
    d = ship_fake_run(tmp_path, "none", 0, 30.0, evals=[10.0, 20.0, 30.0])
    log = pd.read_csv(d / "eval_log.csv")
    # a run killed after its second checkpoint and resumed from the first logs the second again
    pd.concat([log.iloc[:2], log.iloc[1:]], ignore_index=True).assign(
        eval_mean=[10.0, 99.0, 20.0, 30.0]).to_csv(d / "eval_log.csv", index=False)
    r = va.curve_aggregates(tmp_path).iloc[0]
    assert r["checkpoints"] == 3 and r["curve_mean"] == pytest.approx(20.0)


def test_seed_comparisons_and_their_verdict_table(tmp_path):
    for v, means in (("none", [300.0, 340.0, 320.0]), ("double", [330.0])):
        for s, m in enumerate(means):
            ship_fake_run(tmp_path, v, s, m)
    c = va.seed_comparisons("Breakout", tmp_path)
    assert list(c) == ["greedy", "sticky", "curve_mean", "curve_iqm"]
    assert all(isinstance(c[k], str) and "no scores table" in c[k] for k in ("greedy", "sticky"))
    assert c["curve_mean"].verdict is None and "has 1 seed" in c["curve_mean"].reason
    _scores({"none": [300.0, 340.0, 320.0], "double": [330.0, 310.0]}, "greedy").to_csv(tmp_path / "scores.csv", index=False)
    c = va.seed_comparisons("Breakout", tmp_path)
    assert isinstance(c["greedy"], va.VariantComparison) and c["greedy"].verdict == "equivalent within 20 %"
    assert "no sticky evaluation" in c["sticky"]
    v = va.verdict_table(c).set_index("key")
    assert list(v.index) == ["greedy", "sticky", "curve_mean", "curve_iqm"]
    assert list(v.columns[:len(va.VERDICT_COLUMNS)]) == list(va.VERDICT_COLUMNS)
    assert v.loc["greedy", "measure"] == "final" and v.loc["curve_iqm", "measure"] == "curve_iqm"
    assert v.loc["greedy", "mean_baseline"] == pytest.approx(320.0) and v.loc["greedy", "diff"] == pytest.approx(0.0)
    assert v.loc["greedy", "mde"] == pytest.approx(c["greedy"].difference["mde"])
    assert v.loc["sticky", "verdict"] == "no verdict" and np.isnan(v.loc["sticky", "diff"])
    assert (v.loc["sticky", "n_baseline"], v.loc["sticky", "baseline"]) == (0, "none")
    assert v.loc["curve_mean", "verdict"] == "no verdict" and "has 1 seed" in v.loc["curve_mean", "reason"]


# -- our runs and their final scores --------------------------------------------------------------------

def test_actor_critic_runs_and_final_scores(tmp_path):
    agents, runs = tmp_path / "agents", tmp_path / "runs"
    ship_fake_run(agents, "none", 0, 10.0)
    ship_fake_run(agents, "double", 0, 30.0)
    ship_fake_run(agents, "double", 1, 50.0, logs=False)
    (agents / "dqn-Breakout-s0").mkdir()
    (agents / "dqn-Breakout-s0" / "meta.json").write_text(json.dumps({"algo": "dqn", "game": "Breakout"}))
    pd.DataFrame({"agent": ["a3c-Breakout-double-s1"], "episodes": [10], "mean": [40.0], "std": [3.0]}).to_csv(
        agents / "scores.csv", index=False)
    (runs / "a3c-Breakout-value-s0").mkdir(parents=True)
    pd.DataFrame({"frames": [100, 200], "episode_score": [1.0, 2.0]}).to_csv(runs / "a3c-Breakout-value-s0" / "train_log.csv",
                                                                             index=False)
    (runs / "a3c-Breakout-double-s0").mkdir()  # the shipped copy wins
    r = va.actor_critic_runs("Breakout", agents, runs)
    assert list(r["agent"]) == ["a3c-Breakout-none-s0", "a3c-Breakout-value-s0", "a3c-Breakout-double-s0",
                                "a3c-Breakout-double-s1"]
    by = r.set_index("agent")
    assert by.loc["a3c-Breakout-double-s1", "mean"] == 40.0  # scores.csv beats meta.json's eval_score
    assert by.loc["a3c-Breakout-double-s0", "mean"] == 30.0 and pd.isna(by.loc["a3c-Breakout-double-s1", "logs"])
    assert not by.loc["a3c-Breakout-value-s0", "shipped"] and by.loc["a3c-Breakout-value-s0", "frames"] == 200
    assert va.actor_critic_runs("MsPacman", agents, runs).empty

    t = va.final_scores(r, "Breakout")
    ours = t[t["variant"] != "official"].set_index("variant")
    assert list(ours.index) == ["none", "double"]  # the value run in progress has no final score
    assert ours.loc["double", "mean"] == 35.0 and ours.loc["double", "seeds"] == 2
    assert ours.loc["double", "per_seed"] == [30.0, 40.0]
    assert ours.loc["double", "sd_seeds"] == pytest.approx(np.std([30, 40], ddof=1)) and np.isnan(ours.loc["none", "sd_seeds"])
    # training games in the last 10 % of frames (> 1.8 M of 2 M: the last logged game); seed 1 has no log
    assert ours.loc["double", "train_final"] == 30.0 and ours.loc["double", "train_games"] == 1
    assert ours.loc["none", "train_final"] == 10.0
    if va.official_available("Breakout", logs=True):
        off = t[t["variant"] == "official"].iloc[0]
        assert off["frames"] == 2_000_000 and np.isfinite(off["mean"]) and off["test_games"] == 20
    nothing = va.actor_critic_runs("Breakout", tmp_path / "none", tmp_path / "no-runs")
    assert nothing.empty and va.final_scores(nothing, "Breakout").empty
