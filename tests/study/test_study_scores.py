"""Our agents' score table beside random play, the human tester and published DQN (saliency_study.scores)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from saliency_study.scores import beats_random, evaluate_agent, score_table, times_random


def _fake_agent(agents_dir: Path, name: str, game: str, frames: int = 1_000_000, **meta) -> Path:
    d = agents_dir / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"algo": "dqn", "game": game, "preset": "dqn", "frames": frames, "seed": 0,
                                             "arch": "DQNNet", "config": {}, "sha256": "0" * 64, **meta}))
    return d


def test_score_table_reads_meta_and_scores(tmp_path):
    agents = tmp_path / "agents"
    _fake_agent(agents, "dqn-Breakout-s0", "Breakout")
    _fake_agent(agents, "dqn-MsPacman-s0", "MsPacman")
    pd.DataFrame({"agent": ["dqn-Breakout-s0"], "episodes": [10], "mean": [31.8], "std": [2.0]}).to_csv(
        agents / "scores.csv", index=False)
    t = score_table(agents, agents / "scores.csv")
    assert list(t["agent"]) == ["dqn-Breakout-s0", "dqn-MsPacman-s0"]
    bo = t.iloc[0]
    assert bo["random"] == 1.7 and bo["human"] == 31.8 and bo["dqn_nature"] == 401.2
    assert bo["dqn_10m"] == 36.8 and bo["dqn_10m_dopamine"] == 21.5  # Pritzel et al. 2017 Table 3; Dopamine iteration 9
    assert bo["normalised"] == pytest.approx(100.0)  # the human tester's score
    assert pd.isna(t.iloc[1]["mean"])
    t = score_table(agents, agents / "scores.csv", games=["MsPacman"],
                    extra=[{"agent": "dqn-MsPacman-s0", "mean": 307.3, "episodes": 1, "score_source": "here"}])
    assert len(t) == 1 and t.iloc[0]["normalised"] == pytest.approx(0.0)  # random play


def test_greedy_rows_meta_fallback_and_bad_tables(tmp_path):
    agents = tmp_path / "agents"
    _fake_agent(agents, "dqn-Breakout-s0", "Breakout")
    _fake_agent(agents, "dqn-Breakout-s1", "Breakout", eval_score=12.5)
    pd.DataFrame({"agent": ["dqn-Breakout-s0"] * 2, "protocol": ["sticky", "greedy"], "mean": [5.0, 9.0]}).to_csv(
        agents / "scores.csv", index=False)
    t = score_table(agents).set_index("agent")  # default: <agents_dir>/scores.csv, its greedy row
    assert t.loc["dqn-Breakout-s0", "mean"] == 9.0 and t.loc["dqn-Breakout-s0", "score_source"] == "scores.csv"
    assert t.loc["dqn-Breakout-s1", "mean"] == 12.5 and t.loc["dqn-Breakout-s1", "score_source"] == "meta.json (eval_score)"
    assert score_table(agents, None).set_index("agent").loc["dqn-Breakout-s0", "mean"] != 9.0  # no scores table
    pd.DataFrame({"name": ["x"], "score": [1.0]}).to_csv(agents / "bad.csv", index=False)
    with pytest.raises(ValueError, match="must have the columns 'agent' and 'mean'"):
        score_table(agents, agents / "bad.csv")


def test_times_and_beats_random():
    t = pd.DataFrame({"agent": ["a", "b", "c", "d"], "algo": ["dqn", "dqn", "dqn", "a3c-sync"],
                      "mean": [17.0, 614.6, -5.0, 400.0], "random": [1.7, 307.3, -20.7, 1.7]})
    np.testing.assert_allclose(times_random(t), [10.0, 2.0, np.nan, 400 / 1.7])  # no ratio to a negative score
    assert beats_random(t) == {"scored": 3, "judged": 2, "beat": 1}  # the actor-critic agent is not counted
    assert beats_random(t, factor=2.0)["beat"] == 2
    assert beats_random(None) == {"scored": 0, "judged": 0, "beat": 0}


def test_evaluate_agent_is_cached_by_weights(tmp_path):
    import torch

    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent

    torch.manual_seed(0)
    path = save_agent(QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4), tmp_path / "a")
    r = evaluate_agent(str(path), episodes=1, seed=0, max_steps=30, results_dir=tmp_path / "r")
    assert (r["episodes"], r["seed"], r["max_steps"]) == (1, 0, 30) and len(r["scores"]) == 1
    again = evaluate_agent(str(path), episodes=1, seed=0, max_steps=30, results_dir=tmp_path / "r")
    assert again == r and len(list((tmp_path / "r").glob("evaluate-*/value.json"))) == 1
