"""Replayed states are found, and a distinct trajectory holds none (the issue "Reproduced, or not").

A fake emulator with a known cycle of screens stands in for the ALE: the plain trajectory
replays it, the distinct one must leave every repeat out, agree with the plain one up to its
``first_change``, and start later games elsewhere. The sweep then keeps the keys of the units
before that change and gives the others new ones.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from toy_models import PatchQNet

import saliency_lib.states as st
from saliency_lib import sweep
from saliency_lib.agents import DQNConfig, DQNNet, QAgent, load_agent, save_agent
from saliency_lib.states import StateSet, collect_states, duplicate_states


class CycleEnv:
    """``period`` screens in a cycle; a game ends after ``length`` steps. The position advances by
    1 + action, so the random actions at a start shift the next game onto other screens."""

    def __init__(self, period: int = 40, length: int = 12):
        self.period, self.length = period, length
        self.action_space = type("Space", (), {"n": 4})()

    def _obs(self):
        x = np.zeros((4, 84, 84), np.float32)
        x[:, 2 * (self.pos % self.period), 5] = 1.0  # a dot that the PatchQNet does not see
        return x

    def reset(self, seed=None):
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.pos += 1 + int(action)
        self.t += 1
        return self._obs(), 0.0, self.t >= self.length, False, {}

    def close(self):
        pass


@pytest.fixture
def agent(monkeypatch):
    monkeypatch.setattr(st, "_make_env", lambda agent, game_index, rams=False: CycleEnv())
    monkeypatch.setattr("saliency_lib.envs.raw_frame", lambda env: np.zeros((210, 160, 3), np.uint8))
    torch.manual_seed(0)
    return QAgent(PatchQNet(), game="Breakout", preset="dqn", n_actions=4)


def _set(xs) -> StateSet:
    xs = torch.stack([torch.as_tensor(x) for x in xs])
    n = len(xs)
    return StateSet(states=xs, actions=torch.zeros(n, dtype=torch.int64), outputs={}, hidden=None, frames=None,
                    steps=np.arange(n), episode=np.zeros(n, dtype=np.int64))


def test_duplicates_are_found_at_their_first_occurrence():
    a, b, c = (torch.full((4, 2, 2), float(v)) for v in (0, 1, 2))
    assert duplicate_states(_set([a, b, a, c, b, a])).tolist() == [-1, -1, 0, -1, 1, 0]
    assert duplicate_states(_set([a, b, c])).tolist() == [-1, -1, -1]


def test_a_recurrent_state_makes_equal_screens_different():
    a = torch.zeros(4, 2, 2)
    s = _set([a, a])
    s.hidden = (torch.tensor([[0.0], [1.0]]),)
    assert duplicate_states(s).tolist() == [-1, -1]


def test_the_plain_trajectory_replays_and_the_distinct_one_does_not(agent):
    plain = collect_states(agent, 30, seed=0)
    dups = duplicate_states(plain)
    assert (dups >= 0).sum() > 0  # the next game replays the first
    distinct = collect_states(agent, 30, seed=0, distinct=True)
    assert len(distinct) == 30 and (duplicate_states(distinct) < 0).all()
    k = distinct.meta["first_change"]
    assert k == int(np.argmax(dups >= 0)) == 12  # the first game over: the plain trajectory repeats from there
    assert torch.equal(distinct.states[:k], plain.states[:k]) and not torch.equal(distinct.states[k], plain.states[k])
    assert distinct.meta["games"] > 1


def test_a_play_that_only_repeats_itself_is_refused(monkeypatch, agent):
    monkeypatch.setattr(st, "_make_env", lambda agent, game_index, rams=False: CycleEnv(period=3, length=5))
    with pytest.raises(RuntimeError, match="found only 3 distinct states of 5"):
        collect_states(agent, 5, seed=0, distinct=True)


def test_the_sweep_keeps_the_keys_before_the_first_change(agent, tmp_path):
    d = tmp_path / "dqn-Breakout-cycle"
    torch.manual_seed(0)
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    save_agent(agent, d)
    spec = dict(agents=(str(d),), methods=("gradient",), experiments=("sanity",), n_states=20, chunk=4)
    plain, _ = sweep.plan_units(sweep.SweepSpec(**spec), results_dir=tmp_path)
    distinct, _ = sweep.plan_units(sweep.SweepSpec(**spec, state_selection="distinct"), results_dir=tmp_path)
    k = sweep.stored_state_index(str(d), load_agent(d), sweep.SweepSpec(**spec, state_selection="distinct"),
                                 results_dir=tmp_path)["first_change"]
    assert 0 < k < 20
    for p, q in zip(plain, distinct, strict=True):
        assert (p.key == q.key) == (q.states[-1] < k), q.states
