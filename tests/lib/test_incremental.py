"""Incremental inference for local perturbations equals full forward passes.

Occlusion, Noise Sensitivity and SARFA on a DQNNet recompute only the changed
windows of each layer (``saliency_lib.inference._incremental``). Every test
compares against ``naive=True`` (full forward passes of the same perturbed
inputs): maps agree to float rounding (≤ 1e-4 after min-max normalisation,
Spearman ≥ 0.9999).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from scipy.stats import spearmanr
from toy_models import PatchQNet, as_agent, random_states

from saliency_lib.agents import AdvantageStream, DQNConfig, DQNNet, QAgent
from saliency_lib.explainers import SARFA, NoiseSensitivity, Occlusion, get_explainer
from saliency_lib.inference import _incremental as inc

AGENT_DIR = Path(__file__).resolve().parents[2] / "data" / "agents" / "dqn-Breakout-s0"


def dqn_agent(n_actions=4, dueling=True, padding="valid", seed=0, advantage_stream=False) -> QAgent:
    """A DQNNet with random weights; the heads are scaled up so that the maps span more than
    float32 rounding of ``1 − Q`` (PyTorch's default initialisation gives Q ≈ 0.01 that a
    patch changes by ~1e-3, where both paths differ from float64 by ~1e-4 after normalisation)."""
    torch.manual_seed(seed)
    net = DQNNet(DQNConfig(n_actions=n_actions, dueling=dueling, padding=padding))
    with torch.no_grad():
        for name in ("out", "out_adv", "out_value"):
            if hasattr(net, name):
                getattr(net, name).weight.mul_(30.0)
    if advantage_stream:
        net = AdvantageStream(net)
    return QAgent(net, game="Breakout", preset="dqn", n_actions=n_actions)


def norm(m: torch.Tensor) -> torch.Tensor:
    m = m.flatten(1).double()
    lo, hi = m.min(1, keepdim=True).values, m.max(1, keepdim=True).values
    return (m - lo) / torch.where(hi > lo, hi - lo, torch.ones_like(hi))


def assert_same_maps(fast, slow, tol=1e-4):
    assert fast.forward_passes == slow.forward_passes
    torch.testing.assert_close(fast.target, slow.target)
    a, b = norm(fast.maps), norm(slow.maps)
    assert float((a - b).abs().max()) <= tol
    for x, y in zip(a, b):
        if float(y.max()) > float(y.min()):
            assert spearmanr(x.numpy(), y.numpy()).statistic >= 0.9999
    if slow.coarse is not None:  # the coarse scores themselves agree to float rounding
        scale = slow.coarse.flatten(1).abs().amax(1).clamp(min=1e-6)
        assert float(((fast.coarse - slow.coarse).flatten(1).abs().amax(1) / scale).max()) <= 1e-4


def both(cls, agent, x, **kw):
    return cls(agent, **kw).attribute(x), cls(agent, naive=True, **kw).attribute(x)


@pytest.fixture(scope="module")
def states():
    return random_states(2, seed=5)


@pytest.fixture(scope="module")
def trained():
    if not (AGENT_DIR / "model.safetensors").exists():
        pytest.skip("shipped agent data/agents/dqn-Breakout-s0 not found")
    from saliency_lib.agents import load_agent

    return load_agent(str(AGENT_DIR))


@pytest.fixture(scope="module")
def game_states(trained):
    """Breakout-like states: a dark screen with a few bright objects (and blacks at the borders)."""
    g = torch.Generator().manual_seed(3)
    x = torch.zeros(2, 4, 84, 84)
    x[:, :, 20:26, 4:80] = 0.6  # bricks
    x[:, :, 78:80, 30:42] = 0.8  # paddle
    x[0, :, 50:52, 60:62] = 1.0  # ball
    x[1, :, 0:3, 0:84] = 0.3  # top wall
    x += 0.05 * torch.rand(x.shape, generator=g)
    return x.clamp(0, 1)


# -- all methods on the trained agent -----------------------------------------------------------
@pytest.mark.parametrize("name", ["occlusion", "sarfa", "ns_black", "ns_original", "ns_chosen"])
def test_trained_agent_reference_parameters(trained, game_states, name):
    fast = get_explainer(name, trained).attribute(game_states)
    slow = get_explainer(name, trained, naive=True).attribute(game_states)
    assert_same_maps(fast, slow)


# -- every kind of geometry on random weights ---------------------------------------------------
@pytest.mark.parametrize("patch,stride,colour", [(2, 2, 0.0), (3, 2, 0.5), (5, 5, 1.0), (7, 3, 0.0), (12, 12, 0.0), (29, 11, 0.0),
                                                 (84, 84, 0.3), (1, 7, 0.0)])
def test_occlusion_geometries(states, patch, stride, colour):
    assert_same_maps(*both(Occlusion, dqn_agent(), states, patch=patch, stride=stride, colour=colour))


@pytest.mark.parametrize("radius,stride,perturbation",
                         [(1, 5, "black"), (2, 4, "black"), (3, 6, "black"), (6, 7, "black"), (2, 9, "blur"), (5, 10, "blur")])
def test_sarfa_geometries(states, radius, stride, perturbation):
    assert_same_maps(*both(SARFA, dqn_agent(n_actions=6), states, radius=radius, stride=stride, perturbation=perturbation))


@pytest.mark.parametrize("variant,radius,stride",
                         [("original", 3, 9), ("chosen", 1, 8), ("black", 3, 5), ("black", 8, 8), ("original", 4, 13)])
def test_noise_sensitivity_geometries(states, variant, radius, stride):
    assert_same_maps(*both(NoiseSensitivity, dqn_agent(n_actions=9), states, variant=variant, radius=radius, stride=stride))


def test_blur_within_frames(states):
    assert_same_maps(*both(NoiseSensitivity, dqn_agent(), states, variant="chosen", radius=2, stride=9, blur_frames=False,
                           blur_sigma=1.5))


@pytest.mark.parametrize("dueling,padding,stream", [(True, "valid", False), (False, "valid", False), (False, "same", False),
                                                    (True, "same", False), (True, "valid", True)])
def test_heads_and_padding(states, dueling, padding, stream):
    agent = dqn_agent(dueling=dueling, padding=padding, advantage_stream=stream, seed=1)
    assert inc.incremental_support(agent) is None
    assert_same_maps(*both(Occlusion, agent, states, patch=4, stride=5))
    assert_same_maps(*both(NoiseSensitivity, agent, states, variant="black", radius=2, stride=7))


@pytest.mark.parametrize("output", ["q", "advantage", "probs", "all"])
def test_outputs(states, output):
    assert_same_maps(*both(Occlusion, dqn_agent(n_actions=5, seed=2), states, patch=6, stride=6, output=output))


def test_chunk_sizes_and_batched_states(states):
    agent = dqn_agent(seed=3)
    x = torch.cat([states, random_states(1, seed=9)])
    ref = Occlusion(agent, patch=7, stride=7, naive=True).attribute(x)
    for bs in (1, 13, 100, 4096):
        got = Occlusion(agent, patch=7, stride=7, batch_size=bs).attribute(x)
        assert_same_maps(got, ref)
    one_by_one = torch.cat([Occlusion(agent, patch=7, stride=7).attribute(x[i:i + 1]).maps for i in range(len(x))])
    assert float((norm(one_by_one) - norm(ref.maps)).abs().max()) <= 1e-4


def test_engine_on_arbitrary_perturbation_sets():
    """Scattered pixels, boxes touching every border, one-pixel changes and duplicates, through the engine directly."""
    agent = dqn_agent(seed=4, padding="same")
    g = torch.Generator().manual_seed(0)
    x = random_states(2, seed=6)
    k = 9
    boxes = []
    for top, left, h, w in [(0, 0, 3, 3), (81, 81, 3, 3), (0, 78, 3, 3), (80, 0, 3, 3), (40, 41, 3, 3), (0, 30, 1, 3),
                            (83, 83, 1, 1)]:
        ys = torch.arange(top, top + h).repeat_interleave(w)
        xs = torch.arange(left, left + w).repeat(h)
        idx = ys * 84 + xs
        boxes.append(torch.cat([idx, idx[:1].repeat(k - len(idx))]))  # duplicates pad to K
    scattered = torch.randint(0, 84 * 84, (5, k), generator=g)
    index = torch.cat([torch.stack(boxes), scattered])
    new = torch.rand(len(index), 4, k, generator=g)
    new[..., 1:] = torch.where(index[:, None, 1:] == index[:, None, :1], new[..., :1], new[..., 1:])  # duplicates get one value
    dup = index[:, :, None] == index[:, None, :]
    first = dup.float().argmax(-1)  # every copy takes the value of the first occurrence
    new = new.gather(2, first[:, None, :].expand(-1, 4, -1))
    exp = Occlusion(agent, naive=True)
    slow = exp._local_perturbed_readouts(x, None, index, lambda i, clean: new, 3)
    exp.naive = False
    fast = exp._local_perturbed_readouts(x, None, index, lambda i, clean: new, 4)  # delta derived from values
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-4)


def test_unchanged_inputs_reproduce_the_clean_outputs(states):
    """A perturbation that writes the clean values back changes nothing: the deltas are exactly 0."""
    agent = dqn_agent(seed=5)
    exp = Occlusion(agent, patch=6, stride=6)
    index = exp._index(states.device)
    got = exp._local_perturbed_readouts(states, None, index, lambda i, clean: clean, 64,
                                        delta=lambda s, p, clean, at: torch.zeros_like(clean))
    with torch.no_grad():
        ref = exp._readout(agent(states))
    torch.testing.assert_close(got, ref[:, None].expand_as(got), rtol=1e-6, atol=1e-7)


def test_workspace_is_left_zero_even_after_an_error(states, monkeypatch):
    """The engine's reused first-window buffer goes back to zeros after every chunk, also when a
    layer raises; the next call then gives the naive maps again."""
    agent = dqn_agent(seed=6)
    exp = NoiseSensitivity(agent, variant="original", radius=3, stride=9)
    ref = NoiseSensitivity(agent, variant="original", radius=3, stride=9, naive=True).attribute(states)
    assert_same_maps(exp.attribute(states), ref)
    (engine,) = exp._engines.values()
    assert engine._buffers and all(float(b.abs().max()) == 0.0 for b in engine._buffers.values())
    real = inc._conv_delta
    calls = {"n": 0}

    def failing(*args):
        calls["n"] += 1
        if calls["n"] == 2:  # the second layer of the first chunk: its first window is written
            raise RuntimeError("boom")
        return real(*args)

    monkeypatch.setattr(inc, "_conv_delta", failing)
    with pytest.raises(RuntimeError, match="boom"):
        exp.attribute(states)
    monkeypatch.setattr(inc, "_conv_delta", real)
    assert all(float(b.abs().max()) == 0.0 for b in engine._buffers.values())
    assert_same_maps(exp.attribute(states), ref)


def test_threads_sharing_one_explainer_get_the_naive_maps(states):
    """Each thread has its own reused buffer: two threads explaining at once with one explainer agree with
    full passes (torch releases the GIL inside its kernels, so a shared buffer would mix their windows)."""
    import threading

    agent = dqn_agent(seed=7)
    exp = NoiseSensitivity(agent, variant="original", radius=3, stride=6, batch_size=16)
    ref = NoiseSensitivity(agent, variant="original", radius=3, stride=6, naive=True).attribute(states)
    exp.attribute(states[:1])  # the engine exists before the threads start
    got, errors = {}, []

    def run(i):
        try:
            for _ in range(3):
                got[i] = exp.attribute(states)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(2):
        assert_same_maps(got[i], ref)
    (engine,) = exp._engines.values()
    assert len(engine._buffers) >= 2  # one per thread that ran chunks

# -- fallback --------------------------------------------------------------------------------------
class Subclassed(DQNNet):
    def forward(self, x):  # a custom forward: the engine cannot know what it does
        return super().forward(x) * 2.0


@pytest.mark.parametrize("make", [lambda: as_agent(PatchQNet(4), 4),
                                  lambda: QAgent(Subclassed(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)],
                         ids=["foreign", "subclass"])
def test_unsupported_network_falls_back_once(states, caplog, make):
    agent = make()
    reason = inc.incremental_support(agent)
    assert reason is not None
    inc._NOTICES.clear()
    with caplog.at_level(logging.WARNING, logger="saliency_lib.inference._incremental"):
        fast = Occlusion(agent, patch=6).attribute(states)
        Occlusion(agent, patch=6).attribute(states)
    notices = [r for r in caplog.records if "incremental inference does not support" in r.getMessage()]
    assert len(notices) == 1 and "\n" not in notices[0].getMessage() and reason in notices[0].getMessage()
    slow = Occlusion(agent, patch=6, naive=True).attribute(states)
    torch.testing.assert_close(fast.maps, slow.maps)


def test_bf16_and_naive_use_full_passes(states):
    agent = dqn_agent()
    exp = Occlusion(agent, patch=6)
    exp.precision = "bf16"  # not offered for Occlusion; set directly, as benchmarks/bf16_decision.py does
    assert inc.engine_for(exp, [agent], None) is None
    assert inc.engine_for(Occlusion(agent, naive=True), [agent], None) is None
    assert inc.engine_for(Occlusion(agent), [agent], None) is not None
    twin = Occlusion(agent, patch=6, naive=True).for_agent(dqn_agent(seed=1))
    assert twin.naive and "naive" not in twin.config
    with pytest.raises(ValueError, match="naive"):
        Occlusion(agent, naive="yes")


def test_weights_changed_in_place_are_seen(states):
    agent = dqn_agent(seed=6)
    exp = Occlusion(agent, patch=6, stride=6)
    exp.attribute(states)
    with torch.no_grad():
        agent.net.conv2.weight.mul_(-1.5)
        agent.net.fc.weight.mul_(0.5)
    assert_same_maps(exp.attribute(states), Occlusion(agent, patch=6, stride=6, naive=True).attribute(states))


def test_incremental_is_at_least_as_accurate_as_full_passes():
    """Against a float64 evaluation, on default-initialised weights whose maps span only ~1e-3:
    the deltas carry less rounding than full passes."""
    import copy

    torch.manual_seed(0)
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    x = random_states(2, seed=5)
    fast = Occlusion(agent, patch=3, stride=2, colour=0.5).attribute(x)
    slow = Occlusion(agent, patch=3, stride=2, colour=0.5, naive=True).attribute(x)
    a64 = QAgent(copy.deepcopy(agent.net).double(), game="Breakout", preset="dqn", n_actions=4)
    index = Occlusion(agent, patch=3, stride=2)._index(x.device)
    sample = range(0, len(index), 97)
    rows = []
    for k in sample:
        occluded = x.double().flatten(2).clone()
        occluded[:, :, index[k]] = 0.5
        rows.append(occluded.view(2, 4, 84, 84))
    with torch.no_grad():
        q64 = torch.stack([a64(r)["q"] for r in rows], 1)  # (2, samples, A)
    t = slow.target
    ref = 1.0 - q64.gather(2, t[:, None, None].expand(-1, q64.shape[1], 1))[..., 0]
    err_fast = (fast.coarse.flatten(1)[:, ::97].double() - ref).abs().max()
    err_slow = (slow.coarse.flatten(1)[:, ::97].double() - ref).abs().max()
    assert err_slow < 1e-6
    assert err_fast <= 2 * err_slow + 1e-9


def test_cascade_cuts_are_the_first_randomised_stage():
    """Each level of the cascade reuses the reference network's deltas below its first randomised
    stage (conv1, conv2, conv3, fc, head = 0 … 4); an independent copy of one layer cuts there."""
    from saliency_lib.metrics import randomised_models

    agent = dqn_agent()
    levels = [m for _, _, m in randomised_models(agent, order="cascading", init="glorot", seed=0)]
    assert inc.IncrementalDQN([agent, *levels]).cuts == [0, 4, 3, 2, 1, 0]
    other = dqn_agent()
    with torch.no_grad():
        other.net.conv2.weight.add_(1.0)
    assert inc.IncrementalDQN([agent, other, agent]).cuts == [0, 1, 5]
