"""The common agent interface through which explainers and metrics reach any network.

An :class:`Agent` takes a batch of preprocessed states ``(N, C, H, W)`` and returns
named outputs. Q-agents give ``q`` and ``advantage`` (Q − mean Q, Huber's measure);
actor-critic agents give ``logits``, ``probs``, ``value`` and, where the network has
them, ``policy_mask`` and ``value_mask``. Every agent gives ``features``
(penultimate layer) and can ``act`` greedily.

Recurrent agents take ``hidden``: a tuple of tensors whose first axis matches the
batch. Explainers hold the recurrent state of the explained step fixed while they
perturb its input, by indexing it with :meth:`Agent.index_hidden`.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

__all__ = ["Agent", "QAgent", "ActorCriticAgent"]

Hidden = tuple[torch.Tensor, ...] | None


class Agent:
    """Base class. Subclasses implement :meth:`forward`.

    Attributes
    ----------
    net : torch.nn.Module
        The wrapped network.
    game, preset : str
        Game and preprocessing preset (see :mod:`saliency_lib.envs`).
    meta : dict
        Provenance and training metadata (written to and read from checkpoints).
    """

    kind: str = ""
    outputs: tuple[str, ...] = ()
    default_output: str = ""

    def __init__(self, net: nn.Module, *, game: str, preset: str, n_actions: int, meta: dict | None = None):
        self.net = net.eval()
        self.game = game
        self.preset = preset
        self.n_actions = n_actions
        self.meta: dict[str, Any] = dict(meta or {})

    # -- interface -----------------------------------------------------------------
    @property
    def recurrent(self) -> bool:
        return False

    @property
    def device(self) -> torch.device:
        return next(self.net.parameters()).device

    @property
    def input_shape(self) -> tuple[int, int, int]:
        from ..envs import obs_shape

        return obs_shape(self.preset)

    def forward(self, x: torch.Tensor, hidden: Hidden = None) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def __call__(self, x: torch.Tensor, hidden: Hidden = None) -> dict[str, torch.Tensor]:
        return self.forward(x, hidden)

    def scores(self, x: torch.Tensor, hidden: Hidden = None) -> torch.Tensor:
        """The action scores used for the greedy action: ``q`` or ``logits``."""
        return self.forward(x, hidden)[self.default_output]

    @torch.no_grad()
    def act(self, x: torch.Tensor, hidden: Hidden = None) -> torch.Tensor:
        """Greedy actions ``(N,)``."""
        return self.scores(self.check_states(x), hidden).argmax(dim=1)

    def initial_hidden(self, n: int) -> Hidden:
        return None

    @staticmethod
    def index_hidden(hidden: Hidden, index: torch.Tensor) -> Hidden:
        """Rows ``index`` of every tensor of ``hidden`` (``None`` stays ``None``)."""
        if hidden is None:
            return None
        return tuple(h[index] for h in hidden)

    def check_states(self, x: torch.Tensor) -> torch.Tensor:
        """Validate a batch of states; returns it as float32 on the agent's device."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"states must be a torch.Tensor of shape (N, {', '.join(map(str, self.input_shape))}), got {type(x).__name__}")
        if x.dim() != 4 or tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(
                f"states must have shape (N, {', '.join(map(str, self.input_shape))}) for preset "
                f"{self.preset!r}, got {tuple(x.shape)}; add a batch axis with states[None] for one state"
            )
        return x.to(self.device, torch.float32)

    def to(self, device) -> Agent:
        self.net.to(device)
        return self

    def clone(self) -> Agent:
        """A deep copy (network included), e.g. for parameter randomisation."""
        new = copy.copy(self)
        new.net = copy.deepcopy(self.net)
        new.meta = copy.deepcopy(self.meta)
        return new

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layer groups from the output down (for cascading randomisation)."""
        if not hasattr(self.net, "layer_groups"):
            raise TypeError(f"{type(self.net).__name__} does not declare layer_groups(); it cannot be randomised layer-wise")
        return self.net.layer_groups()

    def __repr__(self) -> str:
        src = self.meta.get("source", "")
        return f"{type(self).__name__}({type(self.net).__name__}, game={self.game!r}, preset={self.preset!r}, n_actions={self.n_actions}{', source=' + repr(src) if src else ''})"


class QAgent(Agent):
    """An agent whose network maps states to Q-values ``(N, A)``."""

    kind = "q"
    outputs = ("q", "advantage", "features")
    default_output = "q"

    def forward(self, x, hidden=None):
        net = self.net
        if hasattr(net, "features") and hasattr(net, "head"):
            feats = net.features(x)
            q = net.head(feats)
        else:
            q, feats = net(x), None
        out = {"q": q, "advantage": q - q.mean(dim=1, keepdim=True)}
        if feats is not None:
            out["features"] = feats
        return out


class ActorCriticAgent(Agent):
    """An agent with policy logits and a state value (optionally recurrent, optionally masked)."""

    kind = "actor_critic"
    default_output = "logits"

    @property
    def outputs(self):
        names = ["logits", "probs", "value", "features"]
        cfg = getattr(self.net, "config", None)
        if getattr(cfg, "policy_mask", False):
            names.append("policy_mask")
        if getattr(cfg, "value_mask", False):
            names.append("value_mask")
        return tuple(names)

    @property
    def recurrent(self) -> bool:
        return bool(getattr(getattr(self.net, "config", None), "convlstm", False))

    def initial_hidden(self, n: int) -> Hidden:
        if not self.recurrent:
            return None
        return self.net.initial_hidden(n, self.device)

    def forward(self, x, hidden=None):
        out = dict(self.net(x, hidden))
        out["probs"] = torch.softmax(out["logits"], dim=1)
        return out
