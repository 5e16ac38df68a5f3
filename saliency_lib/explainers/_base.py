"""The explainer base classes, the :class:`Attribution` result and the chunked forward machinery.

An explainer is a fully specified method: its constructor takes the agent and
every hyper-parameter, and ``attribute`` takes the data. The base class owns what
all methods share: validation of states, targets and recurrent state, the clean
forward pass, the greedy-action default, the readout of the explained output and,
for perturbation methods, the chunked forward passes over a flat index of
``(state, perturbation)`` pairs.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import torch

from ..agents.base import Agent
from ..validation import check_choice, check_int
from ._precision import PRECISIONS, default_precision

__all__ = ["Attribution", "ExplainResult", "Explainer", "PerturbationExplainer", "explainable_outputs", "OUTPUTS"]

#: Every output name an explainer may be asked to explain.
OUTPUTS = ("q", "advantage", "logits", "probs", "value", "all")
#: Arithmetic of the forward passes: float32, or bfloat16 autocast (an option; see the benchmark).
_SCALAR_OUTPUTS = ("q", "advantage", "logits", "probs", "value")


def explainable_outputs(agent: Agent) -> tuple[str, ...]:
    """The outputs of ``agent`` an explainer can explain, in a fixed order.

    * the scalar outputs the agent declares: ``q`` and ``advantage`` (Q-agents),
      ``logits``, ``probs`` and ``value`` (actor-critic agents);
    * ``probs`` for every agent: for a Q-agent, the softmax of its Q-values (the
      "softmax" option of Huber et al.);
    * ``all``: the whole action-score vector (``q`` or ``logits``), scored by the
      L2 change ½‖y(I) − y(I′)‖² of the original Noise Sensitivity.
    """
    names = [n for n in agent.outputs if n in _SCALAR_OUTPUTS]
    if agent.default_output and "probs" not in names:
        names.append("probs")
    names.append("all")
    return tuple(names)


@dataclass(frozen=True)
class Attribution:
    """The result of :meth:`Explainer.attribute`; the same type for every method.

    Attributes
    ----------
    maps : torch.Tensor
        ``(N, H, W)`` float32 on the agent's device: one map per state at the
        agent's input resolution, higher = more important. Not normalised.
    target : torch.Tensor
        ``(N,)`` int64: the action index explained for each state (the given
        target, else the greedy action on the clean state). For the outputs
        ``value`` and ``all``, and for maps that do not depend on an action
        (mask attention, random maps), it is the action the agent takes (or the
        given one) and is recorded only.
    output : str
        The explained output (see :func:`explainable_outputs`), or
        ``"policy_mask"``/``"value_mask"`` for mask attention, ``"none"`` for random maps.
    method : str
        Registry name of the method (see :data:`saliency_lib.explainers.EXPLAINERS`).
    forward_passes : int
        Network input rows evaluated per state, the clean pass included (for
        gradient methods, forward passes that are each followed by a backward pass).
    coarse : torch.Tensor or None
        ``(N, h, w)`` map before upsampling, for grid methods (Occlusion, Noise
        Sensitivity, SARFA, mask attention, Grad-CAM); ``None`` otherwise.
    segments : torch.Tensor or None
        ``(N, H, W)`` int64 superpixel labels ``0 … F−1`` for LIME; ``None`` otherwise.
    """

    maps: torch.Tensor
    target: torch.Tensor
    output: str
    method: str
    forward_passes: int
    coarse: torch.Tensor | None = None
    segments: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.maps.shape[0]

    def cpu(self) -> Attribution:
        """A copy with every tensor on the CPU."""
        return replace(
            self,
            maps=self.maps.cpu(),
            target=self.target.cpu(),
            coarse=None if self.coarse is None else self.coarse.cpu(),
            segments=None if self.segments is None else self.segments.cpu(),
        )


@dataclass
class ExplainResult:
    """What a subclass's ``_explain`` hands back to :meth:`Explainer.attribute`."""

    maps: torch.Tensor
    passes: int
    coarse: torch.Tensor | None = None
    segments: torch.Tensor | None = None


class Explainer:
    """Base class: one saliency method bound to one agent.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain. Every computation runs on ``agent.device``.
    output : str, optional
        The explained output; one of :func:`explainable_outputs` ``(agent)`` that
        the method supports. Default: the method's reference choice (the action
        scores ``q``/``logits`` unless a subclass says otherwise).
    batch_size : int, optional
        Network input rows per forward call (default: the agent's
        :attr:`~saliency_lib.agents.Agent.inference_batch`, 256 for the DQN and 16
        for Mask-A3C, whose large activations run faster in small batches). Only speed and memory
        depend on it: all scores are collected before any reduction, so maps agree
        for every ``batch_size`` up to the floating-point rounding of the network
        itself (about 1e-7 relative on the CPU).
    precision : {"fp32", "bf16"}, optional
        ``"bf16"`` runs the perturbed forward passes under
        ``torch.autocast(dtype=torch.bfloat16)`` (the greedy action still comes
        from a float32 pass). Offered where bf16 maps kept Spearman ≥ 0.99 with
        float32 maps on every state of every trained agent of
        ``data/benchmarks/bf16_decision.json``: RISE, LIME SLIC and quickshift.
        Default (None): ``"fp32"`` everywhere, as bf16 was slower than float32
        on this CPU for every method (:mod:`._precision` holds the defaults).

    Notes
    -----
    **Target.** ``attribute(states, target=None)`` explains the agent's greedy
    action on each clean state, as Huber et al.; ``target`` may instead be an
    ``int`` or an integer tensor ``(N,)``, e.g. the original agent's actions when
    a randomised copy is explained (sanity checks).

    **Recurrent agents.** ``hidden`` is the recurrent state of each state (a tuple
    of tensors with first axis ``N``). It is held fixed while the input is
    perturbed: every perturbed copy of state ``i`` is evaluated with row ``i`` of
    ``hidden``. ``hidden=None`` uses the agent's zero state.

    **Randomness.** Stochastic methods take ``seed`` and draw from their own
    :class:`torch.Generator` on the CPU, never from a global RNG, so maps depend
    only on the seed and not on the device or ``batch_size``.
    """

    #: Registry name (see :data:`saliency_lib.explainers.EXPLAINERS`).
    name: ClassVar[str] = "explainer"
    #: Display label of the method, for figures and tables (e.g. ``"Occlusion"``).
    label: ClassVar[str] = "Explainer"
    #: Display labels of the registered presets that make a distinct method, by registry
    #: name (= :attr:`method_name` of an instance built with that preset), e.g.
    #: ``{"ns_chosen": "NS chosen action"}``; other names fall back to :attr:`label`.
    labels: ClassVar[Mapping[str, str]] = MappingProxyType({})
    #: Outputs this method can explain (intersected with the agent's).
    supported_outputs: ClassVar[tuple[str, ...]] = OUTPUTS
    #: Default output; ``None`` means the agent's action scores (``q`` or ``logits``).
    default_output: ClassVar[str | None] = None
    #: Paper the method and its default parameters come from.
    reference: ClassVar[str] = ""
    #: Whether ``precision="bf16"`` is offered: only where bf16 maps kept Spearman ≥ 0.99 with float32
    #: maps on every trained agent of ``data/benchmarks/bf16_decision.json``.
    bf16_validated: ClassVar[bool] = False

    def __init__(self, agent: Agent, *, output: str | None = None, batch_size: int | None = None, precision: str | None = None):
        if not isinstance(agent, Agent):
            raise TypeError(f"agent must be a saliency_lib.agents.Agent, got {type(agent).__name__}; wrap a network with QAgent(...) or load one with load_agent(...)")
        self.agent = agent
        self.output = self._resolve_output(output)
        self.batch_size = check_int("batch_size", agent.inference_batch if batch_size is None else batch_size, minimum=1)
        self.precision = check_choice("precision", default_precision(self.name, agent) if precision is None else precision, PRECISIONS)
        if self.precision == "bf16" and not self._bf16_ok():
            raise ValueError(
                f"precision='bf16' is not offered for {type(self).__name__}"
                f"{'' if not hasattr(self, 'perturbation') else f' with perturbation={self.perturbation!r}'}: its bf16 maps did not "
                "keep Spearman >= 0.99 with float32 maps on a trained agent, or were not checked "
                "(see data/benchmarks/bf16_decision.json); use precision='fp32'"
            )
        self._init_kwargs: dict[str, Any] = {"output": output, "batch_size": batch_size, "precision": precision}
        self._params: dict[str, Any] = {}

    # -- configuration ---------------------------------------------------------------
    def _bf16_ok(self) -> bool:
        return self.bf16_validated

    def _remember(self, **params: Any) -> None:
        """Record validated method parameters (shown in :attr:`config`, reused by :meth:`for_agent`)."""
        self._params.update(params)
        self._init_kwargs.update(params)

    @property
    def method_name(self) -> str:
        """Registry name of this configured method (e.g. ``"ns_chosen"``)."""
        return self.name

    @property
    def method_label(self) -> str:
        """Display label of this configured method (e.g. ``"NS chosen action"``); see :func:`~saliency_lib.explainers.method_label`."""
        return self.labels.get(self.method_name, self.label)

    @property
    def config(self) -> Mapping[str, Any]:
        """Read-only record of the method: name, explained output and every parameter."""
        return MappingProxyType({"method": self.method_name, "output": self.output, **self._params, "batch_size": self.batch_size, "precision": self.precision})

    def for_agent(self, agent: Agent) -> Explainer:
        """The same method (same parameters, same seed, shared random masks) bound to ``agent``.

        Used by the sanity checks to explain randomised copies of an agent.
        """
        return type(self)(agent, **self._init_kwargs)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.config.items() if k not in ("method",) and not isinstance(v, torch.Tensor))
        return f"{type(self).__name__}({params})"

    def _resolve_output(self, output: str | None) -> str:
        valid = tuple(o for o in explainable_outputs(self.agent) if o in self.supported_outputs)
        if output is None:
            output = self.default_output or self.agent.default_output
            if output not in valid:  # a default the agent lacks (e.g. "value" on a Q-agent)
                raise ValueError(f"{type(self).__name__} explains {output!r} by default, which {self.agent!r} does not have; pass output= one of: {', '.join(valid)}")
            return output
        if output not in valid:
            raise ValueError(
                f"unknown output {output!r} for {type(self).__name__} on {type(self.agent).__name__} "
                f"({self.agent.kind}); valid outputs are: {', '.join(valid)}"
            )
        return output

    # -- the public call -------------------------------------------------------------
    def attribute(
        self,
        states: torch.Tensor,
        *,
        target: int | torch.Tensor | None = None,
        hidden: tuple[torch.Tensor, ...] | None = None,
        batch_size: int | None = None,
    ) -> Attribution:
        """Saliency maps of ``states``.

        Parameters
        ----------
        states : torch.Tensor
            ``(N, C, H, W)`` batch of preprocessed states (``agent.input_shape``).
        target : int or torch.Tensor, optional
            Action index to explain: ``None`` (default) for the greedy action on
            each clean state, an ``int`` for all states, or an integer tensor ``(N,)``.
        hidden : tuple of torch.Tensor, optional
            Recurrent state of each state (recurrent agents only), held fixed while
            the input is perturbed.
        batch_size : int, optional
            Overrides the explainer's ``batch_size`` for this call.

        Returns
        -------
        Attribution
            ``maps`` ``(N, H, W)`` and the bookkeeping described in :class:`Attribution`.

        Raises
        ------
        ValueError
            For states of the wrong shape, a target that is not a valid action
            index, or a ``hidden`` that does not fit the agent or the batch.
        """
        x = self.agent.check_states(states)
        n = x.shape[0]
        if n == 0:
            raise ValueError("states is an empty batch; pass at least one state")
        hidden = self._check_hidden(hidden, n)
        bs = self.batch_size if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        with torch.no_grad():
            clean = self.agent(x, hidden)  # float32: defines the greedy action
        actions = self._resolve_target(target, clean[self.agent.default_output].argmax(dim=1), n)
        passes = 1
        if self.precision != "fp32" and self._uses_clean_readout:
            with torch.no_grad():
                clean = self._forward(x, hidden)  # reference readout in the same arithmetic as the perturbed passes
            passes += 1
        res = self._explain(x, hidden, actions, clean, bs)
        return Attribution(
            maps=res.maps.float(),
            target=actions,
            output=self._output_label(),
            method=self.method_name,
            forward_passes=passes + res.passes,
            coarse=None if res.coarse is None else res.coarse.float(),
            segments=res.segments,
        )

    # -- hooks -----------------------------------------------------------------------
    #: Whether ``_explain`` reads the clean outputs (then a ``bf16`` run adds a ``bf16`` clean pass).
    _uses_clean_readout: ClassVar[bool] = True

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def _output_label(self) -> str:
        return self.output

    # -- helpers for subclasses ------------------------------------------------------
    @property
    def _hw(self) -> tuple[int, int]:
        return tuple(self.agent.input_shape[1:])

    def _autocast(self, device: torch.device):
        if self.precision == "bf16":
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _forward(self, rows: torch.Tensor, hidden) -> dict[str, torch.Tensor]:
        with self._autocast(rows.device):
            return self.agent(rows, hidden)

    # -- several agents at once -----------------------------------------------------
    def attribute_many(self, agents, states: torch.Tensor, *, target: int | torch.Tensor | None = None,
                       hidden: tuple[torch.Tensor, ...] | None = None, batch_size: int | None = None) -> list[Attribution]:
        """The maps of this method on several agents: ``[for_agent(a).attribute(states, …) for a in agents]``.

        Perturbation methods share the work when the agents are copies of one
        network that differ only in their upper layers (the randomisation cascade):
        the perturbed inputs are built once, and each chunk runs through the layers
        the agents share once (see :mod:`saliency_lib.explainers._cascade`); with
        incremental inference (Occlusion, Noise Sensitivity, SARFA on a DQNNet or a
        MaskA3CNet) the window changes below each agent's randomised layers are shared
        too. The maps are those of separate calls, up to float rounding. Other methods,
        and agents of different architectures, are explained one after the other.

        Parameters
        ----------
        agents : sequence of Agent
            The agents; an agent that is this explainer's own uses this explainer.
        states, target, hidden, batch_size
            As :meth:`attribute`; ``target=None`` explains each agent's own greedy actions.

        Returns
        -------
        list of Attribution
            One per agent, in order.
        """
        exps = [self if a is self.agent else self.for_agent(a) for a in agents]
        shared = self._shared_readouts(exps)
        try:
            for e in exps:
                e._shared = shared
            return [e.attribute(states, target=target, hidden=hidden, batch_size=batch_size) for e in exps]
        finally:
            for e in exps:
                e._shared = None

    #: Joint readout computation of :meth:`attribute_many` (``None``: this explainer alone).
    _shared = None

    def _shared_readouts(self, exps):
        """The joint computation for :meth:`attribute_many`, or ``None`` to explain one after the other."""
        return None

    def _readout(self, out: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The explained output as float32 ``(rows, K)``: action scores, probabilities or ``value`` (K = 1)."""
        name = self.output
        if name == "all":
            y = out[self.agent.default_output]
        elif name == "probs" and "probs" not in out:
            y = torch.softmax(out[self.agent.default_output].float(), dim=1)
        elif name == "value":
            y = out["value"].reshape(-1, 1)
        else:
            y = out[name]
        return y.float()

    def _select(self, vec: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Pick the explained scalar from readouts ``(N, …, K)``: column ``actions[i]``, or ``value``."""
        if self.output == "value":
            return vec[..., 0]
        if self.output == "all":  # pragma: no cover - guarded by supported_outputs
            raise RuntimeError("output 'all' has no single scalar")
        idx = actions.reshape(-1, *([1] * (vec.dim() - 1))).expand(*vec.shape[:-1], 1)
        return vec.gather(-1, idx)[..., 0]

    def _drop_score(self, clean_vec: torch.Tensor, pert_vec: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Score of each perturbation ``(N, P)`` as Occlusion and Noise Sensitivity define it.

        ``1 − f_a(I′)`` for a scalar output; ``½‖y(I) − y(I′)‖²`` for ``output="all"``.
        """
        if self.output == "all":
            return 0.5 * (pert_vec - clean_vec[:, None]).pow(2).sum(dim=-1)
        return 1.0 - self._select(pert_vec, actions)

    def _check_hidden(self, hidden, n: int):
        if hidden is None:
            return None
        if not self.agent.recurrent:
            raise ValueError(f"hidden was given but {self.agent!r} is not recurrent; pass hidden=None")
        if not isinstance(hidden, (tuple, list)) or not hidden or not all(isinstance(h, torch.Tensor) for h in hidden):
            raise ValueError(f"hidden must be a tuple of tensors with first axis {n} (one row per state), got {type(hidden).__name__}")
        bad = [tuple(h.shape) for h in hidden if h.dim() == 0 or h.shape[0] != n]
        if bad:
            raise ValueError(f"hidden tensors must have first axis {n} (one row per state), got shapes {bad}; index the recurrent state with Agent.index_hidden")
        return tuple(h.to(self.agent.device) for h in hidden)

    def _resolve_target(self, target, greedy: torch.Tensor, n: int) -> torch.Tensor:
        a = self.agent.n_actions
        hint = (
            f"; target is the action index (None = greedy action, an int in [0, {a}) or an integer tensor of shape ({n},)); "
            f"choose the explained output with output= (one of: {', '.join(explainable_outputs(self.agent))})"
        )
        if target is None:
            return greedy
        if isinstance(target, (bool, np.bool_)):
            raise ValueError(f"target must not be a bool, got {target!r}{hint}")
        if isinstance(target, numbers.Integral):
            t = torch.full((n,), int(target), dtype=torch.long, device=greedy.device)
        elif isinstance(target, (torch.Tensor, np.ndarray)):
            t = torch.as_tensor(target)
            if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
                raise ValueError(f"target tensor must have an integer dtype, got {t.dtype}{hint}")
            if t.dim() == 0:
                t = t.expand(n)
            if tuple(t.shape) != (n,):
                raise ValueError(f"target tensor must have shape ({n},), got {tuple(t.shape)}{hint}")
            t = t.to(device=greedy.device, dtype=torch.long)
        else:
            raise ValueError(f"invalid target {target!r}{hint}")
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= a):
            raise ValueError(f"target actions must lie in [0, {a}), got values in [{int(t.min())}, {int(t.max())}]{hint}")
        return t


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
        """Record the ``naive`` switch (kept by :meth:`for_agent`, not part of :attr:`config`:
        it changes the arithmetic, not the maps)."""
        from ..validation import check_bool

        self.naive = check_bool("naive", naive)
        self._init_kwargs["naive"] = self.naive

    def _shared_readouts(self, exps):
        from ._cascade import SharedReadouts

        if len(exps) < 2 or len({type(e) for e in exps}) != 1:
            return None
        return SharedReadouts(exps)

    def _agents(self) -> list[Agent]:
        """The agents whose readouts one call computes: this explainer's, or all of a shared computation."""
        return [self.agent] if self._shared is None else self._shared.agents

    def _forward_all(self, staged, agents, rows, hidden) -> list[dict[str, torch.Tensor]]:
        """Outputs of every agent on ``rows`` (through ``staged`` when several agents share layers)."""
        from ._cascade import forward_all

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
        from ._cascade import staged_forward

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
        delta: Callable[[int, torch.Tensor], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Readouts ``(N, P, K)`` for perturbations that change only some pixels of a state.

        ``index`` ``(P, K)`` gives the flat pixel indices (``y·W + x``) of each
        perturbation, the same in every channel; an index may repeat if every copy
        gets the same value. ``values(i, clean)`` gives the perturbed values
        ``(P, C, K)`` of state ``i`` (or one float for all) from its clean values
        ``clean`` ``(P, C, K)``. ``delta(state, pert, clean)``, optional, gives the
        change ``I′ − I`` ``(B, K, C)`` of perturbations ``pert`` ``(B,)`` of states
        ``state`` ``(B,)`` from their clean values ``(B, K, C)``, for the incremental
        path (default: derived from ``values``, slower).

        With a supported network (see the class notes) the incremental engine
        evaluates only the changed windows. Otherwise states are processed one after
        the other; the chunk buffer holds copies of the current state and is
        rewritten only where needed: before each forward pass the perturbed pixels
        are written, afterwards their clean values are put back. The input cost per
        row is thus proportional to the perturbed area, not to the image size.
        """
        if self._shared is not None:
            return self._shared.get(self, lambda: self._local_readouts_all(x, hidden, index, values, batch_size, delta))
        return self._local_readouts_all(x, hidden, index, values, batch_size, delta)[0]

    def _local_readouts_all(self, x, hidden, index, values, batch_size, delta) -> list[torch.Tensor]:
        """:meth:`_local_perturbed_readouts` for every agent of :meth:`_agents`."""
        from ._cascade import staged_forward
        from ._incremental import delta_from_values, engine_for

        agents = self._agents()
        engine = engine_for(self, agents, hidden)
        if engine is not None:
            delta = delta_from_values(values, index.shape[0]) if delta is None else delta
            return engine.readouts(x, index, delta, self._readout, batch_size, hidden=hidden)
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
                clean = x[i].reshape(c, hw).index_select(1, index.view(-1)).view(c, p, -1).transpose(0, 1).contiguous()  # (P, C, K)
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
        """Flat indices ``(P, C, K)`` of every perturbed value in the chunk buffer of
        :meth:`_local_perturbed_readouts` (perturbation ``k`` lives in buffer row ``k mod rows``),
        cached per geometry."""
        key = (rows, c, hw, index.device, index.data_ptr(), tuple(index.shape))
        cache = self.__dict__.setdefault("_local_cache", {})
        if key not in cache:
            cache.clear()
            slot = torch.arange(index.shape[0], device=index.device) % rows
            cache[key] = (slot[:, None, None] * c + torch.arange(c, device=index.device)[None, :, None]) * hw + index[:, None, :]
        return cache[key]
