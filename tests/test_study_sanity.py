"""Chapter 3's library (saliency_book.ch3_sanity): configuration, summaries, verdicts, generated text, figures
and the Noise Sensitivity example.

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
import saliency_book.ch3_ns_example as nx
import saliency_book.ch3_sanity as sn
from saliency_book.common import ExplainedAgent, Note
from saliency_lib.results import to_table

AGENT = "dqn-test"
LAYERS = ["original", "output", "fc"]


def _table(values: dict[str, list[float]], *, n: int = 6, agent: str = AGENT, noise: float = 0.02,
           measures=("spearman", "ssim", "hog_pearson")) -> pd.DataFrame:
    """Sanity rows: ``values[method][level]`` is the mean similarity at each level (0 = original),
    with a small symmetric spread that oscillates over ``n`` states (correlated neighbours, no trend),
    plus uniform-random reference rows at 0.01."""
    rows = []
    spread = noise * np.sin(2 * np.pi * 4 * np.arange(n) / n)
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
    cfg = sn.SanityChapter(agent="None", seed="3", threshold="0.4", profile="tiny")
    assert cfg.agent is None and cfg.seed == 3 and cfg.threshold == 0.4
    assert "profile `tiny`" in cfg._repr_markdown_() and "Mask-A3C agents: 2 states" in cfg._repr_markdown_()
    with pytest.raises(ValueError, match=r"threshold must be a number in \(0.0, 1.0\)"):
        sn.SanityChapter(threshold=1.5)
    with pytest.raises(ValueError, match="threshold must be a number"):
        sn.SanityChapter(threshold="high")
    with pytest.raises(ValueError, match="executor must be one of local"):
        sn.SanityChapter(executor="slurm")
    with pytest.raises(ValueError, match="unknown profile"):
        sn.SanityChapter(profile="fast")
    with pytest.raises(ValueError, match="unknown game"):
        sn.SanityChapter(game="Tetris")


def test_sweep_specs_keep_only_the_sanity_experiment_and_the_profile_sizes(tmp_path, official_available):
    from saliency_study.profiles import PROFILES

    cfg = sn.SanityChapter(profile="tiny", results_dir=str(tmp_path))
    (spec,) = sn.sweep_specs(cfg, "official:Breakout", methods=["ns_chosen", "ns_original", "nothing"])
    assert spec.experiments == ("sanity",) and spec.methods == ("ns_original", "ns_chosen")
    n, _, params = PROFILES["tiny"].sweep["mask_a3c"]
    assert spec.n_states == n and spec.params == params and spec.seed == cfg.seed


# -- summaries and verdicts ---------------------------------------------------------------------

@pytest.mark.parametrize("low, high, n, expected", [
    (0.1, 0.3, 10, "passes"), (0.5, 0.7, 10, "fails"), (0.4, 0.6, 10, "undecided"),
    (0.3, 0.5, 10, "undecided"),  # an upper bound at the threshold does not pass
    (np.nan, np.nan, 10, "no data"), (0.1, 0.3, 2, "too few states"), (0.1, 0.3, None, "passes")])
def test_verdict_rules(low, high, n, expected):
    assert sn.verdict(low, high, 0.5, n=n, min_states=5) == expected


def test_no_verdict_below_the_shared_minimum_of_states():
    from saliency_book import ch4_rankings
    from saliency_study import evidence

    assert evidence.MIN_STATES == 50 and sn.MIN_STATES is evidence.MIN_STATES is ch4_rankings.MIN_STATES
    assert sn.verdict(0.1, 0.3, 0.5, n=49) == "too few states" and sn.verdict(0.1, 0.3, 0.5, n=50) == "passes"
    assert evidence.too_few(20) == "too few states (n=20) for a verdict"
    assert not evidence.enough_states(np.nan) and evidence.enough_states(50)
    rules = sn.verdict_rules().data
    assert "fewer than 50 states" in rules and "moving-block bootstrap" in rules


def test_layer_summary_and_labels(synthetic):
    _, s, refs = synthetic
    assert set(s["level"]) == {0, 1, 2} and set(s["measure"]) == set(sn.MEASURES)
    r = s[(s["method"] == "rise") & (s["level"] == 2) & (s["measure"] == "spearman")].iloc[0]
    assert r["n"] == 60 and r["mean"] == pytest.approx(0.1) and r["ci_low"] < 0.1 < r["ci_high"]
    assert 1 <= r["n_eff"] < 60  # the spread follows the state: consecutive states are correlated
    assert sn.level_labels(s) == [(0, "none"), (1, "output"), (2, "+ fc")]
    assert set(refs["layer"]) == {"random_uniform"} and refs["mean"].to_numpy() == pytest.approx(0.01)


def test_verdict_table_judges_the_deepest_level_in_display_order(synthetic):
    _, s, refs = synthetic
    v = sn.verdict_table(s, refs, threshold=0.5)
    assert list(v["method"]) == ["occlusion", "ns_original", "ns_chosen", "rise"]  # the gallery's order
    assert (v["level"] == 2).all() and (v["layer"] == "fc").all() and (v["n"] == 60).all() and (v["n_eff"] < 60).all()
    assert dict(zip(v["method"], v["verdict"])) == {"occlusion": "undecided", "ns_original": "fails",
                                                    "ns_chosen": "passes", "rise": "passes"}
    assert v["random_spearman"].to_numpy() == pytest.approx(0.01)
    assert sn.verdict_table(s, refs, threshold=0.05)["verdict"].eq("fails").all()
    assert sn.verdict_table(s, refs, min_states=70)["verdict"].eq("too few states").all()
    html = fg.style_verdicts(v, {AGENT: "test agent"}, "caption").to_html()
    assert "test agent" in html and "NS chosen action" in html and "0.15 [" in html and "ESS" in html
    few = sn.layer_summary(_table({"rise": [1.0, 0.4, 0.1], "occlusion": [1.0, 0.6, 0.5]}, n=20))
    assert sn.verdict_table(few)["verdict"].tolist() == ["too few states"] * 2  # 20 states: no verdict
    text = sn.discussion({"a": sn.verdict_table(few)}, {"a": few}).data
    assert "too few states (n=20) for a verdict" in text and "By the means alone" in text


def test_constant_maps_leave_no_ci():
    t = _table({"gradient": [1.0, 0.3, 0.2]}, n=6)
    t.loc[t["level"] == 2, "value"] = np.nan  # constant maps give NaN similarities
    v = sn.verdict_table(sn.layer_summary(t), threshold=0.5)
    assert v["verdict"].tolist() == ["no data"]


# -- generated text -------------------------------------------------------------------------------

def test_ns_summary_follows_the_numbers(synthetic):
    _, s, _ = synthetic
    text = sn.ns_summary({"test agent": s}).data
    assert "NS original at a mean Spearman similarity of 0.90" in text and "Huber et al.'s finding is reproduced" in text
    flipped = _table({"ns_original": [1.0, 0.2, 0.1], "ns_chosen": [1.0, 0.9, 0.8]}, n=60)
    assert "the opposite of Huber et al.'s finding" in sn.ns_summary({"a": sn.layer_summary(flipped)}).data
    close = _table({"ns_original": [1.0, 0.52, 0.3], "ns_chosen": [1.0, 0.5, 0.3]}, noise=0.2, n=60)
    assert "intervals overlap" in sn.ns_summary({"a": sn.layer_summary(close)}).data
    few = _table({"ns_original": [1.0, 0.9, 0.8], "ns_chosen": [1.0, 0.2, 0.1]}, n=3)
    text = sn.ns_summary({"a": sn.layer_summary(few)}, profile="tiny").data
    assert "too few states (n=3) for a verdict" in text and "reproduced" not in text and "`tiny` profile" in text
    assert isinstance(sn.ns_summary({"a": Note("missing")}), Note)


def test_discussion_lists_verdicts_and_extremes(synthetic):
    _, s, refs = synthetic
    v = sn.verdict_table(s, refs, threshold=0.5)
    text = sn.discussion({"test agent": v}, {"test agent": s}, threshold=0.5).data
    assert "2 of 4 methods pass the test (**NS chosen action** and **RISE**)" in text
    assert "1 fails (**NS original**)" in text and "1 is undecided (**Occlusion**)" in text
    assert "most similar to its original is that of **NS original** (ρ = 0.80)" in text
    assert "least similar that of **RISE** (ρ = 0.10)" in text and "unchanged" not in text


def test_discussion_explains_masks_the_heads_cannot_reach():
    t = _table({"mask_policy": [1.0, 1.0, 0.3], "occlusion": [1.0, 0.4, 0.2]}, noise=0.0, n=60)
    s = sn.layer_summary(t)
    text = sn.discussion({"m": sn.verdict_table(s)}, {"m": s}).data
    assert "leaves the maps of **Policy mask** unchanged" in text and "computed before the heads" in text


def test_results_object_combines_agents_and_passes_notes_through(synthetic):
    t, s, refs = synthetic
    cfg = sn.SanityChapter(profile="quick")
    missing = ExplainedAgent("mask_a3c", "Breakout", None, "official Mask-A3C agent", "not fetched")
    res = sn.SanityResults(cfg, {"dqn": ExplainedAgent("dqn", "Breakout", AGENT, "test agent"), "mask_a3c": missing},
                           {"dqn": t, "mask_a3c": missing.note()}, {"dqn": s, "mask_a3c": missing.note()},
                           {"dqn": refs, "mask_a3c": missing.note()})
    v = res.verdicts()
    assert set(v["agent"]) == {AGENT} and len(v) == 4
    assert "For the test agent" in res.discussion(v).data
    assert isinstance(res.curves("mask_a3c"), Note) and isinstance(res.example("mask_a3c"), Note)
    assert res.curves("dqn").data[:4] == b"\x89PNG" and res.ns_curves().data[:4] == b"\x89PNG"
    assert res.labels() == {AGENT: "test agent"}


def test_figures_render_and_refuse_empty_input(synthetic):
    _, s, refs = synthetic
    assert fg.curves_figure(s, refs, "title").data[:4] == b"\x89PNG"
    assert isinstance(fg.curves_figure(s.iloc[:0], refs, "title"), Note)
    assert isinstance(fg.ns_figure({"a": s[s["method"] == "rise"]}), Note)


# -- end to end: the sweep's NS rows and the example maps agree ----------------------------------

@pytest.fixture(scope="module")
def dqn_dir(tmp_path_factory):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path_factory.mktemp("agents") / "dqn-Breakout-s0"))


def test_ns_example_reproduces_the_sweeps_similarities(dqn_dir, tmp_path, monkeypatch):
    cfg = sn.SanityChapter(agent=dqn_dir, profile="tiny", results_dir=str(tmp_path))
    who = ExplainedAgent("dqn", "Breakout", dqn_dir, "test DQN agent")
    table = sn.sanity_results(cfg, who, methods=sn.NS_METHODS)
    assert set(table["method"]) == set(sn.NS_METHODS) and table["state"].nunique() == 2
    assert list(dict.fromkeys(table.sort_values("level")["layer"].dropna()))[:3] == ["original", "output", "fc"]
    ex = nx.ns_example(cfg, who, table)
    assert ex.state == nx._median_state(table) and [lv for lv, _ in ex.levels] == [0, 1, 5]
    assert ex.maps[("ns_original", 0)].shape == (84, 84) and ex.frame.shape == (210, 160, 3)
    for (method, level), rho in ex.spearman.items():
        row = table[(table["method"] == method) & (table["level"] == level) & (table["state"] == ex.state)
                    & (table["measure"] == "spearman")]
        assert rho == pytest.approx(float(row["value"].iloc[0]), abs=1e-3), (method, level)
    # the maps are cached: a second call builds no randomised model and computes no map
    monkeypatch.setattr(nx, "model_at", lambda *a, **k: pytest.fail("recomputed a cached map"))
    again = nx.ns_example(cfg, who, table, state=ex.state)
    assert all(np.array_equal(again.maps[k], ex.maps[k]) for k in ex.maps)
    assert fg.ns_example_figure(ex).data[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="state must index the 2 sweep states"):
        nx.ns_example(cfg, who, table, state=7)


def test_example_state_is_the_median_of_ns_original_after_the_first_level():
    t = _table({"ns_original": [1.0, 0.5, 0.4], "ns_chosen": [1.0, 0.2, 0.1]}, n=5)
    first = (t["method"] == "ns_original") & (t["level"] == 1) & (t["measure"] == "spearman")
    t.loc[first, "value"] = t.loc[first, "state"].map({0: 0.9, 1: 0.1, 2: 0.7, 3: 0.3, 4: 0.5}).astype(float)
    assert nx._median_state(t) == 4
    t.loc[first & (t["state"] == 4), "value"] = np.nan  # four finite values: the lower median
    assert nx._median_state(t) == 3
