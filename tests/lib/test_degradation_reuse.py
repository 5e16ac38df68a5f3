"""Insertion and deletion share their map-independent endpoints across metrics and maps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from toy_models import PatchQNet, as_agent, random_states

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
from saliency_lib.metrics import Deletion, Insertion
from saliency_lib.metrics import insertion_deletion as idm


@pytest.fixture()
def agent():
    return as_agent(PatchQNet(4), 4)


def _count_calls(agent):
    calls = []
    net = agent.net
    net.features = lambda x, f=net.features: calls.append(x.shape[0]) or f(x)  # QAgent calls features, then head
    return calls


@pytest.mark.parametrize("mode", [Insertion, Deletion])
@pytest.mark.parametrize("substrate", ["black", "random", "blur"])
def test_same_table_with_and_without_reuse(agent, mode, substrate):
    x = random_states(3, seed=1)
    maps = np.random.default_rng(0).random((3, 84, 84))
    a = mode(substrate=substrate, pixels_per_step=300, seed=2, reuse_endpoints=True).evaluate(agent, x, saliency=maps,
                                                                                              state_ids=[5, 6, 7])
    b = mode(substrate=substrate, pixels_per_step=300, seed=2, reuse_endpoints=False).evaluate(agent, x, saliency=maps,
                                                                                               state_ids=[5, 6, 7])
    pd.testing.assert_frame_equal(a.drop(columns="value"), b.drop(columns="value"))
    np.testing.assert_allclose(a["value"].to_numpy(float), b["value"].to_numpy(float), rtol=1e-5, atol=1e-5)


def test_endpoints_are_computed_once_across_metrics_and_maps(agent):
    idm._ENDPOINTS.clear()
    x = random_states(2, seed=3)
    rng = np.random.default_rng(1)
    calls = _count_calls(agent)
    steps = Insertion(pixels_per_step=700).n_steps(84 * 84)  # 12 evaluations per state
    for maps in (rng.random((2, 84, 84)), rng.random((2, 84, 84))):  # two methods
        for mode in (Insertion, Deletion):
            mode(substrate="black", pixels_per_step=700).evaluate(agent, x, saliency=maps)
    # clean outputs (2 rows) + substrate outputs (2 rows) once, then only the inner steps of each curve
    assert sum(calls) == 2 + 2 + 4 * 2 * (steps - 2)
    del agent.net.features


def test_cache_sees_new_weights_and_new_networks(agent):
    x = random_states(1, seed=4)
    maps = np.random.default_rng(2).random((1, 84, 84))
    a = Insertion(pixels_per_step=500).curves(agent, x, maps)
    with torch.no_grad():
        agent.net.out.weight.mul_(2.0)
    b = Insertion(pixels_per_step=500).curves(agent, x, maps)
    c = Insertion(pixels_per_step=500, reuse_endpoints=False).curves(agent, x, maps)
    assert not np.allclose(a["scores"][:, -1], b["scores"][:, -1])
    np.testing.assert_allclose(b["scores"], c["scores"], rtol=1e-5, atol=1e-5)
    other = as_agent(PatchQNet(4, seed=1), 4)
    d = Insertion(pixels_per_step=500).curves(other, x, maps)
    e = Insertion(pixels_per_step=500, reuse_endpoints=False).curves(other, x, maps)
    np.testing.assert_allclose(d["scores"], e["scores"], rtol=1e-5, atol=1e-5)


def test_recurrent_agent_values():
    torch.manual_seed(0)
    ac = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    x = torch.randn(2, 1, 80, 80)
    hidden = tuple(0.1 * torch.randn(2, 64, 10, 10) for _ in range(2))
    maps = np.random.default_rng(3).random((2, 80, 80))
    a = Deletion(substrate="blur", pixels_per_step=640).curves(ac, x, maps, hidden=hidden)
    b = Deletion(substrate="blur", pixels_per_step=640, reuse_endpoints=False).curves(ac, x, maps, hidden=hidden)
    for k in ("scores", "value"):
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-5)
