"""Chapter 5's study section (saliency_book.ch5_study): the official agents' masks among every method."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import saliency_book.ch5_study as cst
from saliency_book.ch5_rankings import CRITERIA, Criterion, block_ranking
from saliency_book.common import Note
from saliency_study.evidence import MIN_STATES

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
                add(experiment="sanity", method=m, state=st, level=6.0, layer="conv1", measure="spearman", value=0.1 + 0.1 * k + e)
    return pd.DataFrame(rows)


def test_masks_rank_where_the_rows_put_them():
    st = cst.AgentStudy.of(_rows(), n_resamples=300)
    r = st.ranking
    assert set(r["criterion"]) == {"ins_prob", "del_prob", "sanity"}  # never V
    pol = r[r["method"] == "mask_policy"]
    assert (pol["rank"] == 2).all() and (pol.loc[pol["criterion"] != "sanity", "of"] == 6).all()
    assert pol.loc[pol["criterion"] == "sanity", "of"].item() == 5  # the random map has no sanity check
    assert (r.loc[r["method"] == "random", "rank"] == 6).all()
    text = cst.mask_study_sentence(st, "Breakout")
    assert text.startswith("Breakout (100 states, effective sample size ")
    assert ("the policy mask ranks #2 on insertion and #2 on deletion of π(a) over the black and random substrates "
            "(6 maps, the random map among them; the paired tests find 1 map significantly better and 4 worse), and "
            "#2 of 5 on Spearman after full randomisation (1 significantly better, 3 worse)") in text
    assert "the value mask ranks #5 on insertion and #5 on deletion" in text
    assert "4 maps significantly better and 1 worse" in text


def test_ranks_that_differ_between_substrates_show_as_a_span():
    """Where a mask's rank differs between substrates, the sentence gives the span."""
    a = _rows(substrates=("black",))
    b = _rows(("mask_policy", "gradient", "integrated_gradients", "gradcam", "mask_value"), substrates=("random",))
    t = pd.concat([a[a["experiment"] != "sanity"], b], ignore_index=True)
    text = cst.mask_study_sentence(cst.AgentStudy.of(t, n_resamples=200), "Breakout")
    assert "the policy mask ranks #1 to #2 on insertion and #1 to #2 on deletion" in text


def test_too_few_states_gives_no_rank():
    n = MIN_STATES - 10
    text = cst.mask_study_sentence(cst.AgentStudy.of(_rows(n=n), n_resamples=200), "SpaceInvaders")
    assert text.startswith(f"Space Invaders ({n} states") and f"too few states (n={n}) for a verdict" in text
    assert "ranks #" not in text


def test_a_note_speaks_for_itself_and_the_table_leaves_it_out():
    note = Note("Not yet run in full for `official:MsPacman`: 0 of 290 units.", title="x")
    assert cst.mask_study_sentence(note, "MsPacman") == f"Ms. Pac-Man: {note.text}"
    table = cst.mask_ranks_table({"MsPacman": note, "Breakout": cst.AgentStudy.of(_rows(), n_resamples=200)})
    assert list(table["game"]) == ["Breakout", "Breakout"] and list(table["mask"]) == ["Policy mask", "Value mask"]
    assert table.loc[0, "insertion AUC, π(a), black"] == "#2 of 6 (↑1 ↓4)"  # 1 map better (above), 4 worse
    assert table.loc[1, "insertion AUC, π(a), black"] == "#5 of 6 (↑4 ↓1)"  # the value mask: only the random map below
    assert table.loc[0, "n / ESS"].startswith("100 / ")


def test_the_display_has_a_row_per_method():
    t = cst.study_ranking_display(cst.AgentStudy.of(_rows(), n_resamples=200))
    assert len(t) == 6 and t.loc[t["method"] == "Random", "Spearman after full randomisation"].item() == "–"
    assert t.iloc[0]["insertion AUC, π(a), black"].endswith("#1")


def test_v_is_never_ranked_and_one_agent_at_a_time():
    v = Criterion("ins_value", "insertion AUC, V ↑", "insertion", "value_auc", True)
    with pytest.raises(ValueError, match="degenerate"):
        block_ranking(_rows(), criteria=(*CRITERIA, v))
    two = pd.concat([_rows(), _rows(game="SpaceInvaders")], ignore_index=True)
    with pytest.raises(ValueError, match="one agent"):
        block_ranking(two)


def test_an_unfinished_study_is_a_note_that_names_the_command(tmp_path, official_available):
    note = cst.agent_study_rows("full", "SpaceInvaders", results_dir=tmp_path)
    assert isinstance(note, Note) and "0 of " in note.text
    assert "saliency-study run --profile full --games SpaceInvaders --compact" in note.text
    assert not list(tmp_path.rglob("*.parquet"))  # nothing computed


def test_the_committed_study_of_the_official_agents(official_available):
    studies = cst.official_studies("full", n_resamples=300)
    done = {g: s for g, s in studies.items() if not isinstance(s, Note)}
    if not done:
        pytest.skip("no official agent's study is packed in full")
    for game, st in done.items():
        r = st.ranking
        assert st.n_states >= 100 and set(r["criterion"]) == {"ins_prob", "del_prob", "sanity"}
        assert {"mask_policy", "mask_value", "random"} <= set(r["method"]) and r["method"].nunique() == 15
        assert (r.loc[r["method"].isin(["mask_policy", "mask_value"]), "n"] == st.n_states).all()
        assert set(r["substrate"].dropna()) == {"black", "blur", "random"}
        assert cst.mask_study_sentence(st, game).startswith(cst.GAME_LABELS.get(game, game))


def test_the_official_finding_quotes_the_chapters_sentences(official_available):
    from saliency_book.findings import official_mask_finding

    studies = cst.official_studies("full", n_resamples=300)
    text = official_mask_finding(n_resamples=300)
    for game, st in studies.items():
        if isinstance(st, Note):
            assert cst.GAME_LABELS.get(game, game) in text.split("On ")[-1]
        else:
            assert cst.mask_study_sentence(st, game) in text
