"""The explainer interface: result type, registry, validation, determinism, recurrent agents, CLI."""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pytest
import torch
from toy_models import LinearQNet, PatchQNet, TwoHeadNet, as_agent, random_states

import saliency_lib.explainers as ex
from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
from saliency_lib.explainers import (
    EXPLAINERS,
    RISE,
    SARFA,
    Attribution,
    GradCAM,
    Gradient,
    Lime,
    MaskAttention,
    NoiseSensitivity,
    Occlusion,
    RandomMap,
    explainable_outputs,
    get_explainer,
)

Q_METHODS = [n for n in EXPLAINERS if not n.startswith("mask_")]
STOCHASTIC = ["rise", "lime_slic", "lime_quickshift", "lime_felzenszwalb", "random"]


@pytest.fixture(scope="module")
def agent():
    return as_agent(PatchQNet(4), 4)


@pytest.fixture(scope="module")
def states():
    return random_states(2, seed=2)


def small(name: str) -> dict:
    """Cheaper parameters for the invariance tests (same code paths)."""
    return {
        "rise": {"n_masks": 120},
        "lime_slic": {"n_samples": 150},
        "lime_quickshift": {"n_samples": 150},
        "lime_felzenszwalb": {"n_samples": 150},
        "occlusion": {"patch": 6},
        "sarfa": {"radius": 6},
        "integrated_gradients": {"n_steps": 8},
    }.get(name, {})


def mask_agent(convlstm: bool = True, variant: str = "double", seed: int = 0) -> ActorCriticAgent:
    torch.manual_seed(seed)
    net = MaskA3CNet(MaskA3CConfig(n_actions=4, variant=variant, convlstm=convlstm))
    return ActorCriticAgent(net, game="Breakout", preset="mask_a3c", n_actions=4)


# -- the result ---------------------------------------------------------------------------------
PASSES = {"occlusion": 1 + 42 * 42, "occlusion_gray": 1 + 42 * 42, "sarfa_blur": 1 + 42 * 42, "noise_sensitivity": 1 + 28 * 28,
          "ns_original": 785, "ns_chosen": 785, "ns_black": 785, "sarfa": 1 + 42 * 42, "rise": 1001, "lime_slic": 2001,
          "lime_quickshift": 1501, "lime_felzenszwalb": 1001, "gradient": 2, "integrated_gradients": 51, "gradcam": 2,
          "random": 1}


@pytest.mark.parametrize("name", Q_METHODS)
def test_every_method_returns_an_attribution(agent, states, name):
    res = get_explainer(name, agent).attribute(states)
    assert isinstance(res, Attribution) and len(res) == 2
    assert res.maps.shape == (2, 84, 84) and res.maps.dtype == torch.float32
    assert torch.isfinite(res.maps).all()
    assert res.target.dtype == torch.long and torch.equal(res.target, agent.act(states))
    assert res.forward_passes == PASSES[name]
    assert res.method == name or (name == "noise_sensitivity" and res.method == "ns_original")
    assert res.cpu().maps.device.type == "cpu"


def test_explicit_targets_and_outputs(agent, states):
    occ = Occlusion(agent, patch=6)
    assert torch.equal(occ.attribute(states, target=3).target, torch.tensor([3, 3]))
    assert torch.equal(occ.attribute(states, target=torch.tensor([1, 2])).target, torch.tensor([1, 2]))
    assert torch.equal(occ.attribute(states, target=np.array([0, 1])).target, torch.tensor([0, 1]))
    a = occ.attribute(states, target=1).maps
    b = occ.attribute(states, target=2).maps
    assert not torch.allclose(a, b)
    assert explainable_outputs(agent) == ("q", "advantage", "probs", "all")
    assert explainable_outputs(mask_agent()) == ("logits", "probs", "value", "all")
    assert NoiseSensitivity(agent, variant="chosen").output == "probs"
    assert NoiseSensitivity(agent).output == "all" and Occlusion(agent).output == "q"
    # the "all" score ignores the action index; "value" is the critic
    all_maps = Occlusion(agent, patch=6, output="all")
    torch.testing.assert_close(all_maps.attribute(states, target=0).maps, all_maps.attribute(states, target=3).maps)
    ac = mask_agent(convlstm=False)
    x = torch.randn(2, 1, 80, 80)
    assert Occlusion(ac, patch=8, output="value").attribute(x).output == "value"
    assert Occlusion(ac, patch=8).output == "logits"


def test_config_and_for_agent(agent, states):
    rise = RISE(agent, n_masks=50, seed=3)
    cfg = rise.config
    assert cfg["method"] == "rise" and cfg["n_masks"] == 50 and cfg["p"] == 0.5 and cfg["grid"] == 8
    with pytest.raises(TypeError):
        cfg["p"] = 0.1  # read-only
    other = as_agent(PatchQNet(4, seed=1), 4)
    twin = rise.for_agent(other)
    assert twin.masks is rise.masks and twin.agent is other and dict(twin.config) == dict(cfg)
    shared = RISE(other, masks=rise.masks)
    torch.testing.assert_close(shared.attribute(states).maps, twin.attribute(states).maps)
    for name in ("ns_chosen", "lime_quickshift", "sarfa", "gradcam", "mask_policy"):
        exp = get_explainer(name, mask_agent(convlstm=False)) if name == "mask_policy" else get_explainer(name, agent)
        again = exp.for_agent(exp.agent)
        assert dict(again.config) == dict(exp.config) and again.method_name == exp.method_name
    assert "Occlusion(" in repr(Occlusion(agent))


def test_registry_names_and_presets(agent):
    assert set(EXPLAINERS) >= {"occlusion", "noise_sensitivity", "ns_original", "ns_chosen", "ns_black", "rise", "lime_slic",
                               "lime_quickshift", "lime_felzenszwalb", "sarfa", "mask_policy", "mask_value", "gradient",
                               "integrated_gradients", "gradcam", "random"}
    assert get_explainer("ns_black", agent).perturbation == "black"
    assert get_explainer("noise_sensitivity", agent, variant="black").method_name == "ns_black"
    assert isinstance(get_explainer("lime_felzenszwalb", agent), Lime)
    assert get_explainer("lime_felzenszwalb", agent).method_name == "lime_felzenszwalb"
    for cls in (Occlusion, NoiseSensitivity, SARFA, RISE, Lime, MaskAttention, Gradient, GradCAM, RandomMap):
        assert cls.__name__ in ex.__all__ and cls.__doc__ and "Parameters" in cls.__doc__


# -- determinism --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", Q_METHODS)
def test_same_result_for_any_batch_size(agent, states, name):
    params = small(name)
    a = get_explainer(name, agent, batch_size=7, **params).attribute(states)  # chunks straddle states
    b = get_explainer(name, agent, batch_size=4096, **params).attribute(states)
    torch.testing.assert_close(a.maps, b.maps, rtol=1e-5, atol=1e-6)
    c = get_explainer(name, agent, **params).attribute(states, batch_size=3)
    torch.testing.assert_close(a.maps, c.maps, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", STOCHASTIC)
def test_seed_determines_the_map(agent, states, name):
    params = small(name)
    a = get_explainer(name, agent, seed=4, **params).attribute(states).maps
    b = get_explainer(name, agent, seed=4, **params).attribute(states).maps
    c = get_explainer(name, agent, seed=5, **params).attribute(states).maps
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def test_no_global_rng_use(agent, states):
    torch.manual_seed(0)
    a = RISE(agent, n_masks=80).attribute(states).maps
    torch.manual_seed(123)
    _ = torch.rand(10)
    b = RISE(agent, n_masks=80).attribute(states).maps
    assert torch.equal(a, b)
    state = torch.get_rng_state()
    Lime(agent, n_samples=60).attribute(states)
    assert torch.equal(state, torch.get_rng_state())


def test_lime_map_of_a_state_does_not_depend_on_the_batch(agent, states):
    exp = Lime(agent, n_samples=150)
    torch.testing.assert_close(exp.attribute(states).maps[1:], exp.attribute(states[1:]).maps, rtol=1e-5, atol=1e-6)


# -- recurrent agents ------------------------------------------------------------------------------
def test_hidden_is_held_fixed_per_state():
    ac = mask_agent(convlstm=True)
    x = torch.randn(2, 1, 80, 80, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    hidden = (torch.randn(2, 64, 10, 10, generator=g) * 0.5, torch.randn(2, 64, 10, 10, generator=g) * 0.5)
    def spread(m):
        return m - m.mean()

    for exp in (Occlusion(ac, patch=16, batch_size=7, output="value"), NoiseSensitivity(ac, radius=16, batch_size=7),
                RISE(ac, n_masks=30, batch_size=7, output="value")):
        both = exp.attribute(x, hidden=hidden)
        alone = exp.attribute(x[1:], hidden=tuple(h[1:] for h in hidden))
        scale = float(spread(alone.maps).abs().max())
        assert scale > 0
        torch.testing.assert_close(both.maps[1:], alone.maps, rtol=1e-5, atol=1e-4 * scale)
        zero_state = exp.attribute(x[1:]).maps  # hidden=None: the agent's zero state
        assert float((spread(zero_state) - spread(alone.maps)).abs().max()) > 0.05 * scale
    with torch.no_grad():
        greedy = ac(x, hidden)["logits"].argmax(1)
    assert torch.equal(Occlusion(ac, patch=16).attribute(x, hidden=hidden).target, greedy)


def test_precision_bf16_runs(agent, states):
    res = RISE(agent, n_masks=40, precision="bf16").attribute(states)
    ref = RISE(agent, n_masks=40).attribute(states)
    assert res.maps.dtype == torch.float32 and res.forward_passes == ref.forward_passes
    assert torch.equal(res.target, ref.target)  # the greedy action always comes from a float32 pass
    rho = np.corrcoef(res.maps.flatten().numpy(), ref.maps.flatten().numpy())[0, 1]
    assert rho > 0.9


def test_bf16_only_where_validated(agent):
    """The offer follows data/benchmarks/bf16_decision.json (tests/lib/test_bf16_decision.py checks it against the file)."""
    RISE(agent, n_masks=10, precision="bf16")
    Lime(agent, precision="bf16")
    for make in (lambda: NoiseSensitivity(agent, precision="bf16"), lambda: SARFA(agent, precision="bf16"),
                 lambda: NoiseSensitivity(agent, variant="black", precision="bf16"),
                 lambda: Occlusion(agent, precision="bf16"),
                 lambda: Gradient(agent, precision="bf16"), lambda: MaskAttention(mask_agent(), precision="bf16")):
        with pytest.raises(ValueError, match="precision='bf16' is not offered for .*use precision='fp32'"):
            make()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu(states):
    cpu = as_agent(PatchQNet(4), 4)
    gpu = as_agent(PatchQNet(4), 4).to("cuda")
    for name in ("occlusion", "ns_original", "sarfa", "rise", "lime_slic", "gradient", "random"):
        a = get_explainer(name, cpu, **small(name)).attribute(states)
        b = get_explainer(name, gpu, **small(name)).attribute(states)
        assert b.maps.device.type == "cuda"
        torch.testing.assert_close(a.maps, b.maps.cpu(), rtol=1e-4, atol=1e-5)


# -- bad inputs ------------------------------------------------------------------------------------
def test_bad_states(agent):
    occ = Occlusion(agent)
    with pytest.raises(ValueError, match=r"states must have shape \(N, 4, 84, 84\)"):
        occ.attribute(torch.rand(2, 3, 84, 84))
    with pytest.raises(ValueError, match="states must have shape"):
        occ.attribute(torch.rand(4, 84, 84))
    with pytest.raises(ValueError, match="empty batch"):
        occ.attribute(torch.rand(0, 4, 84, 84))


def test_unknown_method_and_preset_conflicts(agent):
    with pytest.raises(ValueError,
                       match="unknown explainer 'shap'; valid names are: occlusion, occlusion_gray, noise_sensitivity"):
        get_explainer("shap", agent)
    with pytest.raises(ValueError, match="'ns_chosen' fixes variant='chosen'; use 'noise_sensitivity'"):
        get_explainer("ns_chosen", agent, variant="black")
    with pytest.raises(ValueError, match="construct MaskAttention directly"):
        get_explainer("mask_value", mask_agent(), branch="policy")
    with pytest.raises(TypeError):
        get_explainer("occlusion", agent, radius=3)  # not an Occlusion parameter


def test_bad_outputs_and_targets(agent, states):
    with pytest.raises(ValueError,
                       match="unknown output 'value' for Occlusion on QAgent .*valid outputs are: q, advantage, probs, all"):
        Occlusion(agent, output="value")
    with pytest.raises(ValueError, match="unknown output 'all' for RISE.*valid outputs are: q, advantage, probs$"):
        RISE(agent, output="all")  # RISE weights masks by a scalar
    with pytest.raises(ValueError, match="valid outputs are: q, advantage$"):
        SARFA(agent, output="probs")
    with pytest.raises(ValueError, match="valid outputs are: logits, probs, value, all"):
        Occlusion(mask_agent(), output="q")
    occ = Occlusion(agent, patch=12)
    with pytest.raises(ValueError, match=r"target actions must lie in \[0, 4\), got values in \[4, 4\]"):
        occ.attribute(states, target=4)
    with pytest.raises(ValueError, match="target actions must lie in"):
        occ.attribute(states, target=torch.tensor([0, -1]))
    with pytest.raises(ValueError, match=r"target tensor must have shape \(2,\)"):
        occ.attribute(states, target=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="integer dtype"):
        occ.attribute(states, target=torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="invalid target 'q'.*choose the explained output with output="):
        occ.attribute(states, target="q")
    with pytest.raises(ValueError, match="must not be a bool"):
        occ.attribute(states, target=True)


BAD_PARAMS = [
    (Occlusion, {"patch": 0}, r"patch must be an integer >= 1 and <= 84, got 0"),
    (Occlusion, {"patch": 85}, "patch must be an integer"),
    (Occlusion, {"patch": 2.0}, "patch must be an integer"),
    (Occlusion, {"patch": True}, "patch must be an integer"),
    (Occlusion, {"stride": 0}, "stride must be an integer"),
    (Occlusion, {"colour": float("nan")}, "colour must be a real number"),
    (Occlusion, {"batch_size": 0}, "batch_size must be an integer >= 1"),
    (Occlusion, {"precision": "fp16"}, "unknown precision 'fp16'; valid values are: 'fp32', 'bf16'"),
    (NoiseSensitivity, {"variant": "gaussian"}, "unknown variant 'gaussian'; valid values are: 'original', 'chosen', 'black'"),
    (NoiseSensitivity, {"radius": 0}, "radius must be an integer >= 1"),
    (NoiseSensitivity, {"perturbation": "noise"}, "unknown perturbation 'noise'"),
    (NoiseSensitivity, {"blur_sigma": 0.0}, r"blur_sigma must be a real number in \(0.0, inf\), got 0.0"),
    (NoiseSensitivity, {"blur_frames": 1}, "blur_frames must be True or False"),
    (SARFA, {"radius": -2}, "radius must be an integer >= 1"),
    (SARFA, {"perturbation": "grey"}, "unknown perturbation 'grey'"),
    (RISE, {"p": 0.0}, r"p must be a real number in \(0.0, 1.0\], got 0.0; p is the probability of keeping a grid cell"),
    (RISE, {"p": 1.5}, r"p must be a real number in \(0.0, 1.0\]"),
    (RISE, {"n_masks": 0}, "n_masks must be an integer >= 1"),
    (RISE, {"grid": 0}, "grid must be an integer >= 1"),
    (RISE, {"seed": -1}, "seed must be an integer >= 0"),
    (RISE, {"masks": torch.rand(5, 80, 80)}, r"masks must be a tensor of shape \(n_masks, 84, 84\)"),
    (RISE, {"masks": torch.rand(5, 84, 84), "n_masks": 6}, "n_masks=6 disagrees with the 5 masks given"),
    (Lime, {"n_samples": 1}, "n_samples must be an integer >= 2"),
    (Lime, {"n_segments": 0}, "n_segments must be an integer >= 1"),
    (Lime, {"kernel_width": 0.0}, "kernel_width must be a real number"),
    (Lime, {"alpha": 0.0}, "alpha must be a real number"),
    (Lime, {"segmentation": "quickshift", "ratio": 2.0}, r"ratio must be a real number in \[0.0, 1.0\]"),
    (Lime, {"segmentation": "felzenszwalb", "min_size": -1}, "min_size must be an integer >= 0"),
    (Lime, {"segmentation": "watershed"}, "unknown segmentation 'watershed'; valid segmentations are: slic, quickshift"),
    (Lime, {"segmentation": 3}, "segmentation must be one of slic, quickshift, felzenszwalb or a callable"),
    (Lime, {"segmentation": "slic", "scale": 3.0}, "scale is not a parameter of the slic segmentation; its parameters "
                                                    "are: n_segments, compactness, sigma"),
    (Lime, {"segmentation": lambda img: img[..., 0].astype(int), "n_segments": 3}, "n_segments: parameters of a named"),
    (Gradient, {"channel_reduce": "mean"}, "unknown channel_reduce 'mean'; valid values are: 'sum_abs', 'max_abs', 'sum'"),
    (Gradient, {"output": "all"}, "valid outputs are: q, advantage, probs$"),
    (GradCAM, {"layer": "conv9"}, "unknown layer 'conv9' in PatchQNet; its convolutional layers are: conv1"),
    (RandomMap, {"seed": 1.5}, "seed must be an integer"),
]


@pytest.mark.parametrize("cls,params,match", BAD_PARAMS, ids=[f"{c.__name__}-{sorted(p)[0]}" for c, p, _ in BAD_PARAMS])
def test_out_of_range_parameters(agent, cls, params, match):
    with pytest.raises(ValueError, match=match):
        cls(agent, **params)


def test_bad_agent_pairings(agent, states):
    with pytest.raises(ValueError, match="has no 'policy_mask' output; valid branches for this agent: none"):
        MaskAttention(agent)
    with pytest.raises(ValueError, match="has no 'value_mask' output; valid branches for this agent: 'policy'"):
        MaskAttention(mask_agent(variant="policy"), branch="value")
    with pytest.raises(ValueError, match="unknown branch 'actor'"):
        MaskAttention(mask_agent(), branch="actor")
    with pytest.raises(ValueError, match="unknown display 'jet'"):
        MaskAttention(mask_agent(), display="jet")
    with pytest.raises(ValueError, match="Grad-CAM needs a convolutional layer"):
        GradCAM(as_agent(TwoHeadNet(), 2))
    with pytest.raises(ValueError, match="hidden was given but .* is not recurrent"):
        Occlusion(agent).attribute(states, hidden=(torch.zeros(2, 1),))
    ac = mask_agent()
    with pytest.raises(ValueError, match="hidden tensors must have first axis 2"):
        Occlusion(ac, patch=16).attribute(torch.randn(2, 1, 80, 80),
                                          hidden=(torch.zeros(3, 64, 10, 10), torch.zeros(3, 64, 10, 10)))
    with pytest.raises(TypeError, match="agent must be a saliency_lib.agents.Agent"):
        Occlusion(PatchQNet(4))
    bad_seg = Lime(agent, segmentation=lambda img: np.zeros((10, 10), int), n_samples=10)
    with pytest.raises(ValueError, match=r"segmentation must return \(84, 84\) integer labels"):
        bad_seg.attribute(states)


# -- command line ----------------------------------------------------------------------------------
def _parser():
    from saliency_lib.cli.explain import add_explain_parser

    p = argparse.ArgumentParser()
    add_explain_parser(p.add_subparsers(dest="command", required=True))
    return p


def test_collect_states_dqn_protocol():
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent
    from saliency_lib.states import collect_states

    torch.manual_seed(0)
    dqn = QAgent(DQNNet(DQNConfig(n_actions=9)), game="MsPacman", preset="dqn", n_actions=9)
    _ss = collect_states(dqn, 3, seed=0, frames=True)
    states, hidden, frames, actions = _ss.states, _ss.hidden, list(_ss.frames), _ss.actions
    assert states.shape == (3, 4, 84, 84) and hidden is None and len(frames) == 3 and frames[0].shape == (210, 160, 3)
    assert torch.equal(actions, dqn.act(states))
    assert float(states[0].min()) >= 0 and float(states[0, 0].max()) > 0  # the fill steps filled the stack
    with pytest.raises(ValueError, match="n must be a positive integer"):
        collect_states(dqn, 0)


def test_collect_states_recurrent_protocol():
    from saliency_lib.states import collect_states

    ac = mask_agent(convlstm=True)
    _ss = collect_states(ac, 3, seed=0, frames=True)
    states, hidden, actions = _ss.states, _ss.hidden, _ss.actions
    assert len(_ss.frames) == 3 and states.shape == (3, 1, 80, 80) and len(hidden) == 2 and hidden[0].shape == (3, 64, 10, 10)
    assert float(hidden[0][0].abs().max()) == 0.0 and float(hidden[0][1].abs().max()) > 0  # carried after step 0
    with torch.no_grad():
        assert torch.equal(ac(states, hidden)["logits"].argmax(1), actions)


def test_cli_explain_writes_maps_and_overlays(tmp_path):
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent

    torch.manual_seed(0)
    dqn = QAgent(DQNNet(DQNConfig(n_actions=9)), game="MsPacman", preset="dqn", n_actions=9)
    ckpt = save_agent(dqn, tmp_path / "agent")
    out = tmp_path / "maps"
    args = _parser().parse_args(["explain", str(ckpt), "--method", "gradient", "--states", "2", "--out", str(out),
                                 "--batch-size", "64"])
    assert args.func(args) == 0
    data = np.load(out / "maps.npz")
    assert data["maps"].shape == (2, 84, 84) and data["states"].shape == (2, 4, 84, 84) and data["actions"].shape == (2,)
    assert sorted(p.name for p in out.glob("*.png")) == ["state_0000.png", "state_0001.png"]
    assert json.loads((out / "explain.json").read_text())["config"]["method"] == "gradient"
    bad = _parser().parse_args(["explain", str(ckpt), "--method", "shap", "--states", "1", "--out", str(out)])
    with pytest.raises(ValueError, match="unknown explainer 'shap'"):
        bad.func(bad)


def test_cli_explain_mask_a3c(tmp_path, official_available):
    from saliency_lib.agents import save_agent

    official = os.environ.get("MASK_A3C_OFFICIAL_DIR")
    spec = "official:Breakout" if official and os.path.isdir(official) else str(save_agent(mask_agent(), tmp_path / "ac"))
    out = tmp_path / "maps"
    args = _parser().parse_args(["explain", spec, "--method", "mask_value", "--states", "2", "--out", str(out), "--seed", "1"])
    assert args.func(args) == 0
    data = np.load(out / "maps.npz")
    assert data["maps"].shape == (2, 80, 80) and int(data["forward_passes"]) == 1
    assert len(list(out.glob("*.png"))) == 2


def test_linear_toy_is_supported():
    lin = as_agent(LinearQNet(3), 3)
    assert Occlusion(lin, patch=21).attribute(random_states(1)).maps.shape == (1, 84, 84)
