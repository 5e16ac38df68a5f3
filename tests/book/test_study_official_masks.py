"""Chapter 5's study section: the official agents' masks among every method (saliency_study.rankings ranks,
saliency_book.ch5_rankings loads and shows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import saliency_book.ch5_rankings as rk
import saliency_study.rankings as sr
from saliency_book.common import Note
from saliency_study.paper import GAME_LABELS
from saliency_study.rankings import CRITERIA, Criterion

ORDER = ("gradient", "mask_policy", "integrated_gradients", "gradcam", "mask_value")


def _rows(order=ORDER, *, n: int = 100, game: str = "Breakout", substrates=("black", "random"), seed: int = 0):
    """Tidy rows of one fake official agent whose methods rank in ``order`` (best first) on every
    criterion; the random map is last on insertion and deletion. The states follow an AR(1) drift
    shared by all methods, as along one greedy game."""
    agent = f"official:{game}"
    rng = np.random.default_rng(seed)
    drift = np.zeros(n)
    for t in range(1, n):
        drift[t] = 0.8 * drift[t - 1] + 0.02 * rng.standard_normal()
    rows = []

    def add(**kw):
        rows.append({"agent": agent, "game": game, "level": np.nan, "layer": None, "step": np.nan, "substrate": None, **kw})

    for k, m in enumerate([*order, "random"]):
        good = 0.9 - 0.12 * k
        for st in range(n):
            e = drift[st] + 0.01 * rng.standard_normal()
            for sub in substrates:
                add(experiment="insertion", method=m, substrate=sub, state=st, measure="prob_auc", value=good + e)
                add(experiment="deletion", method=m, substrate=sub, state=st, measure="prob_auc", value=1 - good + e)
                # V reversed, the random map best: a ranking that used it would put the random map first
                add(experiment="insertion", method=m, substrate=sub, state=st, measure="value_auc", value=1 - good + e)
            if m != "random":
                add(experiment="sanity", method=m, state=st, level=0.0, layer="original", measure="spearman", value=1.0)
                add(experiment="sanity", method=m, state=st, level=6.0, layer="conv1", measure="spearman",
                    value=0.1 + 0.1 * k + e)
    return pd.DataFrame(rows)


def _ranks(rows, n_resamples=300):
    return sr.rank_agents(rows, n_resamples=n_resamples)


def test_masks_rank_where_the_rows_put_them():
    r = _ranks(_rows())
    assert set(r["criterion"]) == {"ins_prob", "del_prob", "sanity"}  # never V
    assert (r["agent"] == "official:Breakout").all() and r["variant"].isna().all()  # no seed in an official name
    pol = r[r["method"] == "mask_policy"]
    assert (pol["rank"] == 2).all() and (pol.loc[pol["criterion"] != "sanity", "of"] == 6).all()
    assert pol.loc[pol["criterion"] == "sanity", "of"].item() == 5  # the random map has no sanity check
    assert (r.loc[r["method"] == "random", "rank"] == 6).all()
    t = rk.show_mask_ranks(r, "cap").data
    assert list(t["game"]) == ["Breakout", "Breakout"] and list(t["mask"]) == ["Policy mask", "Value mask"]
    for sub in ("black", "random"):
        assert t.loc[0, f"insertion AUC, π(a) ↑ ({sub})"] == "#2 of 6 (↑1 ↓4)"  # 1 map better (above), 4 worse
        assert t.loc[0, f"deletion AUC, π(a) ↓ ({sub})"] == "#2 of 6 (↑1 ↓4)"
        assert t.loc[1, f"insertion AUC, π(a) ↑ ({sub})"] == "#5 of 6 (↑4 ↓1)"  # the value mask: only the random map below
    assert t.loc[0, "Spearman after full randomisation ↓"] == "#2 of 5 (↑1 ↓3)"
    assert t.loc[0, "n / ESS"].startswith("100 / ")


def test_ranks_that_differ_between_substrates_show_per_substrate():
    a = _rows(substrates=("black",))
    b = _rows(("mask_policy", "gradient", "integrated_gradients", "gradcam", "mask_value"), substrates=("random",))
    t = rk.show_mask_ranks(_ranks(pd.concat([a[a["experiment"] != "sanity"], b], ignore_index=True), 200), "cap").data
    assert t.loc[0, "insertion AUC, π(a) ↑ (black)"].startswith("#2 of 6")
    assert t.loc[0, "insertion AUC, π(a) ↑ (random)"].startswith("#1 of 6")


def test_a_game_with_a_note_is_named_in_the_caption():
    note = Note("Not yet run in full for `official:MsPacman`: 0 of 290 units.", title="x")
    st = rk.show_mask_ranks({"MsPacman": note, "Breakout": _ranks(_rows(), 200)}, "cap")
    assert list(st.data["game"]) == ["Breakout", "Breakout"]
    assert f"Not in the table: Ms. Pac-Man: {note.text}" in st.caption
    only = rk.show_mask_ranks({"MsPacman": note}, "cap")
    assert isinstance(only, Note) and only.text == note.text


def test_the_display_has_a_row_per_method():
    t = rk.show_ranking(_ranks(_rows(), 200), "cap").data
    assert len(t) == 6 and t.loc[t["method"] == "Random", "Spearman after full randomisation ↓"].item() == "–"
    assert t.iloc[0]["insertion AUC, π(a) ↑ (black)"].endswith("#1") and t.columns[-1] == "n / ESS"
    assert isinstance(rk.show_ranking(None, "cap"), Note)  # a game without an official agent


def test_v_is_never_ranked_and_one_agent_at_a_time():
    v = Criterion("ins_value", "insertion AUC, V ↑", "insertion", "value_auc", True)
    with pytest.raises(ValueError, match="degenerate"):
        sr.rank_methods(_rows(), criteria=(*CRITERIA, v))
    two = pd.concat([_rows(), _rows(game="SpaceInvaders")], ignore_index=True)
    with pytest.raises(ValueError, match="one agent"):
        sr.rank_methods(two)
    assert set(_ranks(two, 100)["game"]) == {"Breakout", "SpaceInvaders"}  # rank_agents ranks each on its own


def test_an_unfinished_study_is_a_note_that_names_the_command(tmp_path, official_available):
    note = rk.official_studies("full", ["SpaceInvaders"], results_dir=tmp_path)["SpaceInvaders"]
    assert isinstance(note, Note) and "0 of " in note.text
    assert "saliency-study run --profile full --games SpaceInvaders --compact" in note.text
    assert not list(tmp_path.rglob("*.parquet"))  # nothing computed


def test_the_committed_study_of_the_official_agents(official_available):
    studies = rk.official_studies("full", n_resamples=300)
    done = {g: s for g, s in studies.items() if not isinstance(s, Note)}
    if not done:
        pytest.skip("no official agent's study is packed in full")
    for game, r in done.items():
        assert set(r["game"]) == {game}
        n_states = int(r["n"].max())
        assert n_states >= 100 and set(r["criterion"]) == {"ins_prob", "del_prob", "sanity"}
        assert {"mask_policy", "mask_value", "random"} <= set(r["method"]) and r["method"].nunique() == 15
        assert (r.loc[r["method"].isin(["mask_policy", "mask_value"]), "n"] == n_states).all()
        assert set(r["substrate"].dropna()) == {"black", "blur", "random"}
        assert r.attrs["units_stored"] == r.attrs["units_planned"]
    t = rk.show_mask_ranks(studies, "cap").data
    assert set(t["game"]) == {GAME_LABELS.get(g, g) for g in done}
