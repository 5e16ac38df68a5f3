"""Similarity measures of the sanity checks (reference §5)."""

import warnings

import numpy as np
import pytest
import torch
from scipy.ndimage import gaussian_filter
from scipy.stats import pearsonr, spearmanr
from skimage.feature import hog
from skimage.metrics import structural_similarity

from saliency_lib.metrics.similarity import (
    SIMILARITIES,
    ConstantMapWarning,
    hog_pearson,
    is_constant,
    normalise_map,
    similarity,
    spearman,
    ssim,
    ssim_2d,
)


def _smooth_map(rng, sigma=3.0):
    return gaussian_filter(rng.random((84, 84)), sigma)


@pytest.mark.parametrize("name", list(SIMILARITIES))
def test_identical_maps_score_one(name):
    m = _smooth_map(np.random.default_rng(0))
    assert similarity(name, m, m) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("name", list(SIMILARITIES))
def test_inverted_map_scores_one(name):
    m = _smooth_map(np.random.default_rng(1))
    assert similarity(name, m, 1.0 - m) == pytest.approx(1.0, abs=1e-9)
    assert similarity(name, m, -5.0 * m + 3.0) == pytest.approx(1.0, abs=1e-9)  # affine, sign flipped


def test_sign_inversion_can_be_switched_off():
    m = _smooth_map(np.random.default_rng(2))
    assert spearman(m, -m, sign_invariant=False) == pytest.approx(-1.0)
    assert spearman(m, -m) == pytest.approx(1.0)


def test_tensors_and_scale_invariance():
    m = _smooth_map(np.random.default_rng(3))
    t = torch.from_numpy(m * 40 + 7).float()
    assert ssim_2d(m, t) == pytest.approx(1.0, abs=1e-5)


def test_spearman_matches_scipy():
    rng = np.random.default_rng(4)
    a, b = _smooth_map(rng), _smooth_map(rng)
    an, bn = normalise_map(a), normalise_map(b)
    ref = max(spearmanr(an.ravel(), bn.ravel()).statistic, spearmanr(an.ravel(), (1 - bn).ravel()).statistic)
    assert spearman(a, b) == pytest.approx(ref, abs=1e-12)


def test_ssim_matches_skimage_on_flattened_vectors():
    rng = np.random.default_rng(5)
    a, b = _smooth_map(rng), _smooth_map(rng)
    an, bn = normalise_map(a), normalise_map(b)
    ref = max(structural_similarity(an.ravel(), bn.ravel(), data_range=1.0),
              structural_similarity(an.ravel(), (1 - bn).ravel(), data_range=1.0))
    assert ssim(a, b) == pytest.approx(ref, abs=1e-12)
    ref2 = max(structural_similarity(an, bn, data_range=1.0), structural_similarity(an, 1 - bn, data_range=1.0))
    assert ssim_2d(a, b) == pytest.approx(ref2, abs=1e-12)
    assert ssim(a, b) != pytest.approx(ssim_2d(a, b), abs=1e-3)  # 1-D and 2-D really differ


def test_hog_pearson_matches_skimage():
    rng = np.random.default_rng(6)
    a, b = _smooth_map(rng), _smooth_map(rng)
    an, bn = normalise_map(a), normalise_map(b)
    ha = hog(an, pixels_per_cell=(3, 3))
    ref = max(pearsonr(ha, hog(bn, pixels_per_cell=(3, 3))).statistic,
              pearsonr(ha, hog(1 - bn, pixels_per_cell=(3, 3))).statistic)
    assert hog_pearson(a, b) == pytest.approx(ref, abs=1e-12)
    assert ha.size == 26 * 26 * 3 * 3 * 9  # 28×28 cells of 3 px, 3×3-cell blocks, 9 orientations


def test_random_maps_calibration():
    """Independent random maps: Spearman and HOG-Pearson ≈ 0, SSIM ≈ the paper's reference values.

    Measured with this implementation (30 pairs each):
    * two uniform maps: Spearman 0.013, SSIM 0.016, HOG 0.017;
    * two Gaussian maps: SSIM 0.036;
    * a smooth (saliency-like) map versus a uniform map: SSIM 0.013 — the paper's ≈0.01;
    * a smooth map versus a Gaussian map: SSIM 0.05 — the paper's ≈0.06 (its reference rows
      compare a real saliency map with a random one). The sign-invariant max makes all values ≥ 0.
    """
    rng = np.random.default_rng(7)
    vals = {k: [] for k in ("sp", "hog", "ssim_uu", "ssim_gg", "ssim_su", "ssim_sg")}
    for _ in range(12):
        u1, u2 = rng.random((84, 84)), rng.random((84, 84))
        g1, g2 = rng.standard_normal((84, 84)), rng.standard_normal((84, 84))
        s = _smooth_map(rng, 3.0)
        vals["sp"].append(spearman(u1, u2))
        vals["hog"].append(hog_pearson(u1, u2))
        vals["ssim_uu"].append(ssim(u1, u2))
        vals["ssim_gg"].append(ssim(g1, g2))
        vals["ssim_su"].append(ssim(s, rng.random((84, 84))))
        vals["ssim_sg"].append(ssim(s, rng.standard_normal((84, 84))))
    mean = {k: float(np.mean(v)) for k, v in vals.items()}
    assert 0 <= mean["sp"] < 0.03
    assert 0 <= mean["hog"] < 0.04
    assert 0.005 < mean["ssim_uu"] < 0.03
    assert 0.02 < mean["ssim_gg"] < 0.055
    assert 0.003 < mean["ssim_su"] < 0.025  # paper ≈ 0.01
    assert 0.035 < mean["ssim_sg"] < 0.075  # paper ≈ 0.06
    assert mean["ssim_sg"] > 2 * mean["ssim_su"]


@pytest.mark.parametrize("name", list(SIMILARITIES))
def test_constant_map_gives_nan_and_warns(name):
    m = _smooth_map(np.random.default_rng(8))
    with pytest.warns(ConstantMapWarning, match="constant"):
        v = similarity(name, m, np.zeros((84, 84)))
    assert np.isnan(v)
    with pytest.warns(ConstantMapWarning):
        assert np.isnan(similarity(name, np.ones((84, 84)), m))


def test_normalise_and_is_constant():
    assert is_constant(np.full((3, 3), 2.0))
    assert not is_constant(np.eye(3))
    n = normalise_map(np.array([[1.0, 3.0], [2.0, 5.0]]))
    assert n.min() == 0 and n.max() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(normalise_map(np.ones((4, 4)))).all()


def test_bad_inputs():
    m = np.random.default_rng(9).random((84, 84))
    with pytest.raises(ValueError, match="same shape"):
        spearman(m, m[:80])
    with pytest.raises(ValueError, match="2-D saliency map"):
        spearman(m[None], m[None])
    with pytest.raises(ValueError, match="NaN or infinite"):
        ssim(m, np.full_like(m, np.nan))
    with pytest.raises(ValueError, match="unknown similarity 'pearson'; valid similarities are: spearman"):
        similarity("pearson", m, m)
    with pytest.raises(ValueError, match="at least 9×9"):
        hog_pearson(m[:5, :5], m[:5, :5])


def test_similarities_to_equals_the_pairwise_measures():
    """The shared-work comparer gives every pairwise value.

    Random, inverted, tied and constant maps, with and without the sign inversion.
    """
    import warnings

    from saliency_lib.metrics.similarity import SIMILARITIES, similarities_to

    rng = np.random.default_rng(7)
    a = rng.random((21, 30))
    others = [rng.random((21, 30)), 1.0 - a, -3 * a + 2, np.round(rng.random((21, 30)) * 2), a ** 3, np.ones((21, 30))]
    measures = list(SIMILARITIES)
    for inv in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = np.array([[SIMILARITIES[m](a, b, sign_invariant=inv) for m in measures] for b in others])
        got = similarities_to(a, others, measures, sign_invariant=inv)
        assert np.array_equal(np.isnan(ref), np.isnan(got))
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert np.isnan(similarities_to(np.zeros((21, 30)), others[:2], measures)).all()  # constant reference
    # the inverted map is identical under the sign inversion, and anti-correlated without it
    assert similarities_to(a, [1.0 - a], ["spearman"])[0, 0] == pytest.approx(1.0)
    assert similarities_to(a, [1.0 - a], ["spearman"], sign_invariant=False)[0, 0] == pytest.approx(-1.0)


def test_similarities_to_rejects_bad_inputs():
    from saliency_lib.metrics.similarity import similarities_to

    a = np.random.default_rng(0).random((12, 12))
    with pytest.raises(ValueError, match="unknown similarity 'pearson'"):
        similarities_to(a, [a], ["pearson"])
    with pytest.raises(ValueError, match="same shape"):
        similarities_to(a, [a[:5]], ["spearman"])
    with pytest.raises(ValueError, match="NaN or infinite"):
        similarities_to(a, [np.full((12, 12), np.nan)], ["spearman"])
    with pytest.raises(ValueError, match="at least 9×9"):
        similarities_to(a[:8, :8], [a[:8, :8]], ["hog_pearson"])


@pytest.mark.parametrize("shape", [(84, 84), (80, 80), (85, 83), (9, 9), (30, 47)])
def test_hog_descriptor_is_scikit_images_hog(shape):
    """The vectorised HOG equals skimage.feature.hog bit for bit: noise, plateaus (zero gradients, orientations
    on the bin edges) and smooth ramps, with cells that do not tile the map."""
    from skimage.feature import hog

    from saliency_lib.metrics.similarity import HOG_PARAMS, hog_descriptor

    rng = np.random.default_rng(sum(shape))
    for a in (rng.random(shape), np.round(rng.random(shape) * 4) / 4, np.cumsum(rng.random(shape), 1) / shape[1],
              np.zeros(shape)):
        np.testing.assert_array_equal(hog_descriptor(a), hog(a, **HOG_PARAMS))


def test_spearman_untied_known_answer_a_shared_black_block():
    """Two maps that are 0 on a shared two-thirds block and independent noise elsewhere:
    Spearman over all pixels is high from the block alone, outside it about 0 (scipy's value
    on the other pixels)."""
    from saliency_lib.metrics.similarity import spearman_untied

    rng = np.random.default_rng(11)
    a, b = rng.random((84, 84)), rng.random((84, 84))
    block = np.zeros((84, 84), dtype=bool)
    block[:, :56] = True
    a[block], b[block] = 0.0, 0.0
    assert spearman(a, b) > 0.9
    got = spearman_untied(a, b)
    assert got == pytest.approx(abs(spearmanr(a[~block], b[~block]).statistic), abs=1e-12)
    assert got < 0.1
    # blocks that do not overlap: nothing is shared, so it equals Spearman
    b2 = rng.random((84, 84))
    b2[:, 56:] = 0.0
    assert spearman_untied(a, b2) == pytest.approx(spearman(a, b2), abs=1e-12)


def test_spearman_untied_depends_on_the_rest_not_on_the_block():
    from saliency_lib.metrics.similarity import spearman_untied

    rng = np.random.default_rng(12)
    a = _smooth_map(rng)
    a[:40] = 0.0
    b = a.copy()
    b[40:] = b[40:] ** 2  # same order outside the block: identical ranks
    assert spearman_untied(a, b) == pytest.approx(1.0, abs=1e-12)
    assert spearman_untied(a, b, sign_invariant=False) == pytest.approx(1.0, abs=1e-12)
    c = a.copy()
    c[40:] = 1.0 - c[40:]  # reversed order outside the block
    assert spearman_untied(a, c, sign_invariant=False) == pytest.approx(-1.0, abs=1e-12)
    assert spearman_untied(a, c) == pytest.approx(1.0, abs=1e-12)


def test_largest_tie():
    from saliency_lib.metrics.similarity import largest_tie

    m = np.array([[0.0, 0.0, 0.5], [0.5, 0.5, 1.0], [2.0, -1.0, 0.5]])
    block, below = largest_tie(m)
    assert block.tolist() == [[False, False, True], [True, True, False], [False, False, True]]
    assert below == pytest.approx(3 / 5)  # 0, 0, −1 below 0.5; 1 and 2 above
    block, below = largest_tie(np.zeros((3, 4)))
    assert block.all() and np.isnan(below)
    with pytest.raises(ValueError, match="2-D saliency map"):
        largest_tie(np.zeros(5))


def test_spearman_untied_too_few_pixels_outside_and_bad_inputs():
    from saliency_lib.metrics.similarity import spearman_untied

    a = np.zeros((10, 10))
    a[0, :2] = [1.0, 2.0]  # 98 tied pixels in both maps, 2 outside
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(spearman_untied(a, a.copy()))
    m = np.random.default_rng(13).random((20, 20))
    with pytest.raises(ValueError, match="same shape"):
        spearman_untied(m, m[:10])
    with pytest.raises(ValueError, match="NaN or infinite"):
        spearman_untied(m, np.full_like(m, np.inf))
