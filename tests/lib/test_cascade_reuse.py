"""Activation reuse across the randomisation cascade gives the table of separate runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from toy_models import PatchQNet, as_agent, random_states

from saliency_lib.agents import ActorCriticAgent, DQNConfig, DQNNet, MaskA3CConfig, MaskA3CNet, QAgent
from saliency_lib.agents.mask_a3c import max_pool2
from saliency_lib.explainers import RISE, Occlusion, get_explainer
from saliency_lib.inference import StagedForward, staged_forward, staged_support
from saliency_lib.metrics import RandomisationTest
from saliency_lib.metrics.randomisation import randomised_models

SIMS = ("spearman", "ssim")


def dqn(dueling=True, seed=0):
    torch.manual_seed(seed)
    net = DQNNet(DQNConfig(n_actions=4, dueling=dueling))
    with torch.no_grad():  # larger outputs than PyTorch's default init (see test_incremental.dqn_agent)
        for name in ("out", "out_adv", "out_value"):
            if hasattr(net, name):
                getattr(net, name).weight.mul_(30.0)
    return QAgent(net, game="Breakout", preset="dqn", n_actions=4)


def mask_a3c(seed=0):
    torch.manual_seed(seed)
    return ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)


def tables(agent, x, explainer, hidden=None, **kw):
    out = []
    for reuse in (True, False):
        test = RandomisationTest(similarities=SIMS, reuse=reuse, reference_rows=False, **kw)
        out.append(test.evaluate(agent, x, explainer=explainer, hidden=hidden, method="m"))
    return out


def assert_same_table(a: pd.DataFrame, b: pd.DataFrame, atol=1e-4):
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    key = ["state", "level", "layer", "measure"]
    pd.testing.assert_frame_equal(a[key], b[key])
    np.testing.assert_allclose(a["value"].to_numpy(float), b["value"].to_numpy(float), atol=atol, equal_nan=True)


@pytest.mark.parametrize("name,params", [
    ("occlusion", {"patch": 6}),
    ("ns_black", {"radius": 3, "stride": 7}),
    ("ns_original", {"radius": 3, "stride": 11}),
    ("sarfa", {"radius": 2, "stride": 8}),
    ("rise", {"n_masks": 64}),
    ("lime_slic", {"n_samples": 40}),
])
def test_dqn_cascade_table(name, params):
    agent = dqn()
    x = random_states(2, seed=1)
    assert_same_table(*tables(agent, x, get_explainer(name, agent, **params)))


def test_naive_passes_and_independent_order_and_classes():
    agent = dqn(dueling=False, seed=1)
    x = random_states(2, seed=2)
    assert_same_table(*tables(agent, x, Occlusion(agent, patch=7, naive=True)))
    assert_same_table(*tables(agent, x, Occlusion(agent, patch=7), order="independent"))
    assert_same_table(*tables(agent, x[:1], Occlusion, levels=2))  # a class: default parameters on every model


def test_mask_a3c_cascade_with_recurrent_state():
    agent = mask_a3c()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 1, 80, 80, generator=g)
    hidden = tuple(0.1 * torch.randn(2, 64, 10, 10, generator=g) for _ in range(2))
    assert staged_support(agent) is None
    assert_same_table(*tables(agent, x, Occlusion(agent, patch=16), hidden=hidden))
    assert_same_table(*tables(agent, x, RISE(agent, n_masks=32, seed=1), hidden=hidden, levels=3))


def test_staged_forward_equals_full_passes_and_shares_the_trunk():
    for agent, x, hidden in [(dqn(), random_states(3, seed=3), None),
                             (mask_a3c(), torch.randn(3, 1, 80, 80), tuple(torch.randn(3, 64, 10, 10) for _ in range(2)))]:
        models = [agent] + [m for _, _, m in randomised_models(agent, seed=0)]
        staged = StagedForward(models)
        assert staged.cuts[0] == 0 and staged.cuts[1:] == sorted(staged.cuts[1:], reverse=True) and staged.cuts[-1] == 0
        calls = []
        conv1 = agent.net.conv1
        # counts evaluations of the shared first layer
        conv1.forward = lambda t, f=conv1.forward, calls=calls: calls.append(1) or f(t)
        with torch.no_grad():
            got = staged(x, hidden)
            for out, m in zip(got, models):
                ref = m(x, hidden)
                key = "q" if "q" in ref else "logits"
                torch.testing.assert_close(out[key], ref[key], rtol=1e-5, atol=1e-5)
        assert len(calls) == 2  # once in the staged pass, once in the original's own full pass
        del conv1.forward


def test_factories_and_foreign_networks_still_work():
    agent = as_agent(PatchQNet(4), 4)
    x = random_states(2, seed=4)
    a, b = tables(agent, x, Occlusion(agent, patch=12))  # not staged: explained model by model
    assert_same_table(a, b)
    c = RandomisationTest(similarities=SIMS, reference_rows=False).evaluate(agent, x, explainer=lambda m: Occlusion(m, patch=12),
                                                                            method="m")
    assert_same_table(a, c)
    with pytest.raises(ValueError, match="reuse must be True or False"):
        RandomisationTest(reuse="yes")
    assert "reuse" not in RandomisationTest().config


def test_shared_recurrent_half_equals_the_cell_and_is_used_by_one_agent():
    """ConvLSTMCell.forward_shared computes conv_h(h) once per run of equal rows: the cell's values to rounding."""
    agent = mask_a3c(seed=2)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 1, 80, 80, generator=g)
    per_state = tuple(0.3 * torch.randn(3, 64, 10, 10, generator=g) for _ in range(2))
    rows = torch.tensor([0, 0, 0, 1, 1, 2, 0])  # runs of one state, and a state that comes back
    hidden = tuple(h[rows] for h in per_state)
    cell = agent.net.convlstm1
    with torch.no_grad():
        feats = F.relu(max_pool2(agent.net.conv3(F.relu(max_pool2(agent.net.conv2(F.relu(max_pool2(agent.net.conv1(x)))))))))
        for got, ref in zip(cell.forward_shared(feats, hidden), cell(feats, hidden)):
            torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
        staged = staged_forward([agent])
        assert staged is not None and staged_forward([dqn()]) is None  # one DQN has nothing to share
        torch.testing.assert_close(staged(x, hidden)[0]["logits"], agent(x, hidden)["logits"], rtol=1e-5, atol=1e-6)
