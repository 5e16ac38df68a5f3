"""Incremental inference on Mask-A3C networks equals full forward passes.

Occlusion, Noise Sensitivity and SARFA on a MaskA3CNet recompute only the changed
windows of conv1 … ConvLSTM (``saliency_lib.inference._incremental_a3c``). Every
test compares against ``naive=True`` (full forward passes of the same perturbed
inputs, with the same recurrent state): maps agree to float rounding (≤ 1e-4 after
min-max normalisation, Spearman ≥ 0.9999).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from test_incremental import assert_same_maps, norm

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
from saliency_lib.explainers import SARFA, NoiseSensitivity, Occlusion, get_explainer
from saliency_lib.inference import IncrementalMaskA3C, mask_a3c_support
from saliency_lib.inference import _incremental as inc

AGENTS = Path(__file__).resolve().parents[2] / "data" / "agents"


def a3c_agent(variant="double", n_actions=4, seed=0, scale=300.0) -> ActorCriticAgent:
    """Random weights; the policy head is scaled up (its official init has norm 0.01 per row,
    so the logits would move by less than float32 rounding resolves after normalisation)."""
    torch.manual_seed(seed)
    net = MaskA3CNet(MaskA3CConfig(n_actions=n_actions, variant=variant))
    with torch.no_grad():
        net.actor_linear.weight.mul_(scale)
    return ActorCriticAgent(net, game="Breakout", preset="mask_a3c", n_actions=n_actions)


def inputs(n=2, seed=0):
    """Standardised-looking frames (a dark field with bright objects, some at the borders) and a recurrent state."""
    g = torch.Generator().manual_seed(seed)
    x = torch.full((n, 1, 80, 80), -0.4)
    x[:, :, 14:20, 2:78] = 1.5  # bricks
    x[:, :, 74:77, 30:42] = 2.0  # paddle
    x[0, :, 40:42, 60:62] = 2.5  # ball
    x[-1, :, 0:2, :] = 1.0  # top wall, on the border
    x[-1, :, :, 78:80] = 1.0  # right wall, on the border
    x += 0.5 * torch.randn(x.shape, generator=g)  # texture: the blurred perturbations change something everywhere
    hidden = tuple(0.3 * torch.randn(n, 64, 10, 10, generator=g) for _ in range(2))
    return x, hidden


def both(cls, agent, x, hidden, **kw):
    return (cls(agent, **kw).attribute(x, hidden=hidden), cls(agent, naive=True, **kw).attribute(x, hidden=hidden))


@pytest.fixture(scope="module")
def states():
    return inputs()


@pytest.fixture(scope="module")
def trained():
    """Our Mask-A3C Breakout agent (the variant with both masks; the other variants' layouts run on random weights)."""
    path = AGENTS / "a3c-Breakout-double-s0"
    if not (path / "model.safetensors").exists():
        pytest.skip(f"shipped agent {path} not found")
    from saliency_lib.agents import load_agent

    return load_agent(str(path))


# -- the study's parameters on trained agents ----------------------------------------------------
@pytest.mark.parametrize("name", ["occlusion", "sarfa", "ns_black", "ns_original", "ns_chosen"])
def test_trained_agents_reference_parameters(trained, states, name):
    assert mask_a3c_support(trained) is None
    x, hidden = states
    fast = get_explainer(name, trained).attribute(x, hidden=hidden)
    slow = get_explainer(name, trained, naive=True).attribute(x, hidden=hidden)
    assert_same_maps(fast, slow)


# -- every kind of geometry on random weights ---------------------------------------------------
@pytest.mark.parametrize("patch,stride,colour", [(2, 2, 0.0), (3, 2, 0.5), (5, 5, 1.0), (7, 3, 0.0), (16, 16, 0.0),
                                                 (29, 11, -0.4), (40, 40, 0.3), (1, 7, 0.0)])
def test_occlusion_geometries(states, patch, stride, colour):
    assert_same_maps(*both(Occlusion, a3c_agent(), *states, patch=patch, stride=stride, colour=colour))


def test_one_patch_over_the_whole_input(states):
    """A single 80×80 patch: the map is one value spread over the image, so min-max normalisation
    would only magnify its last bits; the scores themselves agree to float rounding."""
    fast, slow = both(Occlusion, a3c_agent(), *states, patch=80, stride=80, colour=0.3)
    assert fast.coarse.shape[1:] == (1, 1)
    torch.testing.assert_close(fast.coarse, slow.coarse, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("radius,stride,perturbation",
                         [(1, 5, "black"), (2, 4, "black"), (6, 7, "black"), (2, 9, "blur"), (5, 10, "blur")])
def test_sarfa_geometries(states, radius, stride, perturbation):
    assert_same_maps(*both(SARFA, a3c_agent(n_actions=6), *states, radius=radius, stride=stride, perturbation=perturbation))


# "chosen" squares a change of one probability: on random weights a radius-1 blur moves it so
# little that float32 rounding of the probability, in both paths, shows after normalisation;
# radius 1 is covered by the other variants
@pytest.mark.parametrize("variant,radius,stride", [("original", 1, 8), ("chosen", 3, 9), ("black", 1, 6), ("black", 3, 5),
                                                   ("black", 8, 8), ("original", 4, 13)])
def test_noise_sensitivity_geometries(states, variant, radius, stride):
    assert_same_maps(*both(NoiseSensitivity, a3c_agent(n_actions=9), *states, variant=variant, radius=radius, stride=stride))


@pytest.mark.parametrize("variant", ["none", "policy", "value", "double"])
@pytest.mark.parametrize("output", ["logits", "probs", "value", "all"])
def test_variants_and_outputs(states, variant, output):
    agent = a3c_agent(variant=variant, seed=1)
    assert_same_maps(*both(Occlusion, agent, *states, patch=6, stride=6, output=output))


def test_chunk_sizes_states_and_zero_state():
    agent = a3c_agent(seed=3)
    x, hidden = inputs(3, seed=4)
    ref = Occlusion(agent, patch=7, stride=7, naive=True).attribute(x, hidden=hidden)
    for bs in (1, 13, 100, 4096):
        assert_same_maps(Occlusion(agent, patch=7, stride=7, batch_size=bs).attribute(x, hidden=hidden), ref)
    one_by_one = torch.cat([Occlusion(agent, patch=7, stride=7).attribute(x[i:i + 1],
                                                                          hidden=tuple(h[i:i + 1] for h in hidden)).maps
                            for i in range(len(x))])
    assert float((norm(one_by_one) - norm(ref.maps)).abs().max()) <= 1e-4
    # no recurrent state given: both paths start from zeros
    assert_same_maps(Occlusion(agent, patch=8).attribute(x), Occlusion(agent, patch=8, naive=True).attribute(x))


def test_engine_on_boxes_at_every_border(states):
    """Boxes in every corner and along every edge, one-pixel changes and duplicates, through the engine directly."""
    agent = a3c_agent(seed=4)
    x, hidden = states
    g = torch.Generator().manual_seed(0)
    k = 12
    boxes = []
    for top, left, h, w in [(0, 0, 3, 4), (77, 77, 3, 3), (0, 76, 2, 4), (78, 0, 2, 3), (39, 40, 3, 3), (0, 30, 1, 3),
                            (79, 79, 1, 1), (11, 0, 3, 1)]:
        ys = torch.arange(top, top + h).repeat_interleave(w)
        xs = torch.arange(left, left + w).repeat(h)
        idx = ys * 80 + xs
        boxes.append(torch.cat([idx, idx[:1].repeat(k - len(idx))]))  # duplicates pad to K
    index = torch.stack(boxes)
    new = torch.randn(len(index), 1, 1, generator=g).expand(-1, 1, k).contiguous()  # one value per box: duplicates agree
    exp = Occlusion(agent, naive=True)
    slow = exp._local_perturbed_readouts(x, hidden, index, lambda i, clean: new, 3)
    exp.naive = False
    assert isinstance(inc.engine_for(exp, [agent], hidden), IncrementalMaskA3C)
    fast = exp._local_perturbed_readouts(x, hidden, index, lambda i, clean: new, 4)  # delta derived from values
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-4)


def test_unchanged_inputs_reproduce_the_clean_outputs(states):
    """A perturbation that writes the clean values back changes nothing: the outputs are the clean pass's, bit for bit."""
    agent = a3c_agent(seed=5)
    x, hidden = states
    exp = Occlusion(agent, patch=6, stride=6)
    index = exp._index(x.device)
    got = exp._local_perturbed_readouts(x, hidden, index, lambda i, clean: clean, 64,
                                        delta=lambda s, p, clean, at: torch.zeros_like(clean))
    eng = inc.engine_for(exp, [agent], hidden)
    with torch.no_grad():
        from saliency_lib.inference._incremental_a3c import _Clean

        ref = exp._readout(_Clean(agent.net, x, hidden).out)
    assert torch.equal(got, ref[:, None].expand_as(got))
    assert isinstance(eng, IncrementalMaskA3C)


def test_cascade_shares_the_lower_layers(states):
    """Several networks at once (the randomisation cascade): the similarity table of the shared
    incremental computation equals the one of full forward passes, network by network."""
    from test_cascade_reuse import assert_same_table

    from saliency_lib.metrics import RandomisationTest
    from saliency_lib.metrics.randomisation import randomised_models

    agent = a3c_agent(seed=6)
    x, hidden = states
    models = [agent] + [m for _, _, m in randomised_models(agent, seed=0)]
    cuts = IncrementalMaskA3C(models).cuts()
    assert cuts[0] == 0 and cuts[1:] == sorted(cuts[1:], reverse=True) and cuts[1] >= 4 and cuts[-1] == 0
    for name, kw in (("occlusion", {"patch": 5, "stride": 5}), ("sarfa", {"radius": 2, "stride": 6}),
                     ("ns_original", {"stride": 9})):
        fast, slow = (RandomisationTest(similarities=("spearman", "ssim"), reuse=not naive, reference_rows=False).evaluate(
            agent, x, explainer=get_explainer(name, agent, naive=naive, **kw), hidden=hidden, method=name)
            for naive in (False, True))
        # the re-initialised networks' maps are nearly flat (their heads start at norm 0.01), so a
        # similarity to them moves by ~1e-4 with float rounding in either path; an engine error moves it by ~0.1
        assert_same_table(fast, slow, atol=1e-3)


# -- fallback --------------------------------------------------------------------------------------
class OwnHeads(MaskA3CNet):
    def heads(self, feat, new_hidden=None):  # a custom head: the engine cannot know what it does
        out = super().heads(feat, new_hidden)
        out["logits"] = 2.0 * out["logits"]
        return out


@pytest.mark.parametrize("make,why", [
    (lambda: ActorCriticAgent(OwnHeads(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4),
     "overrides"),
    (lambda: ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4, convlstm=False)), game="Breakout", preset="mask_a3c",
                              n_actions=4),
     "ConvLSTM"),
], ids=["subclass", "no-convlstm"])
def test_unsupported_network_falls_back_once(states, caplog, make, why):
    torch.manual_seed(0)
    agent = make()
    reason = mask_a3c_support(agent)
    assert reason is not None and why in reason
    x, hidden = states
    hidden = hidden if agent.recurrent else None
    inc._NOTICES.clear()
    with caplog.at_level(logging.WARNING, logger="saliency_lib.inference._incremental"):
        fast = Occlusion(agent, patch=8).attribute(x, hidden=hidden)
        Occlusion(agent, patch=8).attribute(x, hidden=hidden)
    notices = [r for r in caplog.records if "incremental inference does not support" in r.getMessage()]
    assert len(notices) == 1 and "\n" not in notices[0].getMessage()
    slow = Occlusion(agent, patch=8, naive=True).attribute(x, hidden=hidden)
    torch.testing.assert_close(fast.maps, slow.maps)
    with pytest.raises(TypeError, match="does not support"):
        IncrementalMaskA3C([agent])


def test_weights_changed_in_place_are_seen(states):
    agent = a3c_agent(seed=7)
    x, hidden = states
    exp = Occlusion(agent, patch=6, stride=6)
    exp.attribute(x, hidden=hidden)
    with torch.no_grad():
        agent.net.conv2.weight.mul_(-1.5)
        agent.net.convlstm1.conv.weight.mul_(0.5)
    assert_same_maps(exp.attribute(x, hidden=hidden), Occlusion(agent, patch=6, stride=6, naive=True).attribute(x, hidden=hidden))
