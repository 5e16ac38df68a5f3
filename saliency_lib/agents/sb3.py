"""Stable-Baselines3 models as agents: :func:`load_sb3` (``load_agent("sb3:PATH.zip")``).

Reads the ``.zip`` written by ``model.save()`` of Stable-Baselines3 DQN, PPO and A2C,
and of sb3-contrib QR-DQN, with their Atari ``CnnPolicy`` (NatureCNN features
extractor), and rebuilds the network in plain torch.

No file is unpickled. ``policy.pth`` is read with ``torch.load(weights_only=True)``,
whose restricted unpickler builds tensors and containers only
(:func:`saliency_lib.agents.foreign.load_tensors`). The ``data`` member is read as
JSON: only its plain fields are used; the cloudpickled ``":serialized:"`` blobs are
never loaded. The policy class is read by disassembling its pickle (a reference to
a class) with :mod:`pickletools`, which decodes opcodes without importing or running
anything. The network is then rebuilt with the parameter names of the file, and
loaded strictly (identical names and shapes).

How SB3's observations map onto our states, and how SB3's Atari preprocessing
differs from ours: :mod:`saliency_lib.agents.foreign`.

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

import torch
from torch import nn

from ._weights import load_state_strict, sha256_file
from .base import ActorCriticAgent, Agent, QAgent
from .foreign import FRAMES, SIDE, check_action_count, check_game, load_tensors

__all__ = ["load_sb3", "NatureTrunk", "SB3QNetwork", "SB3ActorCritic"]

#: Activations SB3 policies may name in ``policy_kwargs["activation_fn"]``.
_ACTIVATIONS = {name: getattr(nn, name) for name in ("ReLU", "Tanh", "ELU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Softplus",
                                                     "Mish")}
#: (module, class) of SB3 policies → (algorithm or None when read from the data, head kind).
_SB3_POLICIES = {
    ("stable_baselines3.dqn.policies", "CnnPolicy"): ("DQN", "q"),
    ("sb3_contrib.qrdqn.policies", "CnnPolicy"): ("QR-DQN", "quantiles"),
    ("stable_baselines3.common.policies", "ActorCriticCnnPolicy"): (None, "actor_critic"),
}
_SB3_SUPPORTED = "DQN, PPO and A2C with CnnPolicy (stable-baselines3) and QR-DQN with CnnPolicy (sb3-contrib)"


# -- networks ----------------------------------------------------------------------------
class NatureTrunk(nn.Module):
    """SB3's ``NatureCNN`` with its parameter names: ``cnn.{0,2,4}`` and ``linear.0``.

    conv 32×8×8/4 → ReLU → conv 64×4×4/2 → ReLU → conv 64×3×3/1 → ReLU → flatten →
    linear ``features_dim`` → ReLU.
    """

    def __init__(self, in_channels: int = FRAMES, features_dim: int = 512, n_flatten: int = 3136):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(in_channels, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
            nn.Flatten(),
        )
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The ReLU features ``(N, features_dim)`` of states ``x``."""
        return self.linear(self.cnn(x))

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layer groups from the last layer down, for cascading randomisation."""
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

    def __init__(self, trunk: NatureTrunk, q_net: nn.Sequential, *, n_actions: int, n_quantiles: int | None = None,
                 input_scale: float = 1.0):
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
        """Q-values ``(N, n_actions)`` from the last layer's input ``h``, averaged over quantiles for QR-DQN."""
        out = self.q_net[-1](h)
        if self.n_quantiles:
            out = out.view(-1, self.n_quantiles, self.n_actions).mean(dim=1)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q-values ``(N, n_actions)`` of states ``x``."""
        return self.head(self.features(x))

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layer groups from the output down (the ``q_net`` layers, then the trunk's)."""
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
        """``logits``, ``value`` and ``features`` (the policy latent) of states ``x``; ``hidden`` is ignored."""
        if self.input_scale != 1.0:
            x = x * self.input_scale
        h_pi = self.features_extractor(x)
        h_vf = h_pi if self.vf_features_extractor is None else self.vf_features_extractor(x)
        latent_pi = self.mlp_extractor.policy_net(h_pi)
        latent_vf = self.mlp_extractor.value_net(h_vf)
        return {"logits": self.action_net(latent_pi), "value": self.value_net(latent_vf)[:, 0], "features": latent_pi}

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layer groups from the output down, for cascading randomisation.

        The actor and critic heads form one group, the policy and value MLP layers of one depth another,
        and a separate value trunk joins the policy trunk's groups layer by layer.
        """
        pi, vf = _linears(self.mlp_extractor.policy_net), _linears(self.mlp_extractor.value_net)
        hidden = []
        for i in reversed(range(max(len(pi), len(vf)))):
            hidden.append((f"mlp{i + 1}", [*pi[i : i + 1], *vf[i : i + 1]]))
        trunk = self.features_extractor.layer_groups()
        if self.vf_features_extractor is not None:
            trunk = [(n, mods + dict(self.vf_features_extractor.layer_groups())[n]) for n, mods in trunk]
        return [("output", [self.action_net, self.value_net]), *hidden, *trunk]


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
    if in_ch != FRAMES:
        raise ValueError(f"{label} takes {in_ch} input channels; the 'dqn' preset stacks {FRAMES} grayscale frames")
    features_dim, n_flatten = map(int, state["linear.0.weight"].shape)
    if n_flatten != 64 * 7 * 7:
        raise ValueError(f"{label} flattens {n_flatten} values; 84×84 inputs give 64·7·7 = 3136 (was it trained on "
                         "another frame size?)")
    return NatureTrunk(in_ch, features_dim, n_flatten)


def _linear_shapes(state: Mapping[str, torch.Tensor], label: str, *, step: int) -> list[tuple[int, int]]:
    """The (in, out) sizes of the linear layers of a ``Sequential`` with weights at indices 0, step, 2·step …."""
    idx = sorted({int(k.split(".")[0]) for k in state if k.split(".")[0].isdigit()})
    expected = list(range(0, step * len(idx), step))
    if idx != expected or any(f"{i}.{p}" not in state for i in idx for p in ("weight", "bias")):
        raise ValueError(f"{label}: unexpected layer layout {sorted(state)}; SB3 builds Linear layers with one "
                         "activation between them")
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
    if (names.count("STACK_GLOBAL") == 1 and len(strings) == 2
            and not set(names) - {"PROTO", "FRAME", "SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "MEMOIZE",
                                  "STACK_GLOBAL", "STOP"}):
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
            extra = {n: z.read(n).decode("utf-8", "replace")
                     for n in ("_stable_baselines3_version", "system_info.txt") if n in names}
    except zipfile.BadZipFile as e:
        raise ValueError(f"{path} is a corrupted zip archive ({e})") from e
    try:
        data = json.loads(raw_data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: its 'data' member is not JSON ({e}); it is not a Stable-Baselines3 model") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: its 'data' member is not a JSON object; it is not a Stable-Baselines3 model")
    state = load_tensors(io.BytesIO(policy), f"{path}:policy.pth")
    return data, state, extra


def _sb3_spaces(data: dict, label: str) -> tuple[tuple[int, ...], int]:
    obs = data.get("observation_space")
    act = data.get("action_space")
    obs_type, act_type = str(_readable_type(obs)), str(_readable_type(act))
    if "spaces.box.Box" not in obs_type:
        raise ValueError(f"{label}: observation space {obs_type or 'missing'} is not an image Box; "
                         "only Atari image observations are supported")
    fields = _readable(obs)
    shape = tuple(int(d) for d in fields.get("_shape") or ())
    if shape not in ((FRAMES, SIDE, SIDE), (SIDE, SIDE, FRAMES)):
        raise ValueError(
            f"{label}: observation shape {shape} does not match the 'dqn' preset; expected 4 stacked 84×84 frames, "
            "(4, 84, 84) as SB3 stores it after VecTransposeImage or (84, 84, 4) from VecFrameStack "
            "(train on make_atari_env(...) + VecFrameStack(n_stack=4))"
        )
    if fields.get("dtype") != "uint8":
        raise ValueError(f"{label}: observation dtype {fields.get('dtype')!r} is not uint8; "
                         "only raw Atari pixels (0..255) are supported, so that the scaling to our [0, 1] states is known")
    if "spaces.discrete.Discrete" not in act_type:
        raise ValueError(f"{label}: action space {act_type or 'missing'} is not Discrete; "
                         "Atari agents choose among discrete actions")
    try:
        n = int(_readable(act)["n"])
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{label}: the action space does not record its size n") from e
    return shape, n


def _readable_type(entry: Any) -> str:
    return entry.get(":type:", "") if isinstance(entry, Mapping) else ""


def _sb3_network(kind: str, state: dict[str, torch.Tensor], policy_kwargs: dict, *, n_actions: int, input_scale: float,
                 label: str):
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
    policy_net = (_mlp(_linear_shapes(pi_mlp_sd, f"{label} (mlp_extractor.policy_net)", step=2), act, trailing=True)
                  if pi_mlp_sd else nn.Sequential())
    value_mlp = (_mlp(_linear_shapes(vf_mlp_sd, f"{label} (mlp_extractor.value_net)", step=2), act, trailing=True)
                 if vf_mlp_sd else nn.Sequential())
    for key in ("action_net.weight", "value_net.weight"):
        if key not in state:
            raise ValueError(f"{label} lacks {key}; it is not an SB3 actor-critic policy")
    a_in, v_in = int(state["action_net.weight"].shape[1]), int(state["value_net.weight"].shape[1])
    n_out = int(state["action_net.weight"].shape[0])
    if n_out != n_actions:
        raise ValueError(f"{label}: action_net has {n_out} outputs but the action space has {n_actions} actions")
    net = SB3ActorCritic(trunk, vf_trunk, policy_net, value_mlp, nn.Linear(a_in, n_out), nn.Linear(v_in, 1),
                         input_scale=input_scale)
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
        the path by :func:`~saliency_lib.agents.foreign.infer_game`.
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
    The online network is used (``q_net``); DQN's target network is ignored. See
    :mod:`saliency_lib.agents.foreign` for how SB3's observations map onto our states.
    """
    path = Path(path)
    data, state, extra = _read_sb3_zip(path)
    label = str(path)
    ref = _class_reference(data.get("policy_class"))
    if ref is None:
        raise ValueError(f"{label}: the policy class is not recorded as a reference to a library class (custom policy classes "
                         f"are not supported); supported: {_SB3_SUPPORTED}")
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
    game = check_game(game, path)
    check_action_count(game, n_actions, label)
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
        "preprocessing": "SB3 AtariWrapper + VecFrameStack(4); states = obs_chw / 255 (see saliency_lib.agents.foreign)",
    }
    if kind == "quantiles":
        meta["n_quantiles"] = net.n_quantiles
    agent_cls = QAgent if kind in ("q", "quantiles") else ActorCriticAgent
    return agent_cls(net, game=game, preset="dqn", n_actions=n_actions, meta=meta).to(device)
