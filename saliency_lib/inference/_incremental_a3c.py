"""Exact incremental inference for local perturbations of Mask-Attention A3C networks.

The companion of :mod:`saliency_lib.inference._incremental` (Nature-CNN) for
:class:`~saliency_lib.agents.MaskA3CNet`: conv1 (5×5) → 2×2 max-pool → ReLU →
conv2 (3×3) → pool → ReLU → conv3 (3×3) → pool → ReLU → ConvLSTM (3×3, the
recurrent state of each row held as given) → heads. A perturbation of a few
pixels (Occlusion, SARFA, Noise Sensitivity) changes only a window of each of
these maps. :class:`IncrementalMaskA3C` computes the clean maps once per state
and, for each perturbed input, only the windows:

* every conv is linear, so its change is the conv of the change of its input,
  ``Δz = conv(Δh_in)`` (no bias), evaluated on a crop of the input around the
  window;
* a max-pool and a ReLU are not linear, so they are applied to the *values*
  ``z + Δz`` (clean pre-activation plus change) of the window, and the change
  passed on is the new value minus the clean pooled value there;
* the ConvLSTM's gates change by the conv of the input change with the input
  half of the gate weights (the recurrent half multiplies the unchanged state);
  the cell and the output are recomputed on the window from the clean gates plus
  that change, and the change of the output is taken against the same formula
  on the clean gates;
* the heads (1×1 convs, masks, linear layers: a small part of the cost) run on
  the full 10×10 feature map, the clean one plus the window's change.

Max-pool and ReLU only select values, so where a change does not reach, every
value is the clean pass's bit for bit and the change is exactly zero; a row
whose change dies out before the heads returns the clean outputs exactly. A row
whose input does not change at all (a patch that writes the values the pixels
already have) takes the clean outputs without a pass. The
rounding error elsewhere scales with the change, and the maps equal those of
full forward passes up to float rounding (tests: ≤ 1e-4 after min-max
normalisation).

Window geometry: per layer, one window size for all perturbations of a call (the
largest needed), shifted inwards at the borders, with pooled windows on even
boundaries so that every pooling cell of the window is whole. Every row of a
chunk therefore has the same shapes, and a chunk is a dense batch.

Several networks that share their lower layers (the randomisation cascade) are
evaluated at once: each network computes its changes from the first layer whose
parameters differ from the first network's and reuses the first network's below.

Supported: :class:`~saliency_lib.agents.ActorCriticAgent` (``forward`` not
overridden) around a :class:`~saliency_lib.agents.MaskA3CNet` with its ConvLSTM,
in the official layer shapes and float32, inputs whose sides are multiples of 8.
Everything else falls back to full forward passes (:func:`engine_for`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..agents.base import ActorCriticAgent, Agent
from ..agents.mask_a3c import MaskA3CNet, max_pool2
from ._cascade import stage_cuts
from ._changed import changed_rows

__all__ = ["IncrementalMaskA3C", "mask_a3c_support"]

#: (kernel, padding) of conv1, conv2, conv3 and the ConvLSTM's gate conv in the official layout.
_LAYOUT = {"conv1": (5, 2), "conv2": (3, 1), "conv3": (3, 1), "convlstm1.conv": (3, 1)}


def mask_a3c_support(agent: Agent) -> str | None:
    """``None`` if :class:`IncrementalMaskA3C` supports ``agent``, else the reason it does not."""
    if not isinstance(agent, ActorCriticAgent) or type(agent).forward is not ActorCriticAgent.forward:
        return f"{type(agent).__name__} is not a plain ActorCriticAgent"
    net = agent.net
    if not isinstance(net, MaskA3CNet):
        return f"{type(net).__name__} is not a MaskA3CNet"
    for meth in ("forward", "trunk", "heads"):
        if getattr(type(net), meth) is not getattr(MaskA3CNet, meth):
            return f"{type(net).__name__}.{meth} overrides MaskA3CNet's"
    if not net.config.convlstm:
        return "the network has no ConvLSTM"
    mods = dict(net.named_modules())
    for name, (k, p) in _LAYOUT.items():
        m = mods.get(name)
        if (type(m) is not nn.Conv2d or m.kernel_size != (k, k) or m.stride != (1, 1) or m.padding != (p, p)
                or m.dilation != (1, 1) or m.groups != 1 or m.padding_mode != "zeros"):
            return f"{name} is not the official layer"
    if any(m._forward_hooks or m._forward_pre_hooks for m in net.modules()):
        return "the network has forward hooks"
    if any(p.dtype != torch.float32 for p in net.parameters()):
        return "the network is not float32"
    h, w = agent.input_shape[1:]
    if h % 8 or w % 8:
        return f"the input {h}×{w} is not a multiple of 8 on both sides"
    return None


# -- geometry ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Axis:
    """Window starts along one axis for every perturbation, and the window sizes.

    ``pool[l]``: start ``(P,)`` and size of the pooled window of conv layer ``l`` (0–2) on its
    pooled grid; its conv window is twice that on the conv grid. ``lstm``: start and size of the
    ConvLSTM window on the last grid.
    """

    pool: tuple[tuple[np.ndarray, int], ...]
    lstm: tuple[np.ndarray, int]


def _window(lo: np.ndarray, hi: np.ndarray, grid: int) -> tuple[np.ndarray, int]:
    """One window size covering every ``[lo, hi]`` (inclusive, clipped to the grid), shifted inwards."""
    lo, hi = np.clip(lo, 0, grid - 1), np.clip(hi, 0, grid - 1)
    size = int((hi - lo).max()) + 1
    return np.minimum(lo, grid - size), size


def _axis(lo: np.ndarray, hi: np.ndarray, size: int) -> _Axis:
    """Windows along one axis of an image of ``size`` pixels for changed pixel ranges ``[lo, hi]``."""
    pools = []
    pad = 2  # conv1's halo; conv2, conv3 and the ConvLSTM have 1
    grid = size
    for _ in range(3):
        # changed conv outputs [lo − pad, hi + pad] → their pooling cells, on the pooled grid
        start, n = _window((lo - pad) // 2, (hi + pad) // 2, grid // 2)
        pools.append((start, n))
        lo, hi, grid, pad = start, start + n - 1, grid // 2, 1
    lstm = _window(lo - 1, hi + 1, grid)
    return _Axis(tuple(pools), lstm)


@dataclass(frozen=True)
class _Plan:
    """Index tables of one perturbation geometry (all flat, per perturbation ``(P, …)``)."""

    crop_hw: tuple[tuple[int, int], ...]  # input crop of conv1, conv2, conv3, ConvLSTM
    win_hw: tuple[tuple[int, int], ...]  # output window of each: conv window (before pooling) or ConvLSTM window
    pool_hw: tuple[tuple[int, int], ...]  # pooled window of conv1-3
    scatter: tuple[torch.Tensor, ...]  # where the change of the layer's input goes in its crop
    conv_at: tuple[torch.Tensor, ...]  # flat positions of the conv window in the layer's output grid
    pool_at: tuple[torch.Tensor, ...]  # flat positions of the pooled window in the pooled grid


def _positions(r0: np.ndarray, c0: np.ndarray, h: int, w: int, width: int) -> np.ndarray:
    """Flat positions ``(P, h·w)`` of the ``h × w`` windows at ``(r0, c0)`` in rows of ``width``."""
    rr = r0[:, None, None] + np.arange(h)[None, :, None]
    cc = c0[:, None, None] + np.arange(w)[None, None, :]
    return (rr * width + cc).reshape(len(r0), -1)


_PLANS: dict = {}


def _plan(index: torch.Tensor, hw: tuple[int, int]) -> _Plan:
    """The plan of ``index`` ``(P, K)`` (flat pixel indices) on an ``hw`` input, cached by content."""
    key = (hashlib.blake2b(index.cpu().numpy().tobytes(), digest_size=16).hexdigest(), tuple(index.shape), hw, str(index.device))
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    hh, ww = hw
    idx = index.cpu().numpy()
    ys, xs = idx // ww, idx % ww
    ay = _axis(ys.min(1), ys.max(1), hh)
    ax = _axis(xs.min(1), xs.max(1), ww)
    crop_hw, win_hw, pool_hw, scatter, conv_at, pool_at = [], [], [], [], [], []
    grid = (hh, ww)
    # the change of conv1's input: the perturbed pixels, in the crop [2·s − 2, 2·s + 2·n + 2)
    prev = None
    for li in range(3):
        (sy, ny), (sx, nx) = ay.pool[li], ax.pool[li]
        pad = 2 if li == 0 else 1
        ch, cw = 2 * ny + 2 * pad, 2 * nx + 2 * pad
        oy, ox = 2 * sy - pad, 2 * sx - pad  # crop origin on the layer's input grid
        if prev is None:
            sc = (ys - oy[:, None]) * cw + (xs - ox[:, None])
        else:
            (py, pny), (px, pnx) = prev
            sc = _positions(py - oy, px - ox, pny, pnx, cw)
        crop_hw.append((ch, cw))
        win_hw.append((2 * ny, 2 * nx))
        pool_hw.append((ny, nx))
        scatter.append(sc)
        conv_at.append(_positions(2 * sy, 2 * sx, 2 * ny, 2 * nx, grid[1]))
        pool_at.append(_positions(sy, sx, ny, nx, grid[1] // 2))
        prev = ((sy, ny), (sx, nx))
        grid = (grid[0] // 2, grid[1] // 2)
    (sy, ny), (sx, nx) = ay.lstm, ax.lstm
    (py, pny), (px, pnx) = prev
    crop_hw.append((ny + 2, nx + 2))
    win_hw.append((ny, nx))
    scatter.append(_positions(py - (sy - 1), px - (sx - 1), pny, pnx, nx + 2))
    conv_at.append(_positions(sy, sx, ny, nx, grid[1]))
    dev = index.device

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(dev)

    plan = _Plan(tuple(crop_hw), tuple(win_hw), tuple(pool_hw), tuple(map(t, scatter)), tuple(map(t, conv_at)),
                 tuple(map(t, pool_at)))
    if len(_PLANS) > 16:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


# -- the engine ----------------------------------------------------------------------
def _take(rows: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    """Rows ``at`` of a channels-last ``(R, C)`` table.

    The layers have 32 to 256 channels, so a row-wise ``index_select`` copies whole cache lines.
    """
    return rows.index_select(0, at)


def _rows(t: torch.Tensor) -> torch.Tensor:
    """``(N, C, h, w)`` → channels-last rows ``(N·h·w, C)``."""
    return t.permute(0, 2, 3, 1).reshape(-1, t.shape[1]).contiguous()


def _cell(gates: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The ConvLSTM's output ``h'`` from its gate pre-activations and cell state (:class:`ConvLSTMCell`)."""
    i, f, o, g = torch.chunk(gates, 4, dim=1)
    return torch.sigmoid(o) * torch.tanh(torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g))


class _Clean:
    """The clean pass of one network on the states of a call, kept for the windows."""

    def __init__(self, net: MaskA3CNet, x: torch.Tensor, hidden):
        h0, c0 = hidden
        self.z, self.p = [], []  # conv pre-activations and pooled post-activations, as channels-last rows
        a = x
        for conv in (net.conv1, net.conv2, net.conv3):
            z = conv(a)
            a = F.relu(max_pool2(z))
            self.z.append(_rows(z))
            self.p.append(_rows(a))
        lstm = net.convlstm1
        gates = lstm.conv(torch.cat([a, h0], dim=1))
        self.gates = _rows(gates)
        self.c = _rows(c0)
        h, c = lstm(a, (h0, c0))
        self.h = h.contiguous()
        self.out = net.heads(h, (h, c))
        self.out["probs"] = torch.softmax(self.out["logits"], dim=1)

    def share_below(self, other: _Clean, cut: int) -> None:
        """Take ``other``'s maps of the stages below ``cut`` (equal parameters, equal maps), freeing this copy's."""
        for li in range(min(cut, 3)):
            self.z[li], self.p[li] = other.z[li], other.p[li]
        if cut > 3:
            self.gates, self.c, self.h = other.gates, other.c, other.h


class IncrementalMaskA3C:
    """Readouts of local perturbations through one or several :class:`MaskA3CNet` agents.

    Parameters
    ----------
    agents : sequence of Agent
        Supported agents (:func:`mask_a3c_support`) of one architecture. The first is
        the reference; every other agent reuses its changes below the first layer
        whose parameters differ from it (the randomisation cascade).

    Notes
    -----
    Memory, besides the readouts: per agent,
    the clean maps of the states of a call, 390 k values (1.6 MB) per 80×80 state:
    the three convolutions' pre-activations and pooled outputs (352 k, 205 k of it
    conv1's 32×80×80 pre-activation), the ConvLSTM's gates, input cell state and
    output (38 k). Networks share the maps below their first differing layer. Per
    chunk of ``B`` rows: the crops and windows (a few thousand values per row for
    Occlusion, tens of thousands for the blurred Noise Sensitivity) and the
    ``B × 64 × 10 × 10`` feature maps of the heads.
    """

    def __init__(self, agents: Sequence[Agent]):
        if not agents:
            raise ValueError("agents must name at least one agent")
        for a in agents:
            why = mask_a3c_support(a)
            if why is not None:
                raise TypeError(f"incremental inference does not support this agent: {why}")
        self.agents = list(agents)
        self.nets: list[MaskA3CNet] = [a.net for a in self.agents]
        cfg, shape = self.nets[0].config, self.agents[0].input_shape
        if any(n.config != cfg for n in self.nets[1:]) or any(a.input_shape != shape for a in self.agents[1:]):
            raise ValueError("all agents must share one MaskA3CNet architecture")

    @staticmethod
    def _stages(net: MaskA3CNet) -> list[list[torch.Tensor]]:
        heads = [getattr(net, n, None)
                 for n in ("a_conv", "c_conv", "att_conv_a1", "att_conv_c1", "actor_linear", "critic_linear")]
        return ([list(m.parameters()) for m in (net.conv1, net.conv2, net.conv3, net.convlstm1)]
                + [[p for m in heads if m is not None for p in m.parameters()]])

    def cuts(self) -> list[int]:
        """For each agent, the first stage whose parameters differ from the first agent's.

        The stages are conv1, conv2, conv3, the ConvLSTM and the heads.
        """
        return stage_cuts([[(params, None) for params in self._stages(net)] for net in self.nets])

    @torch.no_grad()
    def readouts(
        self,
        x: torch.Tensor,
        index: torch.Tensor,
        delta: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
        readout: Callable[[Mapping[str, torch.Tensor]], torch.Tensor],
        batch_size: int,
        hidden=None,
        changed: torch.Tensor | None = None,
    ) -> list[torch.Tensor]:
        """Readouts ``(N, P, K)`` of every perturbation, one tensor per agent.

        The arguments are those of :meth:`~saliency_lib.inference._incremental.IncrementalDQN.readouts`
        (``x`` here ``(N, 1, H, W)``), plus ``hidden``: the recurrent state ``(h, c)`` of each
        state, each ``(N, 64, h, w)`` (zeros if None). Chunks hold ``batch_size`` rows (the
        explainer's; by default the network's inference batch, 16: on the official Breakout
        agent, chunks of 16 to 128 rows cost within 10 % of each other for Occlusion, and the
        blurred Noise Sensitivity's larger windows were fastest at 16).
        """
        n, c, hh, ww = x.shape
        p, k = index.shape
        net0 = self.nets[0]
        if hidden is None:
            hidden = net0.initial_hidden(n, x.device)
        cuts = self.cuts()
        cleans: list[_Clean] = []
        for a, net in enumerate(self.nets):
            cleans.append(_Clean(net, x, hidden))
            if a:
                cleans[a].share_below(cleans[0], cuts[a])
        plan = _plan(index, (hh, ww))
        grids = [(hh, ww), (hh // 2, ww // 2), (hh // 4, ww // 4), (hh // 8, ww // 8)]
        weights = [[conv.weight.detach().contiguous(memory_format=torch.channels_last)
                    for conv in (net.conv1, net.conv2, net.conv3)]
                   + [net.convlstm1.conv.weight.detach()[:, : net.conv3.out_channels]
                      .contiguous(memory_format=torch.channels_last)]
                   for net in self.nets]
        x_rows = x.permute(0, 2, 3, 1).reshape(-1, c).contiguous()
        chunk = int(batch_size)
        # every row starts with its state's clean readout, which a row without a change keeps (no pass)
        outs = []
        for cl in cleans:
            clean = {key: val for key, val in cl.out.items() if isinstance(val, torch.Tensor) and val.shape[:1] == (n,)}
            outs.append(readout(clean).float().repeat_interleave(p, 0))
        ids = changed_rows(x_rows, index, delta, n, (hh, ww), changed)[0]
        for r0 in range(0, len(ids), chunk):
            r = ids[r0:r0 + chunk]
            state, pert = torch.div(r, p, rounding_mode="floor"), r % p
            at = (index.index_select(0, pert) + (state * (hh * ww))[:, None]).view(-1)
            d0 = delta(state, pert, _take(x_rows, at).view(-1, k, c), at)  # (B, K, C)
            res = self._chunk(plan, grids, weights, cleans, cuts, state, pert, d0)
            for a, o in enumerate(res):
                outs[a][r] = readout(o).float()
        return [o.view(n, p, -1) for o in outs]

    def _chunk(self, plan: _Plan, grids, weights, cleans: list[_Clean], cuts, state, pert, d0) -> list[dict[str, torch.Tensor]]:
        b = d0.shape[0]
        rows = torch.arange(b, device=d0.device)[:, None]
        # the change of conv1's input, scattered into its crop (one spare slot per row is not needed:
        # every perturbed pixel lies inside the crop by construction)
        ch, cw = plan.crop_hw[0]
        buf = d0.new_zeros(b * ch * cw, d0.shape[2])
        slots = (plan.scatter[0].index_select(0, pert) + rows * (ch * cw)).view(-1)
        buf.index_put_((slots,), d0.reshape(-1, d0.shape[2]), accumulate=False)
        changes = {0: buf}
        for li in range(4):
            ch, cw = plan.crop_hw[li]
            wh, wwid = plan.win_hw[li]
            new = {}
            for a in range(len(self.nets)):
                if a and cuts[a] > li:
                    continue
                src = changes.get(a, changes[0])
                crop = src.view(b, ch, cw, -1).permute(0, 3, 1, 2)
                dz = F.conv2d(crop, weights[a][li])  # (B, C_out, wh, wwid), channels-last memory
                at = (plan.conv_at[li].index_select(0, pert) + (state * (grids[li][0] * grids[li][1]))[:, None]).view(-1)
                cl = cleans[a]
                if li < 3:
                    z = _take(cl.z[li], at).view(b, wh, wwid, -1).permute(0, 3, 1, 2)
                    v = F.relu(F.max_pool2d(z + dz, 2))  # channels-last in and out (see max_pool2)
                    ph, pw = plan.pool_hw[li]
                    pat = (plan.pool_at[li].index_select(0, pert)
                           + (state * (grids[li + 1][0] * grids[li + 1][1]))[:, None]).view(-1)
                    dv = v.permute(0, 2, 3, 1).reshape(-1, v.shape[1]) - _take(cl.p[li], pat)  # (B·ph·pw, C)
                    nh, nw = plan.crop_hw[li + 1]
                    nxt = dv.new_zeros(b * nh * nw, dv.shape[1])
                    slots = (plan.scatter[li + 1].index_select(0, pert) + rows * (nh * nw)).view(-1)
                    nxt.index_copy_(0, slots, dv)
                    new[a] = nxt
                else:
                    g = _take(cl.gates, at).view(b, wh, wwid, -1).permute(0, 3, 1, 2)
                    c0 = _take(cl.c, at).view(b, wh, wwid, -1).permute(0, 3, 1, 2)
                    dh = _cell(g + dz, c0) - _cell(g, c0)  # (B, 64, wh, wwid)
                    new[a] = (dh, at)
            changes = new
        res = []
        for a, net in enumerate(self.nets):
            dh, at = changes.get(a, changes[0])
            cl = cleans[a]
            same = dh.flatten(1).abs().amax(1) == 0
            feat = cl.h.index_select(0, state)  # (B, 64, h, w)
            flat = feat.view(b, feat.shape[1], -1)
            pos = (at.view(b, -1) - (state * (grids[3][0] * grids[3][1]))[:, None])[:, None, :].expand(-1, flat.shape[1], -1)
            flat.scatter_add_(2, pos, dh.reshape(b, dh.shape[1], -1))
            out = net.heads(feat, None)
            out["probs"] = torch.softmax(out["logits"], dim=1)
            keep = {}
            for key, val in out.items():
                if isinstance(val, torch.Tensor) and val.shape[:1] == (b,):
                    ref = cl.out[key].index_select(0, state)
                    keep[key] = torch.where(same.view(-1, *[1] * (val.dim() - 1)), ref, val)
            res.append(keep)
        return res
