"""eMPRT and the noise-map control: noise passes the cascade, but not the eMPRT."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from toy_models import PatchQNet, as_agent, random_states

from saliency_lib.explainers import Occlusion, RandomMap
from saliency_lib.explainers.noise_map import MapStatistics, NoiseMap, noise_like
from saliency_lib.metrics import RandomisationTest
from saliency_lib.metrics.emprt import EfficientMPRT, discrete_entropy


def test_discrete_entropy_known_values():
    assert discrete_entropy(np.full((5, 5), 3.0)) == 0.0
    two = np.zeros((4, 4))
    two[:2] = 1.0
    assert discrete_entropy(two) == pytest.approx(np.log(2))
    even = np.arange(100, dtype=float).reshape(10, 10)  # one value per bin
    assert discrete_entropy(even, n_bins=100) == pytest.approx(np.log(100))
    assert discrete_entropy(3 * even - 7) == pytest.approx(discrete_entropy(even))  # shift and scale invariant
    with pytest.raises(ValueError, match="n_bins"):
        discrete_entropy(even, n_bins=1)
    with pytest.raises(ValueError, match="finite"):
        discrete_entropy(np.array([np.nan, 1.0]))


def test_scores_are_the_relative_rise():
    two = np.zeros((1, 10, 10))
    two[0, :5] = 1.0
    even = np.arange(100, dtype=float).reshape(1, 10, 10)
    df = EfficientMPRT().scores(two, even)
    assert df["value"].iloc[0] == pytest.approx((np.log(100) - np.log(2)) / np.log(2))
    assert np.isnan(EfficientMPRT().scores(np.zeros((1, 4, 4)), even[:, :4, :4])["value"].iloc[0])  # constant original
    with pytest.raises(ValueError, match="same shape"):
        EfficientMPRT().scores(two, even[:, :5])
    with pytest.raises(ValueError, match="n_bins"):
        EfficientMPRT(n_bins=0)
    with pytest.raises(ValueError, match="init"):
        EfficientMPRT(init="zeros")


class _Frozen(nn.Module):
    """Q from a fixed buffer; its only layer group holds parameters the forward pass never uses."""

    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randn(2, 4, 84, 84, generator=torch.Generator().manual_seed(0)) / 100)
        self.unused = nn.Linear(3, 3)

    def forward(self, x):
        return torch.einsum("nchw,achw->na", x, self.w)

    def layer_groups(self):
        return [("output", [self.unused])]


def test_emprt_is_zero_when_randomisation_changes_nothing():
    agent = as_agent(_Frozen(), 2)
    states = random_states(4)
    df = EfficientMPRT(seed=1).evaluate(agent, states, explainer=Occlusion(agent, patch=12), state_ids=[3, 4, 5, 6],
                                        method="occlusion")
    assert list(df["state"]) == [3, 4, 5, 6] and (df["method"] == "occlusion").all()
    assert (df["complexity_original"] > 0).all()
    np.testing.assert_array_equal(df["value"].to_numpy(), np.zeros(4))


def test_emprt_sees_a_change_where_randomisation_changes_the_maps():
    agent = as_agent(PatchQNet(), 4)
    df = EfficientMPRT(seed=0).evaluate(agent, random_states(3), explainer=Occlusion(agent, patch=12))
    assert np.isfinite(df["value"]).all() and (df["value"] != 0).all()


@pytest.fixture(scope="module")
def reference():
    agent = as_agent(PatchQNet(), 4)
    states = random_states(6, seed=2)
    ref = Occlusion(agent, patch=4).attribute(states).maps.numpy()
    return agent, states, ref, MapStatistics.from_maps(ref)


def test_noise_maps_copy_the_value_distribution_and_smoothness():
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(0)
    # smooth, skewed reference maps: blurred noise, squared
    ref = np.stack([gaussian_filter(rng.standard_normal((84, 84)), 3.0, mode="wrap") ** 2 for _ in range(8)])
    stats = MapStatistics.from_maps(torch.as_tensor(ref))
    noise = np.stack([noise_like(stats, rng) for _ in range(8)])
    # the same values: each noise map's sorted values follow the references' quantiles
    np.testing.assert_allclose(np.quantile(noise, [0.1, 0.5, 0.9]), np.quantile(ref, [0.1, 0.5, 0.9]), rtol=0.05, atol=1e-3)

    def lag1(m):  # mean correlation of horizontally adjacent pixels
        return np.mean([np.corrcoef(a[:, :-1].ravel(), a[:, 1:].ravel())[0, 1] for a in m])

    white = rng.random((6, 84, 84))
    assert abs(lag1(noise) - lag1(ref)) < 0.05 and lag1(white) < 0.05 < 0.5 < lag1(noise)
    assert "n_maps=8" in repr(stats)


def test_noise_map_depends_on_seed_state_and_weights_only(reference):
    agent, states, _, stats = reference
    nm = NoiseMap(agent, statistics=stats, seed=3)
    a = nm.attribute(states).maps
    assert a.shape == (6, 84, 84) and torch.equal(a, nm.attribute(states).maps)
    assert torch.equal(nm.attribute(states[[2, 0]]).maps, a[[2, 0]])  # not the batch position
    other = agent.clone()
    with torch.no_grad():
        other.net.out.weight.mul_(1.5)
    assert not torch.equal(nm.for_agent(other).attribute(states).maps, a)
    fixed = NoiseMap(agent, statistics=stats, seed=3, weight_dependent=False)
    assert torch.equal(fixed.attribute(states).maps, fixed.for_agent(other).attribute(states).maps)
    assert not torch.equal(NoiseMap(agent, statistics=stats, seed=4).attribute(states).maps, a)
    with pytest.raises(TypeError, match="MapStatistics"):
        NoiseMap(agent, statistics=np.zeros((84, 84)))
    with pytest.raises(ValueError, match="shape"):
        NoiseMap(agent, statistics=MapStatistics.from_maps(np.random.default_rng(0).random((2, 80, 80))))
    with pytest.raises(ValueError, match="non-empty"):
        MapStatistics.from_maps(np.zeros((0, 84, 84)))


def test_noise_passes_the_cascade_but_not_the_emprt(reference):
    # Binder et al.: noise that changes with the weights passes the cascading test (low similarity
    # to the trained agent's map), while a model-independent random map fails it (similarity 1);
    # the eMPRT asks whether the map gets more complex, and noise of fixed statistics does not
    agent, states, _, stats = reference
    test = RandomisationTest(similarities=("spearman",), reference_rows=False, seed=0)
    sim = lambda exp: test.evaluate(agent, states, explainer=exp).query("level > 0")["value"].mean()  # noqa: E731
    assert sim(NoiseMap(agent, statistics=stats)) < 0.2
    assert sim(RandomMap(agent)) == pytest.approx(1.0)
    em = EfficientMPRT(seed=0).evaluate(agent, states, explainer=NoiseMap(agent, statistics=stats))
    assert em["value"].abs().max() < 0.05
