"""The library's bf16 offer follows the committed decision table (benchmarks/bf16_decision.py).

Issue "Beyond the forward-pass floor", part 3: bf16 only where its maps keep Spearman >= 0.99
with float32 maps on the trained agents (>= 20 states of each shipped DQN agent and of the
official Mask-A3C Breakout agent), on by default only where that holds (and pays).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from saliency_lib.agents import DQNConfig, DQNNet, QAgent
from saliency_lib.explainers import get_explainer

ROOT = Path(__file__).resolve().parents[2]
DECISION = json.loads((ROOT / "data" / "benchmarks" / "bf16_decision.json").read_text())
DQN_AGENTS = {f"data/agents/dqn-{g}-s0" for g in ("Breakout", "MsPacman", "SpaceInvaders", "Frostbite")}
METHODS = sorted({m for kind in DECISION["decision"].values() for m in kind})


def test_the_decision_rests_on_the_trained_agents_the_issue_names():
    agents = {r["agent"]: r for r in DECISION["agents"]}
    assert DQN_AGENTS | {"official:Breakout"} <= set(agents)
    assert all(len(r["states"]) >= 20 for r in agents.values())
    assert all(len(m["spearman_per_state"]) == len(r["states"]) for r in agents.values() for m in r["methods"].values())


def _offered(name: str) -> bool:
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    try:
        get_explainer(name, agent, precision="bf16")
    except ValueError as e:
        assert "precision='bf16' is not offered" in str(e)
        return False
    return True


@pytest.mark.parametrize("name", METHODS)
def test_bf16_is_offered_exactly_where_every_agent_kept_its_maps(name):
    kept = all(kind[name]["min_spearman"] >= 0.99 for kind in DECISION["decision"].values() if name in kind)
    assert _offered(name) == kept


def test_bf16_is_the_default_exactly_where_the_decision_says_so():
    """bf16 is the default for the (agent kind, method) pairs whose bf16 maps kept Spearman >= 0.99 on every
    agent of the kind and ran faster there, float32 everywhere else; an explicit choice wins."""
    from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
    from saliency_lib.explainers import BF16_DEFAULTS

    agents = {"dqn": QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4),
              "mask_a3c": ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c",
                                           n_actions=4)}
    eligible = {(kind, name) for kind, methods in DECISION["decision"].items() for name, d in methods.items()
                if d["precision"] == "bf16"}
    assert eligible == set(BF16_DEFAULTS)
    for kind, name in eligible:  # eligible means: kept its maps on every agent of the kind, and was faster
        d = DECISION["decision"][kind][name]
        assert d["min_spearman"] >= 0.99 and d["min_bf16_speedup"] > 1
    for kind, agent in agents.items():
        for name in METHODS:
            exp = get_explainer(name, agent)
            assert exp.precision == ("bf16" if (kind, name) in eligible else "fp32")
            assert exp.config["precision"] == exp.precision
    rise = get_explainer("rise", agents["mask_a3c"], precision="bf16")  # an explicit choice wins, and travels
    assert rise.precision == "bf16" and rise.for_agent(agents["mask_a3c"]).precision == "bf16"
