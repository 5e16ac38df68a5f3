"""Evaluation protocols and batched play (saliency_lib.play)."""

import numpy as np
import pytest
import torch

from saliency_lib.agents import DQNConfig, DQNNet, QAgent
from saliency_lib.agents.base import ActorCriticAgent
from saliency_lib.agents.mask_a3c import MaskA3CConfig, MaskA3CNet
from saliency_lib.play import PROTOCOLS, Episode, _summary, count_distinct, evaluate, get_protocol, play_episode


def _dqn(seed=0):
    torch.manual_seed(seed)
    return QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)


def _mask_a3c(seed=0):
    torch.manual_seed(seed)
    net = MaskA3CNet(MaskA3CConfig(n_actions=4, variant="double"))
    with torch.no_grad():  # logits far apart enough to play varied games (the official init gives ~0.01)
        net.actor_linear.weight.mul_(300.0)
    return ActorCriticAgent(net, game="Breakout", preset="mask_a3c", n_actions=4)


@pytest.mark.parametrize("protocol", ["greedy", "sticky"])
@pytest.mark.parametrize("make", [_dqn, _mask_a3c], ids=["dqn", "mask_a3c"])
def test_batched_play_is_sequential_play(make, protocol):
    """Games side by side (2 slots for 3 games, so a slot is reused) = games one after the other: same seeds, same games.

    The Mask-A3C agent loses lives within 100 steps (its ConvLSTM state restarts there).
    """
    agent = make(1)
    seq = evaluate(agent, 3, 2, protocol=protocol, max_steps=100, progress=False, batched=False)
    bat = evaluate(agent, 3, 2, protocol=protocol, max_steps=100, progress=False, envs=2)
    for k in ("scores", "lengths", "fingerprints", "distinct_games", "capped", "steps"):
        assert seq[k] == bat[k], k
    assert bat["protocol"] == protocol and bat["episodes"] == 3 and bat["frames"] == 4 * bat["steps"]
    assert bat["distinct_games"] == len(set(bat["fingerprints"]))


def test_game_i_is_played_from_seed_plus_i():
    agent = _mask_a3c()
    both = evaluate(agent, 2, 10, protocol="sticky", max_steps=40, progress=False)
    alone = evaluate(agent, 1, 11, protocol="sticky", max_steps=40, progress=False)
    assert both["fingerprints"][1] == alone["fingerprints"][0]


def test_sticky_games_differ_where_greedy_games_replay():
    """The same start replays the same greedy game; sticky actions make it another game."""
    agent = _mask_a3c()
    g = [play_episode(agent, seed=4, max_steps=40).fingerprint for _ in range(2)]
    s = play_episode(agent, seed=4, max_steps=40, protocol="sticky").fingerprint
    assert g[0] == g[1] != s


def test_distinct_games_counts_replays_not_scores():
    """A game equal to another, or cut shorter by the cap but otherwise equal, is a replay; equal scores are not."""
    full = [b"a1", b"a2", b"a3"]
    eps = [Episode(10.0, 3, chain=full), Episode(10.0, 3, chain=list(full)),  # a replay
           Episode(10.0, 2, chain=full[:2], capped=True),  # a replay cut shorter by the frame cap
           Episode(10.0, 2, chain=[b"a1", b"x2"]),  # the same score, another game
           Episode(3.0, 1, chain=[b"y1"])]
    r = _summary(eps, PROTOCOLS["greedy"])
    assert r["distinct_games"] == 3 and count_distinct([full[:2], full]) == 1 and count_distinct([[b"a"], [b"b"]]) == 2
    assert r["mean"] == pytest.approx(43 / 5) and r["std"] == pytest.approx(np.std([10, 10, 10, 10, 3])) and r["capped"] == 1


def test_protocols():
    assert get_protocol("greedy").repeat_action_probability == 0.0 and get_protocol("greedy").episodes == 10
    assert get_protocol("sticky").repeat_action_probability == 0.25 and get_protocol("sticky").episodes == 30
    with pytest.raises(ValueError, match="unknown protocol 'noisy'; valid protocols are: greedy, sticky"):
        get_protocol("noisy")
    with pytest.raises(ValueError, match="episodes must be >= 1"):
        evaluate(_dqn(), 0)
