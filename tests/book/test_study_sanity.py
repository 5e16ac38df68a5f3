"""The sanity check's findings (saliency_study.sanity) and chapter 3's display of them (saliency_book.ch3_sanity,
ch3_figures): configuration, summaries, verdicts on the effective sample size, the tables the notebook shows,
figures and the Noise Sensitivity example.

Most tests use small synthetic sanity tables with known answers. The end-to-end test runs the
tiny sweep of the two Noise Sensitivity variants on a random-weight DQN checkpoint written to a
temporary directory, with every result in a temporary ``results_dir``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import saliency_book.ch3_figures as fg
import saliency_book.ch3_sanity as ch
import saliency_study.sanity as sn
from saliency_book.common import METHODS, ExplainedAgent, Note
from saliency_lib.results import to_table
from saliency_study.evidence import MIN_ESS, verdict_counts

AGENT = "dqn-test"
LAYERS = ["original", "output", "fc"]


def _table(values: dict[str, list[float]], *, n: int = 6, agent: str = AGENT, noise: float = 0.02,
           measures=("spearman", "ssim", "hog_pearson"), period: float = 5) -> pd.DataFrame:
    """Sanity rows: ``values[method][level]`` is the mean similarity at each level (0 = original),
    with a small symmetric spread that oscillates with ``period`` states (correlated neighbours, no
    trend: 60 states are worth about 39 effective ones), plus uniform-random reference rows at 0.01."""
    rows = []
    spread = noise * np.sin(2 * np.pi * np.arange(n) / period)
    for method, means in values.items():
        for state in range(n):
            for level, mean in enumerate(means):
                for m in measures:
                    rows.append({"method": method, "state": state, "level": level, "layer": LAYERS[level], "measure": m,
                                 "value": 1.0 if level == 0 else mean + spread[state]})
            for m in measures:
                rows.append({"method": method, "state": state, "level": pd.NA, "layer": "random_uniform", "measure": m,
                             "value": 0.01})
    return to_table(rows, experiment="sanity", agent=agent, game="Breakout", seed=0)


@pytest.fixture(scope="module")
def synthetic():
    t = _table({"rise": [1.0, 0.4, 0.1], "ns_original": [1.0, 0.9, 0.8], "ns_chosen": [1.0, 0.2, 0.15],
                "occlusion": [1.0, 0.6, 0.5]}, n=60)
    return t, sn.layer_summary(t), sn.reference_summary(t)


# -- configuration ------------------------------------------------------------------------------

def test_config_accepts_papermill_values_and_rejects_bad_ones():
    cfg = ch.SanityChapter(agent="None", seed="3", threshold="0.4", profile="tiny")
    assert cfg.agent is None and cfg.seed == 3 and cfg.threshold == 0.4
    assert "profile `tiny`" in cfg._repr_markdown_() and "Mask-A3C agents: 2 states" in cfg._repr_markdown_()
    with pytest.raises(ValueError, match=r"threshold must be a real number in \(0, 1\)"):
        ch.SanityChapter(threshold=1.5)
    with pytest.raises(ValueError, match="threshold must be a real number"):
        ch.SanityChapter(threshold="high")
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got 'x'"):  # the base's message
        ch.SanityChapter(seed="x")
    with pytest.raises(ValueError, match="unknown executor 'slurm'"):
        ch.SanityChapter(executor="slurm")
    with pytest.raises(ValueError, match="unknown profile"):
        ch.SanityChapter(profile="fast")
    with pytest.raises(ValueError, match="unknown profile 'paper'"):
        ch.SanityChapter(study_profile="paper")
    with pytest.raises(ValueError, match="unknown game"):
        ch.SanityChapter(game="Tetris")


def test_sweep_specs_keep_only_the_sanity_experiment_and_the_profile_sizes(tmp_path, official_available):
    from saliency_study.profiles import PROFILES

    cfg = ch.SanityChapter(profile="tiny", results_dir=str(tmp_path))
    (spec,) = sn.sweep_specs(cfg.profile, cfg.game, "official:Breakout", results_dir=cfg.results_dir,
                             methods=["ns_chosen", "ns_original", "nothing"])
    assert spec.experiments == ("sanity",) and spec.methods == ("ns_original", "ns_chosen")
    n, _, params = PROFILES["tiny"].sweep["mask_a3c"]
    assert spec.n_states == n and spec.params == params and spec.seed == cfg.seed


# -- summaries and verdicts ---------------------------------------------------------------------

@pytest.mark.parametrize("low, high, n_eff, expected", [
    (0.1, 0.3, 10, "passes"), (0.5, 0.7, 10, "fails"), (0.4, 0.6, 10, "undecided"),
    (0.3, 0.5, 10, "undecided"),  # an upper bound at the threshold does not pass
    (np.nan, np.nan, 10, "no data"), (0.1, 0.3, 2, "withheld"), (0.1, 0.3, np.nan, "withheld"),
    (0.1, 0.3, None, "passes")])
def test_verdict_rules(low, high, n_eff, expected):
    assert sn.verdict(low, high, 0.5, n_eff=n_eff, min_ess=5) == expected


def test_no_verdict_below_the_shared_minimum_of_effective_states():
    from saliency_study import evidence

    assert evidence.MIN_ESS == 30
    assert sn.verdict(0.1, 0.3, 0.5, n_eff=29.9) == "withheld" and sn.verdict(0.1, 0.3, 0.5, n_eff=30) == "passes"
    assert evidence.withheld_reason(17.4) == "effective sample size 17 < 30"
    assert evidence.withheld_reason(np.nan) == "no finite values"
    assert not evidence.enough_ess(np.nan) and evidence.enough_ess(30) and not evidence.enough_ess(None)


def test_layer_summary_and_labels(synthetic):
    _, s, refs = synthetic
    assert set(s["level"]) == {0, 1, 2} and set(s["measure"]) == set(sn.MEASURES)
    r = s[(s["method"] == "rise") & (s["level"] == 2) & (s["measure"] == "spearman")].iloc[0]
    assert r["n"] == 60 and r["mean"] == pytest.approx(0.1) and r["ci_low"] < 0.1 < r["ci_high"]
    assert MIN_ESS <= r["n_eff"] < 60  # the spread follows the state: consecutive states are correlated
    assert fg.level_labels(s) == [(0, "none"), (1, "output"), (2, "+ fc")]
    assert set(refs["layer"]) == {"random_uniform"} and refs["mean"].to_numpy() == pytest.approx(0.01)


def test_verdict_table_judges_the_deepest_level_in_display_order(synthetic):
    _, s, refs = synthetic
    v = sn.verdict_table(s, refs, threshold=0.5, order=METHODS)
    assert list(v["method"]) == ["occlusion", "ns_original", "ns_chosen", "rise"]  # the gallery's order
    assert list(sn.verdict_table(s, refs)["method"]) == ["ns_chosen", "ns_original", "occlusion", "rise"]  # by name
    assert (v["level"] == 2).all() and (v["layer"] == "fc").all() and (v["n"] == 60).all() and (v["n_eff"] < 60).all()
    assert dict(zip(v["method"], v["verdict"])) == {"occlusion": "undecided", "ns_original": "fails",
                                                    "ns_chosen": "passes", "rise": "passes"}
    assert v["random_spearman"].to_numpy() == pytest.approx(0.01) and (v["reason"] == "").all()
    assert sn.verdict_table(s, refs, threshold=0.05)["verdict"].eq("fails").all()
    strict = sn.verdict_table(s, refs, min_ess=70)
    assert strict["verdict"].eq("withheld").all() and strict["reason"].str.match(r"effective sample size \d+ < 70").all()
    html = fg.show_verdicts(v.assign(title="test agent"), "caption").to_html()
    assert "test agent" in html and "NS chosen action" in html and "0.15 [" in html and "ESS" in html
    assert "Spearman, random map" in html and "color: #1a7f37" in html  # a pass is green
    assert "Reason" not in html and "Reason" in fg.show_verdicts(strict.assign(title="t"), "caption").to_html()
    # 60 states whose similarities drift slowly are worth fewer than 30 independent ones: no verdict
    slow = sn.layer_summary(_table({"rise": [1.0, 0.4, 0.1], "occlusion": [1.0, 0.6, 0.5]}, n=60, period=15))
    assert sn.verdict_table(slow)["verdict"].tolist() == ["withheld"] * 2


def test_constant_maps_leave_no_ci():
    t = _table({"gradient": [1.0, 0.3, 0.2]}, n=6)
    t.loc[t["level"] == 2, "value"] = np.nan  # constant maps give NaN similarities
    v = sn.verdict_table(sn.layer_summary(t), threshold=0.5)
    assert v["verdict"].tolist() == ["no data"] and v["reason"].tolist() == [""]


# -- the tables the notebook shows ----------------------------------------------------------------

def _results(tables: dict, cfg=None) -> ch.SanityResults:
    """SanityResults of synthetic tables: ``tables[title]`` is one agent's rows; a missing Mask-A3C agent."""
    agents = {f"dqn{i}": ExplainedAgent("dqn", "Breakout", AGENT, title) for i, title in enumerate(tables)}
    summaries = {f"dqn{i}": sn.layer_summary(t) for i, t in enumerate(tables.values())}
    refs = {f"dqn{i}": sn.reference_summary(t) for i, t in enumerate(tables.values())}
    missing = ExplainedAgent("mask_a3c", "Breakout", None, "official Mask-A3C agent", "not fetched")
    return ch.SanityResults({**agents, "mask_a3c": missing}, {**dict(zip(agents, tables.values())),
                            "mask_a3c": missing.note()}, {**summaries, "mask_a3c": missing.note()},
                            {**refs, "mask_a3c": missing.note()})


def test_ns_table_judges_huber_et_al_s_finding_on_the_numbers(synthetic):
    t, _, _ = synthetic
    flipped = _table({"ns_original": [1.0, 0.2, 0.1], "ns_chosen": [1.0, 0.9, 0.8]}, n=60)
    close = _table({"ns_original": [1.0, 0.52, 0.3], "ns_chosen": [1.0, 0.5, 0.3]}, noise=0.2, n=60)
    few = _table({"ns_original": [1.0, 0.9, 0.8], "ns_chosen": [1.0, 0.2, 0.1]}, n=20)
    ns = ch.ns_findings(_results({"a": t, "flipped": flipped, "close": close, "few": few})).set_index("agent")
    assert ns.loc["a", "original"] == pytest.approx(0.9) and ns.loc["a", "chosen"] == pytest.approx(0.2)
    assert ns.loc["a", "original_low"] < 0.9 < ns.loc["a", "original_high"] and ns.loc["a", "layer"] == "output"
    assert ns["finding"].to_dict() == {"a": "reproduced: NS original more similar",
                                       "flipped": "reversed: NS chosen action more similar",
                                       "close": "not settled: the CIs overlap", "few": "withheld"}
    assert ns.loc["few", "reason"] == "effective sample size 14 < 30" and ns.loc["a", "reason"] == ""
    assert ns.loc["few", "n"] == 20 and ns.loc["a", "n"] == 60 and ns.loc["a", "original_ess"] < 60
    html = fg.show_table(ns.reset_index(), "cap").to_html()
    assert "0.90 [" in html and "withheld" in html and "color: #1a7f37" in html
    assert isinstance(ch.ns_findings(_results({"r": _table({"rise": [1.0, 0.4, 0.1]})})), Note)
    assert sn.ns_table({}).empty


def test_verdict_counts_and_extremes(synthetic):
    t, _, _ = synthetic
    res = _results({"test agent": t})
    v = ch.chapter_verdicts(res, 0.5)
    assert set(v["title"]) == {"test agent"} and len(v) == 4
    c = verdict_counts(v, by="title").set_index("title")
    assert c.loc["test agent", ["passes", "fails", "undecided"]].tolist() == [2, 1, 1]
    assert c.loc["test agent", "states"] == 60
    assert ch.extremes(v, "test agent") == ("NS original (ρ = 0.80)", "RISE (ρ = 0.10)")
    assert ch.extremes(v, "nobody") == ("–", "–") and ch.extremes(Note("x"), "test agent") == ("–", "–")
    assert "Withheld" not in fg.show_table(c.reset_index(), "cap").to_html()
    empty = ch.SanityResults({"dqn": res.agents["mask_a3c"]}, *({"dqn": Note("x")} for _ in range(3)))
    assert isinstance(ch.chapter_verdicts(empty), Note)
    assert isinstance(ch.verdict_counts(ch.chapter_verdicts(empty), by="t"), Note)


def test_figures_render_and_pass_missing_agents_through(synthetic):
    t, s, _ = synthetic
    res = _results({"test agent": t})
    assert fg.show_curves(res, "dqn0").data[:4] == b"\x89PNG" and fg.show_ns_curves(res).data[:4] == b"\x89PNG"
    assert isinstance(fg.show_curves(res, "mask_a3c"), Note)
    res.summaries["dqn0"] = s[s["method"] == "rise"]
    assert isinstance(fg.show_ns_curves(res), Note)
    res.summaries["dqn0"] = s.iloc[:0]
    assert isinstance(fg.show_curves(res, "dqn0"), Note)


def test_show_table_takes_whatever_interval_and_verdict_columns_a_comparison_has():
    """The comparison with the paper may gain a margin, a difference with its interval and other verdicts."""
    t = pd.DataFrame({"game": "Breakout", "method": ["sarfa", "rise"], "level": 5, "paper": [0.64, 0.24],
                      "mean": [0.56, 0.19], "ci_low": [0.55, 0.17], "ci_high": [0.57, 0.21], "n": [997, 997],
                      "n_eff": [180.6, 219.4], "margin": 0.1, "difference": [-0.08, -0.05], "diff_low": [-0.09, -0.07],
                      "diff_high": [-0.07, -0.03], "verdict": ["reproduced", "inconclusive"]})
    html = fg.show_comparison(t, "cap", game="Breakout").to_html()
    assert "SARFA" in html and "all layers" in html and "Huber et al." in html and "0.56 [0.55, 0.57]" in html
    assert "-0.08 [-0.09, -0.07]" in html and "Margin" in html and "180.6" in html and "997" in html
    assert "color: #1a7f37" in html and "color: #9a6700" in html and "Breakout" not in html
    interval_only = fg.show_table(t[["method", "diff_low", "diff_high"]], "cap").to_html()
    assert "[-0.09, -0.07]" in interval_only
    assert isinstance(fg.show_table(t.iloc[:0], "cap"), Note)


# -- end to end: the sweep's NS rows and the example maps agree ----------------------------------

@pytest.fixture(scope="module")
def dqn_dir(tmp_path_factory):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path_factory.mktemp("agents") / "dqn-Breakout-s0"))


def test_ns_example_reproduces_the_sweeps_similarities(dqn_dir, tmp_path, monkeypatch):
    cfg = ch.SanityChapter(agent=dqn_dir, profile="tiny", results_dir=str(tmp_path))
    who = ExplainedAgent("dqn", "Breakout", dqn_dir, "test DQN agent")
    table = sn.sanity_table("tiny", "Breakout", dqn_dir, results_dir=str(tmp_path), methods=sn.NS_METHODS)
    assert set(table["method"]) == set(sn.NS_METHODS) and table["state"].nunique() == 2
    assert list(dict.fromkeys(table.sort_values("level")["layer"].dropna()))[:3] == ["original", "output", "fc"]
    ex = ch.ns_example(cfg, who, table)
    assert ex.state == sn.median_state(table) and [lv for lv, _ in ex.levels] == [0, 1, 5]
    assert ex.maps[("ns_original", 0)].shape == (84, 84) and ex.frame.shape == (210, 160, 3)
    for (method, level), rho in ex.spearman.items():
        row = table[(table["method"] == method) & (table["level"] == level) & (table["state"] == ex.state)
                    & (table["measure"] == "spearman")]
        assert rho == pytest.approx(float(row["value"].iloc[0]), abs=1e-3), (method, level)
    # the maps are cached: a second call builds no randomised model and computes no map
    monkeypatch.setattr(sn, "model_at", lambda *a, **k: pytest.fail("recomputed a cached map"))
    again = ch.ns_example(cfg, who, table, state=ex.state)
    assert all(np.array_equal(again.maps[k], ex.maps[k]) for k in ex.maps)
    assert fg.show_ns_example(ex, who.label).data[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="state must index the 2 sweep states"):
        ch.ns_example(cfg, who, table, state=7)
    missing = ExplainedAgent("dqn", "Breakout", None, "test DQN agent", "none yet")
    assert isinstance(ch.ns_example(cfg, missing, table), Note) and ch.ns_example(cfg, who, Note("x")).text == "x"


def test_example_state_is_the_median_of_ns_original_after_the_first_level():
    t = _table({"ns_original": [1.0, 0.5, 0.4], "ns_chosen": [1.0, 0.2, 0.1]}, n=5)
    first = (t["method"] == "ns_original") & (t["level"] == 1) & (t["measure"] == "spearman")
    t.loc[first, "value"] = t.loc[first, "state"].map({0: 0.9, 1: 0.1, 2: 0.7, 3: 0.3, 4: 0.5}).astype(float)
    assert sn.median_state(t) == 4
    t.loc[first & (t["state"] == 4), "value"] = np.nan  # four finite values: the lower median
    assert sn.median_state(t) == 3
