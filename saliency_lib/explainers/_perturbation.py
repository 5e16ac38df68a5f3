"""The base class of the perturbation methods.

It runs chunked, batched forward passes over a flat index of ``(state, perturbation)`` pairs, and
incremental inference for local perturbations.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..agents.base import Agent
from ._base import Explainer

__all__ = ["PerturbationExplainer"]


class PerturbationExplainer(Explainer):
    """Base class of the perturbation methods: chunked, batched forward passes.

    A subclass declares how many perturbations each state gets and builds the
    perturbed inputs for any slice of the flat index ``j = i · P + k`` (state
    ``i``, perturbation ``k``) as one tensor. The base evaluates the slices of
    ``batch_size`` rows in order, each with rows ``i`` of the recurrent state,
    and returns all readouts ``(N, P, K)`` before the subclass reduces them.

    Perturbations that touch only a few pixels (Occlusion, Noise Sensitivity,
    SARFA) use :meth:`_local_perturbed_readouts` instead, which processes one
    state at a time and rewrites only the perturbed pixels of the buffer.

    The chunk buffer (``batch_size × C × H × W`` values) is kept between calls,
    so repeated calls do not pay for fresh memory pages.

    **Incremental inference.** On a :class:`~saliency_lib.agents.DQNNet` or a
    :class:`~saliency_lib.agents.MaskA3CNet` in float32, local perturbations are
    evaluated by recomputing only the changed windows of each layer
    (:mod:`._incremental`, :mod:`._incremental_a3c`); the maps equal those of
    full forward passes up to float rounding. Other networks, and
    ``precision="bf16"``, use full forward passes (an unsupported network is
    reported once per process in the log). ``naive=True`` (an attribute, or the
    constructor argument of Occlusion, Noise Sensitivity and SARFA) forces full
    passes, e.g. to compare the two.
    """

    #: Force full forward passes (no incremental inference).
    naive: bool = False

    def _set_naive(self, naive: bool) -> None:
        """Record the ``naive`` switch (full forward passes instead of incremental inference).

        :meth:`for_agent` keeps it; it is not part of :attr:`config`, as it changes the arithmetic,
        not the maps.
        """
        from ..validation import check_bool

        self.naive = check_bool("naive", naive)
        self._init_kwargs["naive"] = self.naive

    def _shared_readouts(self, exps):
        from ..inference import SharedReadouts

        if len(exps) < 2 or len({type(e) for e in exps}) != 1:
            return None
        return SharedReadouts(exps)

    def _agents(self) -> list[Agent]:
        """The agents whose readouts one call computes: this explainer's, or all of a shared computation."""
        return [self.agent] if self._shared is None else self._shared.agents

    def _forward_all(self, staged, agents, rows, hidden) -> list[dict[str, torch.Tensor]]:
        """Outputs of every agent on ``rows`` (through ``staged`` when several agents share layers)."""
        from ..inference import forward_all

        if len(agents) == 1 and (staged is None or self.naive):
            return [self._forward(rows, hidden)]
        with self._autocast(rows.device):
            return forward_all(agents, staged, rows, hidden)

    def _chunk_buffer(self, rows: int, x: torch.Tensor) -> torch.Tensor:
        """A reusable ``(rows, C, H·W)`` buffer (contents undefined)."""
        key = (x.device, x.dtype, tuple(x.shape[1:]))
        cache = self.__dict__.setdefault("_buffers", {})
        buf = cache.get(key)
        if buf is None or buf.shape[0] < rows:
            cache.clear()  # one buffer per explainer
            buf = cache[key] = torch.empty((rows, x.shape[1], x.shape[2] * x.shape[3]), dtype=x.dtype, device=x.device)
        return buf[:rows]

    @staticmethod
    def _state_runs(state_idx: torch.Tensor, pert_idx: torch.Tensor | None = None):
        """``(i, rows, perts)`` for each run of rows of state ``i`` in a chunk.

        Chunks are consecutive slices of the state-major flat index, so a chunk has
        at most two runs unless states have fewer perturbations than a chunk has
        rows, and inside a run the perturbation indices are consecutive: ``perts``
        is their ``slice`` (``None`` if ``pert_idx`` is not given).
        """
        states, counts = torch.unique_consecutive(state_idx, return_counts=True)
        start = 0
        for i, k in zip(states.tolist(), counts.tolist()):
            p0 = None if pert_idx is None else int(pert_idx[start])
            yield i, slice(start, start + k), None if p0 is None else slice(p0, p0 + k)
            start += k

    def _perturbed_readouts(
        self,
        x: torch.Tensor,
        hidden,
        n_perturbations: int,
        make_rows: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
        batch_size: int,
    ) -> torch.Tensor:
        """Readouts ``(N, P, K)`` of all perturbed inputs, evaluated ``batch_size`` rows at a time.

        ``make_rows(state_idx, pert_idx, out)`` must write the perturbed inputs of
        one chunk into ``out`` (a reused ``(B, C, H, W)`` buffer: no fresh
        allocation per chunk) and return it.
        """
        if self._shared is not None:
            return self._shared.get(self, lambda: self._perturbed_readouts_all(x, hidden, n_perturbations, make_rows, batch_size))
        return self._perturbed_readouts_all(x, hidden, n_perturbations, make_rows, batch_size)[0]

    def _perturbed_readouts_all(self, x, hidden, n_perturbations, make_rows, batch_size) -> list[torch.Tensor]:
        """:meth:`_perturbed_readouts` for every agent of :meth:`_agents`, sharing the inputs and common layers."""
        from ..inference import staged_forward

        agents = self._agents()
        staged = staged_forward(agents)
        n = x.shape[0]
        total = n * n_perturbations
        outs: list[torch.Tensor | None] = [None] * len(agents)
        buf = self._chunk_buffer(min(batch_size, total), x).view(-1, *x.shape[1:])
        with torch.no_grad():
            for start in range(0, total, batch_size):
                stop = min(start + batch_size, total)
                flat = torch.arange(start, stop, device=x.device)
                state_idx = torch.div(flat, n_perturbations, rounding_mode="floor")
                pert_idx = flat - state_idx * n_perturbations
                rows = make_rows(state_idx, pert_idx, buf[: stop - start])
                for a, res in enumerate(self._forward_all(staged, agents, rows, Agent.index_hidden(hidden, state_idx))):
                    vec = self._readout(res)
                    if outs[a] is None:
                        outs[a] = torch.empty((total, vec.shape[1]), dtype=torch.float32, device=x.device)
                    outs[a][start:stop] = vec
        return [o.view(n, n_perturbations, -1) for o in outs]

    def _local_perturbed_readouts(
        self,
        x: torch.Tensor,
        hidden,
        index: torch.Tensor,
        values: Callable[[int, torch.Tensor], torch.Tensor | float],
        batch_size: int,
        *,
        delta: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
        changed: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Readouts ``(N, P, K)`` for perturbations that change only some pixels of a state.

        ``index`` ``(P, K)`` gives the flat pixel indices (``y·W + x``) of each
        perturbation, the same in every channel; an index may repeat if every copy
        gets the same value. ``values(i, clean)`` gives the perturbed values
        ``(P, C, K)`` of state ``i`` (or one float for all) from its clean values
        ``clean`` ``(P, C, K)``. ``delta(state, pert, clean, at)``, optional, gives the
        change ``I′ − I`` ``(B, K, C)`` of perturbations ``pert`` ``(B,)`` of states
        ``state`` ``(B,)`` from their clean values ``(B, K, C)``, for the incremental
        path (default: derived from ``values``, slower); ``at`` are the values' rows in
        the channels-last states (see :meth:`~saliency_lib.inference._incremental.IncrementalDQN.readouts`).
        ``changed``, optional, ``(N, H, W)`` bool: the pixels whose value a perturbation that
        covers them can change (more is allowed, fewer not; e.g. the pixels that are not
        already black for a black patch); the incremental path then finds the rows that
        change nothing and the boxes of the changed pixels from it instead of evaluating
        ``delta`` twice.

        With a supported network (see the class notes) the incremental engine
        evaluates only the changed windows. Otherwise states are processed one after
        the other; the chunk buffer holds copies of the current state and is
        rewritten only where needed: before each forward pass the perturbed pixels
        are written, afterwards their clean values are put back. The input cost per
        row is thus proportional to the perturbed area, not to the image size.
        """
        if self._shared is not None:
            return self._shared.get(self, lambda: self._local_readouts_all(x, hidden, index, values, batch_size, delta, changed))
        return self._local_readouts_all(x, hidden, index, values, batch_size, delta, changed)[0]

    def _local_readouts_all(self, x, hidden, index, values, batch_size, delta, changed=None) -> list[torch.Tensor]:
        """:meth:`_local_perturbed_readouts` for every agent of :meth:`_agents`."""
        from ..inference import delta_from_values, engine_for, staged_forward

        agents = self._agents()
        engine = engine_for(self, agents, hidden)
        if engine is not None:
            delta = delta_from_values(values, index.shape[0]) if delta is None else delta
            return engine.readouts(x, index, delta, self._readout, batch_size, hidden=hidden, changed=changed)
        staged = staged_forward(agents)
        n, c = x.shape[:2]
        hw = x.shape[2] * x.shape[3]
        p = index.shape[0]
        rows = min(batch_size, p)
        buf = self._chunk_buffer(rows, x)
        flat_buf = buf.view(-1)
        where_buf = self._local_table(index, rows, c, hw)
        outs: list[torch.Tensor | None] = [None] * len(agents)
        with torch.no_grad():
            for i in range(n):  # per state: chunks never straddle two states
                # (P, C, K)
                clean = x[i].reshape(c, hw).index_select(1, index.view(-1)).view(c, p, -1).transpose(0, 1).contiguous()
                new = values(i, clean)
                buf.copy_(x[i].reshape(1, c, hw).expand(rows, -1, -1))
                h_i = Agent.index_hidden(hidden, torch.full((rows,), i, dtype=torch.long, device=x.device))
                for start in range(0, p, rows):
                    stop = min(start + rows, p)
                    at = where_buf[start:stop].reshape(-1)
                    if isinstance(new, torch.Tensor):
                        flat_buf.index_copy_(0, at, new[start:stop].reshape(-1))
                    else:
                        flat_buf.index_fill_(0, at, new)
                    k = stop - start
                    res = self._forward_all(staged, agents, buf[:k].view(k, *x.shape[1:]), Agent.index_hidden(h_i, slice(0, k)))
                    flat_buf.index_copy_(0, at, clean[start:stop].reshape(-1))  # back to the clean state
                    for a, r in enumerate(res):
                        vec = self._readout(r)
                        if outs[a] is None:
                            outs[a] = torch.empty((n, p, vec.shape[1]), dtype=torch.float32, device=x.device)
                        outs[a][i, start:stop] = vec
        return outs

    def _local_table(self, index: torch.Tensor, rows: int, c: int, hw: int) -> torch.Tensor:
        """Flat indices ``(P, C, K)`` of every perturbed value in the chunk buffer, cached per geometry.

        The buffer is that of :meth:`_local_perturbed_readouts`; perturbation ``k`` lives in its row
        ``k mod rows``.
        """
        key = (rows, c, hw, index.device, index.data_ptr(), tuple(index.shape))
        cache = self.__dict__.setdefault("_local_cache", {})
        if key not in cache:
            cache.clear()
            slot = torch.arange(index.shape[0], device=index.device) % rows
            cache[key] = (slot[:, None, None] * c + torch.arange(c, device=index.device)[None, :, None]) * hw + index[:, None, :]
        return cache[key]
