"""Where a box of the raw 210×160 Atari frame lands in a preprocessed frame.

The two presets of :mod:`saliency_lib.envs` shrink the raw frame differently:

* ``"dqn"``: ``cv2.resize`` of the whole 210×160 frame to 84×84 with ``INTER_AREA``;
* ``"mask_a3c"``: the rows ``crop1 … crop2 + 159`` of the frame (the per-game crop of
  :func:`saliency_lib.games.mask_a3c_crop`), resized bilinearly to 80 × ``dimension2``, then
  to 80 × 80.

Both resizes are separable (each output pixel is a product of a row weight and a column
weight), so a source row or column influences a contiguous run of output rows or columns.
:func:`axis_support` measures that run for every source index by resizing a one-pixel
indicator with the same ``cv2`` calls, and :func:`map_box` maps a box to the smallest output
box that holds every output pixel the box's pixels influence (weight above ``1e-6``). The
mapped box therefore contains the object's pixels after preprocessing, blurred edges included,
and nothing is lost to rounding.

Boxes are ``(x0, y0, x1, y1)`` with exclusive ends: columns ``x0 … x1 − 1`` and rows
``y0 … y1 − 1``, in the frame's pixel indices (``x`` the column, as OCAtari).
"""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np

from ..games import game_info, mask_a3c_crop

__all__ = ["RAW_SHAPE", "PRESET_SHAPES", "axis_support", "map_box", "box_mask"]

#: Height and width of a raw Atari frame.
RAW_SHAPE = (210, 160)
#: Height and width of one preprocessed frame per preset.
PRESET_SHAPES = {"dqn": (84, 84), "mask_a3c": (80, 80)}
#: Weight below which an output pixel does not count as influenced (float rounding of the resize).
_WEIGHT_TOL = 1e-6


def _support(n_src: int, resize) -> np.ndarray:
    """``(n_src, 2)`` int: ``[lo, hi)`` of the outputs that each source index influences."""
    out = np.empty((n_src, 2), dtype=np.int64)
    for i in range(n_src):
        delta = np.zeros((n_src, 1), dtype=np.float32)
        delta[i, 0] = 1.0
        w = np.asarray(resize(delta)).reshape(-1)
        hit = np.flatnonzero(w > _WEIGHT_TOL)
        if hit.size == 0:  # pragma: no cover - every resize used here reaches some output
            raise RuntimeError(f"source index {i} influences no output pixel")
        out[i] = hit[0], hit[-1] + 1
    out.setflags(write=False)  # cached by axis_support: shared by every caller
    return out


@cache
def axis_support(preset: str, game: str, axis: str) -> tuple[int, np.ndarray]:
    """The first raw index of ``axis`` that the preset keeps, and the support table of the axis.

    Parameters
    ----------
    preset : {"dqn", "mask_a3c"}
    game : str
        Chooses the Mask-A3C crop (unused for ``"dqn"``).
    axis : {"y", "x"}
        Rows or columns.

    Returns
    -------
    offset : int
        Raw index of the first kept row or column (the crop's ``crop1`` for Mask-A3C rows, else 0).
    table : ndarray, shape (n_kept, 2), int64
        For kept source index ``offset + i``: the output indices ``[table[i, 0], table[i, 1])`` it influences.
    """
    if preset not in PRESET_SHAPES:
        raise ValueError(f"unknown preset {preset!r}; valid presets are: {', '.join(PRESET_SHAPES)}")
    if axis not in ("y", "x"):
        raise ValueError(f"axis must be 'y' or 'x', got {axis!r}")
    game_info(game)
    if preset == "dqn":
        n_src = RAW_SHAPE[0] if axis == "y" else RAW_SHAPE[1]
        # a column vector resized to height 84 (width 1 stays 1): INTER_AREA acts on each axis alone
        return 0, _support(n_src, lambda v: cv2.resize(v, (1, 84), interpolation=cv2.INTER_AREA))
    c1, c2, dim2 = mask_a3c_crop(game)
    if axis == "x":
        return 0, _support(160, lambda v: cv2.resize(cv2.resize(v, (1, 80)), (1, 80)))
    n_rows = min(c2 + 160, RAW_SHAPE[0]) - c1
    return c1, _support(n_rows, lambda v: cv2.resize(cv2.resize(v, (1, dim2)), (1, 80)))


def map_box(box, preset: str, game: str) -> tuple[int, int, int, int] | None:
    """The output box of a raw-frame box ``(x0, y0, x1, y1)``, or ``None`` if the preset drops all of it.

    The box is first clipped to the part of the raw frame the preset keeps (the whole frame for
    ``"dqn"``, the crop's rows for ``"mask_a3c"``).

    Examples
    --------
    >>> map_box((0, 0, 160, 210), "dqn", "Breakout")
    (0, 0, 84, 84)
    """
    x0, y0, x1, y1 = (int(v) for v in box)
    ox, tx = axis_support(preset, game, "x")
    oy, ty = axis_support(preset, game, "y")
    x0, x1 = max(x0 - ox, 0), min(x1 - ox, len(tx))
    y0, y1 = max(y0 - oy, 0), min(y1 - oy, len(ty))
    if x0 >= x1 or y0 >= y1:
        return None
    return int(tx[x0, 0]), int(ty[y0, 0]), int(tx[x1 - 1, 1]), int(ty[y1 - 1, 1])


def box_mask(boxes, shape: tuple[int, int]) -> np.ndarray:
    """Boolean ``shape`` mask that is True inside any of ``boxes`` (``(x0, y0, x1, y1)``, clipped)."""
    m = np.zeros(shape, dtype=bool)
    for b in boxes:
        if b is None:
            continue
        x0, y0, x1, y1 = (int(v) for v in b)
        m[max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)] = True
    return m
