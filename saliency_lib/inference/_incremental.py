"""Exact incremental inference for local perturbations of Nature-CNN Q-networks.

Occlusion, Noise Sensitivity and SARFA change a small window of the input. Through
:class:`~saliency_lib.agents.DQNNet` (conv1 8×8/4 → conv2 4×4/2 → conv3 3×3/1 → fc
→ head) such a change reaches only a window of each feature map: a 2×2 patch
changes at most 2×2 of conv1's 20×20 outputs, 3×3 of conv2's 9×9 and 5×5 of
conv3's 7×7. :class:`IncrementalDQN` computes the clean activations once per state
and then, for each perturbed input, only those windows, in **delta form**:

* the input change ``Δx`` (zero outside the perturbation) is gathered into the
  receptive-field window of the changed conv1 outputs;
* each conv layer maps the delta of its input window linearly,
  ``Δz = conv(Δh_in)`` (no bias), and the ReLU is applied to the clean
  pre-activation plus the delta: ``Δh = relu(z + Δz) − relu(z)`` (evaluated as
  ``max(Δz + min(z, 0), −relu(z))`` from tables of the clean pre-activations);
* the fc layer adds ``W[:, changed] · Δh₃`` to the clean pre-activation; the
  head then runs on the full ``hidden``-wide vector.

Where the input does not change the delta is exactly zero, so unchanged
activations are reproduced bit for bit and the rounding error scales with the
*change*, not with the activations: the maps agree with full forward passes to
float rounding (tests: ≤ 1e-4 after min-max normalisation, in practice ~1e-6).

Three exact savings follow from that:

* **No-op perturbations.** Which (state, perturbation) rows change their input is
  found first (:mod:`._changed`: from the explainer's table of the pixels a
  perturbation can change, or by evaluating the changes); a row that changes no
  pixel (a black patch over pixels that are black in all frames) has the clean
  outputs and gets no pass at all. This holds for every network of a call, so the
  cascade's levels skip the same rows.
* **Changed boxes.** The windows of a row follow the box of the pixels it really
  changes, not its perturbation's index (a black disk over partly black pixels
  changes fewer pixels); pixels outside the row's first window are unchanged.
* **ReLU-dead deltas.** ``relu(z + Δz) − relu(z)`` is exactly zero where the
  activation is at or below zero before and after; a position of the conv3 window
  whose change is zero for every row of a chunk is dropped from the fc product
  (a whole row of a chunk whose change died out takes the clean outputs, as
  before). On the shipped agents such positions are rare (the change of a
  position is zero in all 32 or 64 channels only where the input change is), so
  this saves little there; the engine counts them (:attr:`IncrementalDQN.stats`).

Rows are grouped so that a chunk is a dense batch: within a group every layer's
window has one size, and the conv3 window is the same for the whole group
(:func:`~saliency_lib.inference._window_plan.plan_boxes` plans the groups from the
changed boxes, up to one group per distinct conv3 window: tight windows wherever
the rows pay for their chunk). Windows are gathered with index tables (cached by
content) and evaluated with ``conv2d`` on ``(B, C, h, w)`` crops in channels-last
layout; rows of all states of a call share a group. The fc delta takes the weight
columns of the group's conv3 window, one contiguous block of a channels-last copy
of the weight per window row, so no weight is copied per group.

The engine also evaluates several networks that share their lower layers at
once (the randomisation cascade): each network's delta is computed only from
the first layer where its parameters differ from the first network's; below
that cut the first network's deltas are reused.

Supported: :class:`~saliency_lib.agents.QAgent` (``forward`` not overridden)
around a :class:`~saliency_lib.agents.DQNNet` (``valid`` or ``same`` padding,
dueling or not) or an :class:`~saliency_lib.agents.AdvantageStream`, in
float32. Everything else makes the explainers fall back to full forward passes,
with one log notice per network type (:func:`notice_once`).

References
----------
.. [1] Nakandala, Kumar & Papakonstantinou (2019). Incremental and approximate
   inference for faster occlusion-based deep CNN explanations. SIGMOD (Krypton).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..agents.base import Agent, QAgent
from ..agents.dqn import AdvantageStream, DQNNet
from ._cascade import stage_cuts
from ._changed import changed_rows
from ._rows import copy_rows_, fill_rows_, gather_rows
from ._window_plan import Group, Layer, conv1_window, plan_boxes, plan_windows, schedule_rows, window_area

__all__ = ["IncrementalDQN", "incremental_support", "notice_once", "engine_for", "delta_from_values"]

_log = logging.getLogger(__name__)
_NOTICES: set[str] = set()


def notice_once(key: str, message: str) -> None:
    """Log ``message`` (level WARNING) the first time ``key`` is seen in this process."""
    if key not in _NOTICES:
        _NOTICES.add(key)
        _log.warning(message)


# -- which networks ------------------------------------------------------------------
def _core_and_head(agent: Agent) -> tuple[DQNNet, Callable[[torch.Tensor], torch.Tensor]] | str:
    """The DQNNet doing the convolutions and the head applied to its features, or why not."""
    if not isinstance(agent, QAgent) or type(agent).forward is not QAgent.forward:
        return f"{type(agent).__name__} is not a plain QAgent"
    net = agent.net
    if type(net) is AdvantageStream:
        core, head = net.dueling, net.head
        if type(net).features is not AdvantageStream.features:  # pragma: no cover - defensive
            return "AdvantageStream.features is overridden"
    else:
        core, head = net, getattr(net, "head", None)
    if not isinstance(core, DQNNet):
        return f"{type(net).__name__} is not a DQNNet"
    for meth in ("features", "head", "forward"):
        if getattr(type(core), meth) is not getattr(DQNNet, meth):
            return f"{type(core).__name__}.{meth} overrides DQNNet's"
    same = core.config.padding == "same"
    want = {"conv1": (8, 4, 2 if same else 0), "conv2": (4, 2, 0), "conv3": (3, 1, 1 if same else 0)}
    for name, (k, s, p) in want.items():
        m = getattr(core, name)
        if (type(m) is not nn.Conv2d or m.kernel_size != (k, k) or m.stride != (s, s) or m.padding != (p, p)
                or m.dilation != (1, 1) or m.groups != 1 or m.padding_mode != "zeros"):
            return f"{name} is not the Nature-CNN layer"
    mods = [core, core.conv1, core.conv2, core.conv3, core.fc, net]
    if any(m._forward_hooks or m._forward_pre_hooks for m in mods):
        return "the network has forward hooks"
    if type(core.fc) is not nn.Linear:
        return "fc is not an nn.Linear"
    return core, head


def incremental_support(agent: Agent) -> str | None:
    """``None`` if :class:`IncrementalDQN` supports ``agent``, else the reason it does not."""
    got = _core_and_head(agent)
    return got if isinstance(got, str) else None


def engine_for(explainer, agents: Sequence[Agent], hidden):
    """The incremental engine of ``explainer`` for ``agents`` (cached on the explainer), or ``None``.

    ``None`` means full forward passes: ``naive``, ``bf16`` or an unsupported network (logged once
    per network type). :class:`IncrementalDQN` serves Nature-CNN Q-networks (no recurrent state),
    :class:`~saliency_lib.inference._incremental_a3c.IncrementalMaskA3C` Mask-A3C networks.
    """
    from ._incremental_a3c import IncrementalMaskA3C, mask_a3c_support

    if explainer.naive or explainer.precision != "fp32":
        return None
    name = type(explainer).__name__
    a3c = all(mask_a3c_support(a) is None for a in agents)
    for a in agents:
        why = None if a3c else incremental_support(a) or ("it has a recurrent state" if hidden is not None else None)
        if why is not None:
            notice_once(f"{name}:{type(a).__name__}:{type(a.net).__name__}",
                        f"{name}: incremental inference does not support this network ({why}); using full forward passes")
            return None
    cache = explainer.__dict__.setdefault("_engines", {})
    key = tuple(id(a) for a in agents)
    eng = cache.get(key)
    if eng is None or any(x is not y for x, y in zip(eng.agents, agents)):
        cache.clear()
        try:
            eng = cache[key] = (IncrementalMaskA3C if a3c else IncrementalDQN)(agents)
        except ValueError:  # agents of different architectures
            return None
    return eng


def delta_from_values(values: Callable, p: int) -> Callable:
    """A ``delta(state, pert, clean, at)`` for :meth:`IncrementalDQN.readouts` from an explainer's values.

    ``values(i, clean)`` gives the perturbed values ``(P, C, K)`` of state ``i``, or one float.
    """
    def delta(state, pert, clean, at):
        out = torch.empty_like(clean)
        for i in torch.unique(state).tolist():
            rows = (state == i).nonzero()[:, 0]
            full = torch.zeros((p, *clean.shape[1:]), dtype=clean.dtype, device=clean.device)
            full[pert[rows]] = clean[rows]
            new = values(i, full.transpose(1, 2))  # (P, C, K)
            new = new.transpose(1, 2)[pert[rows]] if isinstance(new, torch.Tensor) else float(new)
            out[rows] = new - clean[rows]
        return out
    return delta


# -- the engine ----------------------------------------------------------------------
class _Net:
    """A supported network split into its layers."""

    def __init__(self, agent: Agent):
        got = _core_and_head(agent)
        if isinstance(got, str):
            raise TypeError(f"incremental inference does not support this agent: {got}")
        self.core, self.head = got
        self.same = self.core.config.padding == "same"
        self.convs = (self.core.conv1, self.core.conv2, self.core.conv3)
        self._wsub: dict = {}
        self._weights_key = None
        self.refresh()

    def refresh(self) -> None:
        """Channels-last copies of the conv weights (the windows are channels-last).

        They are rebuilt when a weight was replaced or changed in place since the last call.
        """
        key = tuple((c.weight.data_ptr(), c.weight._version) for c in self.convs)
        if key != self._weights_key:
            self.conv_weights = tuple(c.weight.detach().contiguous(memory_format=torch.channels_last) for c in self.convs)
            self._weights_key = key

    def params(self) -> list[list[torch.Tensor]]:
        """Parameters per stage: conv1, conv2, conv3, fc, head."""
        core = self.core
        heads = [m for m in (getattr(core, n, None) for n in ("out", "out_value", "out_adv")) if m is not None]
        return ([list(c.parameters()) for c in self.convs]
                + [list(core.fc.parameters()), [p for m in heads for p in m.parameters()]])

    def clean(self, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Pre-activations of conv1…conv3 ``(N, C, h, w)`` and of fc ``(N, hidden)``, as ``DQNNet.features``."""
        core = self.core
        z1 = core.conv1(x)
        h = F.relu(z1)
        if self.same:
            h = F.pad(h, (1, 2, 1, 2))
        z2 = core.conv2(h)
        z3 = core.conv3(F.relu(z2))
        zf = core.fc(F.relu(z3).flatten(1))
        return [z1, z2, z3], zf

    def specs(self, out_hws) -> list[tuple[int, int, int, tuple[int, int]]]:
        pads = (2, 1, 1) if self.same else (0, 0, 0)
        return [(c.kernel_size[0], c.stride[0], p, hw) for c, p, hw in zip(self.convs, pads, out_hws)]

    def macs(self) -> list[float]:
        """Multiply-adds per output position of each conv layer (the last with its fc columns)."""
        m = [c.in_channels * c.kernel_size[0] * c.kernel_size[1] * c.out_channels for c in self.convs]
        m[-1] += self.convs[-1].out_channels * self.core.fc.out_features
        return m

    def fc_rows(self, grid: tuple[int, int]) -> torch.Tensor:
        """The fc weight as ``(h₃·w₃·C₃, hidden)`` rows in (y, x, c) order (channels-last).

        Cached per weight version: the columns of a window row are one contiguous block of rows.
        """
        w = self.core.fc.weight
        key = (w.data_ptr(), w._version)
        if self._wsub.get("key") != key:
            c3 = self.convs[-1].out_channels
            self._wsub = {"key": key,
                          "rows": w.detach().view(w.shape[0], c3, grid[0] * grid[1]).permute(2, 1, 0)
                                   .reshape(-1, w.shape[0]).contiguous()}
        return self._wsub["rows"]

    def fc_delta(self, z: torch.Tensor, dh: torch.Tensor, last: tuple[int, int, int, int], grid: tuple[int, int]) -> torch.Tensor:
        """``z += W[:, window] · Δh₃`` in place, one matrix product per window row (no weight copies).

        ``dh`` ``(B, rows·cols, C₃)`` or ``(B, rows, cols, C₃)`` (a view, possibly a sub-window) holds the
        conv3 window at ``last`` = (row, col, rows, cols).
        """
        r0, c0, h, w = last
        c3 = dh.shape[-1]
        rows = self.fc_rows(grid)
        if w == grid[1]:  # full-width window: its columns are one contiguous block, one product
            start = r0 * grid[1] * c3
            return z.addmm_(dh.reshape(dh.shape[0], h * w * c3), rows[start:start + h * w * c3])
        by_row = dh.reshape(dh.shape[0], h, w * c3)  # a view: a window row's columns are contiguous
        for y in range(h):
            start = ((r0 + y) * grid[1] + c0) * c3
            z.addmm_(by_row[:, y], rows[start:start + w * c3])
        return z


class IncrementalDQN:
    """Readouts of local perturbations through one or several :class:`DQNNet` agents.

    Parameters
    ----------
    agents : sequence of Agent
        Supported agents (:func:`incremental_support`) of one architecture. The
        first is the reference; every other agent reuses its deltas below the
        first layer whose parameters differ from it (the randomisation cascade).

    Notes
    -----
    Memory, besides the readouts: the clean pre-activations of the states of a
    call for every agent (about 22 k values per state for the valid layout:
    12 800 + 5 184 + 3 136 + 512); a channels-last copy of the states; the index
    tables (a few hundred values per perturbation); per agent, a channels-last
    copy of the conv and fc weights (1.7 M values, 7 MB); and per chunk of
    ``B`` rows the windows (``B ×`` a few thousand values), far less than the
    ``B × 4 × 84 × 84`` input of a full pass. The first windows of a chunk live in a
    zeroed buffer that the engine keeps between chunks and calls (the largest chunk's:
    6.5 MB for 256 rows of Noise Sensitivity's 40 × 40 × 4 window).
    """

    #: Elements of the input changes evaluated at once when the changed rows are found.
    _SCAN_ELEMENTS = 1 << 22

    def __init__(self, agents: Sequence[Agent]):
        if not agents:
            raise ValueError("agents must name at least one agent")
        self.agents = list(agents)
        self.nets = [_Net(a) for a in self.agents]
        cfg = self.nets[0].core.config
        if any(n.core.config != cfg for n in self.nets[1:]):
            raise ValueError("all agents must share one DQNNet architecture")
        self.cuts = self._cuts()
        self._buffers: dict = {}
        #: Counters of the exact savings, filled while :attr:`collect_stats` is true (see :meth:`reset_stats`).
        self.stats: dict[str, float] = {}
        self.collect_stats = False
        self.reset_stats()

    def reset_stats(self) -> None:
        """Zero :attr:`stats`, the counters of the work done.

        They are ``rows`` (state, perturbation) pairs, ``noop_rows`` skipped as unchanged,
        ``window_positions`` and ``changed_positions`` per conv layer (``conv1`` …) summed over the
        rows evaluated (the first network's, with ``collect_stats``), and ``fc_positions`` /
        ``fc_positions_used`` of the conv3 windows before and after dropping the positions that are
        ReLU-dead in a whole chunk.
        """
        self.stats = {"rows": 0, "noop_rows": 0, "fc_positions": 0, "fc_positions_used": 0,
                      **{f"{k}_conv{i}": 0 for k in ("window_positions", "changed_positions") for i in (1, 2, 3)}}

    def _workspace(self, rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
        """A zero ``(rows, cols)`` buffer of ``like``'s dtype and device, kept between chunks.

        The caller must zero what it wrote before the next call. A fresh zero buffer per
        chunk (6.5 MB for 256 rows of Noise Sensitivity's 40×40 first window) cost a fill
        and, as glibc hands the freed pages back to the kernel, as many page faults. One
        buffer per thread, so that threads explaining with one explainer do not share it.
        """
        key = (cols, like.dtype, like.device, threading.get_ident())
        buf = self._buffers.get(key)
        if buf is None or buf.shape[0] < rows:
            buf = self._buffers[key] = like.new_zeros(rows, cols)
        return buf[:rows]

    def _cuts(self) -> list[int]:
        """For each agent, the first stage (conv1, conv2, conv3, fc, head) whose parameters differ from the first agent's."""
        return stage_cuts([[(params, None) for params in net.params()] for net in self.nets])

    def plan(self, index: torch.Tensor, image_hw, out_hws, rows_per_group: int, batch_size: int) -> tuple[Group, ...]:
        """The groups and index tables of ``index``.

        Cached by content, see :func:`~saliency_lib.inference._window_plan.plan_windows`.
        """
        net = self.nets[0]
        return plan_windows(index, tuple(image_hw), net.specs(out_hws), net.macs(), rows_per_group, batch_size)

    def changed_rows(self, x_cl: torch.Tensor, index: torch.Tensor, delta, n: int, image_hw,
                     changed: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows that change their input and the boxes of the pixels they change (:func:`~._changed.changed_rows`)."""
        return changed_rows(x_cl, index, delta, n, image_hw, changed, self._SCAN_ELEMENTS)

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
        """Readouts ``(N, P, K)`` of every perturbation, one tensor per agent (``hidden`` must be None).

        Parameters
        ----------
        x : torch.Tensor
            ``(N, C, H, W)`` clean states.
        index : torch.Tensor
            ``(P, K)`` flat pixel indices of each perturbation (as
            :meth:`~saliency_lib.explainers.PerturbationExplainer._local_perturbed_readouts`).
        delta : callable
            ``delta(state, pert, clean, at)`` gives the change ``I′ − I`` ``(B, K, C)``
            at the indices of perturbations ``pert`` ``(B,)`` of states ``state``
            ``(B,)``, from their clean values ``clean`` ``(B, K, C)``; ``at``
            ``(B·K,)`` holds the positions of those values among the rows of the
            channels-last states ``x.permute(0, 2, 3, 1).reshape(-1, C)``, for a delta
            that reads other per-pixel tables of the states. Repeated indices must
            get the same change, and the same row must get the same change in every
            call (rows are evaluated twice: to find the changed ones, then in a chunk).
        readout : callable
            Maps an output dict of the agent (``q``, ``advantage``, ``features``)
            for a batch of rows to ``(B, K)``; row by row (rows without a change
            take the readout of the clean outputs).
        batch_size : int
            Most rows per chunk. Chunks hold rows of one group (same window
            sizes) from all states, so larger calls give fuller chunks.
        changed : torch.Tensor, optional
            ``(N, H, W)`` bool: the pixels whose value a perturbation can change
            (a superset is fine). Without it the rows without a change and the
            boxes of the changed pixels are found by evaluating ``delta``.
        """
        n, c, hh, ww = x.shape
        p, k = index.shape
        for net in self.nets:
            net.refresh()
        if len(self.nets) > 1:
            self.cuts = self._cuts()
        cleans = [net.clean(x) for net in self.nets]
        out_hws = [tuple(z.shape[2:]) for z in cleans[0][0]]
        # per agent: fc pre-activations (N, hidden)
        # per agent and layer, channels-last (N·h·w, 2C): [min(z, 0), −relu(z)] of the clean pre-activation z
        pre_t = [[torch.cat([z.clamp(max=0), z.clamp(min=0).neg_()], 1).permute(0, 2, 3, 1).reshape(-1, 2 * z.shape[1])
                  for z in zs]
                 for zs, _ in cleans]
        zfc = [zf for _, zf in cleans]
        # clean outputs, as the explainer's clean pass computes them: rows whose change dies out
        # before the fc layer take these exactly (a head evaluated on another batch size can
        # differ in the last bit, which would split plateaus of unchanged outputs)
        q_clean = [net.head(F.relu(zf)) for net, zf in zip(self.nets, zfc)]
        sizes = [o[0] * o[1] for o in out_hws]
        grid3 = out_hws[-1]
        x_cl = x.permute(0, 2, 3, 1).contiguous().view(n * hh * ww, c)
        # every row starts with the readout of its state's clean outputs: that is what a row without a
        # change gets (the chunks give such rows exactly these outputs), and it gets no pass
        outs = []
        for q, zf in zip(q_clean, zfc):
            vec = readout({"q": q, "advantage": q - q.mean(dim=1, keepdim=True), "features": F.relu(zf)}).float()
            outs.append(vec.repeat_interleave(p, 0))
        ids, boxes = self.changed_rows(x_cl, index, delta, n, (hh, ww), changed)
        self.stats["rows"] += n * p
        self.stats["noop_rows"] += n * p - len(ids)
        if len(ids) == 0:
            return [o.view(n, p, -1) for o in outs]
        net0 = self.nets[0]
        specs, macs = net0.specs(out_hws), net0.macs()
        pert_of = ids % p
        ys, xs = torch.div(index, ww, rounding_mode="floor"), index % ww
        whole = torch.stack([ys.amin(1), ys.amax(1), xs.amin(1), xs.amax(1)], 1)  # (P, 4): each perturbation's own box
        iv, iv_whole = conv1_window(boxes, specs[0]), conv1_window(whole, specs[0]).index_select(0, pert_of)
        # rows whose changed conv1 outputs are (nearly) all their perturbation's use the plan of the geometry, cached
        # across calls; the others (a patch half over black pixels) are planned on their own changed boxes
        own = window_area(iv) < _OWN_PLAN_BELOW * window_area(iv_whole)
        batches = []
        if not bool(own.all()):
            # the planner weighs chunks against windows with the rows each perturbation stands for: the states
            # of the call less the no-op rows, on average (rounded, so that the plan is reused across calls)
            per_pert = max(1, round(int((~own).sum()) / p))
            groups = plan_windows(index, (hh, ww), specs, macs, per_pert, batch_size)
            batches += schedule_rows(groups, ids[~own], pert_of[~own], p)
        if bool(own.any()):
            # one planned box per distinct (perturbation, changed conv1 outputs): the conv1 window fixes every
            # later window and the first window's slots, so rows that share it share their index tables
            o_ids, o_iv = ids[own], iv[own]
            key = o_ids % p
            for col in o_iv.unbind(1):
                key = key * 128 + col
            uniq, row_box = torch.unique(key, return_inverse=True)
            first = torch.full((len(uniq),), len(o_ids), dtype=torch.long, device=x.device).scatter_reduce_(
                0, row_box, torch.arange(len(o_ids), device=x.device), "amin")
            rows_per_box = torch.bincount(row_box, minlength=len(uniq))
            groups = plan_boxes(index, (o_ids % p)[first], boxes[own][first], rows_per_box, (hh, ww), specs, macs, batch_size)
            batches += schedule_rows(groups, o_ids, row_box, len(uniq))
        for g, g_ids, g_j in batches:
            for r0 in range(0, len(g_ids), batch_size):
                flat, j = g_ids[r0:r0 + batch_size], g_j[r0:r0 + batch_size]
                state, pert = torch.div(flat, p, rounding_mode="floor"), flat % p
                at = (index.index_select(0, pert) + (state * (hh * ww))[:, None]).view(-1)
                d0 = delta(state, pert, gather_rows(x_cl, at).view(-1, k, c), at)
                res = self._chunk(g, j, state, d0, pre_t, zfc, q_clean, sizes, grid3)
                for a, o in enumerate(res):
                    outs[a][flat] = readout(o).float()
        return [o.view(n, p, -1) for o in outs]

    def _layers(self, g: Group, j, state, rows, deltas, pre_t, sizes) -> dict:
        """The conv layers' deltas ``(B, h·w + 1, C)`` (last row zero) of every agent that needs its own."""
        nets, cuts = self.nets, self.cuts
        for li, lay in enumerate(g.layers):
            if li == 0:
                gather = None
            else:  # flat rows of the previous (B, window + 1 zero row, C) buffer
                ph, pw = g.layers[li - 1].out_hw
                gather = (lay.gather.index_select(0, j) + rows * (ph * pw + 1)).view(-1)
            clean_at = (lay.clean.index_select(0, j) + (state * sizes[li])[:, None]).view(-1)
            new = {}
            for a, net in enumerate(nets):
                if a and cuts[a] > li:
                    continue
                new[a] = _conv_delta(net.conv_weights[li], net.convs[li].stride, lay, deltas.get(a, deltas[0]), gather,
                                     pre_t[a][li], clean_at)
            deltas = new
            if self.collect_stats:
                body = deltas[0][:, :-1]
                self.stats[f"window_positions_conv{li + 1}"] += body.shape[0] * body.shape[1]
                self.stats[f"changed_positions_conv{li + 1}"] += int((body.abs().amax(2) > 0).sum())
        return deltas

    def _chunk(self, g: Group, j, state, d0, pre_t, zfc, q_clean, sizes, grid3) -> list[dict[str, torch.Tensor]]:
        """Outputs of every agent for one chunk of rows (group rows ``j`` of states ``state``)."""
        nets, cuts = self.nets, self.cuts
        b, _, c0 = d0.shape
        ih, iw = g.layers[0].in_hw
        rows = torch.arange(b, device=j.device)[:, None]
        # the first windows of the rows back to back: a contiguous (B, h, w, C) view, which conv2d
        # takes as channels-last without the copy that a padded per-row layout cost; pixels of a row
        # outside its window (unchanged) go to one spare slot after them
        buf = self._workspace(b * ih * iw + 1, c0, d0)
        slot0 = g.slot0.index_select(0, j)
        slots = slot0 + rows * (ih * iw)
        if g.outside:
            slots = torch.where(slot0 == ih * iw, b * ih * iw, slots)
        slots = slots.view(-1)
        copy_rows_(buf, slots, d0.reshape(-1, c0))
        try:
            deltas = self._layers(g, j, state, rows, {0: buf[:b * ih * iw].view(b, ih * iw, c0)}, pre_t, sizes)
        finally:  # the workspace goes back to all zeros, whatever happened
            fill_rows_(buf, slots, 0.0)
        hid, same = {}, {}
        r0, c0_, h3, w3 = g.last
        for a, net in enumerate(nets):
            if a and cuts[a] > len(g.layers):
                continue
            src = deltas.get(a, deltas[0])[:, :-1]
            pos = src.abs().amax(2)  # (B, h3·w3): the largest change at each position of the conv3 window
            same[a] = pos.amax(1) == 0  # rows whose fc input did not change
            # ReLU-dead: window rows and columns whose change is zero in every row of the chunk leave the product
            live = (pos.amax(0) > 0).view(h3, w3)
            ry, rx = live.any(1).nonzero()[:, 0], live.any(0).nonzero()[:, 0]
            if len(ry) and (len(ry) < h3 or len(rx) < w3):
                y0, y1, x0, x1 = int(ry[0]), int(ry[-1]) + 1, int(rx[0]), int(rx[-1]) + 1
                src = src.view(b, h3, w3, -1)[:, y0:y1, x0:x1]
                last = (r0 + y0, c0_ + x0, y1 - y0, x1 - x0)
            else:
                last = g.last
            if a == 0 and self.collect_stats:
                self.stats["fc_positions"] += b * h3 * w3
                self.stats["fc_positions_used"] += b * last[2] * last[3] if len(ry) else 0
            z = net.fc_delta(zfc[a].index_select(0, state), src, last, grid3)
            hid[a] = z.clamp_(min=0)
        res = []
        for a, net in enumerate(nets):
            h = hid.get(a, hid[0])
            q = torch.where(same.get(a, same[0])[:, None], q_clean[a].index_select(0, state), net.head(h))
            res.append({"q": q, "advantage": q - q.mean(dim=1, keepdim=True), "features": h})
        return res


#: A row is planned on its own changed box where that box's conv1 window is smaller than this share of its
#: perturbation's whole conv1 window; other rows share the plan of the geometry, which is cached across calls
#: (planning every box of a call, e.g. the blurred Noise Sensitivity's windows shrunk at black areas by a row or
#: two, cost more than it saved).
_OWN_PLAN_BELOW = 0.8


def _conv_delta(weight: torch.Tensor, stride, lay: Layer, src: torch.Tensor, gather, pre_t: torch.Tensor,
                clean_at: torch.Tensor) -> torch.Tensor:
    """``Δh`` of one conv layer as a ``(B, h·w + 1, C_out)`` buffer whose last row is zero.

    ``src`` is the delta of the layer's input: the first input window itself
    (``gather`` None, ``(B, window, C_in)``) or the previous layer's buffer,
    gathered into the input window with the flat row indices ``gather``. ``pre_t``
    holds ``[min(z, 0), −relu(z)]`` of the clean pre-activations, channels-last.
    """
    b = src.shape[0]
    cin = src.shape[-1]
    ih, iw = lay.in_hw
    win = src if gather is None else src.view(-1, cin).index_select(0, gather)
    dz = F.conv2d(win.view(b, ih, iw, cin).permute(0, 3, 1, 2), weight, None, stride)
    cout = dz.shape[1]
    k = dz.shape[2] * dz.shape[3]
    dz = dz.permute(0, 2, 3, 1).reshape(b, k, cout)
    z = pre_t.index_select(0, clean_at).view(b, k, 2 * cout)
    out = torch.empty(b, k + 1, cout, dtype=dz.dtype, device=dz.device)
    out[:, k].zero_()
    body = out[:, :k]
    # relu(z + dz) − relu(z) = max(dz + min(z, 0), −relu(z)): exact where z ≥ 0 and the change stays positive
    torch.add(dz, z[..., :cout], out=body)
    torch.maximum(body, z[..., cout:], out=body)
    return out
