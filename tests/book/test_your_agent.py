"""Chapter 8 (Explain your own agent): the files its page makes load as agents, and the output each explains."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from saliency_book.ch8_your_agent import OUTPUT_MEANINGS, YourAgentChapter, cleanrl_file, module_weights, outputs_table


def test_config_checks_the_training_steps(tmp_path):
    assert YourAgentChapter(sb3_steps="300", results_dir=str(tmp_path)).sb3_steps == 300  # papermill's string
    with pytest.raises(ValueError, match="sb3_steps must be an integer >= 1, got 0"):
        YourAgentChapter(sb3_steps=0)


def test_cleanrl_file_is_a_ppo_atari_checkpoint(tmp_path):
    from saliency_lib.agents import ActorCriticAgent, load_agent

    path = cleanrl_file(YourAgentChapter(results_dir=str(tmp_path)))
    assert path.name == "ppo_atari.cleanrl_model" and path.parent.name.startswith("BreakoutNoFrameskip-v4__ppo_atari")
    agent = load_agent(f"cleanrl:{path}")  # the game from the run folder, as CleanRL names it
    assert isinstance(agent, ActorCriticAgent) and agent.game == "Breakout" and agent.meta["algorithm"] == "ppo_atari"


def test_outputs_table_says_q_for_q_networks_and_pi_for_actor_critics(tmp_path):
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, wrap_agent

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Flatten(), nn.Linear(4 * 84 * 84, 4))
            self.v = nn.Linear(4 * 84 * 84, 1)

        def forward(self, x):
            return self.body(x), self.v(x.flatten(1))

    weights = module_weights(YourAgentChapter(results_dir=str(tmp_path)), Policy(), "policy")
    net = Policy()
    net.load_state_dict(torch.load(weights, weights_only=True))
    agents = {"dqn": QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4),
              "module": wrap_agent(net, outputs=("logits", "value"), game="Breakout")}
    t = outputs_table(agents).set_index("file")
    assert t.loc["dqn", "explained"] == "q" and t.loc["module", "explained"] == "logits"
    assert t.loc["dqn", "meaning"] == OUTPUT_MEANINGS["q"] and "π" in t.loc["module", "meaning"]
    assert "advantage" in t.loc["dqn", "also"] and "value" in t.loc["module", "also"]
