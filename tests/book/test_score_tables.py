"""The README's generated score tables (saliency_book.score_tables) on known answers, and the plan of runs."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from saliency_book import score_tables as st

ROOT = Path(__file__).resolve().parents[2]


def _row(agent, algo, game, variant, seed, protocol, episodes, distinct, mean, std, random_score=1.7, published=None):
    return {"agent": agent, "algo": algo, "game": game, "variant": variant, "seed": seed, "frames": 10_000_000,
            "protocol": protocol, "episodes": episodes, "distinct_games": distinct, "mean": mean, "std": std,
            "scores": "[]", "random_score": random_score, "ratio_to_random": mean / random_score,
            "published": published, "published_source": None}


def _scores() -> pd.DataFrame:
    return pd.DataFrame([
        _row("dqn-MsPacman-s0", "dqn", "MsPacman", None, 0, "greedy", 10, 7, 999.0, 386.17, 307.3, 1657.0),
        _row("dqn-Breakout-s0", "dqn", "Breakout", None, 0, "greedy", 10, 3, 27.4, 4.4766, 1.7, 36.8),
        _row("dqn-Breakout-s0", "dqn", "Breakout", None, 0, "sticky", 30, 30, 30.83, 11.54, 1.7, 36.8),
        _row("a3c-Breakout-double-s0", "a3c-sync", "Breakout", "double", 0, "greedy", 10, 3, 322.1, 22.21),
        _row("a3c-Breakout-none-s1", "a3c-sync", "Breakout", "none", 1, "greedy", 10, 3, 380.3, 89.53),
        _row("a3c-Breakout-none-s1", "a3c-sync", "Breakout", "none", 1, "sticky", 30, 30, 245.93, 113.86),
        _row("a3c-Breakout-none-s0", "a3c-sync", "Breakout", "none", 0, "greedy", 10, 3, 358.1, 5.72),
    ])


def test_dqn_table_in_the_games_order_with_a_dash_for_a_missing_protocol():
    lines = st.dqn_table(_scores()).splitlines()
    assert lines[2] == "| Breakout | 0 | 27.4 ± 4.5, 3/10 | 30.8 ± 11.5, 30/30 | 16.1 | 36.8 | 1.7 |"
    assert lines[3] == "| MsPacman | 0 | 999 ± 386, 7/10 | – | 3.3 | 1657 | 307.3 |"
    assert len(lines) == 4


def test_actor_critic_table_orders_variants_then_seeds():
    lines = st.actor_critic_table(_scores()).splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == ["| a3c-Breakout-none-s0", "| a3c-Breakout-none-s1",
                                                        "| a3c-Breakout-double-s0"]
    assert lines[1] == "| a3c-Breakout-none-s1 | A3C (no mask) | 380.3 ± 89.5, 3/10 | 245.9 ± 113.9, 30/30 | 224 |"
    assert lines[0].endswith("| 358.1 ± 5.7, 3/10 | – | 211 |")


def test_training_sentence_names_the_planned_runs_not_shipped():
    text = st.training_sentence(_scores())
    shipped = sum(name in st.planned_runs() for name in set(_scores()["agent"]))
    assert text.startswith(f"{shipped} of the {len(st.planned_runs())} planned runs are shipped")
    for name in ("a3c-Breakout-none-s2", "a3c-Breakout-double-s1", "a3c-Breakout-policy-s0", "a3c-Breakout-value-s0"):
        assert f"`{name}`" in text
    assert "a3c-Breakout-none-s1`" not in text
    everything = pd.DataFrame([_row(f"a3c-{g}-{v}-s{s}", "a3c-sync", g, v, s, "greedy", 10, 3, 1.0, 0.0)
                               for g, v, seeds in st.ACTOR_CRITIC_PLAN for s in seeds])
    everything = pd.concat([everything, pd.DataFrame([_row(f"dqn-{g}-s{s}", "dqn", g, None, s, "greedy", 10, 3, 1.0, 0.0)
                                                      for g, seeds in st.DQN_PLAN for s in seeds])])
    assert st.training_sentence(everything) == f"All {len(st.planned_runs())} planned runs are shipped."


def test_readme_carries_the_generated_score_tables():
    """The README's tables are what data/agents/scores.csv gives (run scripts/update_findings.py after shipping)."""
    assert st.scores_block() in (ROOT / "README.md").read_text(), "README.md: run scripts/update_findings.py"


def test_the_training_script_runs_exactly_the_planned_runs():
    """scripts/train_agents.sh trains what the README says is planned, every run once, with its seed."""
    script = (ROOT / "scripts" / "train_agents.sh").read_text()
    plan = re.search(r"^PLAN=\$\(cat <<EOF\n(.*?)^EOF$", script, re.S | re.M)
    assert plan, "no PLAN in scripts/train_agents.sh"
    rows = [line.split() for line in plan.group(1).splitlines()]
    names = [row[0] for row in rows]
    assert sorted(names) == sorted(st.planned_runs()) and len(set(names)) == len(names)
    for name, seed, algo, *args in rows:
        assert name.endswith(f"-s{seed}") and name.startswith(algo)
        assert args[args.index("--game") + 1] == name.split("-")[1]
        if algo == "a3c":
            assert args[args.index("--variant") + 1] == name.split("-")[2]
