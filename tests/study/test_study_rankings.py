"""Methods ranked on one agent's states (saliency_study.rankings): direction, substrate, full randomisation,
the numbers chapter 5 quotes, Kendall's W, and the packed sweeps read without computing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from toy_study import toy_rank_table

import saliency_study.rankings as sr


def _ranking(table, substrate="black"):
    return sr.rank_methods(table, substrates=[substrate], test="wilcoxon")


def test_method_ranking_uses_direction_substrate_and_full_randomisation():
    r = _ranking(toy_rank_table())
    assert list(r["criterion"].unique()) == ["ins_prob", "del_prob", "sanity"]  # no value_auc rows in the table
    assert list(r.columns) == list(sr.RANK_COLUMNS)
    ins = r[r["criterion"] == "ins_prob"].set_index("method")
    assert ins["rank"].to_dict() == {"occlusion": 1, "mask_policy": 2, "random": 3} and (ins["of"] == 3).all()
    assert ins.loc["mask_policy", "mean"] == pytest.approx(np.mean([0.5, 0.6, 0.55, 0.52, 0.58, 0.51, 0.57, 0.53]))
    assert ins.loc["mask_policy", "ci_low"] < ins.loc["mask_policy", "mean"] < ins.loc["mask_policy", "ci_high"]
    assert ins.loc["mask_policy", "better_than"] == "random"  # 8 of 8 pairs: p = 0.008, Holm 0.023
    assert ins.loc["mask_policy", "worse_than"] == "occlusion"
    dele = r[r["criterion"] == "del_prob"].set_index("method")
    assert dele["rank"].to_dict() == {"random": 1, "mask_policy": 2, "occlusion": 3}
    san = r[r["criterion"] == "sanity"].set_index("method")
    assert san.loc["mask_policy", "rank"] == 1 and pd.isna(san.loc["mask_policy", "substrate"])
    assert san.loc["occlusion", "mean"] == pytest.approx(0.2)  # level 6 only, not level 1 or the reference rows
    other = _ranking(toy_rank_table(), "random").set_index(["criterion", "method"])
    assert other.loc[("ins_prob", "random"), "rank"] == 1
    with pytest.raises(ValueError, match="rows of one agent"):
        _ranking(pd.concat([toy_rank_table(), toy_rank_table("dqn")]))
    v = sr.Criterion("ins_value", "insertion AUC, V ↑", "insertion", "value_auc", True)
    with pytest.raises(ValueError, match="degenerate"):
        sr.check_criteria((*sr.CRITERIA, v))


def test_ranking_numbers():
    r = _ranking(toy_rank_table())
    assert sr.ranking_numbers(r) == {"rank_states": 8, "rank_min_p": pytest.approx(2 / 2 ** 8)}
    five = sr.ranking_numbers(_ranking(toy_rank_table()[lambda d: d["state"] < 5]))
    assert five["rank_min_p"] == pytest.approx(0.0625)  # 2 / 2^5: no Holm-corrected test can reach 0.05
    assert all(np.isnan(v) for v in sr.ranking_numbers(None).values())
    assert all(np.isnan(v) for v in sr.seed_numbers(r, None).values())


def test_kendall_w_known_answers():
    assert sr.kendall_w([[1, 2, 3], [1, 2, 3], [1, 2, 3]]) == pytest.approx(1.0)
    assert sr.kendall_w([[1, 2, 3, 4], [4, 3, 2, 1]]) == pytest.approx(0.0)
    # m = 2, k = 3: rank sums 3, 5, 4, mean 4, S = 2, W = 12·2 / (4·24) = 0.25
    assert sr.kendall_w([[1, 2, 3], [2, 3, 1]]) == pytest.approx(0.25)
    assert np.isnan(sr.kendall_w([[1, 2, 3]])) and np.isnan(sr.kendall_w([[1], [1]]))


def test_rank_agreement_passes_a_missing_ranking_through():
    assert sr.rank_agreement(None) is None and sr.rank_agreement("no seed sweep") == "no seed sweep"
    empty = sr.rank_agreement(pd.DataFrame(columns=[*sr.RANK_COLUMNS, "variant", "seed"]))
    assert empty.empty and list(empty.columns) == list(sr.AGREEMENT_COLUMNS)


def test_packed_sweeps_compute_nothing(tmp_path):
    empty = tmp_path / "agents"
    empty.mkdir()
    packed, n_agents = sr.seed_rows("full", "Breakout", results_dir=tmp_path / "r", agents_dir=empty)
    assert n_agents == 0 and packed == sr.Packed(None, 0, 0) and not packed.complete
    packed, n_agents = sr.seed_rows("full", "Breakout", results_dir=tmp_path / "r")
    if n_agents:
        assert packed.rows is None and packed.stored == 0 and packed.planned > 0 and not packed.complete
    assert not list((tmp_path / "r").rglob("*.parquet"))  # nothing computed
    assert sr.Packed(pd.DataFrame({"x": [1]}), 3, 3).complete and not sr.Packed(pd.DataFrame(), 2, 3).complete


def test_an_official_study_not_packed_is_incomplete(tmp_path, official_available):
    packed = sr.official_rows("full", "SpaceInvaders", results_dir=tmp_path)
    assert packed.rows is None and packed.stored == 0 and packed.planned > 0
    assert not list(tmp_path.rglob("*.parquet"))
