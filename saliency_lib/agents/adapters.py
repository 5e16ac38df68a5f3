"""Bring your own agent: Stable-Baselines3 and CleanRL files, and any ``torch.nn.Module``.

Three entry points turn networks trained elsewhere into :class:`~saliency_lib.agents.Agent`
objects, so that explainers, metrics and notebooks use them without special cases:

* :func:`load_sb3` (``load_agent("sb3:PATH.zip")``): the ``.zip`` written by
  ``model.save()`` of Stable-Baselines3 DQN, PPO and A2C, and of sb3-contrib QR-DQN,
  with their Atari ``CnnPolicy`` (NatureCNN features extractor);
* :func:`load_cleanrl` (``load_agent("cleanrl:PATH")``): the ``.cleanrl_model`` state
  dicts of CleanRL's ``dqn_atari.py`` (``QNetwork``) and ``ppo_atari.py`` (``Agent``);
* :func:`wrap_agent`: any module that takes the states of a preset, with the outputs it
  returns declared (``"q"``, ``"logits"``, ``("logits", "value")`` …).

No file is unpickled. SB3's ``policy.pth`` and CleanRL's state dicts are read with
``torch.load(weights_only=True)``, whose restricted unpickler builds tensors and
containers only. SB3's ``data`` member is read as JSON: only its plain fields are
used; the cloudpickled ``":serialized:"`` blobs are never loaded. The policy class
is read by disassembling its pickle (a reference to a class) with :mod:`pickletools`,
which decodes opcodes without importing or running anything. The network is then
rebuilt in plain torch with the parameter names of the file, and loaded strictly
(identical names and shapes).

Observation mapping
-------------------
Our ``"dqn"`` preset (:func:`saliency_lib.envs.make_env`) gives float32 states
``(N, 4, 84, 84)`` in [0, 1], channel = frame, index 3 newest.

========================  ====================================================  ============================================
aspect                    SB3 (``make_atari_env`` + ``VecFrameStack(4)``)       CleanRL (``dqn_atari`` / ``ppo_atari``)
========================  ====================================================  ============================================
observation               uint8 ``(N, 84, 84, 4)``, frames stacked on the       uint8 ``(N, 4, 84, 84)`` (``FrameStack``),
                          LAST axis, index 3 newest; ``VecTransposeImage``      index 3 newest
                          makes it ``(N, 4, 84, 84)`` inside the policy
scaling in the network    ``obs.float() / 255`` when ``normalize_images``       ``x / 255.0`` in ``forward``
                          (the default); none otherwise
our state → their input   ``states = obs_chw / 255``: the network input is      ``states = obs / 255``: the network input
                          our state, unchanged (×255 when                       is our state, unchanged
                          ``normalize_images=False``)
========================  ====================================================  ============================================

So ``states = obs.transpose(0, 3, 1, 2) / 255`` for SB3's ``VecFrameStack``
observations and ``states = obs / 255`` for CleanRL's (:func:`states_from_obs`); the
inverse is ``round(states * 255)`` (:func:`states_to_obs`). For states of the form
``k / 255`` this is exact, and the rebuilt networks give SB3's and CleanRL's outputs
(equal within 1e-5 in the tests; SB3 convolves a channels-last view, which rounds
slightly differently from our contiguous states).

Preprocessing differences
-------------------------
The rebuilt networks are exact; the environments that feed them differ slightly
from the ones they were trained on. SB3's ``AtariWrapper`` (defaults) against our
``dqn`` preset in ``mode="eval"`` (the mode of ``saliency-study evaluate``):

* identical: ``NoFrameskip-v4`` (no sticky actions, minimal action set), frame
  skip 4 with the max of the last two raw frames, ``cv2.COLOR_RGB2GRAY`` then an
  84×84 ``INTER_AREA`` resize, a stack of 4 with zeros after a reset;
* SB3 trains with ``terminal_on_life_loss=True`` and 1..30 random NOOPs; we
  evaluate full games, start with Huber's fixed start (first game) or 1..30 NOOPs,
  and press FIRE after a life loss (Breakout, Space Invaders and the other games
  with ``fire_reset`` in :mod:`saliency_lib.games`);
* SB3 presses FIRE on reset in every game with a FIRE action, we do so only for
  the games marked ``fire_reset`` (so not in Frostbite);
* SB3 clips rewards to their sign (training only) and caps episodes at 108 000
  raw frames, as we do.

In ``mode="train"`` our preset reproduces SB3's states bit for bit (same seed,
same actions; checked for Breakout in ``tests/test_adapters.py``). SB3's
``make_atari_env`` needs the ALE environments registered first:
``gymnasium.register_envs(ale_py)`` (importing :mod:`saliency_lib.envs` does it).

CleanRL's Atari scripts use SB3's ``NoopResetEnv``, ``MaxAndSkipEnv``,
``EpisodicLifeEnv``, ``FireResetEnv`` and ``ClipRewardEnv``, then gymnasium's
``ResizeObservation((84, 84))`` on the RGB frame *before* ``GrayScaleObservation``
(we convert to gray first, then resize: pixel values can differ by a few gray
levels) and ``FrameStack(4)``, which pads the first stack with copies of the reset
frame where we (and SB3) pad with zeros.

Notes
-----
QR-DQN agents give ``q`` = the mean over quantiles (as ``QRDQN.predict``); the
quantiles themselves are not exposed. Recurrent policies (``RecurrentPPO``),
``MlpPolicy``/``MultiInputPolicy``, custom features extractors and continuous-action
algorithms (SAC, TD3, DDPG) are refused with a ``ValueError``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import pickletools
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..games import valid_games
from ._weights import load_state_strict, sha256_file, weights_sha256
from .base import ActorCriticAgent, Agent, QAgent

__all__ = [
    "wrap_agent", "load_sb3", "load_cleanrl", "states_from_obs", "states_to_obs", "infer_game",
    "NatureTrunk", "SB3QNetwork", "SB3ActorCritic", "CleanRLQNetwork", "CleanRLActorCritic",
    "WrappedQAgent", "WrappedActorCriticAgent", "OUTPUT_NAMES",
]

#: Output names :func:`wrap_agent` understands.
OUTPUT_NAMES = ("q", "logits", "value", "features")
_LAYOUTS = ("NHWC", "NCHW")
_FRAMES, _SIDE = 4, 84
#: Activations SB3 policies may name in ``policy_kwargs["activation_fn"]``.
_ACTIVATIONS = {name: getattr(nn, name) for name in ("ReLU", "Tanh", "ELU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Softplus", "Mish")}
#: (module, class) of SB3 policies → (algorithm or None when read from the data, head kind).
_SB3_POLICIES = {
    ("stable_baselines3.dqn.policies", "CnnPolicy"): ("DQN", "q"),
    ("sb3_contrib.qrdqn.policies", "CnnPolicy"): ("QR-DQN", "quantiles"),
    ("stable_baselines3.common.policies", "ActorCriticCnnPolicy"): (None, "actor_critic"),
}
_SB3_SUPPORTED = "DQN, PPO and A2C with CnnPolicy (stable-baselines3) and QR-DQN with CnnPolicy (sb3-contrib)"


# -- observations ----------------------------------------------------------------------
def states_from_obs(obs, *, layout: str) -> torch.Tensor:
    """Our ``dqn``-preset states from stacked uint8 observations of SB3 or CleanRL.

    Parameters
    ----------
    obs : numpy.ndarray or torch.Tensor of uint8, shape (N, 84, 84, 4) or (N, 4, 84, 84)
        Stacked grayscale frames, newest last.
    layout : {"NHWC", "NCHW"}
        ``"NHWC"`` for SB3's ``VecFrameStack`` observations (frames on the last axis),
        ``"NCHW"`` for SB3 after ``VecTransposeImage`` and for CleanRL's ``FrameStack``.
        There is no default: the layout is never guessed from the shape.

    Returns
    -------
    torch.Tensor, float32, shape (N, 4, 84, 84)
        ``obs / 255`` with the frame axis second (index 3 newest).

    Raises
    ------
    TypeError
        ``obs`` is not uint8.
    ValueError
        Unknown ``layout`` or a shape that does not fit it.
    """
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    x = torch.as_tensor(obs)
    if x.dtype != torch.uint8:
        raise TypeError(f"obs must be uint8 pixel values (0..255), got dtype {x.dtype}; these are raw SB3/CleanRL observations")
    want = (_SIDE, _SIDE, _FRAMES) if layout == "NHWC" else (_FRAMES, _SIDE, _SIDE)
    if x.dim() != 4 or tuple(x.shape[1:]) != want:
        raise ValueError(f"obs with layout {layout!r} must have shape (N, {', '.join(map(str, want))}), got {tuple(x.shape)}")
    if layout == "NHWC":
        x = x.permute(0, 3, 1, 2)
    return x.float().div(255.0).contiguous()


def states_to_obs(states: torch.Tensor, *, layout: str) -> np.ndarray:
    """Inverse of :func:`states_from_obs`: ``round(states * 255)`` as uint8 in ``layout``."""
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    x = torch.as_tensor(states)
    if x.dim() != 4 or tuple(x.shape[1:]) != (_FRAMES, _SIDE, _SIDE):
        raise ValueError(f"states must have shape (N, 4, 84, 84), got {tuple(x.shape)}")
    out = torch.round(x.detach().float().clamp(0, 1) * 255).to(torch.uint8)
    if layout == "NHWC":
        out = out.permute(0, 2, 3, 1)
    return out.contiguous().cpu().numpy()


# -- networks ----------------------------------------------------------------------------
class NatureTrunk(nn.Module):
    """SB3's ``NatureCNN`` with its parameter names: ``cnn.{0,2,4}`` and ``linear.0``.

    conv 32×8×8/4 → ReLU → conv 64×4×4/2 → ReLU → conv 64×3×3/1 → ReLU → flatten →
    linear ``features_dim`` → ReLU.
    """

    def __init__(self, in_channels: int = _FRAMES, features_dim: int = 512, n_flatten: int = 3136):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(in_channels, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
            nn.Flatten(),
        )
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.cnn(x))

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        return [("fc", [self.linear[0]]), ("conv3", [self.cnn[4]]), ("conv2", [self.cnn[2]]), ("conv1", [self.cnn[0]])]


def _mlp(linear_shapes: Sequence[tuple[int, int]], activation: type[nn.Module], *, trailing: bool) -> nn.Sequential:
    """Linear layers at even indices with activations between (and after, if ``trailing``), as SB3 builds them."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(linear_shapes):
        layers.append(nn.Linear(n_in, n_out))
        if trailing or i < len(linear_shapes) - 1:
            layers.append(activation())
    return nn.Sequential(*layers)


def _linears(seq: nn.Sequential) -> list[nn.Linear]:
    return [m for m in seq if isinstance(m, nn.Linear)]


class SB3QNetwork(nn.Module):
    """SB3 ``QNetwork`` (DQN) or sb3-contrib ``QuantileNetwork`` (QR-DQN), rebuilt.

    ``features_extractor`` (:class:`NatureTrunk`) → ``q_net`` (SB3's ``create_mlp``:
    linear layers with activations between them). With ``n_quantiles`` the last layer
    gives ``n_quantiles × n_actions`` values, viewed ``(N, n_quantiles, n_actions)`` and
    averaged over quantiles. ``input_scale`` multiplies our [0, 1] states first
    (1 when SB3 normalised images, 255 when it did not).
    """

    def __init__(self, trunk: NatureTrunk, q_net: nn.Sequential, *, n_actions: int, n_quantiles: int | None = None, input_scale: float = 1.0):
        super().__init__()
        self.features_extractor = trunk
        self.q_net = q_net
        self.n_actions = n_actions
        self.n_quantiles = n_quantiles
        self.input_scale = float(input_scale)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Input of the last linear layer ``(N, d)``."""
        h = self.features_extractor(x * self.input_scale if self.input_scale != 1.0 else x)
        return self.q_net[:-1](h)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        out = self.q_net[-1](h)
        if self.n_quantiles:
            out = out.view(-1, self.n_quantiles, self.n_actions).mean(dim=1)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        lin = _linears(self.q_net)
        hidden = [(f"q_hidden{i + 1}", [m]) for i, m in enumerate(lin[:-1])][::-1]
        return [("output", [lin[-1]]), *hidden, *self.features_extractor.layer_groups()]


class SB3ActorCritic(nn.Module):
    """SB3 ``ActorCriticCnnPolicy`` (PPO, A2C), rebuilt; returns ``logits``, ``value``, ``features``.

    ``features_extractor`` feeds the policy; the value branch uses the same trunk or,
    with ``share_features_extractor=False``, its own ``vf_features_extractor``. Then
    ``mlp_extractor.policy_net`` / ``value_net`` (linear + activation each, possibly
    empty, the default for CNN policies), ``action_net`` (logits) and ``value_net``.
    ``features`` is the policy latent (input of ``action_net``).
    """

    def __init__(self, trunk: NatureTrunk, vf_trunk: NatureTrunk | None, policy_net: nn.Sequential, value_mlp: nn.Sequential,
                 action_net: nn.Linear, value_net: nn.Linear, *, input_scale: float = 1.0):
        super().__init__()
        self.features_extractor = trunk
        self.vf_features_extractor = vf_trunk
        self.mlp_extractor = nn.Module()
        self.mlp_extractor.policy_net = policy_net
        self.mlp_extractor.value_net = value_mlp
        self.action_net = action_net
        self.value_net = value_net
        self.input_scale = float(input_scale)

    def forward(self, x: torch.Tensor, hidden=None) -> dict[str, torch.Tensor]:
        if self.input_scale != 1.0:
            x = x * self.input_scale
        h_pi = self.features_extractor(x)
        h_vf = h_pi if self.vf_features_extractor is None else self.vf_features_extractor(x)
        latent_pi = self.mlp_extractor.policy_net(h_pi)
        latent_vf = self.mlp_extractor.value_net(h_vf)
        return {"logits": self.action_net(latent_pi), "value": self.value_net(latent_vf)[:, 0], "features": latent_pi}

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        pi, vf = _linears(self.mlp_extractor.policy_net), _linears(self.mlp_extractor.value_net)
        hidden = []
        for i in reversed(range(max(len(pi), len(vf)))):
            hidden.append((f"mlp{i + 1}", [*pi[i : i + 1], *vf[i : i + 1]]))
        trunk = self.features_extractor.layer_groups()
        if self.vf_features_extractor is not None:
            trunk = [(n, mods + dict(self.vf_features_extractor.layer_groups())[n]) for n, mods in trunk]
        return [("output", [self.action_net, self.value_net]), *hidden, *trunk]


def _cleanrl_trunk(n_flatten: int = 3136, features_dim: int = 512) -> list[nn.Module]:
    return [
        nn.Conv2d(_FRAMES, 32, 8, stride=4), nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(n_flatten, features_dim), nn.ReLU(),
    ]


class CleanRLQNetwork(nn.Module):
    """CleanRL ``dqn_atari.py`` ``QNetwork``: ``network.0 … network.9``, without the ``/255``.

    CleanRL's ``forward`` is ``network(x / 255.0)`` on uint8-valued observations; our
    states already are ``obs / 255``, so they enter ``network`` unchanged.
    """

    def __init__(self, n_actions: int, features_dim: int = 512):
        super().__init__()
        self.network = nn.Sequential(*_cleanrl_trunk(features_dim=features_dim), nn.Linear(features_dim, n_actions))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.network[:-1](x)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return self.network[-1](h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        n = self.network
        return [("output", [n[9]]), ("fc", [n[7]]), ("conv3", [n[4]]), ("conv2", [n[2]]), ("conv1", [n[0]])]


class CleanRLActorCritic(nn.Module):
    """CleanRL ``ppo_atari.py`` ``Agent``: shared ``network`` trunk, ``actor`` and ``critic``.

    Returns ``logits = actor(h)``, ``value = critic(h)[:, 0]`` and ``features = h``
    for ``h = network(states)`` (CleanRL's ``x / 255.0`` is our state).
    """

    def __init__(self, n_actions: int, features_dim: int = 512):
        super().__init__()
        self.network = nn.Sequential(*_cleanrl_trunk(features_dim=features_dim))
        self.actor = nn.Linear(features_dim, n_actions)
        self.critic = nn.Linear(features_dim, 1)

    def forward(self, x: torch.Tensor, hidden=None) -> dict[str, torch.Tensor]:
        h = self.network(x)
        return {"logits": self.actor(h), "value": self.critic(h)[:, 0], "features": h}

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        n = self.network
        return [("output", [self.actor, self.critic]), ("fc", [n[7]]), ("conv3", [n[4]]), ("conv2", [n[2]]), ("conv1", [n[0]])]


# -- helpers -----------------------------------------------------------------------------
_GAME_PATTERN = re.compile(r"(?:ALE/)?([A-Z][A-Za-z]*?)(?:NoFrameskip-v[04]|Deterministic-v[04]|-v[045])")


def infer_game(path: str | os.PathLike) -> str:
    """The game named by an environment id in ``path`` (``BreakoutNoFrameskip-v4``, ``Breakout-v5`` …).

    Published SB3 and CleanRL files carry their environment id in the file or
    directory name (RL Zoo: ``dqn/BreakoutNoFrameskip-v4_1/BreakoutNoFrameskip-v4.zip``;
    CleanRL: ``runs/BreakoutNoFrameskip-v4__dqn_atari__1__<time>/dqn_atari.cleanrl_model``).

    Raises
    ------
    ValueError
        No known game, or two different ones, appear in the path.
    """
    found = {m.group(1) for m in _GAME_PATTERN.finditer(str(path))}
    known = sorted(found & set(valid_games()))
    if len(known) == 1:
        return known[0]
    how = "name the game explicitly, e.g. 'sb3:Breakout:PATH' / 'cleanrl:Breakout:PATH' or game='Breakout'"
    if not known:
        extra = f" (found {', '.join(sorted(found))}, not among the study's games)" if found else ""
        raise ValueError(f"cannot tell the game of {str(path)!r}: no environment id like 'BreakoutNoFrameskip-v4' of a known game "
                         f"({', '.join(valid_games())}) in the path{extra}; {how}")
    raise ValueError(f"cannot tell the game of {str(path)!r}: the path names several games ({', '.join(known)}); {how}")


def _check_game(game: str | None, path: Path) -> str:
    if game is None:
        return infer_game(path)
    if game not in valid_games():
        raise ValueError(f"unknown game {game!r}; valid values are: {', '.join(valid_games())}")
    return game


def _check_action_count(game: str, n_actions: int, source: str) -> None:
    """The model's action count must be the size of ``game``'s minimal action set (our envs use it)."""
    import gymnasium as gym

    from .. import envs  # noqa: F401  (registers the ALE environments with gymnasium)

    env = gym.make(f"{game}NoFrameskip-v4")
    try:
        n_game = int(env.action_space.n)
    finally:
        env.close()
    if n_game != n_actions:
        raise ValueError(
            f"{source} has {n_actions} actions but {game}'s minimal action set has {n_game}; our 'dqn' preset plays "
            f"{game}NoFrameskip-v4 with the minimal action set (a model trained with full_action_space=True cannot be used)"
        )


def _is_state_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())


def _load_tensors(source, label: str) -> dict[str, torch.Tensor]:
    """``torch.load(weights_only=True)`` of a flat state dict, with readable errors."""
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError, RuntimeError ("invalid magic number", "not a zip file") …
        raise ValueError(f"{label} is not a tensors-only PyTorch state dict (torch.load with weights_only=True failed: {e})") from e
    if not _is_state_dict(state) or not state:
        raise ValueError(f"{label} does not hold a flat, non-empty mapping of parameter names to tensors (got {type(state).__name__})")
    return dict(state)


def _sub(state: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def _trunk_from(state: Mapping[str, torch.Tensor], label: str) -> NatureTrunk:
    """A :class:`NatureTrunk` shaped after ``state`` (keys relative to the extractor)."""
    need = [f"cnn.{i}.{p}" for i in (0, 2, 4) for p in ("weight", "bias")] + ["linear.0.weight", "linear.0.bias"]
    missing = [k for k in need if k not in state]
    if missing:
        raise ValueError(
            f"{label} is not SB3's NatureCNN (keys cnn.0/2/4 and linear.0): missing {missing}; only CnnPolicy with the "
            "default features extractor is supported"
        )
    kernels = tuple(tuple(state[f"cnn.{i}.weight"].shape[2:]) for i in (0, 2, 4))
    if kernels != ((8, 8), (4, 4), (3, 3)):
        raise ValueError(f"{label} has conv kernels {kernels}; NatureCNN has (8, 8), (4, 4), (3, 3)")
    in_ch = int(state["cnn.0.weight"].shape[1])
    if in_ch != _FRAMES:
        raise ValueError(f"{label} takes {in_ch} input channels; the 'dqn' preset stacks {_FRAMES} grayscale frames")
    features_dim, n_flatten = map(int, state["linear.0.weight"].shape)
    if n_flatten != 64 * 7 * 7:
        raise ValueError(f"{label} flattens {n_flatten} values; 84×84 inputs give 64·7·7 = 3136 (was it trained on another frame size?)")
    return NatureTrunk(in_ch, features_dim, n_flatten)


def _linear_shapes(state: Mapping[str, torch.Tensor], label: str, *, step: int) -> list[tuple[int, int]]:
    """(in, out) of the linear layers of a ``Sequential`` whose weights are at indices 0, step, 2·step …"""
    idx = sorted({int(k.split(".")[0]) for k in state if k.split(".")[0].isdigit()})
    expected = list(range(0, step * len(idx), step))
    if idx != expected or any(f"{i}.{p}" not in state for i in idx for p in ("weight", "bias")):
        raise ValueError(f"{label}: unexpected layer layout {sorted(state)}; SB3 builds Linear layers with one activation between them")
    return [tuple(int(d) for d in state[f"{i}.weight"].shape[::-1]) for i in idx]


def _class_reference(entry: Any) -> tuple[str, str] | None:
    """(module, name) of a class pickled *by reference* in SB3's JSON, read without unpickling."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get(":serialized:"), str):
        return None
    try:
        blob = base64.b64decode(entry[":serialized:"], validate=True)
        ops = list(pickletools.genops(blob))
    except (binascii.Error, ValueError):
        return None
    strings = [arg for op, arg, _ in ops if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE")]
    names = [op.name for op, _, _ in ops]
    if names.count("STACK_GLOBAL") == 1 and len(strings) == 2 and not set(names) - {"PROTO", "FRAME", "SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "MEMOIZE", "STACK_GLOBAL", "STOP"}:
        return strings[0], strings[1]
    globals_ = [arg for op, arg, _ in ops if op.name == "GLOBAL"]
    if len(globals_) == 1 and len(ops) <= 4:
        module, _, name = globals_[0].partition(" ")
        return module, name
    return None


def _readable(entry: Any) -> dict:
    """The plain (JSON) fields of an SB3 ``data`` entry; ``:serialized:`` blobs are dropped."""
    if not isinstance(entry, Mapping):
        return {}
    return {k: v for k, v in entry.items() if k not in (":type:", ":serialized:")}


def _activation(policy_kwargs: dict, default: type[nn.Module], label: str) -> type[nn.Module]:
    raw = policy_kwargs.get("activation_fn")
    if raw is None:
        return default
    m = re.search(r"torch\.nn\.modules\.activation\.(\w+)", str(raw))
    if not m or m.group(1) not in _ACTIVATIONS:
        raise ValueError(f"{label}: activation_fn {raw!r} is not supported; known: {', '.join(_ACTIVATIONS)}")
    return _ACTIVATIONS[m.group(1)]


def _system_info(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.lstrip("- ").partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


# -- Stable-Baselines3 ---------------------------------------------------------------------
def _read_sb3_zip(path: Path) -> tuple[dict, dict[str, torch.Tensor], dict[str, str]]:
    """(data JSON, policy state dict, extra text members) of an SB3 zip, nothing unpickled."""
    if not path.is_file():
        raise FileNotFoundError(f"no Stable-Baselines3 model at {str(path)!r}: expected the .zip written by model.save()")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a zip archive; a Stable-Baselines3 model is the .zip written by model.save()")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            missing = [n for n in ("data", "policy.pth") if n not in names]
            if missing:
                raise ValueError(
                    f"{path} is a zip without {' and '.join(missing)}; it is not a Stable-Baselines3 model "
                    f"(members: {', '.join(sorted(names)) or 'none'})"
                )
            raw_data = z.read("data")
            policy = z.read("policy.pth")
            extra = {n: z.read(n).decode("utf-8", "replace") for n in ("_stable_baselines3_version", "system_info.txt") if n in names}
    except zipfile.BadZipFile as e:
        raise ValueError(f"{path} is a corrupted zip archive ({e})") from e
    try:
        data = json.loads(raw_data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: its 'data' member is not JSON ({e}); it is not a Stable-Baselines3 model") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: its 'data' member is not a JSON object; it is not a Stable-Baselines3 model")
    state = _load_tensors(io.BytesIO(policy), f"{path}:policy.pth")
    return data, state, extra


def _sb3_spaces(data: dict, label: str) -> tuple[tuple[int, ...], int]:
    obs = data.get("observation_space")
    act = data.get("action_space")
    obs_type, act_type = str(_readable_type(obs)), str(_readable_type(act))
    if "spaces.box.Box" not in obs_type:
        raise ValueError(f"{label}: observation space {obs_type or 'missing'} is not an image Box; only Atari image observations are supported")
    fields = _readable(obs)
    shape = tuple(int(d) for d in fields.get("_shape") or ())
    if shape not in ((_FRAMES, _SIDE, _SIDE), (_SIDE, _SIDE, _FRAMES)):
        raise ValueError(
            f"{label}: observation shape {shape} does not match the 'dqn' preset; expected 4 stacked 84×84 frames, "
            "(4, 84, 84) as SB3 stores it after VecTransposeImage or (84, 84, 4) from VecFrameStack "
            "(train on make_atari_env(...) + VecFrameStack(n_stack=4))"
        )
    if fields.get("dtype") != "uint8":
        raise ValueError(f"{label}: observation dtype {fields.get('dtype')!r} is not uint8; only raw Atari pixels (0..255) are supported, "
                         "so that the scaling to our [0, 1] states is known")
    if "spaces.discrete.Discrete" not in act_type:
        raise ValueError(f"{label}: action space {act_type or 'missing'} is not Discrete; Atari agents choose among discrete actions")
    try:
        n = int(_readable(act)["n"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{label}: the action space does not record its size n") from e
    return shape, n


def _readable_type(entry: Any) -> str:
    return entry.get(":type:", "") if isinstance(entry, Mapping) else ""


def _sb3_network(kind: str, state: dict[str, torch.Tensor], policy_kwargs: dict, *, n_actions: int, input_scale: float, label: str):
    if kind in ("q", "quantiles"):
        outer = "q_net" if kind == "q" else "quantile_net"
        unknown = sorted({k.split(".")[0] for k in state} - {outer, f"{outer}_target"})
        if unknown:
            raise ValueError(f"{label}: unexpected parameter groups {unknown} for a {outer} policy")
        inner = _sub(state, f"{outer}.")
        trunk = _trunk_from(_sub(inner, "features_extractor."), f"{label} ({outer}.features_extractor)")
        shapes = _linear_shapes(_sub(inner, f"{outer}."), f"{label} ({outer}.{outer})", step=2)
        q_net = _mlp(shapes, _activation(policy_kwargs, nn.ReLU, label), trailing=False)
        n_out = shapes[-1][1]
        n_quantiles = None
        if kind == "quantiles":
            if n_out % n_actions:
                raise ValueError(f"{label}: {n_out} quantile outputs are not a multiple of the {n_actions} actions")
            n_quantiles = n_out // n_actions
        elif n_out != n_actions:
            raise ValueError(f"{label}: the Q head has {n_out} outputs but the action space has {n_actions} actions")
        net = SB3QNetwork(trunk, q_net, n_actions=n_actions, n_quantiles=n_quantiles, input_scale=input_scale)
        mapped = {f"features_extractor.{k}": v for k, v in _sub(inner, "features_extractor.").items()}
        mapped.update({f"q_net.{k}": v for k, v in _sub(inner, f"{outer}.").items()})
        return net, mapped

    groups = {k.split(".")[0] for k in state}
    allowed = {"features_extractor", "pi_features_extractor", "vf_features_extractor", "mlp_extractor", "action_net", "value_net"}
    if groups - allowed:
        raise ValueError(f"{label}: unexpected parameter groups {sorted(groups - allowed)} for an ActorCriticCnnPolicy")
    if "log_std" in state or any(k.startswith("mlp_extractor.shared_net") for k in state):
        raise ValueError(f"{label}: continuous actions (log_std) and shared mlp layers (SB3 < 1.8) are not supported")
    pi_sd = _sub(state, "features_extractor.") or _sub(state, "pi_features_extractor.")
    trunk = _trunk_from(pi_sd, f"{label} (features_extractor)")
    vf_sd = _sub(state, "vf_features_extractor.")
    share = policy_kwargs.get("share_features_extractor")
    if share is None:  # not recorded: shared when the value extractor is absent or holds the same tensors
        share = not vf_sd or (vf_sd.keys() == pi_sd.keys() and all(torch.equal(vf_sd[k], pi_sd[k]) for k in pi_sd))
    vf_trunk = None if share else _trunk_from(vf_sd, f"{label} (vf_features_extractor)")
    act = _activation(policy_kwargs, nn.Tanh, label)
    pi_mlp_sd, vf_mlp_sd = _sub(state, "mlp_extractor.policy_net."), _sub(state, "mlp_extractor.value_net.")
    policy_net = _mlp(_linear_shapes(pi_mlp_sd, f"{label} (mlp_extractor.policy_net)", step=2), act, trailing=True) if pi_mlp_sd else nn.Sequential()
    value_mlp = _mlp(_linear_shapes(vf_mlp_sd, f"{label} (mlp_extractor.value_net)", step=2), act, trailing=True) if vf_mlp_sd else nn.Sequential()
    for key in ("action_net.weight", "value_net.weight"):
        if key not in state:
            raise ValueError(f"{label} lacks {key}; it is not an SB3 actor-critic policy")
    a_in, v_in = int(state["action_net.weight"].shape[1]), int(state["value_net.weight"].shape[1])
    n_out = int(state["action_net.weight"].shape[0])
    if n_out != n_actions:
        raise ValueError(f"{label}: action_net has {n_out} outputs but the action space has {n_actions} actions")
    net = SB3ActorCritic(trunk, vf_trunk, policy_net, value_mlp, nn.Linear(a_in, n_out), nn.Linear(v_in, 1), input_scale=input_scale)
    mapped = {f"features_extractor.{k}": v for k, v in pi_sd.items()}
    if vf_trunk is not None:
        mapped.update({f"vf_features_extractor.{k}": v for k, v in vf_sd.items()})
    mapped.update({k: v for k, v in state.items() if k.split(".")[0] in ("mlp_extractor", "action_net", "value_net")})
    return net, mapped


def load_sb3(path: str | os.PathLike, *, game: str | None = None, device: str | torch.device = "cpu") -> Agent:
    """An agent from a Stable-Baselines3 ``.zip`` (DQN, QR-DQN, PPO or A2C with ``CnnPolicy``).

    Parameters
    ----------
    path : str or path
        The file written by ``model.save()``.
    game : str, optional
        The game (see :func:`saliency_lib.games.valid_games`). Default: read from
        the path by :func:`infer_game`.
    device : str or torch.device, optional
        Where to put the network.

    Returns
    -------
    QAgent or ActorCriticAgent
        Preset ``"dqn"``. DQN and QR-DQN give a :class:`QAgent` (QR-DQN: ``q`` is the
        mean over quantiles); PPO and A2C an :class:`ActorCriticAgent`. ``agent.meta``
        records ``source`` (``"sb3:<path>"``), ``algorithm``, ``policy``, ``sha256``
        of the file, SB3's version and system info, and the training step count.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        Not an SB3 zip (not a zip, no ``data``/``policy.pth``, weights that are not a
        tensors-only state dict), an unsupported algorithm or policy, an observation
        space other than 4 stacked 84×84 uint8 frames, or a game mismatch.

    Notes
    -----
    The online network is used (``q_net``); DQN's target network is ignored. See the
    module docstring for how SB3's observations map onto our states.
    """
    path = Path(path)
    data, state, extra = _read_sb3_zip(path)
    label = str(path)
    ref = _class_reference(data.get("policy_class"))
    if ref is None:
        raise ValueError(f"{label}: the policy class is not recorded as a reference to a library class (custom policy classes are not supported); "
                         f"supported: {_SB3_SUPPORTED}")
    policy = f"{ref[0]}.{ref[1]}"
    if ref not in _SB3_POLICIES:
        algo = re.match(r"(?:stable_baselines3|sb3_contrib)\.(\w+)\.", ref[0])
        algo_txt = f" ({algo.group(1).upper()})" if algo and algo.group(1) != "common" else ""
        raise ValueError(f"{label}: policy {policy}{algo_txt} is not supported; supported: {_SB3_SUPPORTED}")
    algorithm, kind = _SB3_POLICIES[ref]
    if algorithm is None:
        algorithm = "PPO" if "clip_range" in data or "n_epochs" in data else "A2C"
    shape, n_actions = _sb3_spaces(data, label)
    policy_kwargs = _readable(data.get("policy_kwargs")) if isinstance(data.get("policy_kwargs"), Mapping) else {}
    extractor = policy_kwargs.get("features_extractor_class")
    if extractor is not None and "NatureCNN" not in str(extractor):
        raise ValueError(f"{label}: features extractor {extractor!r} is not supported; only SB3's default NatureCNN is")
    normalize = policy_kwargs.get("normalize_images", True)
    if not isinstance(normalize, bool):
        raise ValueError(f"{label}: policy_kwargs['normalize_images'] is {normalize!r}, expected true or false")
    input_scale = 1.0 if normalize else 255.0
    net, mapped = _sb3_network(kind, state, policy_kwargs, n_actions=n_actions, input_scale=input_scale, label=label)
    load_state_strict(net, mapped, source=f"{label}:policy.pth")
    game = _check_game(game, path)
    _check_action_count(game, n_actions, label)
    info = _system_info(extra.get("system_info.txt", ""))
    meta = {
        "source": f"sb3:{path}",
        "checkpoint": str(path),
        "sha256": sha256_file(path),
        "library": "stable-baselines3" if ref[0].startswith("stable_baselines3") else "sb3-contrib",
        "library_version": extra.get("_stable_baselines3_version", "").strip() or info.get("Stable-Baselines3"),
        "system_info": info,
        "algorithm": algorithm,
        "policy": policy,
        "observation_shape": list(shape),
        "normalize_images": normalize,
        "input_scale": input_scale,
        "n_actions": n_actions,
        "num_timesteps": data.get("num_timesteps"),
        "preprocessing": "SB3 AtariWrapper + VecFrameStack(4); states = obs_chw / 255 (see saliency_lib.agents.adapters)",
    }
    if kind == "quantiles":
        meta["n_quantiles"] = net.n_quantiles
    agent_cls = QAgent if kind in ("q", "quantiles") else ActorCriticAgent
    return agent_cls(net, game=game, preset="dqn", n_actions=n_actions, meta=meta).to(device)


# -- CleanRL --------------------------------------------------------------------------------
_CLEANRL_TRUNK = {f"network.{i}.{p}" for i in (0, 2, 4, 7) for p in ("weight", "bias")}
_CLEANRL_LAYOUTS = {
    "dqn_atari": _CLEANRL_TRUNK | {"network.9.weight", "network.9.bias"},
    "ppo_atari": _CLEANRL_TRUNK | {"actor.weight", "actor.bias", "critic.weight", "critic.bias"},
}


def load_cleanrl(path: str | os.PathLike, *, game: str | None = None, device: str | torch.device = "cpu") -> Agent:
    """An agent from a CleanRL ``.cleanrl_model`` (``dqn_atari.py`` or ``ppo_atari.py``).

    Parameters
    ----------
    path : str or path
        The state dict saved by ``torch.save(model.state_dict(), path)``.
    game : str, optional
        The game. Default: read from the path by :func:`infer_game` (CleanRL's run
        directories are named ``<env_id>__<exp_name>__<seed>__<time>``).
    device : str or torch.device, optional

    Returns
    -------
    QAgent or ActorCriticAgent
        Preset ``"dqn"``; ``dqn_atari`` → :class:`QAgent` (:class:`CleanRLQNetwork`),
        ``ppo_atari`` → :class:`ActorCriticAgent` (:class:`CleanRLActorCritic`). The
        script is detected from the parameter names.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        Not a tensors-only state dict, or parameter names of neither script.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no CleanRL model at {str(path)!r}: expected the .cleanrl_model state dict saved by dqn_atari.py or ppo_atari.py")
    state = _load_tensors(path, str(path))
    keys = set(state)
    script = next((s for s, layout in _CLEANRL_LAYOUTS.items() if keys == layout), None)
    if script is None:
        hint = " (a C51 model: c51_atari is not supported)" if "atoms" in keys else ""
        raise ValueError(
            f"{path} matches neither CleanRL dqn_atari.py (network.0/2/4/7/9) nor ppo_atari.py (network.0/2/4/7, actor, critic)"
            f"{hint}; its parameters are: {', '.join(sorted(keys))}"
        )
    if script == "dqn_atari":
        n_actions, features_dim = map(int, state["network.9.weight"].shape)
        net: nn.Module = CleanRLQNetwork(n_actions, features_dim)
        agent_cls, policy = QAgent, "QNetwork"
    else:
        n_actions, features_dim = map(int, state["actor.weight"].shape)
        net = CleanRLActorCritic(n_actions, features_dim)
        agent_cls, policy = ActorCriticAgent, "Agent"
    load_state_strict(net, state, source=str(path))
    game = _check_game(game, path)
    _check_action_count(game, n_actions, str(path))
    meta = {
        "source": f"cleanrl:{path}",
        "checkpoint": str(path),
        "sha256": sha256_file(path),
        "library": "cleanrl",
        "algorithm": script,
        "policy": policy,
        "n_actions": n_actions,
        "preprocessing": "CleanRL Atari wrappers + FrameStack(4); states = obs / 255 (see saliency_lib.agents.adapters)",
    }
    return agent_cls(net, game=game, preset="dqn", n_actions=n_actions, meta=meta).to(device)


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
            raise ValueError(f"{who} returned a dict with keys {sorted(map(str, raw))} but outputs declares {names}; missing {missing}")
        out = {n: raw[n] for n in names}
    elif isinstance(raw, torch.Tensor):
        if len(names) != 1:
            raise ValueError(f"{who} returned one tensor but outputs declares {len(names)} ({', '.join(names)}); return a tuple or a dict")
        out = {names[0]: raw}
    elif isinstance(raw, (tuple, list)):
        if len(raw) != len(names):
            raise ValueError(f"{who} returned {len(raw)} values but outputs declares {len(names)} ({', '.join(names)}); declare one name per value, in order")
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
        return ("q", "advantage", *(("features",) if "features" in self.net.names else ()))

    def forward(self, x, hidden=None):
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
        return ("logits", "probs", *(n for n in ("value", "features") if n in self.net.names))

    @property
    def recurrent(self) -> bool:
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
        raise ValueError(f"outputs {names!r}: 'value' goes with 'logits' (actor-critic); a Q-agent's outputs are 'q' and optionally 'features'")
    from ..envs import PRESETS, obs_shape  # lazy: gymnasium and ale-py load only when needed

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid values are: {', '.join(PRESETS)}")
    if game not in valid_games():
        raise ValueError(f"unknown game {game!r}; valid values are: {', '.join(valid_games())}")
    if n_actions is not None and (isinstance(n_actions, bool) or not isinstance(n_actions, (int, np.integer)) or n_actions < 1):
        raise ValueError(f"n_actions must be a positive integer or None, got {n_actions!r}")
    if not isinstance(input_scale, (int, float)) or isinstance(input_scale, bool) or not input_scale > 0:
        raise ValueError(f"input_scale must be a positive number (1 for [0, 1] inputs, 255 for modules that divide by 255), got {input_scale!r}")

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
            f"({'float in [0, 1], channel 3 newest' if preset == 'dqn' else 'normalised 80×80 frames'}): {type(e).__name__}: {e}; "
            "does the module expect this observation shape?"
        ) from e
    head = out[heads[0]]
    if head.dim() != 2 or head.shape[0] != 2:
        raise ValueError(f"{who}: output {heads[0]!r} must have shape (N, n_actions); got {tuple(head.shape)} for N=2")
    if n_actions is not None and head.shape[1] != n_actions:
        raise ValueError(f"{who}: output {heads[0]!r} has {head.shape[1]} actions but n_actions={n_actions}")
    if "value" in out and tuple(out["value"].shape) != (2,):
        raise ValueError(f"{who}: output 'value' must have shape (N,) or (N, 1); got {tuple(out['value'].shape)} for N=2")
    if "features" in out and (out["features"].dim() < 2 or out["features"].shape[0] != 2):
        raise ValueError(f"{who}: output 'features' must have the batch on its first axis; got {tuple(out['features'].shape)} for N=2")
    n = int(head.shape[1])
    info = {"source": f"wrap_agent:{who}", "policy": f"{type(module).__module__}.{type(module).__qualname__}",
            "algorithm": None, "outputs": list(names), "input_scale": float(input_scale), "weights_sha256": weights_sha256(module)}
    info.update(meta or {})
    cls = WrappedQAgent if heads[0] == "q" else WrappedActorCriticAgent
    return cls(wrapper, game=game, preset=preset, n_actions=n, meta=info)
