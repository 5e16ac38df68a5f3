"""Chapter 5's seed section: do the masks' ranks hold across seeds? (issue 15, part 4)

The rankings and their agreement are saliency_study.rankings'; the section's display saliency_book.ch5_rankings'."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import saliency_book.ch5_rankings as rk
import saliency_study.rankings as sr
from saliency_book.common import Note
from saliency_study.evidence import MIN_STATES, TOO_FEW
from saliency_study.rankings import Criterion

METHODS = ("mask_policy", "mask_value", "gradient", "integrated_gradients", "gradcam")


def _rows(variant: str, seed: int, order, *, n: int = 50, game: str = "Breakout", substrates=("black", "random")):
    """Tidy rows of one fake agent whose methods rank in ``order`` (best first) on every criterion.

    The random map is worst on π(a); on V the order is reversed, with the random map best, as
    on the real agents, so a ranking that used V would put the random map first.
    """
    agent = f"data/agents/a3c-{game}-{variant}-s{seed}"
    rng = np.random.default_rng(seed)
    rows = []

    def add(**kw):
        rows.append({"agent": agent, "game": game, "level": np.nan, "layer": None, "step": np.nan, "substrate": None, **kw})

    order = [*order, "random"]
    for k, m in enumerate(order):
        good = 0.9 - 0.12 * k  # π(a) insertion AUC: the better the method, the higher
        for st in range(n):
            e = 0.01 * rng.standard_normal()
            for sub in substrates:
                add(experiment="insertion", method=m, substrate=sub, state=st, measure="prob_auc", value=good + e)
                add(experiment="deletion", method=m, substrate=sub, state=st, measure="prob_auc", value=1 - good + e)
                add(experiment="insertion", method=m, substrate=sub, state=st, measure="value_auc", value=1 - good + e)
                add(experiment="deletion", method=m, substrate=sub, state=st, measure="value_auc", value=good + e)
                add(experiment="insertion", method=m, substrate=sub, state=st, step=3.0, measure="prob", value=99.0)
            if m == "random":
                continue  # the random map takes part in insertion and deletion only
            add(experiment="sanity", method=m, state=st, level=0.0, layer="original", measure="spearman", value=1.0)
            add(experiment="sanity", method=m, state=st, level=6.0, layer="conv1", measure="spearman",
                value=0.1 + 0.1 * k + e)  # lower is better: the map changed more
    return pd.DataFrame(rows)


def _study(*parts):
    ranking = sr.rank_agents(pd.concat(parts, ignore_index=True), n_resamples=200)
    return ranking, sr.rank_agreement(ranking)


def test_mask_best_in_two_seeds_holds():
    ranking, a = _study(_rows("double", 0, METHODS), _rows("double", 1, METHODS))
    assert set(zip(ranking["variant"], ranking["seed"])) == {("double", 0), ("double", 1)}
    pol = a[a["method"] == "mask_policy"]
    assert set(pol["criterion"]) == {"ins_prob", "del_prob", "sanity"}
    assert len(pol) == 5  # insertion and deletion on two substrates, and the sanity check
    assert (pol["verdict"] == sr.HOLDS).all() and all(r == [1, 1] for r in pol["ranks"])
    assert (pol["seeds"].map(tuple) == (0, 1)).all() and (pol["n"] == 50).all()
    assert pol["kendall_w"].to_numpy() == pytest.approx(1.0)  # both seeds order all methods alike
    assert (pol.loc[pol["criterion"] != "sanity", "of"] == 6).all()  # 5 methods and the random map
    n = sr.seed_numbers(ranking, a)
    assert (n["seed_holds"], n["seed_moves"], n["seed_states"]) == (10, 0, 50)  # both masks, 5 criteria each


def test_swapped_ranks_do_not_hold():
    ranking, a = _study(_rows("double", 0, METHODS), _rows("double", 1, METHODS[::-1]))
    pol = a[(a["method"] == "mask_policy") & (a["criterion"] == "ins_prob")]
    assert (pol["verdict"] == sr.DOES_NOT_HOLD).all()
    assert all(r == [1, 5] for r in pol["ranks"]) and (pol["rank_range"] == 4).all()
    # seed 1 reverses the five methods but keeps the random map last: W well below 1
    assert pol["kendall_w"].iloc[0] == pytest.approx(sr.kendall_w([[1, 2, 3, 4, 5, 6], [5, 4, 3, 2, 1, 6]]))
    assert pol["kendall_w"].iloc[0] < 0.5
    val = a[(a["method"] == "mask_value") & (a["criterion"] == "ins_prob")]
    assert all(r == [2, 4] for r in val["ranks"])  # the value mask is second in seed 0 and fourth in seed 1
    assert sr.seed_numbers(ranking, a)["seed_moves"] > 0


def test_one_seed_cannot_be_judged():
    _, a = _study(_rows("double", 0, METHODS))
    assert (a["verdict"] == sr.ONE_SEED).all() and a["kendall_w"].isna().all()
    assert (a.loc[(a["method"] == "mask_policy") & (a["criterion"] == "ins_prob"), "ranks"].map(tuple) == (1,)).all()


def test_nan_states_set_aside_only_their_criterion():
    """Grad-CAM is constant (NaN similarity) on 2 of seed 2's states, as on a3c-Breakout-double-s2:
    the sanity criterion has too few states, the insertion and deletion verdicts stand."""
    seed2 = _rows("double", 2, METHODS)
    nan = (seed2["experiment"] == "sanity") & (seed2["method"] == "gradcam") & (seed2["state"] < 2) & (seed2["level"] == 6)
    seed2.loc[nan, "value"] = np.nan
    _, a = _study(_rows("double", 0, METHODS), _rows("double", 1, METHODS), seed2)
    pol = a[a["method"] == "mask_policy"].set_index("criterion")
    assert pol.loc["sanity", "verdict"] == TOO_FEW and pol.loc["sanity", "n"] == MIN_STATES - 2
    assert (pol.drop(index="sanity")["verdict"] == sr.HOLDS).all()


def test_too_few_states():
    n = MIN_STATES - 30
    _, a = _study(_rows("double", 0, METHODS, n=n), _rows("double", 1, METHODS, n=n))
    assert (a["verdict"] == TOO_FEW).all()  # although the ranks agree


def test_v_is_never_ranked():
    rows = _rows("double", 0, METHODS)
    r = sr.rank_agents(rows, n_resamples=200)
    assert set(r["criterion"]) == {"ins_prob", "del_prob", "sanity"}
    assert not r["label"].str.contains("V ").any()
    assert (r.loc[r["method"] == "random", "rank"] == 6).all()  # on V it would be first
    with pytest.raises(ValueError, match="degenerate"):
        sr.rank_methods(rows, criteria=(Criterion("ins_value", "insertion AUC, V ↑", "insertion", "value_auc", True),))


def test_rankings_carry_block_bootstrap_cis_ess_and_full_randomisation():
    r = sr.rank_agents(_rows("double", 0, METHODS), n_resamples=200)
    ins = r[(r["criterion"] == "ins_prob") & (r["substrate"] == "black")].set_index("method")
    assert ins["rank"].to_dict() == {m: k + 1 for k, m in enumerate([*METHODS, "random"])}
    p = ins.loc["mask_policy"]
    assert p["n"] == 50 and 1 <= p["n_eff"] <= 50 and p["ci_low"] < p["mean"] < p["ci_high"]
    assert p["mean"] == pytest.approx(0.9, abs=0.01) and "random" in p["better_than"]
    dele = r[(r["criterion"] == "del_prob") & (r["substrate"] == "random")].set_index("method")
    assert dele.loc["mask_policy", "rank"] == 1  # lowest deletion AUC
    san = r[r["criterion"] == "sanity"].set_index("method")
    assert san.loc["mask_policy", "mean"] == pytest.approx(0.1, abs=0.01)  # level 6 only, not the original map
    assert "random" not in san.index and (san["of"] == 5).all()


def test_variants_are_compared_within_themselves():
    _, a = _study(_rows("double", 0, METHODS), _rows("double", 1, METHODS),
                  _rows("policy", 0, ("mask_policy", "gradient", "integrated_gradients", "gradcam")))
    assert set(a.loc[a["variant"] == "double", "verdict"]) == {sr.HOLDS}
    assert set(a.loc[a["variant"] == "policy", "verdict"]) == {sr.ONE_SEED}
    assert not ((a["variant"] == "policy") & (a["method"] == "mask_value")).any()


def test_section_displays():
    ranking, a = _study(_rows("double", 0, METHODS), _rows("double", 1, METHODS[::-1]))
    t = rk.show_ranking(ranking, "cap", by=("variant", "seed", "method")).data
    assert list(t.columns[:3]) == ["variant", "seed", "method"] and t.columns[-1] == "n / ESS"
    assert len(t) == 12 and t.loc[0, "insertion AUC, π(a) ↑ (black)"].endswith("#1")
    assert t.loc[t["method"] == "Random", "Spearman after full randomisation ↓"].eq("–").all()
    ag = rk.show_agreement(a, "cap").data
    assert {"seed 0", "seed 1", "range", "Kendall's W", "verdict"} <= set(ag.columns)
    assert ag.loc[0, "seed 1"] == "#5 of 6" and ag.loc[0, "range"] == "#1–#5" and ag.loc[0, "verdict"] == sr.DOES_NOT_HOLD
    assert type(rk.show_seed_ranks(ranking)).__name__ == "Image"
    assert isinstance(rk.show_seed_ranks(ranking, variant="value"), Note)
    note = Note("missing")
    assert sr.rank_agreement(note) is note and rk.show_ranking(note, "c") is note and rk.show_agreement(note, "c") is note
    assert rk.show_seed_ranks(note) is None and all(np.isnan(v) for v in sr.seed_numbers(note, note).values())


def test_missing_units_give_the_command_and_compute_nothing(tmp_path):
    empty = tmp_path / "agents"
    empty.mkdir()
    note = rk.seed_study("full", "Breakout", results_dir=tmp_path / "r", agents_dir=empty)
    assert isinstance(note, Note) and "No masked Mask-A3C agent" in note.text
    shipped = rk.seed_study("full", "Breakout", results_dir=tmp_path / "r")
    if not isinstance(shipped, Note) or "No masked" in shipped.text:
        pytest.skip("no masked Mask-A3C agent of Breakout is shipped in data/agents")
    assert "saliency-study run --profile full --seeds --games Breakout --compact" in shipped.text
    assert not list((tmp_path / "r").rglob("*.parquet"))  # nothing computed


def test_section_on_the_committed_seed_packs():
    packed, _ = sr.seed_rows("full", "Breakout")
    if packed.rows is None:
        pytest.skip("the seed sweep is not stored")
    rows = packed.rows
    assert set(rows["experiment"]) <= {"sanity", "insertion", "deletion"} and rows.attrs["units_stored"] > 0
    r = sr.rank_agents(rows)
    assert set(r["criterion"]) <= {"ins_prob", "del_prob", "sanity"}  # never V
    assert set(r.loc[r["criterion"] == "sanity", "method"]) <= set(METHODS)
    assert (r["n"] <= 50).all() and (r["n_eff"] <= r["n"]).all()
    if r.attrs["units_stored"] == r.attrs["units_planned"]:  # a sweep in progress has fewer states and criteria
        assert set(r["criterion"]) == {"ins_prob", "del_prob", "sanity"}
        assert set(r["substrate"].dropna()) == {"black", "random", "blur"}
        # every map of a mask is scored; a constant baseline map (Grad-CAM) gives NaN on a state or two
        assert (r.loc[r["method"].isin(sr.MASKS), "n"] == 50).all() and (r["n"] >= 45).all()
    a = sr.rank_agreement(r)
    assert set(a["verdict"]) <= {sr.ONE_SEED, TOO_FEW, sr.HOLDS, sr.DOES_NOT_HOLD}
    if (a.groupby("variant")["n_seeds"].max() == 1).any():
        assert sr.ONE_SEED in set(a["verdict"])
