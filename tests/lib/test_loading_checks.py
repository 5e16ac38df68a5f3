"""What is loaded is checked where it enters: meta.json against its schema and the weights, recurrent states whole."""

from __future__ import annotations

import json

import pytest
import torch

from saliency_lib.agents import DQNConfig, DQNNet, MaskA3CConfig, MaskA3CNet, QAgent, load_agent, save_agent
from saliency_lib.agents.base import ActorCriticAgent
from saliency_lib.explainers import get_explainer
from saliency_lib.games import ACTION_COUNTS, valid_games
from saliency_lib.metrics import Insertion, RandomisationTest


def test_action_counts_are_the_minimal_action_sets_of_ale():
    import gymnasium as gym

    from saliency_lib import envs  # noqa: F401  (registers the ALE environments)

    assert set(ACTION_COUNTS) == set(valid_games())
    for game, n in ACTION_COUNTS.items():
        env = gym.make(f"{game}NoFrameskip-v4")
        try:
            assert env.action_space.n == n, game
        finally:
            env.close()


@pytest.fixture
def checkpoint(tmp_path):
    torch.manual_seed(0)
    return save_agent(QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4), tmp_path / "a")


@pytest.mark.parametrize("change,says", [
    (lambda m: m.update(sha256=7), "field 'sha256' must be a string, got int 7"),
    (lambda m: m.update(sha256="abc"), "must be 64 hexadecimal digits"),
    (lambda m: m.update(game="breakout"), "unknown game 'breakout'; did you mean 'Breakout'?"),
    (lambda m: m.update(preset="dqm"), "unknown preset 'dqm'; did you mean 'dqn'?"),
    (lambda m: m.update(preset="mask_a3c"), "preset 'mask_a3c' contradicts the architecture DQNNet"),
    (lambda m: m["config"].update(dueling="yes"), "config field 'dueling' must be of type bool"),
    (lambda m: m["config"].pop("n_actions"), r"config lacks the field\(s\) \['n_actions'\]"),
    (lambda m: m.update(config=[4]), "field 'config' must be an object"),
])
def test_meta_json_is_checked_against_its_schema(checkpoint, change, says):
    path = checkpoint / "meta.json"
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=says):
        load_agent(checkpoint)


def test_meta_json_is_checked_against_the_weights(tmp_path):
    torch.manual_seed(0)
    agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=6)), game="Breakout", preset="mask_a3c", n_actions=6)
    with pytest.raises(ValueError, match="the network has 6 actions but Breakout's minimal action set has 4"):
        load_agent(save_agent(agent, tmp_path / "a3c"))
    meta = json.loads((tmp_path / "a3c" / "meta.json").read_text())
    meta["game"] = "Pong"  # 6 actions: now it agrees
    (tmp_path / "a3c" / "meta.json").write_text(json.dumps(meta))
    assert load_agent(tmp_path / "a3c").game == "Pong"


@pytest.fixture(scope="module")
def masked():
    torch.manual_seed(0)
    agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    return agent, torch.randn(2, 1, 80, 80)


def test_hidden_tensors_are_checked_whole(masked):
    agent, x = masked
    good = agent.initial_hidden(2)
    assert all(h.shape == (2, 64, 10, 10) for h in agent.check_hidden(good, 2))
    wrong_grid = (torch.zeros(2, 64, 8, 8), torch.zeros(2, 64, 8, 8))
    one_tensor = (torch.zeros(2, 64, 10, 10),)
    for hidden, says in [(wrong_grid, r"got shapes \[\(2, 64, 8, 8\), \(2, 64, 8, 8\)\]"),
                         (one_tensor, r"must be 2 tensors of shapes \[\(2, 64, 10, 10\), \(2, 64, 10, 10\)\]"),
                         ((torch.zeros(2, 32, 10, 10), good[1]), r"\(2, 32, 10, 10\)"),
                         (tuple(h.long() for h in good), "floating point")]:
        with pytest.raises(ValueError, match=says):
            agent.check_hidden(hidden, 2)
        with pytest.raises(ValueError, match=says):  # an explainer refuses it before any forward pass
            get_explainer("gradient", agent).attribute(x, hidden=hidden)
        with pytest.raises(ValueError, match=says):  # and so do the metrics
            Insertion(substrate="black").evaluate(agent, x, saliency=torch.rand(2, 80, 80), hidden=hidden)
        with pytest.raises(ValueError, match=says):
            RandomisationTest(levels=1, similarities=("spearman",)).evaluate(
                agent, x, explainer=get_explainer("gradient", agent), hidden=hidden)
    with pytest.raises(ValueError, match="is not recurrent"):
        QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4).check_hidden(good, 2)
