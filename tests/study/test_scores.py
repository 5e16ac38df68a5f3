"""The scores table (one row per agent and protocol) and the seed-level comparison of variants."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from saliency_lib.train.scores import SCORES_COLUMNS, read_scores, update_scores
from saliency_study.variants import compare_variants


def _row(agent, protocol="greedy", mean=1.0, **kw):
    return {"agent": agent, "algo": "a3c-sync", "game": "Breakout", "variant": "none", "seed": 0, "frames": 10_000_000,
            "protocol": protocol, "episodes": 1, "distinct_games": 1, "mean": mean, "std": 0.0, "scores": json.dumps([mean]),
            **kw}


def test_update_scores_one_row_per_agent_and_protocol(tmp_path):
    csv = tmp_path / "scores.csv"
    update_scores(csv, _row("b"))
    update_scores(csv, [_row("a", "sticky", 2.0), _row("a", "greedy", 3.0)])
    update_scores(csv, _row("a", "sticky", 5.0))  # replaces a's sticky row only
    df = pd.read_csv(csv)
    assert list(df.columns) == SCORES_COLUMNS
    assert list(zip(df["agent"], df["protocol"], df["mean"])) == [("a", "sticky", 5.0), ("a", "greedy", 3.0),
                                                                  ("b", "greedy", 1.0)]
    greedy = read_scores(csv, protocol="greedy")
    assert list(greedy["agent"]) == ["a", "b"]  # one row per agent for the readers that expect it
    # a reader written before the protocol column, which keeps an agent's last row, reads the greedy one
    assert {r.agent: r.mean for r in df.itertuples()} == {"a": 3.0, "b": 1.0}


def test_a_table_without_protocol_reads_as_greedy(tmp_path):
    csv = tmp_path / "scores.csv"
    pd.DataFrame([{"agent": "old", "game": "Breakout", "episodes": 10, "mean": 4.0, "std": 1.0, "scores": "[4.0]"}]).to_csv(
        csv, index=False)
    df = read_scores(csv)
    assert df["protocol"].tolist() == ["greedy"] and df["distinct_games"].isna().all()
    update_scores(csv, _row("old", "sticky", 2.0))
    df = read_scores(csv)
    assert list(zip(df["protocol"], df["mean"])) == [("sticky", 2.0), ("greedy", 4.0)]


def _table(per_seed: dict, protocol="sticky", games=30, jitter=0.01, seed=0):
    """Rows of a scores table: ``per_seed`` {variant: [seed means]}; each seed's games lie within ``jitter`` of its mean."""
    rng = np.random.default_rng(seed)
    rows = []
    for v, means in per_seed.items():
        for s, m in enumerate(means):
            g = m + jitter * rng.standard_normal(games)
            g = g - g.mean() + m
            rows.append({"agent": f"a3c-Breakout-{v}-s{s}", "algo": "a3c-sync", "game": "Breakout", "variant": v, "seed": s,
                         "frames": 10_000_640, "protocol": protocol, "episodes": games, "distinct_games": games,
                         "mean": float(g.mean()), "std": float(g.std()), "scores": json.dumps(g.tolist())})
    return pd.DataFrame(rows)


def test_ci_is_over_seeds_not_over_games():
    """Games of a seed nearly equal, seeds far apart: the CI over seeds is wide; one over the 90 games would be narrow."""
    t = _table({"none": [100.0, 200.0, 300.0], "double": [110.0, 210.0, 310.0]})
    c = compare_variants(t, protocol="sticky")
    row = c.table.set_index("variant").loc["none"]
    lo, hi = stats.t.interval(0.95, 2, loc=200.0, scale=100.0 / np.sqrt(3))  # 3 seed means: 100, 200, 300
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi)) and hi - lo > 400
    games = np.concatenate([json.loads(s) for s in t.loc[t["variant"] == "none", "scores"]])
    glo, ghi = stats.t.interval(0.95, len(games) - 1, loc=games.mean(), scale=stats.sem(games))
    assert ghi - glo < (hi - lo) / 5  # what a games-level CI would have claimed
    assert row["seeds"] == 3 and row["games"] == 90 and row["per_seed"] == pytest.approx([100, 200, 300])
    # the difference +10 is far inside the seeds' spread: no verdict of "higher"
    assert c.verdict == "no detectable difference" and c.difference["ci_low"] < 0 < c.difference["ci_high"]


def test_one_seed_per_variant_refuses_a_verdict():
    c = compare_variants(_table({"none": [358.1], "double": [322.1]}), protocol="sticky")
    assert c.verdict is None and "1 seed" in c.reason
    assert np.isnan(c.difference["ci_low"]) and c.difference["diff"] == pytest.approx(-36.0)
    assert not hasattr(c, "sentence")  # the book words the verdict
    # one variant with 3 seeds is not enough either
    c = compare_variants(_table({"none": [1.0, 2.0, 3.0], "double": [9.0]}), protocol="sticky")
    assert c.verdict is None and "Mask-A3C (both masks) has 1 seed" in c.reason


def test_known_answers_against_scipy():
    none, double = [358.1, 301.0, 333.3], [322.1, 410.5, 389.0, 371.2]
    c = compare_variants(_table({"none": none, "double": double}), protocol="sticky", level=0.9)
    t = c.table.set_index("variant")
    for v, x in (("none", none), ("double", double)):
        lo, hi = stats.t.interval(0.9, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
        assert (t.loc[v, "ci_low"], t.loc[v, "ci_high"]) == pytest.approx((lo, hi))
        assert t.loc[v, "mean"] == pytest.approx(np.mean(x)) and t.loc[v, "sd"] == pytest.approx(np.std(x, ddof=1))
    res = stats.ttest_ind(double, none, equal_var=False)
    ci = res.confidence_interval(0.9)
    d = c.difference
    assert (d["ci_low"], d["ci_high"]) == pytest.approx((ci.low, ci.high)) and d["df"] == pytest.approx(res.df)
    assert d["diff"] == pytest.approx(np.mean(double) - np.mean(none)) and (d["n_baseline"], d["n_treatment"]) == (3, 4)


@pytest.mark.parametrize("double,verdict", [
    ([400.0, 401.0, 402.0], "higher"),
    ([100.0, 101.0, 102.0], "lower"),
    ([150.0, 350.0, 250.0], "no detectable difference"),
])
def test_verdict_says_only_what_the_ci_supports(double, verdict):
    c = compare_variants(_table({"none": [200.0, 201.0, 202.0], "double": double}), protocol="sticky")
    d = c.difference
    assert c.verdict == verdict and c.reason is None and (d["n_baseline"], d["n_treatment"]) == (3, 3)
    assert (d["ci_low"] > 0) == (verdict == "higher") and (d["ci_high"] < 0) == (verdict == "lower")
    assert d["ci_low"] < d["diff"] < d["ci_high"] and c.frames == 10_000_640


def test_protocols_are_not_mixed_and_variants_without_rows_are_left_out():
    t = pd.concat([_table({"none": [1.0, 2.0], "double": [5.0, 6.0]}, protocol="greedy"),
                   _table({"none": [10.0, 20.0], "double": [50.0, 60.0], "value": [7.0]}, protocol="sticky")])
    g = compare_variants(t, protocol="greedy")
    assert g.table["variant"].tolist() == ["none", "double"] and g.table["mean"].tolist() == pytest.approx([1.5, 5.5])
    s = compare_variants(t, protocol="sticky")
    assert s.table["variant"].tolist() == ["none", "value", "double"]
    assert np.isnan(s.table.set_index("variant").loc["value", "ci_low"])  # one seed: a mean, no interval
    with pytest.raises(ValueError, match="no sticky evaluation"):
        compare_variants(t, protocol="sticky", game="Pong")
    with pytest.raises(ValueError, match="unknown protocol"):
        compare_variants(t, protocol="noisy")


def test_rows_of_one_seed_are_averaged_to_one_number():
    t = _table({"none": [100.0, 200.0], "double": [1.0, 2.0]})
    dup = t.iloc[[0]].assign(agent="again", mean=300.0)  # a second evaluation of seed 0 of "none"
    c = compare_variants(pd.concat([t, dup]), protocol="sticky")
    row = c.table.set_index("variant").loc["none"]
    assert row["seeds"] == 2 and row["per_seed"] == pytest.approx([200.0, 200.0])


def test_concurrent_writers_keep_every_row(tmp_path):
    """A shipping run and a re-evaluation may write at once: the lock keeps both rows, and no lock file stays."""
    from concurrent.futures import ThreadPoolExecutor

    csv = tmp_path / "scores.csv"
    with ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda i: update_scores(csv, _row(f"agent-{i}", "greedy" if i % 2 else "sticky", float(i))), range(12)))
    df = read_scores(csv)
    assert len(df) == 12 and sorted(df["mean"]) == list(map(float, range(12)))
    assert [p.name for p in tmp_path.iterdir()] == ["scores.csv"]
