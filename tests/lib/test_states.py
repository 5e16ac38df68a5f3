"""State selection: the greedy trajectory and HIGHLIGHTS-DIV."""

import numpy as np
import pytest
import torch

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, build_agent
from saliency_lib.highlights import diversity_threshold, highlights_div, importance, select_highlights
from saliency_lib.states import StateSet, collect_spread_states, collect_states, spread_indices


def test_importance_is_best_minus_second():
    q = np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 0.0], [-1.0, -4.0, -2.0]])
    np.testing.assert_allclose(importance(q), [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="A >= 2"):
        importance(np.ones((3, 1)))


def _features(n=200, seed=0):
    # a slowly varying trajectory in feature space: neighbours are similar
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.standard_normal((n, 8)) * 0.1, axis=0)


def test_picks_most_important_and_respects_gap():
    n = 200
    imp = np.zeros(n)
    imp[[50, 55, 120, 170, 69, 70]] = [10, 9, 8, 7, 6, 5.5]
    f = np.arange(n, dtype=float)[:, None] * np.ones((1, 4))  # distance grows with time
    h = highlights_div(imp, f, budget=3, context_length=10, minimum_gap=10, threshold=0.0)
    # 55 and 69 lie within context + gap = 20 steps of 50; 120 and 170 are free
    assert h.states == [50, 120, 170]
    assert all(abs(a - b) >= 20 for a in h.states for b in h.states if a != b)
    assert h.with_context == list(range(40, 61)) + list(range(110, 131)) + list(range(160, 181))
    # exactly context + gap apart is allowed (the original's strict inequality)
    imp2 = np.zeros(n)
    imp2[[50, 70]] = [2, 1]
    assert highlights_div(imp2, f, budget=2, context_length=10, minimum_gap=10, threshold=0.0).states == [50, 70]


def test_context_clipped_to_trajectory():
    imp = np.zeros(30)
    imp[[2, 28]] = [3, 2]
    f = np.arange(30, dtype=float)[:, None]
    h = highlights_div(imp, f, budget=2, context_length=5, minimum_gap=0, threshold=0.0)
    assert h.states == [2, 28]
    assert h.with_context == [0, 1, 2, 3, 4, 5, 6, 7, 23, 24, 25, 26, 27, 28, 29]


def test_diversity_rejects_similar_states():
    n = 120
    f = np.zeros((n, 2))
    f[:, 0] = np.arange(n)
    f[90] = f[5]  # state 90 looks like state 5, which lies in the context of state 10
    imp = np.zeros(n)
    imp[[10, 90, 60]] = [3, 2, 1]
    h = highlights_div(imp, f, budget=2, context_length=5, minimum_gap=5, threshold=1.5)
    assert h.states == [10, 60]  # 90 is important but not diverse
    # the test is strict (distance > threshold): equal features are rejected even at threshold 0
    assert highlights_div(imp, f, budget=2, context_length=5, minimum_gap=5, threshold=0.0).states == [10, 60]
    assert highlights_div(imp, f, budget=2, context_length=5, minimum_gap=5, threshold=-1.0).states == [10, 90]
    # with a context of 4, state 5 is no longer a neighbour of 10: the nearest context state (6) is 1 away
    assert highlights_div(imp, f, budget=2, context_length=4, minimum_gap=6, threshold=0.5).states == [10, 90]


def test_threshold_is_percentile_of_sampled_pairwise_distances():
    f = _features(300)
    from scipy.spatial.distance import pdist

    assert diversity_threshold(f, percentile=50, n_sample=1000) == pytest.approx(np.percentile(pdist(f), 50))
    t = diversity_threshold(f, percentile=3, n_sample=50, seed=1)
    assert t == diversity_threshold(f, percentile=3, n_sample=50, seed=1)
    assert t != diversity_threshold(f, percentile=3, n_sample=50, seed=2)
    h = highlights_div(np.random.default_rng(0).random(300), f, budget=5)
    assert len(h.states) == 5 and h.threshold == pytest.approx(diversity_threshold(f))


def test_highlights_bad_inputs():
    f = _features(50)
    imp = np.ones(50)
    with pytest.raises(ValueError, match="one entry per state"):
        highlights_div(imp[:40], f)
    with pytest.raises(ValueError, match="budget must be a positive integer, got 0"):
        highlights_div(imp, f, budget=0)
    with pytest.raises(ValueError, match="minimum_gap must be a non-negative integer, got -1"):
        highlights_div(imp, f, minimum_gap=-1)
    with pytest.raises(ValueError, match="percentile must lie in \\[0, 100\\], got 300"):
        diversity_threshold(f, percentile=300)


def test_collect_states_dqn_fixed_start():
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    s = collect_states(agent, 6, seed=0)
    assert s.states.shape == (6, 4, 84, 84) and s.hidden is None and s.frames is None
    assert s.steps.tolist() == [4, 5, 6, 7, 8, 9]  # the paper's numbering: steps 0-3 fill the stack
    assert (s.states[0] > 0).flatten(1).any(1).all()  # the first state is a full stack (no zero frames)
    torch.testing.assert_close(s.actions, s.outputs["q"].argmax(1))
    assert s.outputs["features"].shape == (6, 512)
    again = collect_states(agent, 6, seed=0)
    assert torch.equal(again.states, s.states)
    sub = s.subset([4, 1])
    assert torch.equal(sub.states[0], s.states[4]) and sub.steps.tolist() == [8, 5]
    h = select_highlights(s, budget=2, context_length=0, minimum_gap=0, threshold=-1.0)
    assert len(h.states) == 2
    with pytest.raises(ValueError, match="n must be a positive integer"):
        collect_states(agent, 0)


def test_collect_states_recurrent_hidden_reproduces_outputs(tmp_path):
    torch.manual_seed(0)
    agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    s = collect_states(agent, 5, seed=1, frames=True)
    assert s.states.shape == (5, 1, 80, 80) and s.frames.shape == (5, 210, 160, 3)
    assert [h.shape for h in s.hidden] == [(5, 64, 10, 10)] * 2
    assert s.hidden[0][0].abs().max() == 0  # zero state at the start of the game
    with torch.no_grad():
        out = agent(s.states, s.hidden)
    torch.testing.assert_close(out["logits"], s.outputs["logits"], rtol=1e-4, atol=1e-5)
    p = s.save(tmp_path / "s.pt")
    back = StateSet.load(p)
    assert torch.equal(back.hidden[1], s.hidden[1]) and back.game == "Breakout"


def test_state_set_load_runs_no_pickled_code(tmp_path):
    import pickle

    class Payload:
        def __reduce__(self):
            return (print, ("pwned",))

    bad = tmp_path / "states.pt"
    torch.save({"states": Payload()}, bad, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    with pytest.raises(pickle.UnpicklingError):
        StateSet.load(bad)


# -- states spread over one game -----------------------------------------------------------------

def test_spread_indices_cover_the_episode_evenly():
    idx = spread_indices(1000, 7)
    assert idx[0] == 0 and idx[-1] == 999 and len(set(idx.tolist())) == 7
    gaps = np.diff(idx)
    assert gaps.max() - gaps.min() <= 1 and abs(gaps.mean() - 999 / 6) < 1e-9  # evenly spaced, to the rounding
    assert spread_indices(5, 5).tolist() == [0, 1, 2, 3, 4] and spread_indices(10, 1).tolist() == [0]
    with pytest.raises(ValueError, match="cannot pick 11 evenly spaced states from an episode of 10 states"):
        spread_indices(10, 11)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        spread_indices(10, 0)
    with pytest.raises(ValueError, match="length must be a positive integer"):
        spread_indices(0, 1)


@pytest.fixture(scope="module")
def recurrent_agent():
    torch.manual_seed(0)
    return ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)


def test_spread_states_span_the_whole_game_with_their_recurrent_states(recurrent_agent):
    agent = recurrent_agent
    s = collect_spread_states(agent, 4, seed=1, frames=True)
    length = s.meta["episode_length"]
    assert s.meta["selection"] == "spread" and not s.meta["truncated"] and length > 100
    assert s.meta["indices"] == spread_indices(length, 4).tolist() and s.meta["indices"][-1] == length - 1
    # the same game played state by state: the spread states are its states, the last one its end
    ref = collect_states(agent, length + 1, seed=1, frames=True)
    assert ref.episode[length - 1] == 0 and ref.episode[length] == 1
    idx = s.meta["indices"]
    assert torch.equal(s.states, ref.states[idx]) and torch.equal(s.actions, ref.actions[idx])
    assert all(torch.equal(a, b[idx]) for a, b in zip(s.hidden, ref.hidden))
    assert s.steps.tolist() == ref.steps[idx].tolist() and (s.episode == 0).all()
    assert np.array_equal(s.frames, ref.frames[idx])
    assert s.hidden[0][1:].abs().max() > 0  # carried recurrent states, not the zero state of a new game
    with torch.no_grad():
        out = agent(s.states, s.hidden)
    torch.testing.assert_close(out["logits"], s.outputs["logits"], rtol=1e-4, atol=1e-5)


def test_spread_states_of_a_capped_game_and_bad_inputs(recurrent_agent):
    s = collect_spread_states(recurrent_agent, 5, seed=1, max_steps=41)
    assert s.meta["truncated"] and s.meta["episode_length"] == 41 and s.meta["indices"] == [0, 10, 20, 30, 40]
    assert s.steps.tolist() == [0, 10, 20, 30, 40]
    with pytest.raises(ValueError, match="cannot pick 42 evenly spaced states from an episode of 41 states"):
        collect_spread_states(recurrent_agent, 42, max_steps=41)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="n must be a positive integer"):
            collect_spread_states(recurrent_agent, bad)
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        collect_spread_states(recurrent_agent, 2, max_steps=0)


def test_spread_states_refuse_a_game_that_does_not_replay(recurrent_agent, monkeypatch):
    calls = {"n": 0}
    forward = type(recurrent_agent).__call__

    def flaky(self, x, hidden=None):
        out = forward(self, x, hidden)
        calls["n"] += 1
        if calls["n"] > 30:  # the second play sees other outputs: another game
            out = {**out, "logits": torch.roll(out["logits"], 1, dims=1)}
        return out

    monkeypatch.setattr(type(recurrent_agent), "__call__", flaky)
    with pytest.raises(RuntimeError, match="not deterministic"):
        collect_spread_states(recurrent_agent, 3, seed=1, max_steps=30)
