"""Cascading parameter randomisation (sanity checks)."""

import math
import warnings

import numpy as np
import pytest
import torch
from toy_models import PATCH, PatchQNet, TwoHeadNet, as_agent, random_states

from saliency_lib.agents import MaskA3CConfig, build_agent
from saliency_lib.explainers.occlusion import Occlusion
from saliency_lib.metrics import (
    ConstantMapWarning,
    RandomisationTest,
    randomise_modules,
    randomised_models,
    rebuild_explainer,
)
from saliency_lib.metrics.randomisation import ORIGINAL, REFERENCE_LAYERS


def _params(agent):
    return {k: v.detach().clone() for k, v in agent.net.state_dict().items()}


@pytest.fixture(scope="module")
def agent():
    return as_agent(PatchQNet(4), 4)


def test_cascade_order_and_cumulative(agent):
    before = _params(agent)
    models = list(randomised_models(agent, seed=0))
    assert [(lv, name) for lv, name, _ in models] == [(1, "output"), (2, "fc"), (3, "conv1")]
    changed = [{k for k, v in _params(m).items() if not torch.equal(v, before[k])} for _, _, m in models]
    assert changed[0] == {"out.weight", "out.bias"}
    assert changed[1] == {"out.weight", "out.bias", "fc.weight", "fc.bias"}
    assert changed[2] == set(before)
    assert all(torch.equal(v, before[k]) for k, v in _params(agent).items())  # original untouched
    # cumulative: level 2 keeps the level-1 output weights
    torch.testing.assert_close(models[1][2].net.out.weight, models[0][2].net.out.weight)


def test_independent_order(agent):
    before = _params(agent)
    for _, name, m in randomised_models(agent, order="independent", seed=0):
        changed = {k.split(".")[0] for k, v in _params(m).items() if not torch.equal(v, before[k])}
        assert changed == {{"output": "out"}.get(name, name)}


def test_glorot_init_and_seeding(agent):
    (_, _, m1), = list(randomised_models(agent, seed=3, levels=1))
    (_, _, m2), = list(randomised_models(agent, seed=3, levels=1))
    (_, _, m3), = list(randomised_models(agent, seed=4, levels=1))
    w = m1.net.out.weight
    torch.testing.assert_close(w, m2.net.out.weight)
    assert not torch.equal(w, m3.net.out.weight)
    bound = math.sqrt(6.0 / (32 + 4))  # Keras glorot_uniform limit
    assert w.abs().max() <= bound and w.abs().max() > 0.8 * bound
    assert torch.all(m1.net.out.bias == 0)
    # the weights of a level do not depend on how many levels run
    torch.testing.assert_close(list(randomised_models(agent, seed=3))[0][2].net.out.weight, w)
    # conv fans include the kernel: bound sqrt(6 / (9·4 + 9·8))
    conv = torch.nn.Conv2d(4, 8, 3)
    randomise_modules([conv], seed=0)
    assert conv.weight.abs().max() <= math.sqrt(6.0 / (36 + 72)) and torch.all(conv.bias == 0)


def test_default_init(agent):
    (_, _, m), = list(randomised_models(agent, init="default", seed=0, levels=1))
    assert not torch.equal(m.net.out.weight, agent.net.out.weight)
    assert m.net.out.bias.abs().sum() > 0  # PyTorch's default bias is not zero
    (_, _, m2), = list(randomised_models(agent, init="default", seed=0, levels=1))
    torch.testing.assert_close(m.net.out.weight, m2.net.out.weight)


def test_real_architectures_layer_order():
    dqn = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    assert [n for _, n, _ in randomised_models(dqn, levels=5)] == ["output", "fc", "conv3", "conv2", "conv1"]
    a3c = build_agent("MaskA3CNet", {"n_actions": 4}, game="Breakout", preset="mask_a3c")
    names = [n for _, n, _ in randomised_models(a3c)]
    assert names == ["heads", "attention", "convlstm", "conv3", "conv2", "conv1"]
    assert MaskA3CConfig(n_actions=4).convlstm


def test_ground_truth_output_layer_randomisation_changes_map(agent):
    x = random_states(3, seed=1)
    test = RandomisationTest(levels=1, similarities=("spearman", "ssim", "hog_pearson"), seed=0)
    occ = Occlusion(agent, patch=6)
    orig, rand = test.maps(agent, x, explainer=occ)
    (level, name, m1), = rand
    assert (level, name) == (1, "output")
    r, c = PATCH
    assert np.abs(m1 - orig).max() > 1e-3  # the chosen-action map changed ...
    outside = np.ones((84, 84), bool)
    outside[r.start - 12 : r.stop + 12, c.start - 12 : c.stop + 12] = False  # patch ± 2 coarse cells (bilinear)
    assert np.ptp(orig[:, outside], axis=1).max() < 1e-6 and np.ptp(m1[:, outside], axis=1).max() < 1e-6  # only where it looks
    df = test.evaluate(agent, x, explainer=occ, method="occlusion", agent_name="toy")
    sp = df[df["measure"] == "spearman"].groupby("layer")["value"].mean()
    assert sp[ORIGINAL] == pytest.approx(1.0)
    assert sp["output"] < 0.6  # the similarity drops
    assert sp["random_uniform"] < 0.05 and sp["random_gaussian"] < 0.05
    assert set(df["layer"]) == {ORIGINAL, "output", *REFERENCE_LAYERS}
    assert (df["experiment"] == "sanity").all() and (df["method"] == "occlusion").all()
    assert df["level"].isna().sum() == 3 * 2 * 3  # reference rows: states × references × measures


def test_randomised_models_explain_the_original_action():
    net = TwoHeadNet()
    agent = as_agent(net, 2)
    x = random_states(4, seed=2)
    original = agent.act(x)
    seen = []

    class Recorder:
        def __init__(self, agent):
            self.agent = agent

        def attribute(self, states, *, target=None, hidden=None):
            seen.append(torch.as_tensor(target).clone())
            return self.agent(states)["q"][:, :1, None].expand(-1, 84, 84) * torch.linspace(0, 1, 84)

    df = RandomisationTest(similarities=("spearman",), reference_rows=False).evaluate(agent, x, explainer=Recorder, method="rec")
    assert len(seen) == 2  # original + 1 layer group
    for t in seen:
        assert torch.equal(t.cpu(), original)
    assert (df["target"].to_numpy() == np.repeat(original.numpy(), 2)).all()
    seen.clear()
    RandomisationTest(similarities=("spearman",)).evaluate(agent, x, explainer=Recorder, target=1)
    assert all(torch.all(t == 1) for t in seen)


def test_rebuild_explainer_shares_configuration(agent):
    occ = Occlusion(agent, patch=6, colour=0.5)
    clone = agent.clone()
    new = rebuild_explainer(occ, clone)
    assert new.agent is clone and dict(new.config) == dict(occ.config)
    x = random_states(2, seed=3)
    torch.testing.assert_close(new.attribute(x).maps, occ.attribute(x).maps)
    assert rebuild_explainer(Occlusion, clone).config["patch"] == 2  # a class is a factory with defaults
    with pytest.raises(TypeError, match="explainer must be an explainer object or a factory"):
        rebuild_explainer("occlusion", clone)


def test_constant_maps_are_flagged(agent):
    x = random_states(2, seed=4)

    def flat(a):
        return lambda states, target=None, hidden=None: torch.zeros(states.shape[0], 84, 84)

    with pytest.warns(ConstantMapWarning, match="constant map"):
        df = RandomisationTest(levels=1).evaluate(agent, x, explainer=flat)
    assert df["constant_map"].all() and df["value"].isna().all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = RandomisationTest(levels=1, similarities=("spearman",)).evaluate(agent, x, explainer=Occlusion(agent, patch=12))
    assert not ok["constant_map"].any()


def test_bad_inputs(agent):
    x = random_states(2)
    with pytest.raises(ValueError, match="unknown order 'reverse'; valid values are: 'cascading', 'independent'"):
        RandomisationTest(order="reverse")
    with pytest.raises(ValueError, match="unknown init 'he'; valid values are: 'glorot', 'default'"):
        RandomisationTest(init="he")
    with pytest.raises(ValueError, match="unknown similarity 'pearson'"):
        RandomisationTest(similarities=("pearson",))
    with pytest.raises(ValueError, match="levels must be a positive integer or None"):
        RandomisationTest(levels=0)
    with pytest.raises(ValueError, match="levels must be an integer in \\[1, 3\\]"):
        RandomisationTest(levels=7).evaluate(agent, x, explainer=Occlusion(agent, patch=12))
    with pytest.raises(ValueError, match="target actions must lie in \\[0, 4\\)"):
        RandomisationTest(levels=1).evaluate(agent, x, explainer=Occlusion(agent, patch=12), target=9)
    with pytest.raises(TypeError, match="explainer must be an explainer object or a factory"):
        RandomisationTest(levels=1).evaluate(agent, x, explainer=42)


def test_rise_masks_are_shared_with_randomised_models(agent):
    from saliency_lib.explainers import RISE

    rise = RISE(agent, n_masks=40, seed=5)
    x = random_states(2, seed=6)
    same = rebuild_explainer(rise, agent.clone())
    assert torch.equal(same.masks, rise.masks) and same.masks.data_ptr() == rise.masks.data_ptr()  # shared, not redrawn
    torch.testing.assert_close(same.attribute(x).maps, rise.attribute(x).maps)
    (_, _, model), = list(randomised_models(agent, levels=1))
    assert torch.equal(rebuild_explainer(rise, model).masks, rise.masks)
    df = RandomisationTest(levels=1, similarities=("spearman",)).evaluate(agent, x, explainer=rise, method="rise")
    # the maps change, but only slightly: with raw Q-values the RISE map is dominated by
    # mean(Q)·ΣM, a term that does not depend on the weights (so Spearman stays near 1 here)
    assert df[df["layer"] == "output"]["value"].max() < 1.0 - 1e-4
