"""Any ``torch.nn.Module`` as an agent: :func:`wrap_agent`.

The module takes the states of a preset (``(N, 4, 84, 84)`` in [0, 1] for ``"dqn"``)
and returns the outputs it is declared to return (``"q"``, ``"logits"``,
``("logits", "value")`` …); :func:`wrap_agent` checks it on a dummy batch and names
its outputs, so that explainers, metrics and notebooks use it without special cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ..games import valid_games
from ._weights import weights_sha256
from .base import ActorCriticAgent, Agent, QAgent

__all__ = ["wrap_agent", "WrappedQAgent", "WrappedActorCriticAgent", "OUTPUT_NAMES"]

#: Output names :func:`wrap_agent` understands.
OUTPUT_NAMES = ("q", "logits", "value", "features")


# -- any module ---------------------------------------------------------------------------
class _DeclaredOutputs(nn.Module):
    """Calls the user's module and names what it returns."""

    def __init__(self, module: nn.Module, names: tuple[str, ...], input_scale: float):
        super().__init__()
        self.module = module
        self.names = names
        self.input_scale = float(input_scale)

    def forward(self, x: torch.Tensor, hidden=None) -> dict[str, torch.Tensor]:
        raw = self.module(x * self.input_scale if self.input_scale != 1.0 else x)
        return _name_outputs(raw, self.names, type(self.module).__name__)

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        if not hasattr(self.module, "layer_groups"):
            raise TypeError(
                f"{type(self.module).__name__} does not declare layer_groups(); add a method returning "
                "[(name, [modules]), ...] from the output down to randomise it layer-wise"
            )
        return self.module.layer_groups()


def _name_outputs(raw: Any, names: tuple[str, ...], who: str) -> dict[str, torch.Tensor]:
    if isinstance(raw, Mapping):
        missing = [n for n in names if n not in raw]
        if missing:
            raise ValueError(f"{who} returned a dict with keys {sorted(map(str, raw))} but outputs declares "
                             f"{names}; missing {missing}")
        out = {n: raw[n] for n in names}
    elif isinstance(raw, torch.Tensor):
        if len(names) != 1:
            raise ValueError(f"{who} returned one tensor but outputs declares {len(names)} ({', '.join(names)}); "
                             "return a tuple or a dict")
        out = {names[0]: raw}
    elif isinstance(raw, (tuple, list)):
        if len(raw) != len(names):
            raise ValueError(f"{who} returned {len(raw)} values but outputs declares {len(names)} ({', '.join(names)}); "
                             "declare one name per value, in order")
        out = dict(zip(names, raw))
    else:
        raise ValueError(f"{who} returned {type(raw).__name__}; expected a tensor, a tuple of tensors or a dict of tensors")
    for n, v in out.items():
        if not isinstance(v, torch.Tensor):
            raise ValueError(f"{who}: output {n!r} is {type(v).__name__}, not a tensor")
    if "value" in out and out["value"].dim() == 2 and out["value"].shape[1] == 1:
        out["value"] = out["value"][:, 0]
    return out


class WrappedQAgent(QAgent):
    """A :class:`QAgent` over a module wrapped by :func:`wrap_agent` (outputs ``q``, ``advantage``, optionally ``features``)."""

    @property
    def outputs(self):
        """``q`` and ``advantage``, and ``features`` where the wrapped module declares them."""
        return ("q", "advantage", *(("features",) if "features" in self.net.names else ()))

    def forward(self, x, hidden=None):
        """``q`` and ``advantage`` ``(N, A)`` of states ``x``, and ``features`` where declared."""
        out = self.net(x)
        q = out["q"]
        res = {"q": q, "advantage": q - q.mean(dim=1, keepdim=True)}
        if "features" in out:
            res["features"] = out["features"]
        return res


class WrappedActorCriticAgent(ActorCriticAgent):
    """An :class:`ActorCriticAgent` over a module wrapped by :func:`wrap_agent` (``logits``, ``probs``, declared extras)."""

    @property
    def outputs(self):
        """``logits`` and ``probs``, and ``value`` and ``features`` where the wrapped module declares them."""
        return ("logits", "probs", *(n for n in ("value", "features") if n in self.net.names))

    @property
    def recurrent(self) -> bool:
        """Always ``False``: :func:`wrap_agent` takes feed-forward modules only."""
        return False


def _module_device(module: nn.Module) -> torch.device:
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return torch.device("cpu")


def wrap_agent(
    module: nn.Module,
    *,
    outputs: str | Sequence[str] = "q",
    game: str,
    preset: str = "dqn",
    n_actions: int | None = None,
    input_scale: float = 1.0,
    meta: dict | None = None,
) -> Agent:
    """Any ``torch.nn.Module`` that takes a preset's states, as an agent.

    Parameters
    ----------
    module : torch.nn.Module
        Maps a batch of states ``(N, *obs_shape(preset))`` (float in [0, 1] for the
        ``"dqn"`` preset, channel 3 = newest frame) to the declared outputs.
    outputs : str or sequence of str
        What the module returns, in order: ``"q"`` (Q-values ``(N, A)``) or
        ``"logits"`` (policy logits ``(N, A)``), optionally followed by ``"value"``
        (``(N,)`` or ``(N, 1)``, with ``"logits"`` only) and ``"features"``
        (``(N, ...)``). One name: the module returns a tensor (or a dict with that
        key); several: a tuple in this order or a dict with these keys.
    game : str
        The game the module plays (see :func:`saliency_lib.games.valid_games`).
    preset : {"dqn", "mask_a3c"}, optional
        Preprocessing of the states the module expects. Default ``"dqn"``.
    n_actions : int, optional
        Checked against the module's output; default: read from it.
    input_scale : float, optional
        Multiplies the states before the module sees them: 255 for modules that
        divide by 255 themselves (CleanRL- or SB3-style ``x / 255`` inside ``forward``).
    meta : dict, optional
        Extra provenance merged into ``agent.meta``.

    Returns
    -------
    QAgent or ActorCriticAgent
        :class:`WrappedQAgent` for ``"q"``, :class:`WrappedActorCriticAgent` for
        ``"logits"``. ``agent.net`` holds the module as ``agent.net.module``;
        ``agent.meta`` records ``source`` (``"wrap_agent:<Class>"``), ``policy``
        and ``weights_sha256`` (over the state dict, names and bytes, sorted).

    Raises
    ------
    TypeError
        ``module`` is not a ``torch.nn.Module``.
    ValueError
        Unknown output names or preset or game, or the module fails on, or returns
        other outputs than declared for, a dummy batch of the preset's states.

    Notes
    -----
    The module is checked on a dummy batch of two random states and put in eval
    mode. Recurrent modules are not supported. Cascading parameter randomisation
    needs a ``layer_groups()`` method on the module (see
    :meth:`saliency_lib.agents.Agent.layer_groups`).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Flatten(), nn.Linear(4 * 84 * 84, 6))
    >>> agent = wrap_agent(net, outputs="q", game="SpaceInvaders")
    >>> agent(torch.zeros(1, 4, 84, 84))["q"].shape
    torch.Size([1, 6])
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    names = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    bad = [n for n in names if n not in OUTPUT_NAMES]
    if bad or not names:
        raise ValueError(f"outputs {names!r} contains unknown names {bad}; valid names: {', '.join(OUTPUT_NAMES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"outputs {names!r} names an output twice")
    heads = [n for n in names if n in ("q", "logits")]
    if len(heads) != 1:
        raise ValueError(f"outputs {names!r} must contain exactly one of 'q' (Q-values) or 'logits' (policy logits)")
    if heads[0] == "q" and "value" in names:
        raise ValueError(f"outputs {names!r}: 'value' goes with 'logits' (actor-critic); "
                         "a Q-agent's outputs are 'q' and optionally 'features'")
    from ..envs import PRESETS, obs_shape  # lazy: gymnasium and ale-py load only when needed

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid values are: {', '.join(PRESETS)}")
    if game not in valid_games():
        raise ValueError(f"unknown game {game!r}; valid values are: {', '.join(valid_games())}")
    if n_actions is not None and (isinstance(n_actions, bool) or not isinstance(n_actions, (int, np.integer)) or n_actions < 1):
        raise ValueError(f"n_actions must be a positive integer or None, got {n_actions!r}")
    if not isinstance(input_scale, (int, float)) or isinstance(input_scale, bool) or not input_scale > 0:
        raise ValueError("input_scale must be a positive number (1 for [0, 1] inputs, "
                         f"255 for modules that divide by 255), got {input_scale!r}")

    who = type(module).__name__
    shape = obs_shape(preset)
    wrapper = _DeclaredOutputs(module, names, input_scale).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.rand((2, *shape), generator=g).to(_module_device(module))
    try:
        with torch.no_grad():
            out = wrapper(x)
    except ValueError:
        raise
    except Exception as e:  # shape errors surface as RuntimeError from the first layer
        raise ValueError(
            f"{who} failed on a dummy batch of preset {preset!r} states, shape (2, {', '.join(map(str, shape))}) "
            f"({'float in [0, 1], channel 3 newest' if preset == 'dqn' else 'normalised 80×80 frames'}): {type(e).__name__}: "
            f"{e}; does the module expect this observation shape?"
        ) from e
    head = out[heads[0]]
    if head.dim() != 2 or head.shape[0] != 2:
        raise ValueError(f"{who}: output {heads[0]!r} must have shape (N, n_actions); got {tuple(head.shape)} for N=2")
    if n_actions is not None and head.shape[1] != n_actions:
        raise ValueError(f"{who}: output {heads[0]!r} has {head.shape[1]} actions but n_actions={n_actions}")
    if "value" in out and tuple(out["value"].shape) != (2,):
        raise ValueError(f"{who}: output 'value' must have shape (N,) or (N, 1); got {tuple(out['value'].shape)} for N=2")
    if "features" in out and (out["features"].dim() < 2 or out["features"].shape[0] != 2):
        raise ValueError(f"{who}: output 'features' must have the batch on its first axis; "
                         f"got {tuple(out['features'].shape)} for N=2")
    n = int(head.shape[1])
    info = {"source": f"wrap_agent:{who}", "policy": f"{type(module).__module__}.{type(module).__qualname__}",
            "algorithm": None, "outputs": list(names), "input_scale": float(input_scale),
            "weights_sha256": weights_sha256(module)}
    info.update(meta or {})
    cls = WrappedQAgent if heads[0] == "q" else WrappedActorCriticAgent
    return cls(wrapper, game=game, preset=preset, n_actions=n, meta=info)
