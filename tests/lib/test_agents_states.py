"""State validation at the one entry point (``Agent.check_states``), seen from every door.

Each bad batch is fed to an explainer (``get_explainer("occlusion", agent).attribute``),
a metric (``Insertion().evaluate``) and ``agent.act``; all three must refuse it with the
same message, which names the fix.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, QAgent, wrap_agent
from saliency_lib.agents.base import INPUT_RANGES, Agent
from saliency_lib.explainers import get_explainer
from saliency_lib.metrics import Insertion


class TinyQ(nn.Module):
    """Q-values from the mean of 4 quadrants of the newest frame: cheap and input-size agnostic."""

    def __init__(self, n_actions: int = 3):
        super().__init__()
        self.lin = nn.Linear(4, n_actions)

    def forward(self, x):
        return self.lin(nn.functional.adaptive_avg_pool2d(x[:, -1:], 2).flatten(1))


@pytest.fixture(scope="module")
def dqn():
    return QAgent(TinyQ(), game="Breakout", preset="dqn", n_actions=3)


@pytest.fixture(scope="module")
def mask_a3c():
    torch.manual_seed(0)
    return ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)


def _doors(agent):
    """The three ways states enter: an explainer, a metric, ``act``."""
    n_pix = 84 * 84 if agent.preset == "dqn" else 80 * 80
    return {
        "explainer": lambda x: get_explainer("occlusion", agent, patch=21).attribute(x),
        "metric": lambda x: Insertion(pixels_per_step=n_pix // 2).evaluate(agent, x,
                                                                            saliency=np.zeros((2, *agent.input_shape[1:]))),
        "act": lambda x: agent.act(x),
    }


def _refused(agent, x, *patterns):
    for door, call in _doors(agent).items():
        with pytest.raises(ValueError) as e:
            call(x)
        for p in patterns:
            assert p in str(e.value), f"{door}: {p!r} not in {str(e.value)!r}"


def _good(n=2):
    return torch.rand(n, 4, 84, 84, generator=torch.Generator().manual_seed(0))


# -- dtype ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.bool])
def test_integer_states_are_refused_with_the_fix(dqn, dtype):
    x = (_good() * 255).to(dtype)
    _refused(dqn, x, f"dtype {dtype}", "obs.float() / 255", "states_from_obs(obs, layout=...)", "never cast silently")


def test_uint8_frames_no_longer_give_occlusion_maps_of_minus_ten_thousand(dqn):
    x = (_good() * 255).to(torch.uint8)
    with pytest.raises(ValueError, match="dtype torch.uint8"):
        get_explainer("occlusion", dqn).attribute(x)
    maps = get_explainer("occlusion", dqn).attribute(x.float() / 255).maps  # the fix the message names
    assert maps.abs().max() < 10


def test_integer_states_of_a_mask_a3c_agent_name_its_preset(mask_a3c):
    _refused(mask_a3c, torch.zeros(2, 1, 80, 80, dtype=torch.int32), "dtype torch.int32", "make_env(game, 'mask_a3c')")


# -- range ------------------------------------------------------------------------------------
def test_raw_pixel_values_as_floats_are_out_of_range(dqn):
    _refused(dqn, _good() * 255, "must lie in [0, 1] for preset 'dqn'", "look like raw pixel values: divide by 255")


def test_negative_values_are_out_of_range(dqn):
    _refused(dqn, _good() - 0.5, "must lie in [0, 1]", "got values in [-0.")


def test_rounding_slack_is_accepted(dqn):
    x = _good()
    x[0, 0, 0, 0], x[0, 0, 0, 1] = 1 + 1e-7, -1e-7
    assert dqn.act(x).shape == (2,)


def test_mask_a3c_states_are_not_range_checked(mask_a3c):
    """Running-normalised frames are z-scores: values far outside [0, 1] are valid."""
    assert mask_a3c.input_range is None and INPUT_RANGES["mask_a3c"] is None
    x = torch.randn(2, 1, 80, 80, generator=torch.Generator().manual_seed(0)) * 3
    assert x.min() < -1 and x.max() > 2
    for call in _doors(mask_a3c).values():
        call(x)  # no error


@pytest.mark.parametrize("input_scale", [1.0, 255.0])
def test_wrapped_agents_take_unit_range_states_whatever_their_input_scale(input_scale):
    """``input_scale`` is applied inside the agent: callers always pass frames / 255."""
    agent = wrap_agent(TinyQ(), outputs="q", game="Breakout", input_scale=input_scale)
    assert agent.input_range == (0.0, 1.0)
    assert agent.act(_good()).shape == (2,)
    _refused(agent, _good() * 255, "must lie in [0, 1]")


# -- finiteness -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, what", [(float("nan"), "1 NaN and 0 infinite"), (float("inf"), "0 NaN and 1 infinite"),
                                       (float("-inf"), "0 NaN and 1 infinite")])
def test_non_finite_states_are_refused(dqn, mask_a3c, bad, what):
    x = _good()
    x[1, 2, 3, 4] = bad
    _refused(dqn, x, f"states contain {what} values")
    y = torch.zeros(2, 1, 80, 80)
    y[0, 0, 5, 5] = bad
    _refused(mask_a3c, y, f"states contain {what} values")


# -- shape ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, says", [
    ((4, 84, 84), "the batch axis is missing; pass states[None]"),
    ((2, 84, 84, 4), "channels are on the last axis (N, H, W, C); use states.permute(0, 3, 1, 2)"),
    ((2, 3, 84, 84), "3 channels instead of 4"),
    ((2, 4, 80, 84), "80×84 frames instead of 84×84"),
    ((2, 3, 64, 64), "3 channels instead of 4 and 64×64 frames instead of 84×84"),
    ((2, 1, 80, 80), "these are states of preset 'mask_a3c', but this agent takes preset 'dqn'"),
    ((2, 4, 84), "3 axes instead of 4 (N, C, H, W)"),
])
def test_shape_messages_say_what_differs(dqn, shape, says):
    x = torch.rand(shape)
    _refused(dqn, x, "states must have shape (N, 4, 84, 84) for QAgent of preset 'dqn'", f"got {shape}", says)
    if "batch axis" not in says:
        with pytest.raises(ValueError) as e:
            dqn.check_states(x)
        assert "batch axis" not in str(e.value)


def test_shape_message_of_a_mask_a3c_agent(mask_a3c):
    _refused(mask_a3c, torch.rand(2, 4, 84, 84), "(N, 1, 80, 80)",
             "states of preset 'dqn', but this agent takes preset 'mask_a3c'")
    _refused(mask_a3c, torch.rand(1, 80, 80), "the batch axis is missing")


def test_numpy_states_get_a_type_error_naming_the_conversion(dqn):
    with pytest.raises(TypeError, match=r"torch.from_numpy"):
        dqn.act(_good().numpy())


# -- cost ---------------------------------------------------------------------------------------
def test_explainers_validate_once_per_call_not_per_chunk(dqn, monkeypatch):
    calls = []
    original = Agent.check_states
    monkeypatch.setattr(Agent, "check_states", lambda self, x: calls.append(x.shape) or original(self, x))
    res = get_explainer("occlusion", dqn, patch=21, batch_size=3).attribute(_good(2))
    assert res.forward_passes > 3 and len(calls) == 1  # 16 perturbed rows per state, in chunks of 3
