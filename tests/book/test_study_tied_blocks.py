"""Tied blocks (saliency_study.tied_blocks): pixels where the trained and the randomised maps are both constant,
and chapter 3's display of the test of the black-screen claim."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import saliency_book.ch3_figures as fg
import saliency_book.ch3_sanity as ch
import saliency_study.sanity as sn
import saliency_study.tied_blocks as tb
from saliency_book.common import ExplainedAgent, Note


@pytest.mark.parametrize("share", [0.2, 0.5, 0.63, 0.8])
def test_tie_floor_matches_the_closed_form(share):
    """Two maps zero on a fraction p of the pixels and independent elsewhere: ranks split into a tied
    block at the bottom and a uniform rest, so ρ = between-group variance / total = 3p / ((1 − p)² + 3p)."""
    block = np.zeros((84, 84), dtype=bool)
    block.flat[: int(round(share * block.size))] = True
    p = block.mean()
    assert tb.tie_floor(block, draws=10, seed=1) == pytest.approx(3 * p / ((1 - p) ** 2 + 3 * p), abs=0.01)


def test_tie_floor_is_undefined_without_a_block_or_without_the_rest():
    assert np.isnan(tb.tie_floor(np.zeros((8, 8), dtype=bool)))
    assert np.isnan(tb.tie_floor(np.ones((8, 8), dtype=bool)))


def test_a_block_in_the_middle_of_one_map_adds_nothing():
    """At the bottom of one map and halfway up the other, the block's mean rank is the other map's
    mean rank, so it adds no covariance."""
    block = np.zeros((84, 84), dtype=bool)
    block.flat[: block.size * 6 // 10] = True
    assert tb.tie_floor(block, 0.0, 0.5, seed=2) == pytest.approx(0.0, abs=0.05)
    assert tb.tie_floor(block, 1.0, 1.0, seed=2) == pytest.approx(tb.tie_floor(block, seed=2), abs=0.01)  # top = bottom


def test_largest_tie():
    from saliency_lib.metrics.similarity import largest_tie

    m = np.array([[0.0, 0.0, 0.0], [0.5, 0.2, 0.0], [-0.1, 0.3, 0.4]])
    block, below = largest_tie(m)
    assert block.sum() == 4 and below == pytest.approx(1 / 5)  # one of the other five values lies below 0


@pytest.fixture(scope="module")
def dqn_dir(tmp_path_factory):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path_factory.mktemp("agents") / "dqn-Breakout-s0"))


def test_tied_blocks_agree_with_the_sweep_and_find_the_black_background(dqn_dir, tmp_path):
    cfg = ch.SanityChapter(agent=dqn_dir, profile="tiny", results_dir=str(tmp_path))
    who = ExplainedAgent("dqn", "Breakout", dqn_dir, "test DQN agent")
    methods = ("integrated_gradients", "occlusion", "ns_chosen", "mask_policy")  # no mask method for a DQN agent
    t = ch.tied_blocks(cfg, who, methods)
    assert set(t["method"]) == {"integrated_gradients", "occlusion", "ns_chosen"} and t["state"].nunique() == 2
    ig = t[t["method"] == "integrated_gradients"]
    # Breakout's screen is largely black: IG's map (x − 0)·∫∇ is zero there in both networks, its minimum
    assert (ig["input_zero"] > 0.3).all() and (ig["below_trained"] == 0).all() and (ig["below_random"] == 0).all()
    assert (ig["shared"] >= ig["input_zero"] - 1e-6).all() and (ig["tied_trained"] >= ig["shared"]).all()
    # Occlusion scores 1 − f_a: a black patch on black changes nothing, so the map is constant there too
    # (the tiny profile's 12-pixel patches are rarely all black, hence a small block)
    assert (t.loc[t["method"] == "occlusion", "shared"] > 0.05).all()
    assert (t.loc[t["method"] == "ns_chosen", "shared"] < 0.05).all()  # a blur leaves no plateau
    # the similarity over all pixels is the sweep's, state by state, at the deepest level
    sweep = sn.sanity_table("tiny", "Breakout", dqn_dir, results_dir=str(tmp_path),
                            methods=("integrated_gradients", "occlusion", "ns_chosen"))
    deepest = sweep[(sweep["measure"] == "spearman") & (sweep["level"] == sweep["level"].max())]
    for r in t.itertuples():
        ref = deepest[(deepest["method"] == r.method) & (deepest["state"] == r.state)]["value"].iloc[0]
        assert r.spearman == pytest.approx(float(ref), abs=1e-3), (r.method, r.state)
    # stored with the study's results and reused
    stored = list(tmp_path.glob("sanity_tied_blocks-*/table.csv"))
    assert len(stored) == 1
    again = tb.tied_blocks(dqn_dir, profile="tiny", game="Breakout", methods=methods, results_dir=str(tmp_path))
    assert again.attrs["cached"] and np.allclose(again["shared"], t["shared"])
    with pytest.raises(ValueError, match="n_states must be a positive integer"):
        ch.tied_blocks(cfg, who, methods, n_states=0)


def _summary(**over) -> pd.DataFrame:
    base = {"method": ["integrated_gradients", "occlusion", "rise"], "input_zero": [0.6, 0.6, 0.6],
            "tied_trained": [0.6, 0.6, 0.0], "tied_random": [0.6, 0.6, 0.0], "shared": [0.6, 0.6, 0.0],
            "below_trained": [0.0, 0.0, 0.0], "below_random": [0.0, 0.5, 0.0], "spearman": [0.9, 0.05, 0.3],
            "spearman_outside": [0.2, 0.1, 0.3], "tie_floor": [0.9, 0.01, np.nan]}
    base.update(over)
    return tb.tied_block_summary(pd.DataFrame(base).assign(state=0))


def _states(n: int, *, period: float = 4.0, **means) -> pd.DataFrame:
    """Per-state rows of tied_blocks: ``means[method] = (all pixels, outside)``, a small wobble with ``period``
    states (4: every state worth an independent one; 20: slow, correlated neighbours)."""
    rows = []
    wobble = 0.02 * np.sin(2 * np.pi * np.arange(n) / period)
    for method, (all_px, outside) in means.items():
        for i in range(n):
            rows.append({"method": method, "state": i, "spearman": all_px + wobble[i],
                         "spearman_outside": outside + wobble[i] * 0.5 + 0.01 * np.cos(2 * np.pi * i / 3)})
    return pd.DataFrame(rows)


def test_the_black_screen_claim_is_a_pre_stated_test_with_its_states():
    t = tb.tied_block_test(_states(60, integrated_gradients=(0.9, 0.2), occlusion=(0.05, 0.1), sarfa=(0.7, 0.6)),
                           threshold=0.5, n_resamples=300, game="Breakout").set_index("method")
    assert t.loc["integrated_gradients", "verdict"] == tb.CARRIED
    assert t.loc["occlusion", "verdict"] == tb.NOT_CARRIED  # passes everywhere: nothing to carry
    assert t.loc["sarfa", "verdict"] == tb.NOT_CARRIED  # fails outside the block too
    assert (t["n"] == 60).all() and (t["game"] == "Breakout").all() and (t["n_eff"] <= 60).all()
    assert (t["reason"] == "").all()
    few = tb.tied_block_test(_states(5, integrated_gradients=(0.9, 0.2)), n_resamples=100)
    assert few["verdict"].tolist() == ["withheld"] and few["n"].tolist() == [5]
    assert few["reason"].str.match(r"effective sample size [1-5] < 30").all()
    slow = tb.tied_block_test(_states(60, period=40, integrated_gradients=(0.9, 0.2)))  # 60 states, few effective
    assert slow["verdict"].tolist() == ["withheld"] and slow["reason"].str.startswith("effective sample size").all()
    html = fg.show_tied_block_test(tb.tied_block_test(_states(60, integrated_gradients=(0.9, 0.2)), n_resamples=50),
                                   "cap").to_html()
    assert "carried by the block" in html and "ESS" in html and "Spearman, outside the block" in html


def test_summary_orders_the_methods_by_their_shared_block():
    summary = _summary()
    assert summary["method"].tolist() == ["integrated_gradients", "occlusion", "rise"] and (summary["states"] == 1).all()
    assert tb.zero_share(pd.DataFrame({"input_zero": [0.6, 0.62]})) == pytest.approx(0.61)
    assert ch.zero_share(pd.DataFrame({"input_zero": [0.6, 0.62]})) == "61%" and ch.zero_share(Note("x")) == "–"
    assert np.isnan(tb.zero_share(pd.DataFrame({"input_zero": []})))
    html = fg.show_tied_blocks(summary, "cap").to_html()
    assert "Spearman, outside the block" in html and "Below the tie, random" in html and "50%" in html


def test_notes_pass_through():
    note = Note("missing", title="x")
    assert ch.tied_block_summary(note) is note and fg.show_tied_blocks(note, "c") is note
    assert fg.show_tied_block_test(note, "c") is note and ch.tied_block_test(note) is note
    missing = ExplainedAgent("dqn", "Breakout", None, "DQN agent of the study", "none yet")
    assert isinstance(ch.tied_blocks(ch.SanityChapter(), missing), Note)


def _sweep_rows(game: str, n: int, *, untied: bool = True, **means) -> pd.DataFrame:
    """The sweep's sanity rows of one game (levels 1–5): ``means[method] = (all pixels, outside)`` at level 5."""
    t = _states(n, **means)
    rows = []
    for r in t.itertuples():
        for level in range(1, 6):
            deep = level == 5
            rows.append({"agent": "dqn", "game": game, "method": r.method, "level": level, "layer": "x",
                         "measure": "spearman", "state": r.state, "value": r.spearman if deep else 0.99})
            if untied:
                rows.append({"agent": "dqn", "game": game, "method": r.method, "level": level, "layer": "x",
                             "measure": "spearman_untied", "state": r.state,
                             "value": r.spearman_outside if deep else 0.98})
    return pd.DataFrame(rows)


def test_the_study_test_runs_per_game_on_the_sweeps_own_untied_similarity():
    rows = pd.concat([
        _sweep_rows("Breakout", 60, integrated_gradients=(0.9, 0.2), sarfa=(0.7, 0.6), occlusion=(0.05, 0.1)),
        _sweep_rows("MsPacman", 12, integrated_gradients=(0.9, 0.2)),
        _sweep_rows("Frostbite", 60, untied=False, integrated_gradients=(0.9, 0.2)),  # units stored before the measure
    ], ignore_index=True)
    tables = tb.study_tied_tables(rows)
    assert list(tables) == ["Breakout", "MsPacman"]
    b = tables["Breakout"]
    assert len(b) == 180 and b["spearman"].between(0.0, 1.0).all()  # the deepest level only, not the 0.99 of level 1
    ig = b[b["method"] == "integrated_gradients"].sort_values("state")
    np.testing.assert_allclose(ig["spearman_outside"], _states(60, integrated_gradients=(0.9, 0.2))["spearman_outside"])
    tests = tb.study_tied_block_tests(rows, n_resamples=200).set_index(["game", "method"])
    assert tests.loc[("Breakout", "integrated_gradients"), "verdict"] == tb.CARRIED
    assert tests.loc[("Breakout", "sarfa"), "verdict"] == tb.NOT_CARRIED
    assert tests.loc[("MsPacman", "integrated_gradients"), "verdict"] == "withheld"
    assert tests.loc[("Breakout", "sarfa"), "n"] == 60
    assert tests.loc[("MsPacman", "integrated_gradients"), "n"] == 12
    html = fg.show_tied_block_test(tests.reset_index(), "cap").to_html()
    assert "Ms. Pac-Man" in html and "Game" in html  # several games: one row group per game
    none = ch.study_tied_block_tests(_sweep_rows("Breakout", 60, untied=False, occlusion=(0.1, 0.1)))
    assert isinstance(none, Note) and "not tested" in none.text
    assert tb.study_tied_block_tests(_sweep_rows("Breakout", 60, untied=False, occlusion=(0.1, 0.1))).empty
    assert tb.study_tied_tables(rows.iloc[:0]) == {}
