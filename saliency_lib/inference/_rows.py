"""Gathering and scattering whole rows of a contiguous 2-D tensor.

The pixel copies of the incremental engines (:mod:`._incremental`), of the no-op search
(:mod:`._changed`) and of Noise Sensitivity's blur deltas.
"""

from __future__ import annotations

import torch

__all__ = ["gather_rows", "fill_rows_", "copy_rows_"]


def _as_rows(t: torch.Tensor) -> torch.Tensor:
    """A contiguous 2-D ``t`` ``(R, C)`` as a 1-D tensor of ``R`` elements where a row is 8 or 16 bytes.

    A 4-frame float32 pixel is then one complex128; any other ``t`` is returned as it is. Gathering
    and scattering whole pixels is one element copy each, several times faster than a row-wise
    ``index_select``/``index_copy_`` of such short rows.
    """
    nbytes = t.shape[1] * t.element_size()
    if t.is_contiguous() and nbytes in (8, 16) and (t.storage_offset() * t.element_size()) % nbytes == 0:
        return t.view(torch.complex128 if nbytes == 16 else torch.float64).view(-1)
    return t


def gather_rows(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``t[index]`` for a contiguous 2-D ``t`` ``(R, C)`` and a 1-D ``index``: ``(len(index), C)``."""
    rows = _as_rows(t)
    if rows is t:
        return t.index_select(0, index)
    return rows.index_select(0, index).view(t.dtype).view(-1, t.shape[1])


def fill_rows_(dst: torch.Tensor, index: torch.Tensor, value: float) -> None:
    """``dst[index] = value`` for a contiguous 2-D ``dst``."""
    _as_rows(dst).index_fill_(0, index, value)


def copy_rows_(dst: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> None:
    """``dst[index] = src`` for contiguous 2-D ``dst`` and ``src`` with the same row length."""
    rows_d, rows_s = _as_rows(dst), _as_rows(src)
    if rows_d is dst or rows_s is src:
        dst.index_copy_(0, index, src)
    else:
        rows_d.index_copy_(0, index, rows_s)
