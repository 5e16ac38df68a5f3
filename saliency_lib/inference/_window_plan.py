"""Window geometry of local perturbations through a stack of conv layers, and its plan.

:class:`~saliency_lib.inference._incremental.IncrementalDQN` recomputes, for each
perturbed input, only the windows of each conv layer that the perturbation changes.
This module works out those windows and groups the perturbations so that a chunk of
rows is a dense batch: every layer's window has one size within a group. Each image
axis is split into classes of similar windows by a small dynamic programme that trades
multiply-adds against the per-chunk overhead (a group is a pair of classes), inner
windows are shifted inwards at the borders, and the last conv window is the same for
the whole group. The index tables of a plan are built once and cached by content.

:func:`plan_boxes` plans *changed boxes*: the box of the pixels that a perturbation
really changes in one state (a black patch over partly black pixels changes fewer
pixels than its index holds), so the windows follow the change, not the index; each
box stands for the rows (states) that share it. With up to :data:`_MAX_CLASSES` classes
per axis, every distinct last-layer interval can get its own class, so the windows can
be exact (tight) wherever the rows are many enough to pay for their chunks.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Layer", "Group", "plan_windows", "plan_boxes", "conv1_window", "window_area", "schedule_rows"]

#: Cost of one chunk (Python, kernel launches, small-batch inefficiency) in multiply-adds: a chunk's fixed work
#: took 1 to 2 ms on one loaded core here, where the windows' convolutions reach 15 to 30 GMAC/s; of 1.5e7 to 1e8,
#: 3e7 to 1e8 gave the fastest maps (within 10 % of each other on Breakout and Ms. Pac-Man states).
_CHUNK_OVERHEAD_MACS = 5e7
#: Most window classes per image axis considered by the planner: Nature-CNN's 2x2 patches at stride 2 have 13
#: distinct conv3 intervals per axis, so every one can get its own class (exact windows).
_MAX_CLASSES = 16


@dataclass(frozen=True)
class Layer:
    """Window geometry of one conv layer for the perturbations of one group (``n`` rows)."""

    in_hw: tuple[int, int]  # input window (rows, cols)
    out_hw: tuple[int, int]  # output window
    gather: torch.Tensor  # (n, in_h·in_w): slot of each input-window position in the previous window (last slot = zero)
    clean: torch.Tensor  # (n, out_h·out_w): flat position of each output-window entry in the full map


@dataclass(frozen=True)
class Group:
    """Perturbations whose windows have the same sizes at every layer and the same last window."""

    members: torch.Tensor  # (n,) perturbation (or box) indices
    slot0: torch.Tensor  # (n, K): slot of each perturbed pixel in the first input window (in_h·in_w: outside it, unchanged)
    layers: tuple[Layer, ...]
    last: tuple[int, int, int, int]  # origin row, origin col, rows, cols of the last conv window
    outside: bool = False  # whether some pixel of a member lies outside its first window (its change is zero there)


def _intervals(lo: np.ndarray, hi: np.ndarray, specs, axis: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact changed intervals ``[lo, hi]`` of every conv layer's output along one axis."""
    out = []
    for k, s, pad, hw in specs:
        size = hw[axis]
        o_hi = np.minimum((hi + pad) // s, size - 1)
        # ceil((lo + pad − k + 1) / s); an empty change keeps one entry
        o_lo = np.minimum(np.maximum(-((k - 1 - lo - pad) // s), 0), o_hi)
        out.append((o_lo, o_hi))
        lo, hi = o_lo, o_hi
    return out


def _axis_classes(chain, weights, rows: np.ndarray) -> list[np.ndarray]:
    """Partitions of the perturbations into 1 … ``_MAX_CLASSES`` classes along one axis.

    ``chain``: per layer, the exact changed interval ``(lo, hi)`` of every
    perturbation along this axis (numpy arrays); ``rows``: how many rows each
    perturbation stands for. Distinct interval chains are sorted by their last
    interval and cut into contiguous runs that minimise ``Σ rows × Σ_layers weight ×
    window length`` (dynamic programming), where a run's window is the longest
    interval of an inner layer and the hull of the last layer's intervals. Returns the
    class of every perturbation for each number of classes.
    """
    last = len(chain) - 1
    sig = np.stack([t for lo_hi in chain for t in lo_hi], 1)  # (P, 2L)
    uniq, inverse = np.unique(sig, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, weights=rows, minlength=len(uniq))
    order = np.lexsort((uniq[:, 2 * last + 1], uniq[:, 2 * last]))
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    u, n = uniq[order], counts[order]
    d = len(u)
    lens = u[:, 1::2] - u[:, 0::2] + 1  # (D, L)
    csum = np.concatenate([[0.0], np.cumsum(n)])
    weights = np.asarray(weights, dtype=float)
    cost = np.full((d + 1, d + 1), np.inf)
    for a in range(d):  # runs a … b−1 for every b at once: running maxima of the window lengths
        win = np.maximum.accumulate(lens[a:], axis=0).astype(float)
        win[:, last] = np.maximum.accumulate(u[a:, 2 * last + 1]) - np.minimum.accumulate(u[a:, 2 * last]) + 1
        cost[a, a + 1:] = (csum[a + 1:] - csum[a]) * (win @ weights)
    m_max = min(_MAX_CLASSES, d)
    best = np.full((m_max + 1, d + 1), np.inf)
    cut = np.zeros((m_max + 1, d + 1), dtype=np.int64)
    best[0, 0] = 0.0
    for m in range(1, m_max + 1):
        tot = best[m - 1][:, None] + cost  # (a, b): the best m − 1 classes up to a, then the run a … b−1
        cut[m] = np.argmin(tot, axis=0)
        best[m] = tot[cut[m], np.arange(d + 1)]
    partitions = []
    for m in range(1, m_max + 1):
        cls = np.empty(d, dtype=np.int64)
        b = d
        for c in range(m, 0, -1):
            a = cut[c, b]
            cls[a:b] = c - 1
            b = a
        partitions.append(cls[rank][inverse])
    return partitions


def _class_windows(chain, cls: np.ndarray, sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The window lengths and origins of the perturbations along one axis.

    Per class and layer, the window length ``(L, classes)``, and the window origin of every
    perturbation ``(L, P)`` (the last layer's is its class's).
    """
    m = int(cls.max()) + 1
    last = len(chain) - 1
    lens = np.zeros((len(chain), m), dtype=np.int64)
    origin = np.zeros((len(chain), len(cls)), dtype=np.int64)
    for li, (lo, hi) in enumerate(chain):
        if li == last:
            c_lo = np.full(m, np.iinfo(np.int64).max)
            c_hi = np.full(m, -1)
            np.minimum.at(c_lo, cls, lo)
            np.maximum.at(c_hi, cls, hi)
            lens[li] = c_hi - c_lo + 1
            origin[li] = c_lo[cls]
        else:
            np.maximum.at(lens[li], cls, hi - lo + 1)
            origin[li] = np.clip(np.minimum(lo, sizes[li] - lens[li][cls]), 0, None)
    return lens, origin


_PLANS: OrderedDict = OrderedDict()
_DIGESTS: dict[int, tuple] = {}


def _digest(index: torch.Tensor) -> str:
    """Content hash of a perturbation index, kept per tensor object while it is alive and unchanged.

    The explainers keep their index: hashing the blurred Noise Sensitivity's 785 × 729 entries on
    every call cost several ms.
    """
    got = _DIGESTS.get(id(index))
    if got is not None and got[0]() is index and got[1] == index._version:
        return got[2]
    a = index.detach().cpu().numpy().astype(np.int64)
    digest = hashlib.blake2b(str(a.shape).encode() + a.tobytes(), digest_size=16).hexdigest()
    if len(_DIGESTS) > 64:
        for k in [k for k, v in _DIGESTS.items() if v[0]() is None]:
            del _DIGESTS[k]
    _DIGESTS[id(index)] = (weakref.ref(index), index._version, digest)
    return digest


def plan_windows(index: torch.Tensor, image_hw: tuple[int, int], specs, macs, rows_per_group: int,
                 batch_size: int) -> tuple[Group, ...]:
    """Groups and index tables for perturbations ``index`` ``(P, K)`` through conv layers ``specs``.

    ``specs``: ``(kernel, stride, pad_before, out_hw)`` per conv layer; the input
    coordinates of a layer are the previous layer's output coordinates shifted by
    ``pad_before``. ``macs``: multiply-adds per output position of each layer (the
    last one includes the fc columns of a position). ``rows_per_group``: how many
    rows each perturbation stands for in a call (the states evaluated together),
    for the per-chunk overhead term of the planner.

    The windows are those of the bounding box of each perturbation's pixels
    (:func:`plan_boxes` with those boxes).
    """
    w0 = image_hw[1]
    ys, xs = index // w0, index % w0
    boxes = torch.stack([ys.amin(1), ys.amax(1), xs.amin(1), xs.amax(1)], 1)
    return plan_boxes(index, torch.arange(index.shape[0], device=index.device), boxes,
                      torch.full((index.shape[0],), rows_per_group), image_hw, specs, macs, batch_size)


def plan_boxes(index: torch.Tensor, pert: torch.Tensor, boxes: torch.Tensor, rows: torch.Tensor, image_hw: tuple[int, int],
               specs, macs, batch_size: int) -> tuple[Group, ...]:
    """Groups and index tables for changed boxes of perturbations ``index`` ``(P, K)``.

    Box ``v`` is ``boxes[v]`` = (top, bottom, left, right), inclusive, of the pixels that
    perturbation ``pert[v]`` changes; it stands for ``rows[v]`` rows of a call. The
    members of a group are box indices; a member's first-window slots cover every pixel
    of its perturbation, those outside its window (unchanged) on slot ``in_h·in_w``.
    ``specs`` and ``macs`` as :func:`plan_windows`.

    Each axis is split into classes of similar windows (:func:`_axis_classes`); a
    group is a pair of classes. Window sizes are per class and axis, so the cost
    of a pair of partitions is separable and evaluated exactly; the pair with the
    least multiply-adds plus chunk overhead wins. Plans are cached by content.
    """
    cpu_boxes = boxes.detach().cpu().numpy().astype(np.int64)
    cpu_pert = pert.detach().cpu().numpy().astype(np.int64)
    cpu_rows = rows.detach().cpu().numpy().astype(np.float64)
    h = hashlib.blake2b(digest_size=16)
    h.update(_digest(index).encode())
    for a in (cpu_pert, cpu_boxes, cpu_rows):
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    key = (h.hexdigest(), tuple(image_hw), tuple(map(tuple, ((k, s, p, tuple(hw)) for k, s, p, hw in specs))), tuple(macs),
           batch_size, str(index.device))
    if key in _PLANS:
        _PLANS.move_to_end(key)
        return _PLANS[key]
    w0 = image_hw[1]
    cpu_index = index.detach().cpu().numpy().astype(np.int64)[cpu_pert]
    ys, xs = cpu_index // w0, cpu_index % w0
    chains = [_intervals(cpu_boxes[:, 0], cpu_boxes[:, 1], specs, 0), _intervals(cpu_boxes[:, 2], cpu_boxes[:, 3], specs, 1)]
    macs_a = np.asarray(macs, dtype=float)
    mean_len = [np.array([np.average(hi - lo + 1, weights=cpu_rows) for lo, hi in ch]) for ch in chains]
    parts = [_axis_classes(chains[a], macs_a * mean_len[1 - a], cpu_rows) for a in (0, 1)]
    wins = [[_class_windows(chains[a], cls, [hw[a] for *_, hw in specs]) for cls in parts[a]] for a in (0, 1)]
    best = None
    for iy, cy in enumerate(parts[0]):
        ly = wins[0][iy][0]
        for ix, cx in enumerate(parts[1]):
            lx = wins[1][ix][0]
            my, mx = ly.shape[1], lx.shape[1]
            count = np.bincount(cy * mx + cx, weights=cpu_rows, minlength=my * mx).reshape(my, mx)
            area = np.einsum("ly,lx->yx", ly * macs_a[:, None], lx)  # multiply-adds per row of each group
            chunks = np.ceil(count / batch_size)
            total = float((count * area).sum() + chunks.sum() * _CHUNK_OVERHEAD_MACS)
            if best is None or total < best[0]:
                best = (total, iy, ix)
    _, iy, ix = best
    (ly, oy), (lx, ox) = wins[0][iy], wins[1][ix]
    cy, cx = parts[0][iy], parts[1][ix]
    groups = []
    for g in np.unique(cy * lx.shape[1] + cx):
        members = np.nonzero(cy * lx.shape[1] + cx == g)[0]
        a, b = divmod(int(g), lx.shape[1])
        groups.append(_group_tables(members, ys[members], xs[members], (ly[:, a], lx[:, b]), (oy[:, members], ox[:, members]),
                                    specs, index.device))
    plan = tuple(groups)
    _PLANS[key] = plan
    while len(_PLANS) > 16:
        _PLANS.popitem(last=False)
    return plan


def _group_tables(members, ys, xs, lens, origins, specs, dev) -> Group:
    """Index tables of one group of perturbations that share their window lengths.

    The window lengths ``lens`` are per axis and layer; the window origins ``origins`` per axis and
    member, ``(L, n)``.
    """
    n = len(members)
    layers = []
    prev_origin, prev_hw = None, None
    slot0 = None
    for li, (k, s, pad, hw) in enumerate(specs):
        oh, ow = int(lens[0][li]), int(lens[1][li])
        origin = (origins[0][li], origins[1][li])
        ih, iw = (oh - 1) * s + k, (ow - 1) * s + k
        iy, ix = origin[0] * s - pad, origin[1] * s - pad  # input-window origin in the previous map's coordinates
        if li == 0:
            ry, rx = ys - iy[:, None], xs - ix[:, None]
            # a pixel outside the first window is outside its member's changed box (kernel >= stride: every
            # changed pixel is in the field of a changed output), so its change is zero: a spare slot takes it
            ok = (ry >= 0) & (ry < ih) & (rx >= 0) & (rx < iw)
            slot0 = np.where(ok, ry * iw + rx, ih * iw)
            outside = not bool(ok.all())
            gather = np.zeros((n, 0), dtype=np.int64)
        else:
            ph, pw = prev_hw
            ry = iy[:, None] + np.arange(ih) - prev_origin[0][:, None]  # (n, ih)
            rx = ix[:, None] + np.arange(iw) - prev_origin[1][:, None]
            ok = ((ry >= 0) & (ry < ph))[:, :, None] & ((rx >= 0) & (rx < pw))[:, None, :]
            gather = np.where(ok, ry[:, :, None] * pw + rx[:, None, :], ph * pw).reshape(n, -1)
        cy = origin[0][:, None] + np.arange(oh)
        cx = origin[1][:, None] + np.arange(ow)
        clean = (cy[:, :, None] * hw[1] + cx[:, None, :]).reshape(n, -1)
        layers.append(Layer((ih, iw), (oh, ow), torch.from_numpy(gather).to(dev), torch.from_numpy(clean).to(dev)))
        prev_origin, prev_hw = origin, (oh, ow)
    last = (int(prev_origin[0][0]), int(prev_origin[1][0]), *prev_hw)
    return Group(torch.from_numpy(members).to(dev), torch.from_numpy(slot0).to(dev), tuple(layers), last, outside)


def conv1_window(boxes: torch.Tensor, spec) -> torch.Tensor:
    """The conv1 output window ``(R, 4)`` whose receptive fields meet each pixel box.

    Per box (top, bottom, left, right): the first and last conv1 output row and the first and last
    column; as :func:`_intervals` for conv1.
    """
    k, s, pad, hw = spec
    lo = (boxes[:, 0::2] + pad - k + 1 + s - 1).div(s, rounding_mode="floor").clamp(min=0)
    hi = torch.minimum((boxes[:, 1::2] + pad).div(s, rounding_mode="floor"), torch.tensor(hw, device=boxes.device) - 1)
    return torch.stack([lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1]], 1)


def window_area(iv: torch.Tensor) -> torch.Tensor:
    """The number of positions of each window ``(R, 4)`` (top, bottom, left, right; inclusive)."""
    return (iv[:, 1] - iv[:, 0] + 1) * (iv[:, 3] - iv[:, 2] + 1)


def schedule_rows(groups, ids: torch.Tensor, member: torch.Tensor, members: int) -> list:
    """The rows of ``ids`` per window group, as ``(group, row ids, row slots)``.

    A row belongs to the group of its planned member (perturbation or box) ``member``; the rows come
    ordered by group, with each row's slot in its group's tables.
    """
    dev = ids.device
    group_of = torch.empty(members, dtype=torch.long, device=dev)
    slot_of = torch.empty(members, dtype=torch.long, device=dev)
    for gi, g in enumerate(groups):
        group_of[g.members] = gi
        slot_of[g.members] = torch.arange(len(g.members), device=dev)
    row_group = group_of[member]
    order = torch.argsort(row_group, stable=True)
    ids, slots = ids[order], slot_of[member[order]]
    bounds = [0, *torch.cumsum(torch.bincount(row_group, minlength=len(groups)), 0).tolist()]
    return [(g, ids[bounds[i]:bounds[i + 1]], slots[bounds[i]:bounds[i + 1]])
            for i, g in enumerate(groups) if bounds[i + 1] > bounds[i]]
