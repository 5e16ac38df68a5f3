"""Similarity measures between two saliency maps, as used by the sanity checks.

All functions are pure: they take two maps of the same shape ``(H, W)`` (NumPy
arrays or tensors, any real dtype) and return one float.

Protocol of Huber et al. (2021, reference §5), applied by every measure here:

1. both maps are min-max normalised to [0, 1] (:func:`normalise_map`);
2. the measure is computed for ``(a, b)`` and for ``(a, 1 - b)`` and the larger
   value is kept (``sign_invariant=True``), so a map and its inverse count as
   identical;
3. a constant map cannot be normalised: the measure is ``NaN`` and a
   :class:`ConstantMapWarning` is emitted (never a silent number).

Measures
--------
``spearman``
    Spearman rank correlation of the flattened maps (``scipy.stats.spearmanr``,
    ``nan_policy="omit"``).
``ssim``
    The paper's SSIM: ``skimage.metrics.structural_similarity`` with
    ``data_range=1`` on the *flattened 1-D vectors* (a 7-sample sliding window
    along the row-major pixel order). Kept for comparability with the paper.
``ssim_2d``
    The usual 2-D SSIM of the two images (``data_range=1``, 7×7 window).
``hog_pearson``
    Pearson correlation of the HOG descriptors (``skimage.feature.hog`` with
    ``pixels_per_cell=(3, 3)`` and the defaults: 9 orientations, 3×3 cells per
    block, ``L2-Hys``; :func:`similarities_to` computes the same descriptors,
    bit for bit, with the vectorised :func:`hog_descriptor`).
``spearman_untied``
    Not in the paper: the Spearman similarity over the pixels outside the block where
    both maps sit at their largest tie (:func:`largest_tie`). On a mostly black screen
    many maps are one constant on the black pixels whatever the weights (Integrated
    Gradients is zero there); that shared block alone can make two unrelated maps
    correlate. This measure separates what the block gives from what the rest gives.

References
----------
.. [1] Huber, Limmer & André (2022). Benchmarking perturbation-based saliency
   maps for explaining Atari agents. Front. Artif. Intell. 5:903875.
.. [2] Adebayo et al. (2018). Sanity checks for saliency maps. NeurIPS.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

__all__ = [
    "SIMILARITIES",
    "ConstantMapWarning",
    "normalise_map",
    "is_constant",
    "spearman",
    "ssim",
    "ssim_2d",
    "hog_pearson",
    "spearman_untied",
    "largest_tie",
    "similarity",
    "similarities_to",
    "hog_descriptor",
]

#: HOG settings of the paper (reference §5): 3×3-pixel cells, otherwise skimage defaults.
HOG_PARAMS = {"orientations": 9, "pixels_per_cell": (3, 3), "cells_per_block": (3, 3), "block_norm": "L2-Hys"}


class ConstantMapWarning(UserWarning):
    """A map is constant, so it cannot be normalised and its similarity is NaN."""


def _as_map(x, name: str) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D saliency map (H, W), got shape {a.shape}; pass one map at a time")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinite values; fix the explainer output before comparing maps")
    return a


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as_map(a, "a"), _as_map(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"maps must have the same shape, got a {a.shape} and b {b.shape}")
    return a, b


def is_constant(m) -> bool:
    """True if all entries of ``m`` are equal (min-max normalisation is undefined)."""
    a = np.asarray(m.detach().cpu().numpy() if hasattr(m, "detach") else m, dtype=np.float64)
    return bool(a.size == 0 or np.ptp(a) == 0.0)


def normalise_map(m) -> np.ndarray:
    """Min-max normalise a map to [0, 1].

    Parameters
    ----------
    m : array_like, shape (H, W)

    Returns
    -------
    numpy.ndarray, float64, shape (H, W)
        ``(m - min) / (max - min)``; all ``NaN`` for a constant map.
    """
    a = _as_map(m, "m")
    lo, hi = a.min(), a.max()
    if hi == lo:
        return np.full_like(a, np.nan)
    return (a - lo) / (hi - lo)


def _sign_invariant(fn: Callable[[np.ndarray, np.ndarray], float], a, b, sign_invariant: bool, name: str,
                    warn: bool = True) -> float:
    a, b = _pair(a, b)
    if is_constant(a) or is_constant(b):
        if warn:
            which = "a" if is_constant(a) else "b"
            warnings.warn(f"{name}: map {which} is constant, similarity is NaN", ConstantMapWarning, stacklevel=3)
        return float("nan")
    an, bn = normalise_map(a), normalise_map(b)
    v = float(fn(an, bn))
    if sign_invariant:
        v2 = float(fn(an, 1.0 - bn))
        if np.isnan(v):
            return v2
        if not np.isnan(v2):
            v = max(v, v2)
    return v


def _spearman(a, b):
    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spearmanr(a.ravel(), b.ravel(), nan_policy="omit").statistic


def _ssim_1d(a, b):
    from skimage.metrics import structural_similarity

    return structural_similarity(a.ravel(), b.ravel(), data_range=1.0)


def _ssim_2d(a, b):
    from skimage.metrics import structural_similarity

    return structural_similarity(a, b, data_range=1.0)


def _hog_pearson(a, b):
    from scipy.stats import pearsonr
    from skimage.feature import hog

    ha, hb = hog(a, **HOG_PARAMS), hog(b, **HOG_PARAMS)
    if np.ptp(ha) == 0 or np.ptp(hb) == 0:
        return float("nan")
    return pearsonr(ha, hb).statistic


def spearman(a, b, *, sign_invariant: bool = True) -> float:
    """Spearman rank correlation of two normalised maps (reference §5, measure 1).

    Parameters
    ----------
    a, b : array_like, shape (H, W)
        The original and the comparison map.
    sign_invariant : bool, optional
        Keep the larger of the values for ``(a, b)`` and ``(a, 1 - b)``
        (default, as the paper). For Spearman this is ``|rho|``.

    Returns
    -------
    float
        In [-1, 1] (in [0, 1] when sign-invariant); ``NaN`` if a map is constant.

    Warns
    -----
    ConstantMapWarning
        If either map is constant.
    """
    return _sign_invariant(_spearman, a, b, sign_invariant, "spearman")


def ssim(a, b, *, sign_invariant: bool = True) -> float:
    """The paper's SSIM: on the *flattened* normalised maps (reference §5, measure 2).

    Notes
    -----
    ``structural_similarity`` is applied to the 1-D row-major vectors with the
    default 7-sample uniform window and ``data_range=1``, as the official code
    did. This compares runs of 7 horizontally adjacent pixels and ignores
    vertical structure; use :func:`ssim_2d` for the image SSIM. On two
    independent uniform-random maps the value is about 0.01, on Gaussian-random
    maps about 0.06 (the calibration values of the paper).
    """
    return _sign_invariant(_ssim_1d, a, b, sign_invariant, "ssim")


def ssim_2d(a, b, *, sign_invariant: bool = True) -> float:
    """2-D SSIM of the normalised maps (7×7 uniform window, ``data_range=1``).

    Not in the paper; the proper image SSIM, reported next to :func:`ssim`.
    """
    return _sign_invariant(_ssim_2d, a, b, sign_invariant, "ssim_2d")


def hog_pearson(a, b, *, sign_invariant: bool = True) -> float:
    """Pearson correlation of the HOG descriptors of the normalised maps (reference §5, measure 3).

    Notes
    -----
    HOG uses unsigned orientations, so ``hog(1 - b) == hog(b)`` and the sign
    inversion has no effect here; it is kept for uniformity with the paper.
    A map with no gradient anywhere gives a constant descriptor and ``NaN``.
    Maps smaller than 9×9 pixels have no complete HOG block and raise
    ``ValueError``.
    """
    a_arr = _as_map(a, "a")
    if min(a_arr.shape) < 9:
        raise ValueError(f"hog_pearson needs maps of at least 9×9 pixels (one 3×3-cell block of 3×3 pixels), got {a_arr.shape}")
    return _sign_invariant(_hog_pearson, a, b, sign_invariant, "hog_pearson")


def largest_tie(m) -> tuple[np.ndarray, float]:
    """The pixels at the map's most frequent exact value, and where that value sits.

    Parameters
    ----------
    m : array_like, shape (H, W)

    Returns
    -------
    block : numpy.ndarray of bool, shape (H, W)
        The pixels equal to the most frequent value (the smallest such value when several
        are equally frequent; a single pixel when no value repeats).
    below : float
        The share of the other pixels that lie below that value (0: the tie is the map's
        minimum); NaN when the map is one value.
    """
    a = _as_map(m, "m")
    values, counts = np.unique(a, return_counts=True)
    v = values[np.argmax(counts)]
    block = a == v
    rest = a[~block]
    return block, float((rest < v).mean()) if rest.size else float("nan")


def _spearman_outside(a: np.ndarray, b: np.ndarray, block: np.ndarray, sign_invariant: bool) -> float:
    """:func:`spearman` of the pixels outside ``block``, as one ``1 × K`` map (NaN below 3 pixels)."""
    keep = ~block
    if keep.sum() < 3:
        return float("nan")
    return _sign_invariant(_spearman, a[keep][None], b[keep][None], sign_invariant, "spearman_untied", warn=False)


def spearman_untied(a, b, *, sign_invariant: bool = True) -> float:
    """Spearman similarity outside the block where both maps sit at their largest tie.

    Not one of the paper's measures. The block is the intersection of the two maps'
    :func:`largest_tie` (on the raw maps); the value is :func:`spearman` of the remaining
    pixels, taken as one ``1 × K`` map. Two maps that are constant on a shared black
    region and independent elsewhere score about 0 here, however large the region,
    while :func:`spearman` over all pixels can be high from the region alone.

    Returns
    -------
    float
        In [0, 1] when sign-invariant; ``NaN`` when a map is constant, fewer than 3 pixels
        lie outside the block, or a map is constant outside it.

    Warns
    -----
    ConstantMapWarning
        If either whole map is constant.
    """
    a, b = _pair(a, b)
    if is_constant(a) or is_constant(b):
        which = "a" if is_constant(a) else "b"
        warnings.warn(f"spearman_untied: map {which} is constant, similarity is NaN", ConstantMapWarning, stacklevel=2)
        return float("nan")
    return _spearman_outside(a, b, largest_tie(a)[0] & largest_tie(b)[0], sign_invariant)


#: Registry of the similarity measures by name.
SIMILARITIES: dict[str, Callable[..., float]] = {
    "spearman": spearman,
    "ssim": ssim,
    "ssim_2d": ssim_2d,
    "hog_pearson": hog_pearson,
    "spearman_untied": spearman_untied,
}


def similarity(name: str, a, b, *, sign_invariant: bool = True) -> float:
    """Call the measure ``name`` of :data:`SIMILARITIES`.

    Raises
    ------
    ValueError
        For an unknown ``name``, listing the valid names.
    """
    if name not in SIMILARITIES:
        raise ValueError(f"unknown similarity {name!r}; valid similarities are: {', '.join(SIMILARITIES)}")
    return SIMILARITIES[name](a, b, sign_invariant=sign_invariant)


def similarities_to(reference, others, measures, *, sign_invariant: bool = True) -> np.ndarray:
    """Every measure of ``reference`` against each map of ``others``, sharing the work.

    The values of ``similarity(m, reference, b)`` for every ``b`` in ``others`` and every
    ``m`` in ``measures`` (up to float rounding), computed with what the pairs have in
    common done once: the normalised reference, its ranks and its HOG descriptor, and each
    other map's. Two identities of the sign inversion save the second evaluation where it
    is exact: the ranks of ``1 − b`` are those of ``b`` reversed, so Spearman of ``(a, 1 − b)``
    is minus that of ``(a, b)``; HOG's unsigned orientations give ``hog(1 − b) = hog(b)``.
    SSIM has no such identity and is evaluated twice, with scikit-image. The HOG descriptors
    come from :func:`hog_descriptor`, scikit-image's ``hog`` vectorised.

    Parameters
    ----------
    reference : array_like, shape (H, W)
    others : sequence of array_like, each (H, W)
    measures : sequence of str
        Names in :data:`SIMILARITIES`.
    sign_invariant : bool, optional
        As in the pairwise functions.

    Returns
    -------
    numpy.ndarray, shape (len(others), len(measures))
        ``NaN`` where either map is constant (no warning: the caller counts those).
    """
    from scipy.stats import rankdata

    measures = list(measures)
    for m in measures:
        if m not in SIMILARITIES:
            raise ValueError(f"unknown similarity {m!r}; valid similarities are: {', '.join(SIMILARITIES)}")
    a = _as_map(reference, "reference")
    if "hog_pearson" in measures and min(a.shape) < 9:
        raise ValueError(f"hog_pearson needs maps of at least 9×9 pixels (one 3×3-cell block of 3×3 pixels), got {a.shape}")
    out = np.full((len(others), len(measures)), np.nan)
    if is_constant(a):
        for b in others:
            _pair(a, b)  # still reject malformed maps
        return out
    an = normalise_map(a)
    ra = hog_a = tie_a = None
    for j, b in enumerate(others):
        a_, b = _pair(a, b)
        if is_constant(b):
            continue
        bn = normalise_map(b)
        for k, m in enumerate(measures):
            if m == "spearman_untied":  # the pairwise function's own arithmetic, the reference's tie found once
                if tie_a is None:
                    tie_a = largest_tie(a)[0]
                out[j, k] = _spearman_outside(a, b, tie_a & largest_tie(b)[0], sign_invariant)
            elif m == "spearman":
                if ra is None:
                    ra = _centred(rankdata(an.ravel()))
                v = _pearson_centred(ra, _centred(rankdata(bn.ravel())))
                out[j, k] = abs(v) if sign_invariant else v
            elif m == "hog_pearson":
                if hog_a is None:
                    hog_a = hog_descriptor(an)
                hb = hog_descriptor(bn)
                out[j, k] = _hog_corr(hog_a, hb)
            else:
                fn = _ssim_1d if m == "ssim" else _ssim_2d
                v = float(fn(an, bn))
                if sign_invariant:
                    v2 = float(fn(an, 1.0 - bn))
                    v = v2 if np.isnan(v) else (v if np.isnan(v2) else max(v, v2))
                out[j, k] = v
    return out


def _centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean()


def _pearson_centred(x: np.ndarray, y: np.ndarray) -> float:
    den = np.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.dot(x, y) / den) if den > 0 else float("nan")


def _hog_corr(ha: np.ndarray, hb: np.ndarray) -> float:
    if np.ptp(ha) == 0 or np.ptp(hb) == 0:
        return float("nan")
    return _pearson_centred(_centred(ha), _centred(hb))


def hog_descriptor(image: np.ndarray) -> np.ndarray:
    """``skimage.feature.hog(image, **HOG_PARAMS)`` of a 2-D float64 map, vectorised.

    scikit-image normalises the descriptor's blocks in a Python loop (676 blocks of an 84×84
    map), which made HOG about 85 % of the sanity check's similarity table. This follows its
    arithmetic step by step, in NumPy: central-difference gradients (zero on the border rows
    and columns), magnitudes ``hypot`` and unsigned orientations in degrees; per 3×3-pixel cell
    and orientation bin ``[20·i, 20·(i + 1))`` the sum of the magnitudes, accumulated in
    float32 in row-major order and divided by the cell's 9 pixels, as its Cython kernel does;
    then ``L2-Hys`` per block of 3×3 cells (ε = 1e-5, clip at 0.2, renormalise), flattened in
    scikit-image's order. Tested equal to ``skimage.feature.hog`` to 1e-12.
    """
    img = np.asarray(image, dtype=np.float64)
    orientations = HOG_PARAMS["orientations"]
    (cr, cc), (br, bc) = HOG_PARAMS["pixels_per_cell"], HOG_PARAMS["cells_per_block"]
    g_row, g_col = np.zeros_like(img), np.zeros_like(img)
    g_row[1:-1, :] = img[2:, :] - img[:-2, :]
    g_col[:, 1:-1] = img[:, 2:] - img[:, :-2]
    magnitude = np.hypot(g_col, g_row)
    orientation = np.rad2deg(np.arctan2(g_row, g_col)) % 180
    n_r, n_c = img.shape[0] // cr, img.shape[1] // cc
    width = np.float32(180.0 / orientations)
    # the bin of each pixel by the kernel's test: start ≤ orientation < end, with float32 bounds
    edges = (width * np.arange(orientations + 1, dtype=np.float32)).astype(np.float64)
    bins = np.searchsorted(edges, orientation, side="right") - 1
    cells = lambda a: a[: n_r * cr, : n_c * cc].reshape(n_r, cr, n_c, cc).transpose(0, 2, 1, 3).reshape(n_r, n_c, cr * cc)  # noqa: E731
    mag, bin_ = cells(magnitude), cells(bins)
    total = np.zeros((n_r, n_c, orientations), dtype=np.float32)
    for p in range(cr * cc):  # the kernel's order: row by row within the cell, each sum rounded to float32
        b = bin_[:, :, p:p + 1]
        now = np.take_along_axis(total, b, axis=2).astype(np.float64) + mag[:, :, p:p + 1]
        np.put_along_axis(total, b, now.astype(np.float32), axis=2)
    hist = (total / np.float32(cr * cc)).astype(np.float64)
    blocks = np.lib.stride_tricks.sliding_window_view(hist, (br, bc), axis=(0, 1))  # (R, C, bins, br, bc)
    blocks = blocks.transpose(0, 1, 3, 4, 2).reshape(blocks.shape[0], blocks.shape[1], -1)
    eps = 1e-5
    out = blocks / np.sqrt(np.sum(blocks ** 2, axis=-1, keepdims=True) + eps ** 2)
    out = np.minimum(out, 0.2)
    out = out / np.sqrt(np.sum(out ** 2, axis=-1, keepdims=True) + eps ** 2)
    return out.ravel()
