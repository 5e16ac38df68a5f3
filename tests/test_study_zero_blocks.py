"""Chapter 3's zero blocks: shared exact zeros of the trained and the randomised maps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from saliency_lib.study import sanity as sn
from saliency_lib.study import zero_blocks as zb
from saliency_lib.study.display import Note
from saliency_lib.study.gallery import ExplainedAgent


@pytest.mark.parametrize("share", [0.2, 0.5, 0.63, 0.8])
def test_tie_floor_matches_the_closed_form(share):
    """Two maps zero on a fraction p of the pixels and independent elsewhere: ranks split into a tied
    block at the bottom and a uniform rest, so ρ = between-group variance / total = 3p / ((1 − p)² + 3p)."""
    block = np.zeros((84, 84), dtype=bool)
    block.flat[: int(round(share * block.size))] = True
    p = block.mean()
    assert zb.tie_floor(block, draws=10, seed=1) == pytest.approx(3 * p / ((1 - p) ** 2 + 3 * p), abs=0.01)


def test_tie_floor_is_undefined_without_a_block_or_without_the_rest():
    assert np.isnan(zb.tie_floor(np.zeros((8, 8), dtype=bool)))
    assert np.isnan(zb.tie_floor(np.ones((8, 8), dtype=bool)))


@pytest.fixture(scope="module")
def dqn_dir(tmp_path_factory):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path_factory.mktemp("agents") / "dqn-Breakout-s0"))


def test_zero_blocks_agree_with_the_sweep_and_find_the_integrated_gradients_block(dqn_dir, tmp_path):
    cfg = sn.SanityChapter(agent=dqn_dir, profile="tiny", results_dir=str(tmp_path))
    who = ExplainedAgent("dqn", "Breakout", dqn_dir, "test DQN agent")
    methods = ("integrated_gradients", "ns_chosen", "mask_policy")  # a mask method does not apply to a DQN agent
    t = zb.zero_blocks(cfg, who, methods)
    assert set(t["method"]) == {"integrated_gradients", "ns_chosen"} and t["state"].nunique() == 2
    ig = t[t["method"] == "integrated_gradients"]
    # Breakout's screen is largely black: IG's map (x − 0)·∫∇ is zero there in both networks
    assert (ig["input_zero"] > 0.3).all()
    assert (ig["shared"] >= ig["input_zero"] - 1e-6).all() and (ig["zero_trained"] >= ig["shared"]).all()
    assert (t.loc[t["method"] == "ns_chosen", "shared"] < 0.05).all()  # a blur leaves no exact zeros
    # the similarity over all pixels is the sweep's, state by state, at the deepest level
    sweep = sn.sanity_results(cfg, who, methods=("integrated_gradients", "ns_chosen"))
    deepest = sweep[(sweep["measure"] == "spearman") & (sweep["level"] == sweep["level"].max())]
    for r in t.itertuples():
        ref = deepest[(deepest["method"] == r.method) & (deepest["state"] == r.state)]["value"].iloc[0]
        assert r.spearman == pytest.approx(float(ref), abs=1e-3), (r.method, r.state)
    # stored with the study's results and reused
    stored = list(tmp_path.glob("sanity_zero_blocks-*/table.csv"))
    assert len(stored) == 1
    again = zb.zero_blocks(cfg, who, methods)
    assert again.attrs["cached"] and np.allclose(again["shared"], t["shared"])
    with pytest.raises(ValueError, match="n_states must be a positive integer"):
        zb.zero_blocks(cfg, who, methods, n_states=0)


def _summary(**over) -> pd.DataFrame:
    base = {"method": ["integrated_gradients", "occlusion"], "input_zero": [0.6, 0.6], "zero_trained": [0.6, 0.0],
            "zero_random": [0.6, 0.0], "shared": [0.6, 0.0], "spearman": [0.9, 0.1],
            "spearman_outside": [0.2, 0.1], "tie_floor": [0.9, np.nan]}
    base.update(over)
    return zb.zero_block_summary(pd.DataFrame(base).assign(state=0))


def test_sentence_names_the_methods_the_block_carries():
    text = zb.zero_block_sentence(_summary(), "test agent", threshold=0.5).data
    assert "60% of the pixel locations are zero in every stacked frame" in text
    assert "**Integrated Gradients** (zero in both maps on 60% of the pixels; ρ = 0.90 over all pixels, 0.20" in text
    assert "For **Integrated Gradients**, the similarity over all pixels reaches the threshold 0.50 only through the block" in text
    assert "Occlusion" not in text
    # a block that does not carry the similarity: no claim about the test
    kept = zb.zero_block_sentence(_summary(spearman_outside=[0.8, 0.1]), "test agent").data
    assert "only through the block" not in kept
    none = zb.zero_block_sentence(_summary(shared=[0.0, 0.0], input_zero=[0.0, 0.0]), "test agent").data
    assert "0% of the pixel locations" in none and "ties at zero do not inflate" in none
    html = zb.style_zero_blocks(_summary(), "cap").to_html()
    assert "Spearman, outside the block" in html and "60%" in html


def test_notes_pass_through():
    note = Note("missing", title="x")
    assert zb.zero_block_summary(note) is note and zb.style_zero_blocks(note, "c") is note
    assert zb.zero_block_sentence(note, "t") is note
    missing = ExplainedAgent("dqn", "Breakout", None, "DQN agent of the study", "none yet")
    assert isinstance(zb.zero_blocks(sn.SanityChapter(), missing), Note)
