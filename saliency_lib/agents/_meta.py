"""The schema of a checkpoint's ``meta.json``, and its agreement with the weights.

:func:`check_meta` runs before the network is built; :func:`check_against_weights` after the
weights loaded into it. Every problem raises ``ValueError`` naming the file, the field, the
value and what is allowed; a misspelt name gets a suggestion.

Schema
------
=============  =======================================================================
field          what it must be
=============  =======================================================================
``arch``       a registered architecture (``"DQNNet"``, ``"MaskA3CNet"``)
``config``     an object of that architecture's config fields, each of its type
``game``       a game of the library (:func:`saliency_lib.games.valid_games`)
``preset``     a preprocessing preset (:data:`saliency_lib.envs.PRESETS`), the one the
               architecture takes (``DQNNet``: ``"dqn"``; ``MaskA3CNet``: ``"mask_a3c"``)
``sha256``     64 hexadecimal digits (checked against the weights file by the loader)
=============  =======================================================================

Against the weights: the first layer takes the preset's input frames, the output layer has
``config.n_actions`` rows, and that is the size of the game's minimal action set
(:data:`saliency_lib.games.ACTION_COUNTS`), the actions our environments offer.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from collections.abc import Iterable

__all__ = ["check_meta", "check_against_weights", "ARCH_PRESETS"]

ARCH_PRESETS = {"DQNNet": "dqn", "MaskA3CNet": "mask_a3c"}
"""The preprocessing preset each checkpoint architecture takes."""

_REQUIRED = ("arch", "config", "game", "preset", "sha256")
_SHA = re.compile(r"^[0-9a-f]{64}$")


def _hint(value, choices: Iterable[str]) -> str:
    choices = list(choices)
    lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(str(value).lower(), list(lower), n=1, cutoff=0.6)
    return f"; did you mean {lower[close[0]]!r}?" if close else ""


def check_meta(meta: object, source: str, architectures: dict) -> None:
    """Check a checkpoint's metadata against the schema (see the module docstring).

    Parameters
    ----------
    meta : object
        The parsed ``meta.json``.
    source : str
        The file, for messages.
    architectures : dict
        Architecture name → ``(net class, config class, agent class)``.
    """
    from ..envs import PRESETS
    from ..games import valid_games

    if not isinstance(meta, dict):
        raise ValueError(f"{source} must hold a JSON object, got {type(meta).__name__}; it is not a saliency_lib checkpoint")
    for key in _REQUIRED:
        if key not in meta:
            hint = _hint(key, [k for k in meta if k not in _REQUIRED])
            near = f" (it has {hint[len('; did you mean '):-1]}: misspelt?)" if hint else ""
            raise ValueError(f"{source} lacks the field {key!r}{near}; it is not a saliency_lib checkpoint")
    for key in ("arch", "game", "preset", "sha256"):
        if not isinstance(meta[key], str):
            raise ValueError(f"{source}: field {key!r} must be a string, got {type(meta[key]).__name__} {meta[key]!r}")
    arch = meta["arch"]
    if arch not in architectures:
        raise ValueError(f"{source}: unknown architecture {arch!r}{_hint(arch, architectures)} (known: "
                         f"{', '.join(architectures)})")
    if meta["game"] not in valid_games():
        raise ValueError(f"{source}: unknown game {meta['game']!r}{_hint(meta['game'], valid_games())} "
                         f"(valid games: {', '.join(valid_games())})")
    if meta["preset"] not in PRESETS:
        raise ValueError(f"{source}: unknown preset {meta['preset']!r}{_hint(meta['preset'], PRESETS)} "
                         f"(valid presets: {', '.join(PRESETS)})")
    if ARCH_PRESETS.get(arch, meta["preset"]) != meta["preset"]:
        raise ValueError(f"{source}: preset {meta['preset']!r} contradicts the architecture {arch}, which takes the "
                         f"inputs of preset {ARCH_PRESETS[arch]!r}")
    if not _SHA.match(meta["sha256"]):
        raise ValueError(f"{source}: field 'sha256' must be 64 hexadecimal digits, got {meta['sha256']!r}")
    _check_config(meta["config"], architectures[arch][1], source)


def _check_config(config: object, cfg_cls, source: str) -> None:
    if not isinstance(config, dict):
        raise ValueError(f"{source}: field 'config' must be an object, got {type(config).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cfg_cls)}
    hints = typing.get_type_hints(cfg_cls)
    for key, value in config.items():
        if key not in fields:
            raise ValueError(f"{source}: config has the unknown field {key!r}{_hint(key, fields)} "
                             f"({cfg_cls.__name__} fields: {', '.join(fields)})")
        want = hints[key]
        if want is bool:
            ok = isinstance(value, bool)
        elif want in (int, float, str):
            ok = isinstance(value, (int, float) if want is float else want) and not isinstance(value, bool)
        else:
            ok = True
        if not ok:
            raise ValueError(f"{source}: config field {key!r} must be of type {want.__name__}, got {value!r}")
    missing = [n for n, f in fields.items() if f.default is dataclasses.MISSING and n not in config]
    if missing:
        raise ValueError(f"{source}: config lacks the field(s) {missing} of {cfg_cls.__name__}")


def check_against_weights(meta: dict, net, source: str) -> None:
    """Check that the loaded network agrees with its metadata: input frames and action count.

    The weights' shapes themselves were checked against the network that the metadata's
    config builds (:func:`~saliency_lib.agents._weights.load_state_strict`).
    """
    from ..envs import obs_shape
    from ..games import ACTION_COUNTS

    first = next((m for m in net.modules() if hasattr(m, "in_channels")), None)
    frames = obs_shape(meta["preset"])[0]
    if first is not None and first.in_channels != frames:
        raise ValueError(f"{source}: the network takes {first.in_channels} input frames but preset {meta['preset']!r} "
                         f"gives {frames}; the config's frames contradict the preset")
    n = meta["config"].get("n_actions")
    want = ACTION_COUNTS.get(meta["game"])
    if want is not None and n != want:
        raise ValueError(f"{source}: the network has {n} actions but {meta['game']}'s minimal action set has {want}; "
                         "the game or the config is wrong")
