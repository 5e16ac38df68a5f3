"""Insertion and deletion metrics on ground-truth toy agents."""

import numpy as np
import pytest
import torch
from toy_models import PATCH, LinearQNet, PatchQNet, as_agent, random_states

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
from saliency_lib.metrics import Deletion, Insertion, auc, make_substrate, random_saliency

N = 6


@pytest.fixture(scope="module")
def patch_agent():
    return as_agent(PatchQNet(4), 4)


@pytest.fixture(scope="module")
def states():
    return random_states(N, seed=0)


def _orderings():
    perfect = np.zeros((N, 84, 84))
    perfect[:, PATCH[0], PATCH[1]] = 1.0
    perfect += np.random.default_rng(0).random((N, 84, 84)) * 1e-3  # strict order inside and outside the patch
    return {"perfect": perfect, "random": random_saliency(N, (84, 84), seed=1), "reversed": -perfect}


def _mean_auc(df, measure):
    return float(df[df["measure"] == measure]["value"].mean())


@pytest.mark.parametrize("measure", ["q_ratio", "advantage"])
def test_ground_truth_ordering(patch_agent, states, measure):
    maps = _orderings()
    ins = {k: _mean_auc(Insertion().evaluate(patch_agent, states, saliency=m), f"{measure}_auc") for k, m in maps.items()}
    dele = {k: _mean_auc(Deletion().evaluate(patch_agent, states, saliency=m), f"{measure}_auc") for k, m in maps.items()}
    assert ins["perfect"] > ins["random"] > ins["reversed"]
    assert dele["perfect"] < dele["random"] < dele["reversed"]


def test_curve_shape_and_endpoints(patch_agent, states):
    m = _orderings()["random"]
    df = Insertion().evaluate(patch_agent, states, saliency=m, method="random")
    q = df[df["measure"] == "q_ratio"]
    assert q["step"].max() == 84 and len(q) == N * 85  # 85 evaluations for 7056 pixels
    last = q[q["step"] == 84]["value"].to_numpy()
    np.testing.assert_allclose(last, 1.0, rtol=1e-6)  # the final insertion image is the state
    first = df[(df["measure"] == "q[0]") & (df["step"] == 0)]["value"].to_numpy()
    blank = patch_agent(torch.zeros(1, 4, 84, 84))["q"][0, 0].item()
    np.testing.assert_allclose(first, blank, rtol=1e-5)  # step 0 is the black substrate
    assert set(df["measure"]) >= {"q[0]", "q[3]", "advantage", "q_ratio_auc_trapz", "advantage_auc"}
    assert (df["experiment"] == "insertion").all() and (df["substrate"] == "black").all()
    d = Deletion().evaluate(patch_agent, states, saliency=m)
    q0 = d[(d["measure"] == "q_ratio") & (d["step"] == 0)]["value"].to_numpy()
    np.testing.assert_allclose(q0, 1.0, rtol=1e-6)  # deletion starts from the state


def test_batch_size_and_pixels_per_step(patch_agent, states):
    m = _orderings()["random"]
    a = Insertion(batch_size=7).evaluate(patch_agent, states, saliency=m)
    b = Insertion(batch_size=1000).evaluate(patch_agent, states, saliency=m)
    np.testing.assert_allclose(a["value"].to_numpy(), b["value"].to_numpy(), rtol=1e-5, atol=1e-6)
    c = Insertion(pixels_per_step=1000, store_outputs=False).evaluate(patch_agent, states, saliency=m)
    assert c["step"].max() == 8  # ceil(7056 / 1000) = 8 steps, 9 evaluations
    assert not c["measure"].str.startswith("q[").any()


def test_auc_rules():
    curve = np.array([[0.0, 1.0, 1.0]])
    assert auc(curve, rule="mean")[0] == pytest.approx(2 / 3)
    assert auc(curve, rule="trapezoid")[0] == pytest.approx(0.75)
    assert auc(curve, rule="trapezoid", fractions=np.array([0, 0.9, 1.0]))[0] == pytest.approx(0.55)
    with pytest.raises(ValueError, match="unknown rule 'simpson'"):
        auc(curve, rule="simpson")


def test_substrates():
    x = random_states(3, seed=2)
    assert torch.equal(make_substrate(x, "black"), torch.zeros_like(x))
    r1 = make_substrate(x, "random", seed=0, state_ids=[5, 6, 7])
    r2 = make_substrate(x[1:], "random", seed=0, state_ids=[6, 7])
    assert torch.equal(r1[1:], r2)  # per-state seeding, independent of batching
    assert not torch.equal(r1[0], r1[1])
    assert 0 <= r1.min() and r1.max() < 1
    b = make_substrate(x, "blur", blur_sigma=5.0)
    assert b.shape == x.shape and b.std() < x.std() / 5
    # the blur does not mix frames: a single lit frame stays in its frame
    one = torch.zeros(1, 4, 84, 84)
    one[0, 2] = 1.0
    assert make_substrate(one, "blur")[0, [0, 1, 3]].abs().max() == 0


def test_target_is_used(states):
    agent = as_agent(LinearQNet(3), 3)
    m = random_saliency(N, (84, 84), seed=4)
    df = Insertion().evaluate(agent, states, saliency=m, target=2)
    assert (df["target"] == 2).all()


def test_recurrent_actor_critic_with_fixed_hidden():
    torch.manual_seed(0)
    net = MaskA3CNet(MaskA3CConfig(n_actions=4))
    agent = ActorCriticAgent(net, game="Breakout", preset="mask_a3c", n_actions=4)
    x = torch.randn(3, 1, 80, 80)
    hidden = tuple(torch.randn(3, 64, 10, 10) for _ in range(2))
    m = random_saliency(3, (80, 80), seed=0)
    df = Insertion(substrate="blur", pixels_per_step=400).evaluate(agent, x, saliency=m, hidden=hidden)
    assert set(df["measure"]) >= {"prob", "value", "prob_auc", "value_auc_trapz", "logits[3]"}
    # the last step is the unperturbed state with its own hidden state
    clean = agent(x, hidden)
    last = df[(df["measure"] == "value") & (df["step"] == 16)].sort_values("state")["value"].to_numpy()
    np.testing.assert_allclose(last, clean["value"].detach().numpy(), rtol=1e-4, atol=1e-5)
    other = Insertion(substrate="blur", pixels_per_step=400).evaluate(agent, x, saliency=m)  # hidden = zeros
    assert not np.allclose(other["value"].to_numpy(), df["value"].to_numpy())


def test_bad_inputs(patch_agent, states):
    m = _orderings()["random"]
    with pytest.raises(ValueError, match="unknown substrate 'gray'; valid values are: 'black', 'random', 'blur'"):
        Insertion(substrate="gray")
    with pytest.raises(ValueError, match="pixels_per_step must be an integer >= 1, got 0"):
        Insertion(pixels_per_step=0)
    with pytest.raises(ValueError, match="blur_sigma must be a positive number"):
        Insertion(blur_sigma=-1.0)
    with pytest.raises(ValueError, match="unknown measure 'auc'"):
        Insertion(measures=("auc",))
    with pytest.raises(ValueError, match="not defined for a QAgent"):
        Insertion(measures=("prob",)).evaluate(patch_agent, states, saliency=m)
    with pytest.raises(ValueError, match="saliency must have shape \\(N, H, W\\) = \\(6, 84, 84\\)"):
        Insertion().evaluate(patch_agent, states, saliency=m[:, :80])
    with pytest.raises(ValueError, match="exactly one of saliency"):
        Insertion().evaluate(patch_agent, states)
    with pytest.raises(ValueError, match="target actions must lie in \\[0, 4\\)"):
        Insertion().evaluate(patch_agent, states, saliency=m, target=7)
    with pytest.raises(ValueError, match="states must have shape"):
        Insertion().evaluate(patch_agent, states[:, :3], saliency=m)


@pytest.mark.parametrize("metric", [Insertion, Deletion])
@pytest.mark.parametrize("substrate", ["black", "random", "blur"])
def test_every_step_image_is_the_pixel_selection_of_state_and_substrate(states, metric, substrate):
    """The images the network sees (built with bit operations on float32) are exactly torch.where of the
    state and the substrate on the top-ranked pixels, step by step, for every chunking."""
    from saliency_lib.agents import QAgent

    seen = []

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(()))

        def forward(self, x):
            seen.append(x.clone())
            return x.flatten(1)[:, :4] * self.scale

    agent = QAgent(Recorder(), game="Breakout", preset="dqn", n_actions=4)
    x = states[:3]
    maps = random_saliency(3, (84, 84), seed=4)
    ppx = 700
    m = metric(substrate=substrate, pixels_per_step=ppx, batch_size=5, reuse_endpoints=False, seed=2)
    m.curves(agent, x, maps, state_ids=[0, 1, 2])
    got = torch.cat(seen)
    sub = make_substrate(x, substrate, seed=2, state_ids=[0, 1, 2])
    order = torch.argsort(torch.from_numpy(-maps.reshape(3, -1)), dim=1, stable=True)
    t_count = m.n_steps(84 * 84)
    want = []
    for i in range(3):
        for t in range(t_count):
            changed = torch.zeros(84 * 84, dtype=torch.bool)
            changed[order[i, : min(t * ppx, 84 * 84)]] = True
            a, b = (x[i], sub[i]) if metric is Insertion else (sub[i], x[i])
            want.append(torch.where(changed.view(1, 84, 84), a, b))
    assert torch.equal(got, torch.stack(want))
