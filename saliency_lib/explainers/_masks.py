"""Pure, batched generators of perturbation masks and the resampling helpers they need.

Nothing here touches an agent. Every function builds tensors for a whole batch at
once (no Python loop over masks), takes explicit sizes and, when it draws random
numbers, an explicit :class:`torch.Generator`. The reference semantics of each
function (SciPy, scikit-image, OpenCV) are stated in its docstring and checked
against that library in ``tests/lib/test_explainers_masks.py``.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

__all__ = [
    "gaussian_kernel1d",
    "gaussian_blur",
    "gaussian_blur_matrix",
    "grid_positions",
    "box_masks",
    "box_indices",
    "disk_masks",
    "disk_indices",
    "blurred_point_masks",
    "blurred_point_window",
    "linear_interp_matrix",
    "bilinear_resize",
    "rise_masks",
    "lime_design",
]


def gaussian_kernel1d(sigma: float, truncate: float = 4.0, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """The normalised 1-D Gaussian of :func:`scipy.ndimage.gaussian_filter1d`.

    Radius ``int(truncate * sigma + 0.5)``; weights ``exp(-x² / (2σ²))`` divided by their sum.
    """
    radius = int(truncate * float(sigma) + 0.5)
    x = torch.arange(-radius, radius + 1, dtype=dtype, device=device)
    w = torch.exp(-0.5 * (x / float(sigma)) ** 2)
    return w / w.sum()


def _symmetric_index(idx: torch.Tensor, n: int) -> torch.Tensor:
    """Fold indices into ``[0, n)`` with SciPy's ``mode='reflect'`` (d c b a | a b c d | d c b a)."""
    m = torch.remainder(idx, 2 * n)
    return torch.where(m >= n, 2 * n - 1 - m, m)


def _mirror_index(idx: torch.Tensor, n: int) -> torch.Tensor:
    """Fold indices into ``[0, n)`` with SciPy's ``mode='mirror'`` (d c b | a b c d | c b a)."""
    if n == 1:
        return torch.zeros_like(idx)
    period = 2 * (n - 1)
    m = torch.remainder(idx, period)
    return torch.where(m >= n, period - m, m)


def _blur_conv(x: torch.Tensor, sigma: float, dim: int, truncate: float) -> torch.Tensor:
    """1-D SciPy Gaussian filter (``mode='reflect'``) along ``dim`` by convolution."""
    kernel = gaussian_kernel1d(sigma, truncate, dtype=x.dtype, device=x.device)
    r = (kernel.numel() - 1) // 2
    n = x.shape[dim]
    moved = x.movedim(dim, -1)
    shape = moved.shape
    idx = _symmetric_index(torch.arange(-r, n + r, device=x.device), n)
    padded = moved.reshape(-1, 1, n)[..., idx]
    return F.conv1d(padded, kernel.view(1, 1, -1)).reshape(shape).movedim(-1, dim)


def gaussian_blur_matrix(n: int, sigma: float, *, truncate: float = 4.0, dtype=torch.float64, device=None) -> torch.Tensor:
    """``(n, n)`` matrix ``G`` with ``G @ v`` = ``scipy.ndimage.gaussian_filter1d(v, sigma)`` (``mode='reflect'``)."""
    return _blur_matrix_cached(int(n), float(sigma), float(truncate), str(torch.device(device or "cpu"))).to(dtype)


@functools.lru_cache(maxsize=64)
def _blur_matrix_cached(n: int, sigma: float, truncate: float, device: str) -> torch.Tensor:
    return _blur_conv(torch.eye(n, dtype=torch.float64, device=device), sigma, 0, truncate)


def gaussian_blur(x: torch.Tensor, sigma: float, dims: tuple[int, ...], *, truncate: float = 4.0) -> torch.Tensor:
    """Separable Gaussian blur of ``x`` along ``dims`` with SciPy semantics.

    Equals ``scipy.ndimage.gaussian_filter(x, sigma)`` restricted to the axes ``dims``
    (``sigma = 0`` on the others): same kernel (:func:`gaussian_kernel1d`) and the
    same boundary handling, ``mode='reflect'`` (half-sample symmetric), applied
    as often as the kernel needs, so a σ = 3 blur across an axis of length 4 (the
    frame stack) is reproduced exactly. Each axis is filtered by one matrix
    product with :func:`gaussian_blur_matrix`.

    Parameters
    ----------
    x : torch.Tensor
        Any floating tensor.
    sigma : float
        Standard deviation in samples (the same on every blurred axis); 0 returns ``x``.
    dims : tuple of int
        Axes to blur, e.g. ``(-3, -2, -1)`` for the channel and both image axes of an
        ``(N, C, H, W)`` batch.
    truncate : float, optional
        Kernel radius in standard deviations (SciPy's default 4.0).

    Returns
    -------
    torch.Tensor
        The blurred tensor, same shape and dtype as ``x``.
    """
    if sigma == 0:
        return x
    out = x
    for d in dims:
        d = d % x.dim()
        g = gaussian_blur_matrix(out.shape[d], sigma, truncate=truncate, dtype=x.dtype, device=x.device)
        out = torch.tensordot(out, g, dims=([d], [1])).movedim(-1, d)
    return out


def grid_positions(size: int, step: int, *, device=None) -> torch.Tensor:
    """Grid coordinates ``0, step, 2·step, …`` below ``size`` (``ceil(size / step)`` values)."""
    return torch.arange(0, size, step, device=device)


def box_masks(tops: torch.Tensor, lefts: torch.Tensor, side: int, size: tuple[int, int]) -> torch.Tensor:
    """Boolean masks ``(B, H, W)``, True on the ``side × side`` square at ``(tops, lefts)``.

    Squares that reach past the border are clipped, as slicing does.
    """
    h, w = size
    rows = torch.arange(h, device=tops.device)
    cols = torch.arange(w, device=tops.device)
    in_r = (rows[None] >= tops[:, None]) & (rows[None] < tops[:, None] + side)
    in_c = (cols[None] >= lefts[:, None]) & (cols[None] < lefts[:, None] + side)
    return in_r[:, :, None] & in_c[:, None, :]


def box_indices(tops: torch.Tensor, lefts: torch.Tensor, side: int, size: tuple[int, int]) -> torch.Tensor:
    """Flat pixel indices ``(B, side²)`` of the squares of :func:`box_masks`.

    Indices past the border are clamped onto the last row/column, which belongs
    to the clipped square, so writing one value through all indices sets exactly
    the pixels of :func:`box_masks` (some more than once).
    """
    h, w = size
    off = torch.arange(side, device=tops.device)
    iy = (tops[:, None] + off).clamp(max=h - 1)
    ix = (lefts[:, None] + off).clamp(max=w - 1)
    return (iy[:, :, None] * w + ix[:, None, :]).flatten(1)


def disk_masks(cy: torch.Tensor, cx: torch.Tensor, radius: float, size: tuple[int, int]) -> torch.Tensor:
    """Boolean masks ``(B, H, W)``, True where ``(y − cy)² + (x − cx)² ≤ radius²``."""
    h, w = size
    dy = torch.arange(h, device=cy.device)[None, :, None] - cy[:, None, None]
    dx = torch.arange(w, device=cy.device)[None, None, :] - cx[:, None, None]
    return dy * dy + dx * dx <= radius * radius


def disk_indices(cy: torch.Tensor, cx: torch.Tensor, radius: int, size: tuple[int, int]) -> torch.Tensor:
    """Flat pixel indices ``(B, K)`` of the disks of :func:`disk_masks` (centres inside the image).

    ``K`` is the number of offsets with ``dy² + dx² ≤ radius²``; offsets that fall
    outside the image point at the centre instead, which is part of the disk, so
    writing one value through all indices sets exactly the disk's pixels.
    """
    h, w = size
    r = int(radius)
    d = torch.arange(-r, r + 1, device=cy.device)
    dy, dx = torch.meshgrid(d, d, indexing="ij")
    keep = dy * dy + dx * dx <= radius * radius
    dy, dx = dy[keep], dx[keep]
    py, px = cy[:, None] + dy, cx[:, None] + dx
    valid = (py >= 0) & (py < h) & (px >= 0) & (px < w)
    return torch.where(valid, py * w + px, (cy * w + cx)[:, None])


def _delta_profiles(n: int, sigma: float, *, device=None) -> torch.Tensor:
    """``(n, n + 2)``: column ``j + 1`` is the 1-D SciPy Gaussian filter of a unit impulse at ``j``.

    Columns 0 and ``n + 1`` are zero, so that the impulse positions −1 and ``n``
    (outside the image) contribute nothing.
    """
    return F.pad(gaussian_blur_matrix(n, sigma, device=device), (1, 1))


def blurred_point_masks(cy: torch.Tensor, cx: torch.Tensor, sigma: float, size: tuple[int, int]) -> torch.Tensor:
    """Greydanus et al.'s soft masks ``(B, H, W)`` in [0, 1], float32.

    For each centre, the "tiny disk" ``x² + y² ≤ 1`` (a 5-pixel plus, clipped at the
    border) is Gaussian-filtered with σ = ``sigma`` (``scipy.ndimage.gaussian_filter``,
    ``mode='reflect'``) and divided by its maximum. The filter is linear and
    separable, so each mask is a sum of outer products of 1-D filtered impulses;
    this builds a whole batch without one 2-D filtering per mask.
    """
    h, w = size
    ph = _delta_profiles(h, sigma, device=cy.device)
    pw = _delta_profiles(w, sigma, device=cy.device)
    iy, ix = cy + 1, cx + 1  # column of the impulse at (cy, cx) in the padded profiles
    centre_row = ph[:, iy].T  # (B, H)
    row_arm = (ph[:, iy - 1] + ph[:, iy + 1]).T
    centre_col = pw[:, ix].T  # (B, W)
    col_arm = (pw[:, ix - 1] + pw[:, ix] + pw[:, ix + 1]).T
    m = centre_row[:, :, None] * col_arm[:, None, :] + row_arm[:, :, None] * centre_col[:, None, :]
    m = m / m.flatten(1).amax(dim=1)[:, None, None]
    return m.float()


def blurred_point_window(cy: torch.Tensor, cx: torch.Tensor, sigma: float, size: tuple[int, int], *, truncate: float = 4.0):
    """The masks of :func:`blurred_point_masks` restricted to their support, for sparse updates.

    A filtered impulse is exactly zero farther than the kernel radius
    ``k = int(truncate·σ + 0.5)`` from it (SciPy's reflections fold back inside
    that range), so each mask lives in the ``(2k + 3)²`` window around its centre.

    Returns
    -------
    index : torch.Tensor
        ``(B, K)`` int64 flat pixel indices of the window. Positions outside the
        image point at the centre instead and carry the centre's weight, so that
        *setting* pixels through the indices is exact (use scatter, not scatter-add).
    weight : torch.Tensor
        ``(B, K)`` float32 mask values there (peak 1).
    """
    h, w = size
    half = int(truncate * float(sigma) + 0.5) + 1
    ph = _delta_profiles(h, sigma, device=cy.device)
    pw = _delta_profiles(w, sigma, device=cy.device)
    d = torch.arange(-half, half + 1, device=cy.device)
    ys, xs = cy[:, None] + d, cx[:, None] + d  # (B, 2·half + 1)
    vy, vx = (ys >= 0) & (ys < h), (xs >= 0) & (xs < w)
    ys_c, xs_c = ys.clamp(0, h - 1), xs.clamp(0, w - 1)
    iy, ix = (cy + 1)[:, None], (cx + 1)[:, None]  # impulse columns in the padded profiles
    centre_row = ph[ys_c, iy] * vy
    row_arm = (ph[ys_c, iy - 1] + ph[ys_c, iy + 1]) * vy
    centre_col = pw[xs_c, ix] * vx
    col_arm = (pw[xs_c, ix - 1] + pw[xs_c, ix] + pw[xs_c, ix + 1]) * vx
    m = centre_row[:, :, None] * col_arm[:, None, :] + row_arm[:, :, None] * centre_col[:, None, :]
    m = (m / m.flatten(1).amax(dim=1)[:, None, None]).flatten(1)
    valid = (vy[:, :, None] & vx[:, None, :]).flatten(1)
    centre = (half * (2 * half + 1) + half) * torch.ones_like(cy)  # the window's middle entry
    index = torch.where(valid, (ys_c[:, :, None] * w + xs_c[:, None, :]).flatten(1), (cy * w + cx)[:, None])
    weight = torch.where(valid, m, m.gather(1, centre[:, None]))
    return index, weight.float()


def linear_interp_matrix(in_size: int, out_size: int, *, mode: str = "clamp", dtype=torch.float64, device=None) -> torch.Tensor:
    """Matrix ``(out_size, in_size)`` of 1-D linear interpolation with half-pixel centres.

    Output sample ``o`` reads the input at ``(o + 0.5) · in_size / out_size − 0.5``.
    ``mode='clamp'`` clamps that coordinate to the border (OpenCV ``INTER_LINEAR``,
    ``torch.nn.functional.interpolate(align_corners=False)``);
    ``mode='mirror'`` reflects out-of-range neighbours without repeating the edge,
    which is ``skimage.transform.resize(order=1, mode='reflect')`` (SciPy's ``'mirror'``).
    """
    src = (torch.arange(out_size, dtype=torch.float64, device=device) + 0.5) * (in_size / out_size) - 0.5
    if mode == "clamp":
        src = src.clamp(0, in_size - 1)
    elif mode != "mirror":
        raise ValueError(f"unknown mode {mode!r}; valid values are: 'clamp', 'mirror'")
    i0 = torch.floor(src).long()
    frac = src - i0
    i1 = i0 + 1
    if mode == "clamp":
        i1 = i1.clamp(max=in_size - 1)
    else:
        i0, i1 = _mirror_index(i0, in_size), _mirror_index(i1, in_size)
    mat = torch.zeros(out_size, in_size, dtype=torch.float64, device=device)
    rows = torch.arange(out_size, device=device)
    mat.index_put_((rows, i0), 1 - frac, accumulate=True)
    mat.index_put_((rows, i1), frac, accumulate=True)
    return mat.to(dtype)


def bilinear_resize(maps: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Resize ``(N, h, w)`` maps to ``size`` bilinearly with half-pixel centres.

    This is ``F.interpolate(mode='bilinear', align_corners=False)``. For float
    maps it equals ``cv2.resize(..., interpolation=cv2.INTER_LINEAR)`` (same
    coordinate mapping, borders replicated) in both directions, and PIL's
    bilinear ``resize`` when upsampling (PIL widens the filter only when it
    shrinks). Neither library is needed at run time.
    """
    return F.interpolate(maps[:, None].float(), size=size, mode="bilinear", align_corners=False)[:, 0]


def rise_masks(n: int, grid: int, p: float, size: tuple[int, int], generator: torch.Generator) -> torch.Tensor:
    """RISE masks ``(n, H, W)``, float32 in [0, 1] (Petsiuk et al. 2018, as in Huber's ``rise.py``).

    1. ``n`` binary ``grid × grid`` grids, each cell 1 (kept) with probability ``p``;
    2. cell = ``ceil(H / grid)`` (and ``ceil(W / grid)``); each grid is upsampled
       bilinearly to ``(grid + 1) · cell`` with ``skimage.transform.resize(order=1,
       mode='reflect', anti_aliasing=False)`` semantics;
    3. an ``H × W`` window is cropped at a random offset in ``[0, cell)`` per axis.

    Upsampling and cropping are linear and separable, so mask ``i`` is
    ``R_i · G_i · C_iᵀ`` with ``R_i`` (``C_i``) the rows of the row (column)
    interpolation matrix selected by the offsets; all masks come from two batched
    matrix products. Random numbers are drawn in this order from ``generator``
    (on the CPU): the grids (``torch.rand(n, grid, grid) < p``), the row offsets,
    the column offsets.
    """
    h, w = size
    grids = (torch.rand(n, grid, grid, generator=generator) < p).to(torch.float64)
    cell_h, cell_w = math.ceil(h / grid), math.ceil(w / grid)
    off_r = torch.randint(0, cell_h, (n,), generator=generator)
    off_c = torch.randint(0, cell_w, (n,), generator=generator)
    up_r = linear_interp_matrix(grid, (grid + 1) * cell_h, mode="mirror")
    up_c = linear_interp_matrix(grid, (grid + 1) * cell_w, mode="mirror")
    rows = up_r[off_r[:, None] + torch.arange(h)]  # (n, H, grid)
    cols = up_c[off_c[:, None] + torch.arange(w)]  # (n, W, grid)
    return torch.bmm(torch.bmm(rows, grids), cols.transpose(1, 2)).float()


def lime_design(n_samples: int, n_features: int, generator: torch.Generator) -> torch.Tensor:
    """LIME's neighbourhood: uniform random binary matrix ``(n_samples, n_features)``, row 0 all ones.

    Drawn on the CPU from ``generator`` feature by feature
    (``torch.randint(0, 2, (n_features, n_samples)).T``), so that the design for
    ``F`` features is the first ``F`` columns of the design for more features
    drawn from the same seed: states with different numbers of superpixels share
    one design matrix. float32.
    """
    z = torch.randint(0, 2, (n_features, n_samples), generator=generator).T.float().contiguous()
    z[0] = 1.0
    return z
