"""The advantage-stream reading of the DQN agent (saliency_study.advantage_stream): sweep, clean outputs and
agreement, and chapter 4's Notes and display of them."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from test_study_degradation import _as_paper, _rows

import saliency_book.ch4_degradation as ch
import saliency_book.ch4_figures as fg
import saliency_study.advantage_stream as adv
import saliency_study.degradation as dg
from saliency_book.common import Note
from saliency_lib.agents import DQNConfig, DQNNet, QAgent, load_agent, save_agent

DQN = "data/agents/dqn-Breakout-toy"
STREAM = adv.SCHEME + DQN


@pytest.fixture
def synthetic_presets(monkeypatch):
    monkeypatch.setattr(dg, "agent_preset", lambda spec: "dqn")


def _paper_rows(agent: str, *, reverse: bool) -> pd.DataFrame:
    """Insertion rows whose method means follow (or reverse) the paper's Breakout order in every setting."""
    parts = [_rows(agent, _as_paper("Breakout", sub, meas, reverse=reverse), measures=(meas,), n_states=4,
                   substrates=(sub,), experiments=("insertion",))
             for sub in ("black", "random") for meas in ("q_ratio", "advantage")]
    return pd.concat(parts, ignore_index=True)


def test_agreement_says_which_reading_follows_the_paper(synthetic_presets):
    full, stream = _paper_rows(DQN, reverse=True), _paper_rows(STREAM, reverse=False)
    a = adv.stream_agreement(full, stream, "Breakout", n_resamples=20)
    assert set(a["reading"]) == {"full Q", "advantage stream"} and len(a) == 8
    by = a.set_index(["reading", "substrate", "paper_measure"])
    assert by.loc[("advantage stream", "black", "q_ratio"), "spearman"] == pytest.approx(1.0)
    assert by.loc[("full Q", "black", "q_ratio"), "spearman"] == pytest.approx(-1.0)
    # the paper's Breakout means under random insertion with the Q-ratio: all negative; reversed, all positive
    assert by.loc[("full Q", "random", "q_ratio"), "paper_negative"] == 6
    assert by.loc[("advantage stream", "random", "q_ratio"), "our_negative"] == 6
    assert by.loc[("full Q", "random", "q_ratio"), "our_negative"] == 0
    assert adv.stream_better(a) == {"better": 4, "settings": 4}  # the advantage stream agrees better everywhere
    rq = by.loc[("advantage stream", "random", "q_ratio")]
    assert (rq["methods"], rq["paper_negative"], rq["our_negative"]) == (6, 6, 6)
    html = fg.show_agreement(a, "cap").to_html()
    assert "DQN, advantage stream (dqn-Breakout-toy)" in html and "DQN (dqn-Breakout-toy)" in html


def test_notes_pass_through(synthetic_presets):
    note = Note("nothing", title="x")
    assert ch.stream_agreement(note, _paper_rows(STREAM, reverse=False), "Breakout") is note
    assert fg.show_table(note, "c") is note and ch.stream_results(ch.DegradationChapter(), note) is note
    only_full = adv.stream_agreement(_paper_rows(DQN, reverse=False), _paper_rows(DQN, reverse=False).iloc[:0],
                                     "Breakout", n_resamples=20)
    assert adv.stream_better(only_full) == {"better": "–", "settings": "–"}
    seaquest = ch.stream_agreement(_paper_rows(DQN, reverse=False), _paper_rows(STREAM, reverse=False), "Seaquest")
    assert isinstance(seaquest, Note) and "not Seaquest" in seaquest.text
    empty = adv.stream_agreement(_paper_rows(DQN, reverse=False), _paper_rows(STREAM, reverse=False), "Seaquest")
    assert empty.empty and adv.stream_better(empty) == {"better": "–", "settings": "–"}


def _toy(tmp_path, dueling: bool):
    torch.manual_seed(0)
    d = tmp_path / f"dqn-Breakout-{'duel' if dueling else 'plain'}"
    save_agent(QAgent(DQNNet(DQNConfig(n_actions=4, dueling=dueling)), game="Breakout", preset="dqn", n_actions=4), d)
    return str(d)


def test_stream_sweep_and_clean_outputs_on_a_toy_agent(tmp_path):
    """The tiny-profile sweep of ``advstream:`` stores insertion units only, on the paper's methods and
    substrates, and the clean outputs are the network's own Q(a) and out_adv(a)."""
    spec = _toy(tmp_path, dueling=True)
    cfg = ch.DegradationChapter(agent=spec, profile="tiny", results_dir=str(tmp_path / "r"))
    results = pd.DataFrame({"agent": pd.Series([spec], dtype="string")})
    assert adv.stream_spec(results) == adv.SCHEME + spec
    rows = ch.stream_results(cfg, results)
    assert set(rows["agent"]) == {adv.SCHEME + spec} and set(rows["experiment"]) == {"insertion"}
    assert set(rows["substrate"]) == {"black", "random"} and set(rows["method"]) == set(dg.PAPER_METHODS)
    assert not (tmp_path / "r" / "sweep" / "sanity").exists()
    stored = sorted((tmp_path / "r" / "sweep" / "degradation").glob("*.parquet"))
    again = adv.stream_results(adv.SCHEME + spec, profile="tiny", results_dir=str(tmp_path / "r"))
    assert len(stored) == len(dg.PAPER_METHODS) and again.equals(rows)  # reused
    assert sorted((tmp_path / "r" / "sweep" / "degradation").glob("*.parquet")) == stored

    out = ch.clean_outputs(cfg, rows).set_index("reading")
    from saliency_lib.sweep import study_states

    states, _ = study_states(adv.SCHEME + spec, 2, results_dir=cfg.results_dir)
    agent = load_agent(spec)
    with torch.no_grad():
        q = agent(states.states)["q"].gather(1, states.actions[:, None])[:, 0]
        a = agent.net.out_adv(agent.net.features(states.states)).gather(1, states.actions[:, None])[:, 0]
    assert out.loc["Q(a), the full dueling output", "mean"] == pytest.approx(float(q.mean()), abs=1e-6)
    assert out.loc["A(a), the advantage stream alone", "max"] == pytest.approx(float(a.max()), abs=1e-6)
    assert out["states"].tolist() == [2, 2]
    assert "Below 0" in fg.show_table(out.reset_index(), "cap", names={"negative": "Below 0"}).to_html()


def test_stream_spec_needs_a_dueling_dqn_agent(tmp_path):
    plain = _toy(tmp_path, dueling=False)
    with pytest.raises(LookupError, match="no dueling head"):
        adv.stream_spec(pd.DataFrame({"agent": pd.Series([plain], dtype="string")}))
    cfg = ch.DegradationChapter(agent=plain, profile="tiny", results_dir=str(tmp_path / "r"))
    note = ch.stream_results(cfg, pd.DataFrame({"agent": pd.Series([plain], dtype="string")}))
    assert isinstance(note, Note) and "no dueling head" in note.text and note.text.startswith("The DQN agent")
    with pytest.raises(LookupError, match="no DQN agent"):
        adv.stream_spec(pd.DataFrame({"agent": pd.Series([], dtype="string")}))
