"""Which (state, perturbation) rows of a local method change their input, and where.

:class:`~saliency_lib.inference._incremental.IncrementalDQN` evaluates only the rows whose
input changes (a black patch over pixels that are black in all frames changes nothing: its
outputs are the clean ones, for every network) and plans each row's windows from the box of the
pixels it changes. :func:`changed_rows` finds both, from a table of the pixels that a perturbation
can change where the explainer gives one, else by evaluating the explainer's input change.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._rows import gather_rows

__all__ = ["changed_rows", "PROJECT_ABOVE"]


def changed_rows(x_cl: torch.Tensor, index: torch.Tensor, delta, n: int, image_hw, changed: torch.Tensor | None = None,
                 scan_elements: int = 1 << 22) -> tuple[torch.Tensor, torch.Tensor]:
    """The (state, perturbation) rows whose input change may not be zero, and the boxes of their pixels.

    The rows are flat ids ``state·P + k`` ``(R,)``; the boxes (top, bottom, left, right) hold the
    pixels each row may change ``(R, 4)``.

    ``x_cl``: the ``N`` states channels-last ``(N·H·W, C)``; ``index`` ``(P, K)`` and ``delta`` as
    :meth:`~saliency_lib.inference._incremental.IncrementalDQN.readouts`. With ``changed``
    (``(N, H, W)`` bool, the pixels a perturbation may change; a superset is fine) the boxes come
    from that table (for perturbations of more than :data:`PROJECT_ABOVE` pixels from row and
    column counts in their bounding box); else the changes are evaluated in slices of about
    ``scan_elements`` values and dropped (the chunks evaluate them again for the rows kept) and the
    boxes are those of their nonzero pixels.
    """
    p, k = index.shape
    hh, ww = image_hw
    ys, xs = torch.div(index, ww, rounding_mode="floor"), index % ww
    big = hh + ww
    if changed is not None and k > PROJECT_ABOVE:
        return _boxes_by_projection(changed.reshape(n, hh, ww), ys, xs)
    if changed is not None:
        step = max(1, scan_elements // max(1, p * k))  # states at a time
        table = changed.reshape(n, hh * ww)
        ids, boxes = [], []
        ys16, xs16 = ys.to(torch.int16), xs.to(torch.int16)
        for s0 in range(0, n, step):
            nz = table[s0:s0 + step][:, index]  # (S, P, K)
            alive = nz.any(2).view(-1)
            if not bool(alive.any()):
                continue
            nz = nz.view(-1, k)[alive]
            pert = torch.arange(alive.numel(), device=index.device)[alive] % p
            py, px = ys16.index_select(0, pert), xs16.index_select(0, pert)
            boxes.append(torch.stack([torch.where(nz, py, big).amin(1), torch.where(nz, py, -1).amax(1),
                                      torch.where(nz, px, big).amin(1), torch.where(nz, px, -1).amax(1)], 1).long())
            ids.append(torch.arange(s0 * p, s0 * p + alive.numel(), device=index.device)[alive])
    else:
        c = x_cl.shape[1]
        step = max(1, scan_elements // max(1, k * c))
        ids, boxes = [], []
        for r0 in range(0, n * p, step):
            r = torch.arange(r0, min(r0 + step, n * p), device=index.device)
            state, pert = torch.div(r, p, rounding_mode="floor"), r % p
            at = (index.index_select(0, pert) + (state * (hh * ww))[:, None]).view(-1)
            d0 = delta(state, pert, gather_rows(x_cl, at).view(-1, k, c), at)
            nz = (d0 != 0).any(2)  # (B, K): pixels this row changes
            alive = nz.any(1)
            if not bool(alive.any()):
                continue
            nz, pert = nz[alive], pert[alive]
            py, px = ys.index_select(0, pert), xs.index_select(0, pert)
            boxes.append(torch.stack([torch.where(nz, py, big).amin(1), torch.where(nz, py, -1).amax(1),
                                      torch.where(nz, px, big).amin(1), torch.where(nz, px, -1).amax(1)], 1))
            ids.append(r[alive])
    if not ids:
        return torch.zeros(0, dtype=torch.long, device=index.device), torch.zeros(0, 4, dtype=torch.long, device=index.device)
    return torch.cat(ids), torch.cat(boxes)


#: Pixels per perturbation above which :func:`changed_rows` finds the changed boxes from row and
#: column counts in the perturbation's bounding box (the blurred Noise Sensitivity's 27×27 windows) rather than
#: pixel by pixel.
PROJECT_ABOVE = 64


def _boxes_by_projection(changed: torch.Tensor, ys: torch.Tensor, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The result of :func:`changed_rows` from a table of the pixels a perturbation may change.

    The table ``changed`` ``(N, H, W)`` is read inside each perturbation's bounding box (pixel rows
    ``ys``, columns ``xs``, ``(P, K)``): the rows with a changeable pixel in the box are kept, with
    the box of those pixels. A pixel of the box that is not the perturbation's can only widen a box,
    which stays exact (every changed pixel is inside it).
    """
    n, hh, ww = changed.shape
    p = ys.shape[0]
    y0, y1, x0, x1 = ys.amin(1), ys.amax(1), xs.amin(1), xs.amax(1)
    c = changed.to(torch.int32)
    along_x = F.pad(c.cumsum(2), (1, 0))  # (N, H, W + 1): changeable pixels left of each column
    along_y = F.pad(c.cumsum(1), (0, 0, 1, 0))  # (N, H + 1, W)

    def extent(lo, hi, lo2, hi2, table, axis):
        """First and last line (rows for axis 0) of each box with a changeable pixel between lo2 and hi2."""
        span = int((hi - lo).max()) + 1
        line = lo[:, None] + torch.arange(span, device=lo.device)  # (P, span)
        ok = line <= hi[:, None]
        line = line.clamp(max=(hh if axis == 0 else ww) - 1)
        if axis == 0:  # rows: counts along x between the box's columns
            flat_hi = line * (ww + 1) + (hi2 + 1)[:, None]
            flat_lo = line * (ww + 1) + lo2[:, None]
        else:  # columns: counts along y between the box's rows
            flat_hi = (hi2 + 1)[:, None] * ww + line
            flat_lo = lo2[:, None] * ww + line
        t = table.reshape(n, -1)
        cnt = (t[:, flat_hi.view(-1)] - t[:, flat_lo.view(-1)]).view(n, p, span)
        has = (cnt > 0) & ok
        first = torch.where(has, line, 1 << 20).amin(2)
        last = torch.where(has, line, -1).amax(2)
        return has.any(2), first, last

    alive, top, bottom = extent(y0, y1, x0, x1, along_x, 0)
    _, left, right = extent(x0, x1, y0, y1, along_y, 1)
    ids = alive.view(-1).nonzero()[:, 0]
    boxes = torch.stack([top, bottom, left, right], 2).view(-1, 4).index_select(0, ids)
    return ids, boxes
