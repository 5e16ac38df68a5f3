"""The common agent interface through which explainers and metrics reach any network.

An :class:`Agent` takes a batch of preprocessed states ``(N, C, H, W)`` and returns
named outputs. Q-agents give ``q`` and ``advantage`` (Q − mean Q, Huber's measure);
actor-critic agents give ``logits``, ``probs``, ``value`` and, where the network has
them, ``policy_mask`` and ``value_mask``. Every agent gives ``features``
(penultimate layer) and can ``act`` greedily.

Recurrent agents take ``hidden``: a tuple of tensors whose first axis matches the
batch. Explainers hold the recurrent state of the explained step fixed while they
perturb its input, by indexing it with :meth:`Agent.index_hidden`.

States are validated once, where they enter: :meth:`Agent.check_states`, which
every explainer's ``attribute``, every metric and :meth:`Agent.act` call (see
there for what is checked). The forward passes on perturbed copies that an
explainer or metric builds itself (``agent(x)``) are not checked again.
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import torch
from torch import nn

__all__ = ["Agent", "QAgent", "ActorCriticAgent", "INPUT_RANGES", "PRESET_STATES"]

#: Rows per forward call of explainers and metrics for networks that state no preference.
DEFAULT_BATCH = 256

Hidden = tuple[torch.Tensor, ...] | None

#: The value range of each preset's states, or ``None`` where they are not bounded.
#: ``"dqn"``: stacked grayscale frames divided by 255 (Huber et al.), in [0, 1].
#: ``"mask_a3c"``: frames normalised by a running mean and standard deviation
#: (:class:`saliency_lib.envs.NormalizeObservation`, as Itaya et al.): z-scores with
#: no fixed bounds, so only their finiteness is checked.
INPUT_RANGES = MappingProxyType({"dqn": (0.0, 1.0), "mask_a3c": None})
#: What the states of each preset are, for error messages.
PRESET_STATES = MappingProxyType({
    "dqn": "float32 states in [0, 1]: 4 stacked 84×84 grayscale frames divided by 255, channel 3 newest",
    "mask_a3c": "float32 states: one 80×80 frame, normalised by a running mean and std (make_env(game, 'mask_a3c'))",
})
#: Slack on the range check for rounding in float arithmetic (e.g. blurred or resampled frames).
_RANGE_SLACK = 1e-5


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
        """Whether :meth:`forward` takes and returns a recurrent state ``hidden``."""
        return False

    @property
    def device(self) -> torch.device:
        """The device of the network's parameters."""
        return next(self.net.parameters()).device

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """The shape ``(C, H, W)`` of one state of the agent's preset."""
        from ..envs import obs_shape

        return obs_shape(self.preset)

    def forward(self, x: torch.Tensor, hidden: Hidden = None) -> dict[str, torch.Tensor]:
        """The named outputs of the network on states ``x`` ``(N, C, H, W)``.

        Subclasses implement it. ``hidden`` is the recurrent state of recurrent agents (``None``: the
        zero state); the outputs are the names in :attr:`outputs`, each with ``N`` rows.
        """
        raise NotImplementedError

    def __call__(self, x: torch.Tensor, hidden: Hidden = None) -> dict[str, torch.Tensor]:
        """The same as :meth:`forward`: the named outputs on states ``x``."""
        return self.forward(x, hidden)

    def scores(self, x: torch.Tensor, hidden: Hidden = None) -> torch.Tensor:
        """The action scores used for the greedy action: ``q`` or ``logits``."""
        return self.forward(x, hidden)[self.default_output]

    @torch.no_grad()
    def act(self, x: torch.Tensor, hidden: Hidden = None) -> torch.Tensor:
        """Greedy actions ``(N,)``."""
        return self.scores(self.check_states(x), hidden).argmax(dim=1)

    def initial_hidden(self, n: int) -> Hidden:
        """The zero recurrent state of a batch of ``n`` states, or ``None`` for a feed-forward agent."""
        return None

    @property
    def inference_batch(self) -> int:
        """Rows per forward call that explainers and metrics use unless told otherwise.

        The network's ``inference_batch`` attribute if it has one, else 256. Only speed
        depends on it (results agree for every batch size up to float rounding).
        """
        return int(getattr(getattr(self, "net", None), "inference_batch", DEFAULT_BATCH))

    def check_hidden(self, hidden: Hidden, n: int) -> Hidden:
        """Validate a recurrent state for a batch of ``n`` states; returns it on the agent's device.

        ``None`` passes (the agent's zero state). Otherwise the agent must be recurrent and
        ``hidden`` must hold as many tensors as :meth:`initial_hidden`, each floating point and
        of its shape with ``n`` rows: for a Mask-A3C network ``(h, c)``, each ``(n, 64, 10, 10)``,
        the ConvLSTM's grid. A wrong grid fails here, naming the shapes, not inside the network.
        """
        if hidden is None:
            return None
        if not self.recurrent:
            raise ValueError(f"hidden was given but {self!r} is not recurrent; pass hidden=None")
        want = [(n, *h.shape[1:]) for h in self.initial_hidden(1)]
        if not isinstance(hidden, (tuple, list)) or not all(isinstance(h, torch.Tensor) for h in hidden):
            raise ValueError(f"hidden must be a tuple of {len(want)} tensors of shapes {want}, got {type(hidden).__name__}")
        got = [tuple(h.shape) for h in hidden]
        if got != want:
            raise ValueError(f"hidden must be {len(want)} tensors of shapes {want} (one row per state, the network's "
                             f"recurrent grid), got shapes {got}; index the recurrent state with Agent.index_hidden")
        if not all(h.is_floating_point() for h in hidden):
            raise ValueError(f"hidden tensors must be floating point, got dtypes {[h.dtype for h in hidden]}")
        return tuple(h.to(self.device) for h in hidden)

    @staticmethod
    def index_hidden(hidden: Hidden, index: torch.Tensor) -> Hidden:
        """Rows ``index`` of every tensor of ``hidden`` (``None`` stays ``None``)."""
        if hidden is None:
            return None
        return tuple(h[index] for h in hidden)

    @property
    def input_range(self) -> tuple[float, float] | None:
        """``(low, high)`` of valid state values, or ``None`` where unbounded (see :data:`INPUT_RANGES`)."""
        return INPUT_RANGES.get(self.preset)

    def check_states(self, x: torch.Tensor) -> torch.Tensor:
        """Validate a batch of states; returns it as float32 on the agent's device.

        The one entry point for states: every explainer's ``attribute``, every metric
        and :meth:`act` call it. It checks, in this order:

        * type: a ``torch.Tensor`` (NumPy arrays: ``torch.from_numpy``);
        * dtype: floating point. Integer states (raw uint8 frames 0..255) are refused
          rather than cast, because cast frames lie 255 times outside the trained
          range and give meaningless maps;
        * shape: ``(N, *input_shape)``; the message names what differs (a missing
          batch axis, frames on the last axis, the channel count, the frame size);
        * values: finite (no NaN or inf) and, where the preset bounds them
          (:attr:`input_range`: [0, 1] for ``"dqn"``, none for ``"mask_a3c"``), inside
          the range, with a slack of 1e-5 for rounding.

        What the range check covers, per agent: :class:`QAgent` and the SB3, CleanRL
        and ``wrap_agent`` agents of preset ``"dqn"`` take frames / 255 in [0, 1]
        (their networks multiply by ``input_scale`` inside, never the caller);
        :class:`ActorCriticAgent` Mask-A3C agents (preset ``"mask_a3c"``) take
        running-normalised frames, so only finiteness is checked.

        The value checks are one ``aminmax`` pass over the batch: 13 ms for 256
        ``"dqn"`` states on one (busy) CPU core, about 8 % of one forward pass of a
        :class:`~saliency_lib.agents.DQNNet` on the same batch, paid once per call
        and not per perturbed chunk.

        Raises
        ------
        TypeError
            ``x`` is not a tensor.
        ValueError
            Integer dtype, wrong shape, non-finite values or values out of range;
            the message says how to fix it.
        """
        want = self.input_shape
        want_txt = f"(N, {', '.join(map(str, want))})"
        if not isinstance(x, torch.Tensor):
            hint = "; convert a NumPy array with torch.from_numpy(states)" if type(x).__module__ == "numpy" else ""
            raise TypeError(f"states must be a torch.Tensor of shape {want_txt}, got {type(x).__name__}{hint}")
        if not x.is_floating_point():
            raise ValueError(self._dtype_message(x))
        if tuple(x.shape[1:]) != want or x.dim() != 4:
            raise ValueError(self._shape_message(tuple(x.shape)))
        x = x.to(self.device, torch.float32)
        if x.numel():
            lo, hi = torch.stack(torch.aminmax(x)).tolist()  # one pass, one sync; NaN propagates to both, inf shows in one
            if not (abs(lo) < float("inf") and abs(hi) < float("inf")):
                n_nan, n_inf = int(torch.isnan(x).sum()), int(torch.isinf(x).sum())
                raise ValueError(
                    f"states contain {n_nan} NaN and {n_inf} infinite values (of {x.numel()}); "
                    f"{type(self).__name__} of preset {self.preset!r} takes {PRESET_STATES.get(self.preset, 'finite states')}"
                )
            rng = self.input_range
            if rng is not None and (lo < rng[0] - _RANGE_SLACK or hi > rng[1] + _RANGE_SLACK):
                hint = (" (values up to 255 look like raw pixel values: divide by 255)"
                        if rng == (0.0, 1.0) and 1 < hi <= 255 and lo >= 0 else "")
                raise ValueError(
                    f"states must lie in [{rng[0]:g}, {rng[1]:g}] for preset {self.preset!r}, got values in [{lo:.4g}, "
                    f"{hi:.4g}]{hint}; {type(self).__name__} takes {PRESET_STATES.get(self.preset, 'states in that range')}"
                )
        return x

    def _dtype_message(self, x: torch.Tensor) -> str:
        msg = (f"states have dtype {x.dtype}, but {type(self).__name__} of preset {self.preset!r} takes "
               f"{PRESET_STATES.get(self.preset, 'float states')}; ")
        if self.preset == "dqn":
            return msg + ("for raw uint8 frames pass states = obs.float() / 255, or states_from_obs(obs, layout=...) "
                          "(saliency_lib.agents) for Stable-Baselines3 or CleanRL observations; "
                          "integer states are never cast silently")
        return msg + (f"build states with make_env(game, {self.preset!r}) and pass them as float32; "
                      "integer states are never cast silently")

    def _shape_message(self, got: tuple[int, ...]) -> str:
        c, h, w = self.input_shape
        head = f"states must have shape (N, {c}, {h}, {w}) for {type(self).__name__} of preset {self.preset!r}, got {got}"
        if got == (c, h, w):
            return f"{head}: the batch axis is missing; pass states[None] for one state"
        if len(got) != 4:
            return f"{head}: {len(got)} axes instead of 4 (N, C, H, W)"
        if got[1:] == (h, w, c) and c not in (h, w):
            return f"{head}: the channels are on the last axis (N, H, W, C); use states.permute(0, 3, 1, 2)"
        from ..envs import obs_shape

        other = [p for p in INPUT_RANGES if p != self.preset and obs_shape(p) == got[1:]]
        if other:
            return (f"{head}: these are states of preset {other[0]!r}, but this agent takes preset {self.preset!r} "
                    f"({PRESET_STATES.get(self.preset, '')}); build them with make_env(game, {self.preset!r})")
        diffs = []
        if got[1] != c:
            diffs.append(f"{got[1]} channels instead of {c}")
        if got[2:] != (h, w):
            diffs.append(f"{got[2]}×{got[3]} frames instead of {h}×{w}")
        return f"{head}: {' and '.join(diffs)}; {PRESET_STATES.get(self.preset, '')}".rstrip("; ")

    def to(self, device) -> Agent:
        """Move the network to ``device`` in place; returns the agent itself."""
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
        return (f"{type(self).__name__}({type(self.net).__name__}, game={self.game!r}, preset={self.preset!r}, "
                f"n_actions={self.n_actions}{', source=' + repr(src) if src else ''})")


class QAgent(Agent):
    """An agent whose network maps states to Q-values ``(N, A)``.

    States (:meth:`Agent.check_states`): those of its preset; for ``"dqn"`` (our
    DQN agents, SB3 DQN/QR-DQN, CleanRL ``dqn_atari``, ``wrap_agent(outputs="q")``)
    float frames / 255 in [0, 1], checked.
    """

    kind = "q"
    outputs = ("q", "advantage", "features")
    default_output = "q"

    def forward(self, x, hidden=None):
        """``q`` and ``advantage`` ``(N, A)`` of states ``x``, and ``features`` where the network has them.

        A network with ``features`` and ``head`` methods yields its penultimate-layer ``features``; any
        other network is called as a whole and gives no ``features``.
        """
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
    """An agent with policy logits and a state value (optionally recurrent, optionally masked).

    States (:meth:`Agent.check_states`): those of its preset. Mask-A3C agents (ours
    and the official ones, preset ``"mask_a3c"``) take running-normalised frames with
    no fixed bounds: finiteness is checked, not a range. SB3 PPO/A2C and CleanRL
    ``ppo_atari`` agents (preset ``"dqn"``) take frames / 255 in [0, 1], checked.
    """

    kind = "actor_critic"
    default_output = "logits"

    @property
    def outputs(self):
        """The output names of this network: the policy and value ones, and the attention masks it has."""
        names = ["logits", "probs", "value", "features"]
        cfg = getattr(self.net, "config", None)
        if getattr(cfg, "policy_mask", False):
            names.append("policy_mask")
        if getattr(cfg, "value_mask", False):
            names.append("value_mask")
        return tuple(names)

    @property
    def recurrent(self) -> bool:
        """Whether the network has a ConvLSTM (``config.convlstm``)."""
        return bool(getattr(getattr(self.net, "config", None), "convlstm", False))

    def initial_hidden(self, n: int) -> Hidden:
        """The network's zero recurrent state for ``n`` states on the agent's device, or ``None``."""
        if not self.recurrent:
            return None
        return self.net.initial_hidden(n, self.device)

    def forward(self, x, hidden=None):
        """The network's outputs on states ``x``, with ``probs``, the softmax of ``logits``, added."""
        out = dict(self.net(x, hidden))
        out["probs"] = torch.softmax(out["logits"], dim=1)
        return out
