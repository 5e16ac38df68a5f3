"""The exact savings of incremental inference give the naive maps.

The engine skips (state, perturbation) rows that change no pixel, plans each row's windows from
the box of the pixels it changes, splits the windows into up to one group per conv3 window, and
drops ReLU-dead conv3 positions from the fc product (``saliency_lib.inference._incremental``).
Most tests here use a narrow Nature-CNN (2 channels per conv layer) with small integer weights on
states whose pixels are 0, ½ or 1: every sum is an exact float, so the fast and the naive path must
agree bit for bit, whatever the evaluation order. The blurred Noise Sensitivity (whose blurred
copy is not exact) and the full-width network are compared to float rounding.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from saliency_lib.agents import DQNConfig, DQNNet, QAgent
from saliency_lib.explainers import SARFA, NoiseSensitivity, Occlusion, get_explainer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
SIDE = 84


def integer_agent(seed=0, dueling=True, padding="valid", channels=2, hidden=8, density=0.5) -> QAgent:
    """A Nature-CNN-shaped DQN (8×8/4, 4×4/2, 3×3/1, fc) with ``channels`` channels per conv and weights in
    {−1, 0, 1}: on states of 0, ½ and 1 every activation is a small multiple of ½, exact in float32."""
    g = torch.Generator().manual_seed(seed)
    net = DQNNet(DQNConfig(n_actions=4, dueling=dueling, padding=padding, hidden=hidden))
    same = padding == "same"
    net.conv1 = nn.Conv2d(4, channels, 8, stride=4, padding=2 if same else 0)
    net.conv2 = nn.Conv2d(channels, channels, 4, stride=2)
    net.conv3 = nn.Conv2d(channels, channels, 3, stride=1, padding=1 if same else 0)
    side = 11 if same else 7
    net.fc = nn.Linear(channels * side * side, hidden)
    with torch.no_grad():
        for p in net.parameters():
            w = torch.randint(-1, 2, p.shape, generator=g).float()
            p.copy_(w * (torch.rand(p.shape, generator=g) < density))
    return QAgent(net, game="Breakout", preset="dqn", n_actions=4)


def check_exact(agent, x):
    """The precondition of the bit-for-bit tests: float32 passes equal float64 ones on ``x``."""
    import copy

    with torch.no_grad():
        a = agent.net(x)
        b = copy.deepcopy(agent.net).double()(x.double())
    assert torch.equal(a.double(), b), "the test network's arithmetic is not exact"


def game_like(n=2, seed=0) -> torch.Tensor:
    """States of 0, ½ and 1: black ground, a few objects, and pixels that are black in some frames only."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, 4, SIDE, SIDE)
    x[:, :, 20:26, 4:80] = 0.5
    x[:, :, 78:80, 30:42] = 1.0
    x[0, :, 50:53, 60:62] = 1.0
    x[:, 1:, 60:62, 10:14] = 0.5  # black in the first frame only: not a no-op
    x[:, :, 0:2, :] = 1.0  # a border wall
    x += 0.5 * (torch.rand(x.shape, generator=g) < 0.01)
    return x.clamp(0, 1)


def pair(cls, agent, x, **kw):
    return cls(agent, **kw).attribute(x), cls(agent, naive=True, **kw).attribute(x)


def assert_bitwise(fast, slow):
    assert fast.forward_passes == slow.forward_passes
    assert torch.equal(fast.coarse, slow.coarse)
    assert torch.equal(fast.maps, slow.maps)


def assert_close_scores(fast, slow, tol=1e-4):
    """Maps to ``tol`` after min-max normalisation, and scores to ``tol`` of their scale. Rows that change
    nothing score exactly their clean value on the fast path where full passes give ~1e-11 of rounding, so
    on screens with large black areas a plain Spearman of the maps would rank that noise."""
    from test_incremental import norm

    assert fast.forward_passes == slow.forward_passes
    assert float((norm(fast.maps) - norm(slow.maps)).abs().max()) <= tol
    scale = slow.coarse.flatten(1).abs().amax(1)
    assert float(((fast.coarse - slow.coarse).flatten(1).abs().amax(1) / scale).max()) <= tol


def engine_of(explainer):
    (engine,) = explainer._engines.values()
    return engine


STATES = {
    "none_noop": lambda: 0.5 + 0.5 * (torch.rand(2, 4, SIDE, SIDE, generator=torch.Generator().manual_seed(1)) < 0.5),
    "all_noop": lambda: torch.zeros(2, 4, SIDE, SIDE),
    "some_noop": game_like,
    "borders_only": lambda: torch.nn.functional.pad(torch.ones(2, 4, SIDE - 6, SIDE - 6), (3, 3, 3, 3), value=0.0).roll(3, 2),
}


@pytest.mark.parametrize("states", list(STATES))
@pytest.mark.parametrize("method,kw", [(Occlusion, {}), (Occlusion, {"patch": 3, "stride": 2}), (SARFA, {}),
                                       (NoiseSensitivity, {"variant": "black"})],
                         ids=["occlusion", "occlusion3x2", "sarfa", "ns_black"])
def test_no_op_rows_bit_for_bit(states, method, kw):
    agent = integer_agent(seed=2)
    x = STATES[states]()
    check_exact(agent, x)
    exp = method(agent, **kw)
    fast = exp.attribute(x)
    assert_bitwise(fast, method(agent, naive=True, **kw).attribute(x))
    stats = engine_of(exp).stats
    black = (x == 0).all(1).flatten(1)
    index = exp._index(x.device) if method is Occlusion else exp._masks(x.device)[0]
    assert stats["noop_rows"] == int(black[:, index].all(2).sum())  # exactly the rows that change no pixel
    if states == "all_noop":
        assert stats["noop_rows"] == stats["rows"]


@pytest.mark.parametrize("dueling,padding", [(True, "valid"), (False, "valid"), (True, "same"), (False, "same")])
def test_heads_and_padding_bit_for_bit(dueling, padding):
    agent = integer_agent(seed=3, dueling=dueling, padding=padding)
    x = game_like(seed=4)
    check_exact(agent, x)
    assert_bitwise(*pair(Occlusion, agent, x))
    assert_bitwise(*pair(NoiseSensitivity, agent, x, variant="black", radius=4, stride=5))


def test_colour_patches_skip_pixels_of_that_colour():
    """Gray occlusion: a patch over pixels that are ½ in every frame changes nothing."""
    agent = integer_agent(seed=5)
    x = game_like(seed=5)
    exp = Occlusion(agent, colour=0.5)
    assert_bitwise(exp.attribute(x), Occlusion(agent, colour=0.5, naive=True).attribute(x))
    same = (x == 0.5).all(1).flatten(1)
    assert engine_of(exp).stats["noop_rows"] == int(same[:, exp._index(x.device)].all(2).sum()) > 0


@pytest.mark.parametrize("layer", ["conv1", "conv2", "conv3"])
def test_relu_dead_past_a_layer_gives_the_naive_map_exactly(layer):
    """Every ReLU of ``layer`` is dead (a large negative bias): nothing past it changes, the fast path
    drops every position from the fc product, and the map is the naive one bit for bit."""
    agent = integer_agent(seed=6)
    with torch.no_grad():
        getattr(agent.net, layer).bias.fill_(-1e4)
    x = game_like(seed=6)
    check_exact(agent, x)
    exp = Occlusion(agent)
    exp.attribute(x[:1])
    engine = engine_of(exp)
    engine.collect_stats = True
    engine.reset_stats()
    fast = exp.attribute(x)
    assert_bitwise(fast, Occlusion(agent, naive=True).attribute(x))
    assert engine.stats["fc_positions"] > 0 and engine.stats["fc_positions_used"] == 0
    assert engine.stats["changed_positions_conv3"] == 0


def test_partly_dead_network_bit_for_bit_and_positions_dropped():
    """Dead conv3 channels over most of the window: the dropped positions change no bit of the map."""
    agent = integer_agent(seed=7, density=0.3)
    with torch.no_grad():
        agent.net.conv3.bias.fill_(-2.0)
    x = game_like(seed=7)
    check_exact(agent, x)
    exp = Occlusion(agent, patch=3, stride=3)
    exp.attribute(x[:1])
    engine = engine_of(exp)
    engine.collect_stats = True
    engine.reset_stats()
    assert_bitwise(exp.attribute(x), Occlusion(agent, patch=3, stride=3, naive=True).attribute(x))
    assert engine.stats["changed_positions_conv3"] < engine.stats["window_positions_conv3"]


def test_blur_where_the_blurred_copy_equals_the_state():
    """NS original on a black screen with two objects: rows far from them change nothing (skipped), the
    others follow their changed boxes; the map equals the naive one to float rounding. (The skipped rows
    score exactly 0 where full passes give ~1e-11 of rounding, so a plain Spearman of the maps would rank
    that noise: the scores are compared instead.)"""
    from test_incremental import dqn_agent

    agent = dqn_agent(seed=8)
    x = torch.zeros(2, 4, SIDE, SIDE)
    x[:, :, 30:54, 10:40] = torch.rand(24, 30, generator=torch.Generator().manual_seed(8))
    x[1, :, 66:84, 62:84] = 0.9  # at a corner
    exp = NoiseSensitivity(agent, variant="original", stride=8)
    assert_close_scores(exp.attribute(x), NoiseSensitivity(agent, variant="original", stride=8, naive=True).attribute(x))
    stats = engine_of(exp).stats
    assert 0 < stats["noop_rows"] < stats["rows"]


@pytest.mark.parametrize("dueling", [True, False])
@pytest.mark.parametrize("name,kw", [("occlusion", {}), ("sarfa", {"stride": 4}), ("ns_black", {})])
def test_full_width_network_with_no_op_rows_on_real_weights(name, kw, dueling):
    """The full Nature-CNN (random weights) on a game-like state, dueling and not: float rounding."""
    from test_incremental import dqn_agent

    agent = dqn_agent(seed=9, dueling=dueling)
    x = game_like(n=1, seed=9)
    assert_close_scores(get_explainer(name, agent, **kw).attribute(x), get_explainer(name, agent, naive=True, **kw).attribute(x))


def test_engine_without_a_table_finds_the_same_rows():
    """Without the explainer's table of changeable pixels, the engine evaluates the changes: same rows, same map."""
    agent = integer_agent(seed=10)
    x = game_like(seed=10)
    exp = Occlusion(agent)
    index = exp._index(x.device)
    with_table = exp._local_perturbed_readouts(x, None, index, lambda i, clean: 0.0, 64,
                                               delta=lambda s, p, clean, at: -clean, changed=(x != 0).any(1))
    rows = engine_of(exp).stats["noop_rows"]
    without = exp._local_perturbed_readouts(x, None, index, lambda i, clean: 0.0, 64, delta=lambda s, p, clean, at: -clean)
    assert torch.equal(with_table, without)
    assert engine_of(exp).stats["noop_rows"] == 2 * rows


# -- every geometry the explainers accept -------------------------------------------------------
SIZES = list(range(1, SIDE + 1))


def _slices(values, per):
    return [values[i:i + per] for i in range(0, len(values), per)]


@pytest.mark.parametrize("patches", _slices(SIZES, 12), ids=lambda v: f"patch{v[0]}-{v[-1]}")
def test_every_occlusion_patch(patches):
    agent = integer_agent(seed=11, channels=1, hidden=4)
    x = game_like(n=1, seed=11)
    for patch in patches:
        assert_bitwise(*pair(Occlusion, agent, x, patch=patch))


@pytest.mark.parametrize("strides", _slices(SIZES, 12), ids=lambda v: f"stride{v[0]}-{v[-1]}")
def test_every_occlusion_stride(strides):
    agent = integer_agent(seed=12, channels=1, hidden=4, padding="same")
    x = game_like(n=1, seed=12)
    for stride in strides:
        assert_bitwise(*pair(Occlusion, agent, x, patch=3, stride=stride))


@pytest.mark.parametrize("radii", _slices(SIZES, 12), ids=lambda v: f"radius{v[0]}-{v[-1]}")
def test_every_disk_radius(radii):
    agent = integer_agent(seed=13, channels=1, hidden=4)
    x = game_like(n=1, seed=13)
    for radius in radii:
        assert_bitwise(*pair(NoiseSensitivity, agent, x, variant="black", radius=radius))


# from radius 21 on, every blurred window (half-width int(4r + 0.5) + 1) covers the whole 84x84 image: the
# same geometry as radius 21 (the mask's values differ), so the larger radii are sampled
BLUR_RADII = [*range(1, 25), 28, 42, 63, 84]


@pytest.mark.parametrize("radii", _slices(BLUR_RADII, 7), ids=lambda v: f"radius{v[0]}-{v[-1]}")
def test_every_blur_radius(radii):
    """The blurred copy is not exact in float32: scores to float rounding."""
    agent = integer_agent(seed=15, channels=1, hidden=4)
    x = game_like(n=1, seed=15)
    for radius in radii:
        assert_close_scores(*pair(NoiseSensitivity, agent, x, variant="chosen", radius=radius))


@pytest.mark.parametrize("strides", _slices(SIZES, 12), ids=lambda v: f"stride{v[0]}-{v[-1]}")
def test_every_disk_stride(strides):
    agent = integer_agent(seed=14, channels=1, hidden=4)
    x = game_like(n=1, seed=14)
    for stride in strides:
        assert_bitwise(*pair(SARFA, agent, x, radius=2, stride=stride))


# -- the benchmark's FLOP count -------------------------------------------------------------------
def test_flop_count_matches_a_hand_count():
    """One 2×2 patch at rows 40-41, columns 40-41 of the valid Nature-CNN (32/64/64 channels, fc 512, dueling 4 actions).

    conv1 (8×8/4): outputs o with 4o ≤ 41 and 4o + 7 ≥ 40: o = 9, 10 per axis: 2 × 2 = 4 positions,
    each 8·8·4·32 = 8192 multiply-adds. conv2 (4×4/2) on conv1 rows 9-10: 2o ≤ 10, 2o + 3 ≥ 9: o = 3, 4, 5:
    3 × 3 = 9 positions × 4·4·32·64 = 32768. conv3 (3×3/1) on conv2 rows 3-5: o ≤ 5, o + 2 ≥ 3: o = 1 … 5:
    5 × 5 = 25 positions × 3·3·64·64 = 36864, and the fc columns of those positions, 25·64·512.
    Head: 512·1 + 512·4. Full pass: 400·8192 + 81·32768 + 49·36864 + 3136·512 + 2560.
    """
    from flop_limit import flop_limit, full_pass_macs, layer_geometry, perturbation_macs

    net = DQNNet(DQNConfig(n_actions=4))
    geometry = layer_geometry(net)
    index = torch.tensor([[40 * SIDE + 40, 40 * SIDE + 41, 41 * SIDE + 40, 41 * SIDE + 41]])
    head = 512 * 1 + 512 * 4
    hand = 4 * 8192 + 9 * 32768 + 25 * 36864 + 25 * 64 * 512 + head
    assert float(perturbation_macs(geometry, index, (SIDE, SIDE))[0]) == hand
    full = 400 * 8192 + 81 * 32768 + 49 * 36864 + 3136 * 512 + head
    assert full_pass_macs(geometry, (SIDE, SIDE)) == full
    assert flop_limit(net, index, (SIDE, SIDE))["flop_limit_speedup"] == pytest.approx(2 * full / (full + hand))
