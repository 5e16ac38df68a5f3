"""What the Stable-Baselines3 and CleanRL loaders share: observations, games, tensors-only reading.

:mod:`saliency_lib.agents.sb3` and :mod:`saliency_lib.agents.cleanrl` both rebuild
networks that were trained on 4 stacked 84×84 uint8 frames; this module holds the
mapping between those observations and our states, the game read from a file's
path, the action-count check against the game, and the tensors-only reader of
PyTorch state dicts (``torch.load(weights_only=True)``: no code from the file runs).

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
same actions; checked for Breakout in ``tests/lib/test_adapters.py``). SB3's
``make_atari_env`` needs the ALE environments registered first:
``gymnasium.register_envs(ale_py)`` (importing :mod:`saliency_lib.envs` does it).

CleanRL's Atari scripts use SB3's ``NoopResetEnv``, ``MaxAndSkipEnv``,
``EpisodicLifeEnv``, ``FireResetEnv`` and ``ClipRewardEnv``, then gymnasium's
``ResizeObservation((84, 84))`` on the RGB frame *before* ``GrayScaleObservation``
(we convert to gray first, then resize: pixel values can differ by a few gray
levels) and ``FrameStack(4)``, which pads the first stack with copies of the reset
frame where we (and SB3) pad with zeros.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..games import valid_games

__all__ = [
    "FRAMES", "SIDE", "LAYOUTS", "states_from_obs", "states_to_obs", "infer_game", "check_game", "check_action_count",
    "is_state_dict", "load_tensors",
]

#: Frames per state and side of a frame in the ``"dqn"`` preset, the input of both foreign formats.
FRAMES, SIDE = 4, 84
#: Layouts :func:`states_from_obs` and :func:`states_to_obs` know: frames last (SB3) or second (CleanRL).
LAYOUTS = ("NHWC", "NCHW")


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
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    x = torch.as_tensor(obs)
    if x.dtype != torch.uint8:
        raise TypeError(f"obs must be uint8 pixel values (0..255), got dtype {x.dtype}; these are raw SB3/CleanRL observations")
    want = (SIDE, SIDE, FRAMES) if layout == "NHWC" else (FRAMES, SIDE, SIDE)
    if x.dim() != 4 or tuple(x.shape[1:]) != want:
        raise ValueError(f"obs with layout {layout!r} must have shape (N, {', '.join(map(str, want))}), got {tuple(x.shape)}")
    if layout == "NHWC":
        x = x.permute(0, 3, 1, 2)
    return x.float().div(255.0).contiguous()


def states_to_obs(states: torch.Tensor, *, layout: str) -> np.ndarray:
    """Inverse of :func:`states_from_obs`: ``round(states * 255)`` as uint8 in ``layout``."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    x = torch.as_tensor(states)
    if x.dim() != 4 or tuple(x.shape[1:]) != (FRAMES, SIDE, SIDE):
        raise ValueError(f"states must have shape (N, 4, 84, 84), got {tuple(x.shape)}")
    out = torch.round(x.detach().float().clamp(0, 1) * 255).to(torch.uint8)
    if layout == "NHWC":
        out = out.permute(0, 2, 3, 1)
    return out.contiguous().cpu().numpy()


# -- games and tensors -----------------------------------------------------------------------------
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
        raise ValueError(f"cannot tell the game of {str(path)!r}: no environment id like 'BreakoutNoFrameskip-v4' of a known "
                         f"game ({', '.join(valid_games())}) in the path{extra}; {how}")
    raise ValueError(f"cannot tell the game of {str(path)!r}: the path names several games ({', '.join(known)}); {how}")


def check_game(game: str | None, path: Path) -> str:
    """``game`` if it is one of the study's games; ``None``: the game :func:`infer_game` reads from ``path``."""
    if game is None:
        return infer_game(path)
    if game not in valid_games():
        raise ValueError(f"unknown game {game!r}; valid values are: {', '.join(valid_games())}")
    return game


def check_action_count(game: str, n_actions: int, source: str) -> None:
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


def is_state_dict(obj: Any) -> bool:
    """Whether ``obj`` is a flat mapping of names (str) to tensors."""
    return isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())


def load_tensors(source, label: str) -> dict[str, torch.Tensor]:
    """``torch.load(weights_only=True)`` of a flat state dict, with readable errors."""
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError, RuntimeError ("invalid magic number", "not a zip file") …
        raise ValueError(f"{label} is not a tensors-only PyTorch state dict "
                         f"(torch.load with weights_only=True failed: {e})") from e
    if not is_state_dict(state) or not state:
        raise ValueError(f"{label} does not hold a flat, non-empty mapping of parameter names to tensors (got "
                         f"{type(state).__name__})")
    return dict(state)
