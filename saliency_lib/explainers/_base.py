"""The explainer base classes, the :class:`Attribution` result and the chunked forward machinery.

An explainer is a fully specified method: its constructor takes the agent and
every hyper-parameter, and ``attribute`` takes the data. The base class owns what
all methods share: validation of states, targets and recurrent state, the clean
forward pass, the greedy-action default, the readout of the explained output and,
for perturbation methods (:class:`~saliency_lib.explainers._perturbation.PerturbationExplainer`),
the chunked forward passes over a flat index of ``(state, perturbation)`` pairs.
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import torch

from ..agents.base import Agent
from ..validation import check_choice, check_int
from ._precision import PRECISIONS, default_precision

__all__ = ["Attribution", "ExplainResult", "Explainer", "explainable_outputs", "OUTPUTS"]

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
            raise TypeError(f"agent must be a saliency_lib.agents.Agent, got {type(agent).__name__}; "
                            "wrap a network with QAgent(...) or load one with load_agent(...)")
        self.agent = agent
        self.output = self._resolve_output(output)
        self.batch_size = check_int("batch_size", agent.inference_batch if batch_size is None else batch_size, minimum=1)
        self.precision = check_choice("precision", default_precision(self.name, agent) if precision is None else precision,
                                      PRECISIONS)
        if self.precision == "bf16" and not self._bf16_ok():
            raise ValueError(
                f"precision='bf16' is not offered for {type(self).__name__}"
                f"{'' if not hasattr(self, 'perturbation') else f' with perturbation={self.perturbation!r}'}: "
                "its bf16 maps did not keep Spearman >= 0.99 with float32 maps on a trained agent, or were not checked "
                "(Explainer.bf16_validated); use precision='fp32'"
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
        """Display label of this configured method (e.g. ``"NS chosen action"``).

        See :func:`~saliency_lib.explainers.method_label`.
        """
        return self.labels.get(self.method_name, self.label)

    @property
    def config(self) -> Mapping[str, Any]:
        """Read-only record of the method: name, explained output and every parameter."""
        return MappingProxyType({"method": self.method_name, "output": self.output, **self._params, "batch_size": self.batch_size,
                                 "precision": self.precision})

    def for_agent(self, agent: Agent) -> Explainer:
        """The same method (same parameters, same seed, shared random masks) bound to ``agent``.

        Used by the sanity checks to explain randomised copies of an agent.
        """
        return type(self)(agent, **self._init_kwargs)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.config.items()
                           if k not in ("method",) and not isinstance(v, torch.Tensor))
        return f"{type(self).__name__}({params})"

    def _resolve_output(self, output: str | None) -> str:
        valid = tuple(o for o in explainable_outputs(self.agent) if o in self.supported_outputs)
        if output is None:
            output = self.default_output or self.agent.default_output
            if output not in valid:  # a default the agent lacks (e.g. "value" on a Q-agent)
                raise ValueError(f"{type(self).__name__} explains {output!r} by default, which {self.agent!r} does not have; "
                                 f"pass output= one of: {', '.join(valid)}")
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
        the agents share once (see :mod:`saliency_lib.inference._cascade`); with
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
            raise ValueError(f"hidden must be a tuple of tensors with first axis {n} (one row per state), "
                             f"got {type(hidden).__name__}")
        bad = [tuple(h.shape) for h in hidden if h.dim() == 0 or h.shape[0] != n]
        if bad:
            raise ValueError(f"hidden tensors must have first axis {n} (one row per state), got shapes {bad}; "
                             "index the recurrent state with Agent.index_hidden")
        return self.agent.check_hidden(hidden, n)  # and every tensor's whole shape: the network's grid

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
