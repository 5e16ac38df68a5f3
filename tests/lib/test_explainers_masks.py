"""The pure mask generators and resampling helpers against the libraries whose semantics they copy."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import scipy.ndimage as ndi
import torch
from PIL import Image
from skimage.transform import resize

from saliency_lib.explainers._masks import (
    bilinear_resize,
    blurred_point_masks,
    blurred_point_window,
    box_indices,
    box_masks,
    disk_indices,
    disk_masks,
    gaussian_blur,
    gaussian_kernel1d,
    lime_design,
    linear_interp_matrix,
    rise_masks,
)


@pytest.fixture(scope="module")
def stack():
    return np.random.default_rng(0).random((4, 84, 84)).astype(np.float32)


def test_gaussian_kernel_matches_scipy():
    impulse = np.zeros(41)
    impulse[20] = 1.0
    for sigma in (0.7, 2.0, 3.0):
        ref = ndi.gaussian_filter1d(impulse, sigma)
        k = gaussian_kernel1d(sigma).numpy()
        r = (len(k) - 1) // 2
        np.testing.assert_allclose(ref[20 - r : 21 + r], k[::-1], atol=1e-12)


def test_blur_across_frames_matches_scipy_3d(stack):
    # the paper's quirk: scipy.ndimage.gaussian_filter over the whole 84×84×4 array (here C×H×W)
    ours = gaussian_blur(torch.from_numpy(stack), 3.0, dims=(0, 1, 2)).numpy()
    np.testing.assert_allclose(ours, ndi.gaussian_filter(stack, 3.0), atol=1e-6)
    # the reflection is applied repeatedly: the kernel (radius 12) is much longer than the 4 frames
    assert not np.allclose(ours, ndi.gaussian_filter(stack, (0, 3, 3)), atol=1e-3)


def test_blur_per_frame_matches_scipy_2d(stack):
    ours = gaussian_blur(torch.from_numpy(stack)[None], 3.0, dims=(2, 3))[0].numpy()
    np.testing.assert_allclose(ours, ndi.gaussian_filter(stack, (0, 3, 3)), atol=1e-6)


def _greydanus_mask(center, size, r):
    """Greydanus et al.'s get_mask, written from the reference notes."""
    y, x = np.ogrid[-center[0] : size[0] - center[0], -center[1] : size[1] - center[1]]
    m = np.zeros(size)
    m[x * x + y * y <= 1] = 1.0
    m = ndi.gaussian_filter(m, sigma=r)
    return m / m.max()


CENTRES = [(0, 0), (40, 10), (83, 83), (81, 0), (3, 81), (12, 12), (42, 42)]


@pytest.mark.parametrize("sigma", [2.0, 3.0])
def test_blurred_point_masks_match_greydanus(sigma):
    cy = torch.tensor([c[0] for c in CENTRES])
    cx = torch.tensor([c[1] for c in CENTRES])
    dense = blurred_point_masks(cy, cx, sigma, (84, 84)).numpy()
    for i, c in enumerate(CENTRES):
        np.testing.assert_allclose(dense[i], _greydanus_mask(c, (84, 84), sigma), atol=1e-6)
    # the sparse window form writes exactly the dense mask (set semantics, duplicates agree)
    idx, wt = blurred_point_window(cy, cx, sigma, (84, 84))
    sparse = torch.zeros(len(CENTRES), 84 * 84).scatter_(1, idx, wt).view(-1, 84, 84)
    torch.testing.assert_close(sparse, torch.from_numpy(dense), atol=1e-7, rtol=0)


def test_disk_and_box_indices_match_dense_masks():
    cy = torch.tensor([c[0] for c in CENTRES])
    cx = torch.tensor([c[1] for c in CENTRES])
    for r in (1, 2, 3):
        dense = disk_masks(cy, cx, r, (84, 84))
        sparse = torch.zeros(len(cy), 84 * 84, dtype=torch.bool).scatter_(1, disk_indices(cy, cx, r, (84, 84)), True)
        assert torch.equal(sparse.view(-1, 84, 84), dense)
    assert int(disk_masks(torch.tensor([40]), torch.tensor([40]), 2, (84, 84)).sum()) == 13  # the paper's 13-pixel disk
    for side in (1, 2, 5):
        dense = box_masks(cy, cx, side, (84, 84))
        sparse = torch.zeros(len(cy), 84 * 84, dtype=torch.bool).scatter_(1, box_indices(cy, cx, side, (84, 84)), True)
        assert torch.equal(sparse.view(-1, 84, 84), dense)


@pytest.mark.parametrize("shape_in,shape_out",
                         [((42, 42), (84, 84)), ((28, 28), (84, 84)), ((17, 23), (84, 80)), ((84, 84), (21, 30))])
def test_bilinear_resize_matches_cv2(shape_in, shape_out):
    m = np.random.default_rng(1).random(shape_in).astype(np.float32)
    ours = bilinear_resize(torch.from_numpy(m)[None], shape_out)[0].numpy()
    ref = cv2.resize(m, (shape_out[1], shape_out[0]), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_allclose(ours, ref, atol=2e-6)


@pytest.mark.parametrize("n", [28, 42])
def test_bilinear_upsampling_matches_pil(n):
    # Noise Sensitivity and SARFA upsample with PIL in the paper
    m = np.random.default_rng(2).random((n, n)).astype(np.float32)
    ref = np.asarray(Image.fromarray(m, mode="F").resize((84, 84), Image.BILINEAR))
    ours = bilinear_resize(torch.from_numpy(m)[None], (84, 84))[0].numpy()
    np.testing.assert_allclose(ours, ref, atol=1e-5)


def test_interp_matrix_mirror_matches_skimage_resize():
    grid = (np.random.default_rng(3).random((8, 8)) < 0.5).astype(np.float64)
    up = resize(grid, (99, 99), order=1, mode="reflect", anti_aliasing=False)
    w = linear_interp_matrix(8, 99, mode="mirror").numpy()
    np.testing.assert_allclose(w @ grid @ w.T, up, atol=1e-12)
    wc = linear_interp_matrix(8, 99, mode="clamp").numpy()
    assert not np.allclose(wc @ grid @ wc.T, up, atol=1e-3)  # border handling matters


def test_rise_masks_equal_skimage_resize_and_crop():
    """Each mask is the skimage resize of its grid, cropped at its offset (recovered by search)."""
    g = torch.Generator().manual_seed(5)
    n, s, p = 6, 8, 0.5
    masks = rise_masks(n, s, p, (84, 84), g).numpy()
    g = torch.Generator().manual_seed(5)  # replay the documented draw order
    grids = (torch.rand(n, s, s, generator=g) < p).double().numpy()
    cell = math.ceil(84 / s)
    off_r = torch.randint(0, cell, (n,), generator=g).numpy()
    off_c = torch.randint(0, cell, (n,), generator=g).numpy()
    for i in range(n):
        up = resize(grids[i], ((s + 1) * cell, (s + 1) * cell), order=1, mode="reflect", anti_aliasing=False)
        np.testing.assert_allclose(masks[i], up[off_r[i] : off_r[i] + 84, off_c[i] : off_c[i] + 84], atol=1e-6)


def test_rise_masks_statistics():
    masks = rise_masks(2000, 8, 0.3, (84, 84), torch.Generator().manual_seed(0))
    assert masks.shape == (2000, 84, 84) and masks.dtype == torch.float32
    assert float(masks.min()) >= 0.0 and float(masks.max()) <= 1.0
    assert abs(float(masks.mean()) - 0.3) < 0.01  # E[M] = p


def test_lime_design_prefix_property():
    a = lime_design(500, 30, torch.Generator().manual_seed(4))
    b = lime_design(500, 90, torch.Generator().manual_seed(4))
    assert torch.equal(a, b[:, :30])
    assert torch.all(a[0] == 1) and set(a.unique().tolist()) == {0.0, 1.0}
    assert abs(float(a[1:].mean()) - 0.5) < 0.02
