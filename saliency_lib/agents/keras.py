"""Keras HDF5 Q-networks as agents: :func:`load_keras` (``load_agent("keras:[<Game>:]PATH.h5")``).

Huber et al.'s four agents ship as Keras 2.2.4 HDF5 full models in their repository
(belimmer/PerturbationSaliencyEvaluation, ``applications/atari/models/``:
``BreakoutIngame_5M.h5``, ``MsPacman_5M_ingame_reward.h5``, ``SpaceInvadersIngame_5M.h5``,
``FrostbiteIngame_5M.h5``). They are not redistributable, so the study does not ship them;
a reader who has them loads them with this module.

What is read
------------
Only :mod:`h5py` opens the file: no TensorFlow, no Keras, no pickle, no code from the
file. The weights come from ``model_weights/<layer>/<weight name>`` (a full model saved
by ``model.save``) or from ``<layer>/<weight name>`` at the root (``save_weights``), in the
order of the ``layer_names`` attribute, each layer's datasets named by its
``weight_names`` attribute (``<layer>/kernel:0``, ``<layer>/bias:0`` in Keras 2;
``<model>/<layer>/kernel`` in Keras 3). The root attribute ``model_config`` is parsed as
JSON text (:func:`json.loads`, which builds plain data only) for the layer kinds,
strides, padding, activations and data format; a ``Lambda`` layer's code inside it is
never evaluated (such a layer is refused). Without ``model_config`` (a weights-only
file) the strides are assumed to be Nature DQN's, the padding is read from the size
of the first dense layer's input (3136 also fits 'same' then 'valid', 'valid'; it is
read as all 'valid'), and layers without weights are taken to be ``InputLayer`` or
``Flatten``; the report says which facts were assumed.

The architecture accepted
-------------------------
The paper's network (reference notes §1.3), one chain, channels last::

    input (84, 84, 4) → Conv2D 32 8×8/4 ReLU → Conv2D 64 4×4/2 ReLU → Conv2D 64 3×3/1 ReLU
      → Flatten (H, W, C) → Dense hidden ReLU → Dense |A| linear

with all three convolutions ``"same"`` (TF padding: fc input 11·11·64 = 7744, the
authors' models) or all ``"valid"`` (Nature DQN: 7·7·64 = 3136), any hidden size, and
weightless ``InputLayer``/``Flatten`` layers. Anything else is refused with a
``ValueError`` that names what the file holds: a missing or extra layer, a kernel of
another shape, another layer kind (``BatchNormalization``, ``Lambda``, pooling …), a
dueling model with a separate value stream (two dense heads; the authors' converter
saved only the action stream), no weights group.

How the weights map onto torch
------------------------------
The network becomes a :class:`~saliency_lib.agents.DQNNet` (``dueling=False``, the
padding found, the hidden size found), so every fast path, the sanity cascade
(output → fc → conv3 → conv2 → conv1) and :func:`~saliency_lib.agents.save_agent` work
on it unchanged.

* States: the Keras input is ``(N, 84, 84, 4)`` in [0, 1] with frame 3 newest; our
  ``"dqn"`` states are ``(N, 4, 84, 84)``, the same frames on axis 1, so
  ``keras_input = states.permute(0, 2, 3, 1)``. No scaling on either side.
* Conv2D kernels are ``(kh, kw, in, out)`` (HWIO) → torch ``(out, in, kh, kw)``:
  ``kernel.transpose(3, 2, 0, 1)``. Both frameworks cross-correlate; nothing is flipped.
* TF ``"same"`` padding: 2 on every side for conv1; 1 before and 2 after for conv2
  (:class:`DQNNet` pads that explicitly); 1 for conv3.
* Flatten: Keras flattens channels last, row index ``(h·W + w)·C + c``; our network
  flattens ``c·H·W + h·W + w``. The rows of the first dense kernel ``(H·W·C, hidden)`` are
  therefore reordered to ``(C, H, W)`` before transposing to torch's ``(hidden, H·W·C)``.
* Dense kernels ``(in, out)`` → torch ``(out, in)``: ``kernel.T``.

The Q-values agree with Keras' own forward pass within 1e-5 (``tests/study/test_keras_agent.py``,
a model built and saved by Keras 3, and a Keras-2-layout file checked against a
hand-built channels-last network).

What the agent reports
----------------------
``agent.meta["architecture"]`` lists the layers found (name, kind, filters or units,
kernel, strides, padding, activation), the hidden size, ``dueling`` (always ``False``
for an accepted file), the padding and where it was read from. A single-stream file
cannot tell whether training used a dueling head: if it did, its outputs are the
un-centred advantage stream (reference notes §1.3); the greedy action is the same.
``agent.meta`` also records the file's sha256 (which keys cached states),
``keras_version`` and ``backend``.

Loading the authors' agents
-------------------------
With a clone of the authors' repository at ``$HUBER``, the game is read from the file name
(``BreakoutIngame_5M.h5`` → Breakout) or named::

    >>> agent = load_agent("keras:$HUBER/applications/atari/models/BreakoutIngame_5M.h5")  # doctest: +SKIP
    >>> agent = load_agent("keras:Breakout:path/to/weights.h5")  # doctest: +SKIP

Its states are its own greedy play from Huber et al.'s fixed start (the ``"dqn"`` preset);
``save_agent(agent, directory)`` converts a file to the library's checkpoint format
(safetensors) once. The study's book says how to run its chapters on these agents.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..games import valid_games
from ._weights import sha256_file
from .base import QAgent
from .dqn import DQNConfig, DQNNet
from .foreign import FRAMES, SIDE, check_action_count, infer_game

__all__ = ["load_keras", "read_keras_h5", "keras_game_from_path", "KERAS_LAYER_KINDS", "H5PY_INSTALL"]

#: Layer classes an accepted file may hold (weightless ones: ``InputLayer`` and ``Flatten``).
KERAS_LAYER_KINDS = ("InputLayer", "Conv2D", "Flatten", "Dense")
#: How to get the one dependency of this module.
H5PY_INSTALL = "pip install h5py  (or: pip install 'saliency-lib[keras]')"

#: Nature-DQN convolutions: (filters, kernel side, stride), in order.
_CONVS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
#: Side of conv3's output map and the fc input size per padding.
_SIDES = {"same": 11, "valid": 7}
_FC_IN = {pad: side * side * _CONVS[-1][0] for pad, side in _SIDES.items()}


def _h5py():
    try:
        import h5py
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"reading Keras .h5 files needs h5py; install it with: {H5PY_INSTALL}") from e
    return h5py


# -- reading the file ----------------------------------------------------------------------
def _text(value: Any) -> str:
    return value.decode("utf8") if isinstance(value, (bytes, np.bytes_)) else str(value)


def _attr_strings(obj, name: str) -> list[str] | None:
    """A string-list attribute, as Keras writes it (bytes or str; split into ``name0``, ``name1`` … when large)."""
    if name in obj.attrs:
        chunks = [obj.attrs[name]]
    elif f"{name}0" in obj.attrs:
        chunks, i = [], 0
        while f"{name}{i}" in obj.attrs:
            chunks.append(obj.attrs[f"{name}{i}"])
            i += 1
    else:
        return None
    return [_text(v) for chunk in chunks for v in np.atleast_1d(np.asarray(chunk)).tolist() if np.asarray(chunk).size]


def _weights_group(f, path: str):
    if "model_weights" in f:
        return f["model_weights"], "full model (model_config + model_weights)"
    if _attr_strings(f, "layer_names") is not None:
        return f, "weights only (save_weights)"
    found = ", ".join(sorted(f.keys())) or "nothing"
    attrs = ", ".join(sorted(f.attrs.keys())) or "none"
    raise ValueError(
        f"{path} holds no Keras weights: no 'model_weights' group and no 'layer_names' attribute at its root "
        f"(found: {found}; root attributes: {attrs}); expected a file written by Keras' model.save or save_weights in HDF5"
    )


def read_keras_h5(path: str | os.PathLike) -> dict[str, Any]:
    """The layers, weights and model config of a Keras HDF5 file, read with h5py only.

    Parameters
    ----------
    path : str or path
        A ``.h5`` file written by Keras 2 or 3 (``model.save`` or ``save_weights``).

    Returns
    -------
    dict
        ``"layers"``: list of ``(name, {basename: float32 array})`` in ``layer_names``
        order, where basename is the weight's last name component without ``:0``
        (``"kernel"``, ``"bias"`` …); ``"model_config"``: the parsed JSON or ``None``;
        ``"keras_version"``, ``"backend"``: the file's attributes (or ``None``);
        ``"format"``: full model or weights only.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        Not HDF5, no weights group, a layer or weight named in the attributes missing
        from the file, non-finite weights, or a ``model_config`` that is not JSON.
    """
    h5py = _h5py()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no Keras model at {str(path)!r}: expected a .h5 file written by Keras "
                                "(model.save or save_weights)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"{path} is not an HDF5 file (h5py: {e}); "
                         "expected a Keras .h5 model (a .keras zip is not supported)") from e
    with f:
        group, fmt = _weights_group(f, str(path))
        names = _attr_strings(group, "layer_names")
        if not names:
            raise ValueError(f"{path}: the weights group {group.name!r} has no (or an empty) 'layer_names' attribute; "
                             "it is not a Keras weights group")
        layers = []
        for name in names:
            if name not in group:
                present = ", ".join(sorted(k for k in group.keys())) or "none"
                raise ValueError(f"{path}: layer {name!r} is listed in layer_names but has no group in {group.name!r} "
                                 f"(groups there: {present})")
            g = group[name]
            weights: dict[str, np.ndarray] = {}
            for wname in _attr_strings(g, "weight_names") or []:
                if wname not in g:
                    raise ValueError(f"{path}: weight {wname!r} of layer {name!r} is listed in weight_names but "
                                     "missing from the file")
                arr = np.asarray(g[wname][()])
                base = wname.rsplit("/", 1)[-1].split(":", 1)[0]
                if base in weights:
                    raise ValueError(f"{path}: layer {name!r} holds two weights named {base!r} ({wname!r})")
                if not np.issubdtype(arr.dtype, np.floating) or not np.isfinite(arr).all():
                    raise ValueError(f"{path}: weight {wname!r} of layer {name!r} is not finite floating "
                                     f"point (dtype {arr.dtype})")
                weights[base] = arr.astype(np.float32, copy=False)
            layers.append((name, weights))
        config = None
        if "model_config" in f.attrs:
            try:
                config = json.loads(_text(f.attrs["model_config"]))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ValueError(f"{path}: the model_config attribute is not JSON ({e})") from e
        version = _text(f.attrs["keras_version"]) if "keras_version" in f.attrs else None
        backend = _text(f.attrs["backend"]) if "backend" in f.attrs else None
    return {"layers": layers, "model_config": config, "keras_version": version, "backend": backend, "format": fmt}


# -- the model config ------------------------------------------------------------------------
def _config_layers(config: Any, path: str) -> dict[str, tuple[str, dict]]:
    """``{layer name: (class name, layer config)}`` of a Sequential or Functional model config."""
    if not isinstance(config, Mapping) or "config" not in config:
        raise ValueError(f"{path}: model_config is not a Keras model description (no 'class_name'/'config'), "
                         f"got {str(config)[:80]!r}")
    inner = config["config"]
    entries = inner if isinstance(inner, list) else inner.get("layers") if isinstance(inner, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: model_config of class {config.get('class_name')!r} lists no layers")
    out = {}
    for e in entries:
        cfg = e.get("config", {}) if isinstance(e, Mapping) else {}
        name = (e.get("name") or cfg.get("name")) if isinstance(e, Mapping) else None
        if name is None:
            raise ValueError(f"{path}: model_config holds a layer without a name: {str(e)[:80]!r}")
        out[str(name)] = (str(e.get("class_name")), cfg if isinstance(cfg, Mapping) else {})
    outputs = inner.get("output_layers") if isinstance(inner, Mapping) else None
    if isinstance(outputs, list) and outputs and isinstance(outputs[0], list) and len(outputs) > 1:
        names = [o[0] for o in outputs if isinstance(o, list) and o]
        raise ValueError(f"{path}: the model has {len(outputs)} outputs ({', '.join(map(str, names))}); a Q-network has one "
                         "(a dueling model saved with separate action and state outputs is not supported)")
    return out


def _pair(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    v = list(value) if isinstance(value, (list, tuple)) else [value, value]
    return (int(v[0]), int(v[1]))


def _input_shape(cfg: Mapping) -> tuple | None:
    shape = cfg.get("batch_input_shape") or cfg.get("batch_shape")
    return tuple(shape[1:]) if isinstance(shape, list) else None


# -- the architecture ------------------------------------------------------------------------
def _describe(layers: list[tuple[str, dict, str | None]]) -> str:
    parts = []
    for name, w, cls in layers:
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in w.items())
        parts.append(f"{name!r} ({cls or 'no weights'}{': ' + shapes if shapes else ''})")
    return "; ".join(parts)


_EXPECTED = ("Conv2D 32 8×8/4 → Conv2D 64 4×4/2 → Conv2D 64 3×3/1 → Flatten → Dense hidden (ReLU) → Dense |A| (linear), "
             "input (84, 84, 4) channels last")


def _kind_of(name: str, weights: dict, cls: str | None, path: str) -> str | None:
    """``"conv"``, ``"dense"`` or ``None`` (weightless) for one layer; refuses unknown kinds."""
    if cls is not None and cls not in KERAS_LAYER_KINDS:
        hint = " (its code is stored in the file and is never run)" if cls == "Lambda" else ""
        raise ValueError(f"{path}: layer {name!r} is a {cls}{hint}; this loader knows {', '.join(KERAS_LAYER_KINDS)} only "
                         f"(the network must be {_EXPECTED})")
    if not weights:
        if cls in ("Conv2D", "Dense"):
            raise ValueError(f"{path}: layer {name!r} is a {cls} but the file holds no weights for it")
        return None
    if set(weights) != {"kernel", "bias"}:
        raise ValueError(f"{path}: layer {name!r} holds weights {', '.join(sorted(weights))}: not a Conv2D or Dense layer with "
                         f"kernel and bias (an unknown layer kind, or a layer without bias); the network must be {_EXPECTED}")
    ndim = weights["kernel"].ndim
    kind = {4: "conv", 2: "dense"}.get(ndim)
    if kind is None or (cls is not None and cls != {"conv": "Conv2D", "dense": "Dense"}[kind]):
        raise ValueError(f"{path}: layer {name!r} ({cls or 'class unknown'}) has a {ndim}-D kernel "
                         f"{tuple(weights['kernel'].shape)}; "
                         "Conv2D kernels are 4-D (kh, kw, in, out) and Dense kernels 2-D (in, out)")
    return kind


def _check_shape(path: str, role: str, name: str, arr: np.ndarray, want: tuple, what: str) -> None:
    if tuple(arr.shape) != want:
        raise ValueError(f"{path}: {role} ({name!r}) {what} has shape {tuple(arr.shape)}; expected {want}. "
                         f"The network must be {_EXPECTED}")


def _architecture(read: dict, path: str) -> tuple[DQNConfig, dict[str, dict[str, np.ndarray]], dict]:
    """Validate the layers read and return the torch config, the Keras weights by role, and the report."""
    cfgs = _config_layers(read["model_config"], path) if read["model_config"] is not None else None
    layers = [(n, w, cfgs[n][0] if cfgs and n in cfgs else None) for n, w in read["layers"]]
    if cfgs is not None:
        missing = [n for n, _, _ in layers if n not in cfgs]
        extra = [f"{n!r} ({c})" for n, (c, _) in cfgs.items() if c != "InputLayer" and n not in {m for m, _, _ in layers}]
        if missing or extra:
            raise ValueError(f"{path}: model_config and model_weights disagree: layers with weights groups but no config "
                             f"{missing}, layers in the config without a weights group [{', '.join(extra)}]")
    kinds = [_kind_of(n, w, c, path) for n, w, c in layers]
    bearing = [(n, w, c) for (n, w, c), k in zip(layers, kinds) if k is not None]
    sequence = [k for k in kinds if k is not None]
    if sequence != ["conv", "conv", "conv", "dense", "dense"]:
        dense_units = [w["kernel"].shape[1] for (_, w, _), k in zip(layers, kinds) if k == "dense"]
        hint = (" The file looks like a dueling model with a separate value stream (a Dense layer with 1 unit beside the "
                "action head); only the single-stream (action) network is supported."
                if len(dense_units) > 2 and 1 in dense_units else "")
        raise ValueError(f"{path}: expected 3 Conv2D then 2 Dense layers with weights, found {sequence.count('conv')} Conv2D and "
                         f"{sequence.count('dense')} Dense in this order: {_describe(layers)}.{hint} The "
                         f"network must be {_EXPECTED}")
    roles = ("conv1", "conv2", "conv3", "fc", "output")
    by_role = dict(zip(roles, bearing))
    in_ch = FRAMES
    for role, (filters, k, _) in zip(roles, _CONVS):
        name, w, _ = by_role[role]
        _check_shape(path, role, name, w["kernel"], (k, k, in_ch, filters), "kernel (kh, kw, in, out)")
        _check_shape(path, role, name, w["bias"], (filters,), "bias")
        in_ch = filters
    fc_name, fc, _ = by_role["fc"]
    n_in, hidden = map(int, fc["kernel"].shape)
    pad_from_size = next((p for p, n in _FC_IN.items() if n == n_in), None)
    if pad_from_size is None:
        raise ValueError(f"{path}: fc ({fc_name!r}) kernel has shape {(n_in, hidden)}: "
                         f"{n_in} inputs match neither 'same' padding ({_FC_IN['same']} = 11·11·64) nor 'valid' padding "
                         f"({_FC_IN['valid']} = 7·7·64) of an 84×84×4 input")
    _check_shape(path, "fc", fc_name, fc["bias"], (hidden,), "bias")
    out_name, out, _ = by_role["output"]
    n_actions = int(out["kernel"].shape[1])
    _check_shape(path, "output", out_name, out["kernel"], (hidden, n_actions), "kernel (in, out)")
    _check_shape(path, "output", out_name, out["bias"], (n_actions,), "bias")

    report_layers, padding, pad_from = [], pad_from_size, "size of the fc input"
    if cfgs is not None:
        padding, pad_from = _check_config(path, layers, cfgs, by_role, pad_from_size), "model_config"
    for n, w, c in layers:
        entry: dict[str, Any] = {"name": n, "kind": c or ({4: "Conv2D", 2: "Dense"}.get(w["kernel"].ndim) if w else "weightless")}
        cfg = cfgs[n][1] if cfgs and n in cfgs else {}
        if w and w["kernel"].ndim == 4:
            role_i = [r for r, (m, _, _) in by_role.items() if m == n][0]
            _, k, s = _CONVS[roles.index(role_i)]
            entry.update(filters=int(w["kernel"].shape[3]), kernel=[k, k], strides=list(_pair(cfg.get("strides")) or (s, s)),
                         padding=str(cfg.get("padding", padding)).lower(), activation=cfg.get("activation", "relu (assumed)"))
        elif w:
            entry.update(units=int(w["kernel"].shape[1]),
                         activation=cfg.get("activation", "relu (assumed)" if n == fc_name else "linear (assumed)"))
        if c == "InputLayer" or _input_shape(cfg):
            entry["input_shape"] = list(_input_shape(cfg) or ())
        report_layers.append(entry)
    keras_w = {role: by_role[role][1] for role in roles}
    report = {"layers": report_layers, "hidden": hidden, "dueling": False, "padding": padding, "padding_from": pad_from,
              "strides_from": "model_config" if cfgs is not None else "assumed (Nature DQN: 4, 2, 1)",
              "input": [SIDE, SIDE, FRAMES], "flatten": "H, W, C (channels last)", "n_actions": n_actions,
              "n_params": int(sum(a.size for w in keras_w.values() for a in w.values()))}
    return DQNConfig(n_actions=n_actions, in_frames=FRAMES, hidden=hidden, padding=padding, dueling=False), keras_w, report


def _check_config(path: str, layers, cfgs: dict, by_role: dict, pad_from_size: str) -> str:
    """Check strides, padding, activations and data formats in ``model_config``; return the padding."""
    bad = []
    for n, (cls, cfg) in cfgs.items():
        fmt = cfg.get("data_format")
        if cls in ("Conv2D", "Flatten") and fmt not in (None, "channels_last"):
            bad.append(f"{n!r} has data_format {fmt!r} (only channels_last)")
        shape = _input_shape(cfg)
        if shape is not None and shape != (SIDE, SIDE, FRAMES):
            bad.append(f"{n!r} takes input shape {shape} (expected ({SIDE}, {SIDE}, {FRAMES}))")
    paddings = []
    for role, (_, k, s) in zip(("conv1", "conv2", "conv3"), _CONVS):
        name, _, _ = by_role[role]
        cfg = cfgs[name][1]
        if _pair(cfg.get("strides")) not in (None, (s, s)):
            bad.append(f"{role} {name!r} has strides {cfg.get('strides')} (expected {s})")
        if _pair(cfg.get("kernel_size")) not in (None, (k, k)):
            bad.append(f"{role} {name!r} has kernel_size {cfg.get('kernel_size')} (expected {k})")
        if _pair(cfg.get("dilation_rate")) not in (None, (1, 1)) or cfg.get("groups", 1) != 1:
            bad.append(f"{role} {name!r} is dilated or grouped")
        paddings.append(str(cfg.get("padding", "valid")).lower())
        if cfg.get("activation", "linear") != "relu":
            bad.append(f"{role} {name!r} has activation {cfg.get('activation')!r} (expected 'relu')")
    for role, want in (("fc", "relu"), ("output", "linear")):
        name, _, _ = by_role[role]
        act = cfgs[name][1].get("activation", "linear")
        if act != want:
            bad.append(f"{role} {name!r} has activation {act!r} (expected {want!r})")
    if len(set(paddings)) != 1 or paddings[0] not in _SIDES:
        bad.append(f"the convolutions have paddings {paddings} (all 'same' or all 'valid' are supported)")
    elif paddings[0] != pad_from_size:
        bad.append(f"the convolutions have padding {paddings[0]!r} but the fc input size fits {pad_from_size!r}")
    if bad:
        raise ValueError(f"{path}: the model_config does not describe the supported network: {'; '.join(bad)}. "
                         f"The network must be {_EXPECTED}")
    return paddings[0]


def _torch_state(keras_w: dict[str, dict[str, np.ndarray]], padding: str) -> dict[str, torch.Tensor]:
    """Keras weights by role → a :class:`DQNNet` state dict (kernels transposed, fc rows reordered)."""
    def t(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))

    state = {}
    for role in ("conv1", "conv2", "conv3"):
        state[f"{role}.weight"] = t(keras_w[role]["kernel"].transpose(3, 2, 0, 1))  # HWIO → OIHW
        state[f"{role}.bias"] = t(keras_w[role]["bias"])
    side, ch = _SIDES[padding], _CONVS[-1][0]
    k = keras_w["fc"]["kernel"]  # rows in Keras' flatten order (h, w, c)
    k = k.reshape(side, side, ch, -1).transpose(2, 0, 1, 3).reshape(side * side * ch, -1)  # rows in (c, h, w) order
    state["fc.weight"], state["fc.bias"] = t(k.T), t(keras_w["fc"]["bias"])
    state["out.weight"], state["out.bias"] = t(keras_w["output"]["kernel"].T), t(keras_w["output"]["bias"])
    return state


# -- games --------------------------------------------------------------------------------
def keras_game_from_path(path: str | os.PathLike) -> str:
    """The game of a Keras file: the study game its file name starts with, else an environment id in its path.

    Huber et al.'s files start with the game: ``BreakoutIngame_5M.h5`` → Breakout,
    ``MsPacman_5M_ingame_reward.h5`` → MsPacman. A game name counts when the file name
    starts with it and the next character is not a lower-case letter (the longest such
    game wins). Otherwise an environment id such as ``BreakoutNoFrameskip-v4`` anywhere in
    the path names it (:func:`~saliency_lib.agents.foreign.infer_game`).

    Raises
    ------
    ValueError
        Neither gives a known game.
    """
    name = Path(path).name
    hits = [g for g in valid_games() if re.match(rf"{re.escape(g)}(?![a-z])", name)]
    if hits:
        return max(hits, key=len)
    try:
        return infer_game(path)
    except ValueError:
        raise ValueError(
            f"cannot tell the game of {str(path)!r}: its file name starts with none of the study's games "
            f"({', '.join(valid_games())}) and its path holds no environment id like 'BreakoutNoFrameskip-v4'; "
            "name the game: 'keras:Breakout:PATH' or load_keras(PATH, game='Breakout')"
        ) from None


# -- the loader ---------------------------------------------------------------------------
def load_keras(path: str | os.PathLike, *, game: str | None = None, device: str | torch.device = "cpu") -> QAgent:
    """An agent from a Keras HDF5 Q-network such as Huber et al.'s (``load_agent("keras:[<Game>:]PATH")``).

    Parameters
    ----------
    path : str or path
        The ``.h5`` file (a full model from ``model.save`` or a ``save_weights`` file).
    game : str, optional
        The game. Default: read from the file name (:func:`keras_game_from_path`).
    device : str or torch.device, optional

    Returns
    -------
    QAgent
        Preset ``"dqn"``, network :class:`~saliency_lib.agents.DQNNet` (``dueling=False``,
        the file's padding and hidden size). ``meta["architecture"]`` reports what was
        found (see the module docstring); ``meta["sha256"]`` is the file's.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ImportError
        h5py is not installed (the message gives the install command).
    ValueError
        Not a Keras HDF5 file, a layout other than the paper's network (the message
        names the layers found), an unknown game, or an action count that differs from
        the game's minimal action set.
    """
    path = Path(path)
    if game is not None and game not in valid_games():
        raise ValueError(f"unknown game {game!r}; valid values are: {', '.join(valid_games())}")
    read = read_keras_h5(path)
    config, keras_w, report = _architecture(read, str(path))
    game = game if game is not None else keras_game_from_path(path)
    check_action_count(game, config.n_actions, str(path))
    net = DQNNet(config)
    net.load_state_dict(_torch_state(keras_w, config.padding))
    meta = {
        "source": f"keras:{path}",
        "checkpoint": str(path),
        "sha256": sha256_file(path),
        "library": "keras",
        "keras_version": read["keras_version"],
        "backend": read["backend"],
        "file_format": read["format"],
        "algorithm": None,
        "policy": "Keras Q-network (single stream)",
        "n_actions": config.n_actions,
        "architecture": report,
        "preprocessing": "channels-last states in [0, 1] (Huber et al.); ours = keras_input.permute(0, 3, 1, 2)",
        "note": "a single-stream file cannot tell whether training used a dueling head; if it did, "
                "q is the un-centred advantage stream",
    }
    return QAgent(net, game=game, preset="dqn", n_actions=config.n_actions, meta=meta).to(device)
