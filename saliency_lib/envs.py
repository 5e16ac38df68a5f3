"""Atari environments with the two preprocessing presets of the study.

``make_env(game, preset)`` is the only place where the wrapper stacks are
defined. Both presets sit on gymnasium + ale-py with ``NoFrameskip-v4``
semantics (``frameskip=1``, ``repeat_action_probability=0``, minimal action set).

Sticky actions (Machado et al. 2018) are ALE's own ``repeat_action_probability``
(``make_env(..., repeat_action_probability=0.25)``): at every raw frame the emulator
keeps the previous action with that probability, drawn from ALE's RNG, which
``reset(seed=...)`` seeds. Every wrapper below reaches the emulator through
``ale.act`` one raw frame at a time (frame skip, NOOP starts, FIRE presses and the
fixed start included), so none of them bypasses the stickiness: the FIRE that a
wrapper presses after a reset or a life loss is sticky too, and with p = 0.25 it is
lost on all 4 frames of its agent step with probability 0.25⁴ ≈ 0.4 %.

Preset ``"dqn"`` (Huber et al. 2021, §1.2), innermost first:

1. reset: ``reset_noop_frames`` raw NOOPs (250 for Pac-Man and Frostbite in
   evaluation), then 1..``noop_max`` random raw NOOPs;
2. frame skip 4, rewards summed, observation = pixel-wise max of raw frames 3 and 4;
3. ``mode="train"``: episodic life (terminal on life loss, the game goes on);
4. fire reset (FIRE, then action 2) for Breakout and Space Invaders;
   in evaluation FIRE is also pressed after each life loss, and, as in the
   paper's wrapper, the returned state is the one from before the FIRE frames;
5. ``cv2.COLOR_RGB2GRAY``, 84×84 ``INTER_AREA``, scaled to [0, 1];
6. stack of 4 frames, channel-first ``(4, 84, 84)``, index 3 newest, zeros at reset;
7. ``mode="train"``: reward divided by the game's minimum reward (or clipped).

With ``fixed_start=True`` the paper's benchmark start is used: after ``reset``
come the per-game raw NOOP frames (Pac-Man 200, others 1) and 4 agent steps
with the fill action, so the first observation is a full stack.

Preset ``"mask_a3c"`` (Itaya et al. 2021, §1.1), innermost first:

1. a 40 000-raw-frame cap (10 000 agent steps) per game;
2. 1..30 random raw NOOPs on a real reset;
3. frame skip 4 with max over raw frames 3 and 4;
4. episodic life (terminal on life loss); in ``mode="eval"`` the game goes on
   through the same soft reset instead and ``info["life_lost"]`` is set, so the
   agent can zero its ConvLSTM state;
5. FIRE then action 2 after each reset, for games whose action 1 is FIRE;
6. the per-game crop, gray = mean of R, G, B, /255, bilinear resize to
   80 × ``dimension2`` then 80 × 80, shape ``(1, 80, 80)``;
7. running normalisation (α = 0.9999, bias-corrected by 1 − αⁿ);
8. ``mode="train"``: rewards clipped to [−1, 1].

Notes
-----
The official Mask-A3C test loop calls ``reset`` twice after a life loss; we
soft-reset once (documented deviation, Itaya et al. §5 item 7).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import ale_py
import cv2
import gymnasium as gym
import numpy as np

from .games import game_info, mask_a3c_crop, valid_games

gym.register_envs(ale_py)

__all__ = ["PRESETS", "MODES", "make_env", "raw_frame", "ram_stack", "obs_shape", "NormalizeObservation"]

PRESETS = ("dqn", "mask_a3c")
MODES = ("train", "eval")


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; valid values are: {', '.join(allowed)}")


def obs_shape(preset: str) -> tuple[int, int, int]:
    """Shape of one preprocessed observation of ``preset``."""
    _check_choice("preset", preset, PRESETS)
    return (4, 84, 84) if preset == "dqn" else (1, 80, 80)


class NoopReset(gym.Wrapper):
    """On reset: ``extra_frames`` raw NOOPs, then 1..``noop_max`` random raw NOOPs."""

    def __init__(self, env: gym.Env, noop_max: int = 30, extra_frames: int = 0):
        super().__init__(env)
        if noop_max < 1:
            raise ValueError(f"noop_max must be >= 1, got {noop_max}")
        self.noop_max = noop_max
        self.extra_frames = extra_frames

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        n = self.extra_frames + int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(n):
            obs, _, term, trunc, info = self.env.step(0)
            if term or trunc:
                obs, info = self.env.reset()
        return obs, info


class MaxAndSkip(gym.Wrapper):
    """Repeat the action ``skip`` raw frames; observation = max of the last two raw frames.

    With ``record_ram=True``, ``info["ram"]`` holds the emulator RAM after each of the raw
    frames behind the observation: ``(2, 128)`` uint8 (the row repeated where the observation
    is one raw frame, as after a reset).
    """

    def __init__(self, env: gym.Env, skip: int = 4, record_ram: bool = False):
        super().__init__(env)
        self.skip = skip
        self.record_ram = record_ram
        self.last_rgb: np.ndarray | None = None

    def _ram(self) -> np.ndarray:
        return self.unwrapped.ale.getRAM().copy()

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.last_rgb = obs
        if self.record_ram:
            info = {**info, "ram": np.stack([self._ram()] * 2)}
        return obs, info

    def step(self, action):
        total, frames, rams, info = 0.0, [], [], {}
        term = trunc = False
        for _ in range(self.skip):
            obs, r, term, trunc, info = self.env.step(action)
            total += float(r)
            frames.append(obs)
            if self.record_ram:
                rams.append(self._ram())
            if term or trunc:
                break
        obs = frames[-1] if len(frames) == 1 else np.maximum(frames[-2], frames[-1])
        self.last_rgb = obs
        if self.record_ram:
            info = {**info, "ram": np.stack(rams[-2:] if len(rams) > 1 else rams * 2)}
        return obs, total, term, trunc, info


class EpisodicLife(gym.Wrapper):
    """Terminal on life loss; ``reset`` after a life loss is one NOOP step, not a new game."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.game_over = term or trunc
        lives = self.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            term = True
        self.lives = lives
        info["game_over"] = self.game_over
        return obs, r, term, trunc, info

    def reset(self, **kwargs):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, _, _, info = self.env.step(0)
        self.lives = self.unwrapped.ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE then action 2 after every reset."""

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, term, trunc, info = self.env.step(1)
        if term or trunc:
            self.env.reset(**kwargs)
        obs, _, term, trunc, info = self.env.step(2)
        if term or trunc:
            obs, info = self.env.reset(**kwargs)
        return obs, info


class FireOnLifeLoss(gym.Wrapper):
    """Huber's evaluation wrapper: press FIRE after a life loss, return the pre-FIRE state."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.lives = self.unwrapped.ale.lives()
        return obs, info

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        lives = self.unwrapped.ale.lives()
        if lives < self.lives and not (term or trunc):
            _, r2, term, trunc, fire_info = self.env.step(1)
            if "ram" in info:  # the RAM behind the returned (pre-FIRE) observation
                fire_info = {**fire_info, "ram": info["ram"]}
            info = fire_info
            r += r2
        self.lives = lives
        return obs, r, term, trunc, info


class ContinueAfterLifeLoss(gym.Wrapper):
    """Turn an episodic-life env back into full games: soft-reset on life loss and flag it."""

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        life_lost = bool(term and not trunc and not info.get("game_over", True))
        if life_lost:
            obs, reset_info = self.env.reset()
            info = {**info, **reset_info}
            term = False
        info["life_lost"] = life_lost
        return obs, r, term, trunc, info


class WarpGray84(gym.ObservationWrapper):
    """``cv2.COLOR_RGB2GRAY`` then 84×84 ``INTER_AREA``, as uint8."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = gym.spaces.Box(0, 255, (84, 84), np.uint8)

    def observation(self, obs):
        gray = cv2.cvtColor(obs, cv2.COLOR_RGB2GRAY)
        return cv2.resize(gray, (84, 84), interpolation=cv2.INTER_AREA)


class RecordRam(gym.Wrapper):
    """Keep the RAM behind each of the last ``k`` observations, beside :class:`StackFrames`.

    Sits directly inside the frame stack (or the frame processing, ``k = 1``) and reads the
    ``info["ram"]`` that :class:`MaxAndSkip` writes with ``record_ram=True``. ``ram_stack`` is
    ``(k, 2, 128)`` int16, oldest first like the stack: the RAM after each of the two raw
    frames that were max-pooled into each stacked frame, ``-1`` for the zero frames of a reset.
    Observations and rewards pass through unchanged.
    """

    def __init__(self, env: gym.Env, k: int):
        super().__init__(env)
        self.k = k
        self.rams: deque = deque(maxlen=k)

    @property
    def ram_stack(self) -> np.ndarray:
        return np.stack(list(self.rams))

    def _push(self, info) -> None:
        ram = info.get("ram")
        if ram is None:
            raise RuntimeError("RecordRam needs MaxAndSkip(record_ram=True) below it; "
                               "build the env with make_env(..., record_ram=True)")
        self.rams.append(np.asarray(ram, dtype=np.int16))

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.k - 1):
            self.rams.append(np.full((2, 128), -1, dtype=np.int16))
        self._push(info)
        return obs, info

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self._push(info)
        return obs, r, term, trunc, info


class StackFrames(gym.Wrapper):
    """Channel-first stack of the last ``k`` frames, zeros at reset, scaled to [0, 1]."""

    def __init__(self, env: gym.Env, k: int = 4, scale: bool = True):
        super().__init__(env)
        self.k, self.scale = k, scale
        self.frames: deque = deque(maxlen=k)
        shape = (k, *env.observation_space.shape)
        self.observation_space = (
            gym.spaces.Box(0.0, 1.0, shape, np.float32) if scale else gym.spaces.Box(0, 255, shape, np.uint8)
        )

    def _obs(self):
        x = np.stack(self.frames)
        return x.astype(np.float32) / 255.0 if self.scale else x

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.k - 1):
            self.frames.append(np.zeros_like(obs))
        self.frames.append(obs)
        return self._obs(), info

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.frames.append(obs)
        return self._obs(), r, term, trunc, info


class ScaleReward(gym.RewardWrapper):
    """Huber's reward: in-game reward divided by the game's minimum reward; or sign-clipping."""

    def __init__(self, env: gym.Env, divisor: float | None, clip: bool):
        super().__init__(env)
        self.divisor, self.clip = divisor, clip

    def reward(self, r):
        if self.clip:
            return float(np.clip(r, -1.0, 1.0))
        return r / self.divisor if self.divisor else r


class FixedStart(gym.Wrapper):
    """Huber's benchmark start: raw NOOP frames after reset, then 4 agent steps with the fill action."""

    def __init__(self, env: gym.Env, raw_noops: int, fill_action: int, fill_steps: int = 4):
        super().__init__(env)
        self.raw_noops, self.fill_action, self.fill_steps = raw_noops, fill_action, fill_steps

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.raw_noops):
            self.unwrapped.step(0)
        for _ in range(self.fill_steps):
            obs, _, _, _, info = self.env.step(self.fill_action)
        return obs, info


class MaskA3CFrame(gym.ObservationWrapper):
    """Crop, RGB-mean gray, /255, two-stage bilinear resize to (1, 80, 80)."""

    def __init__(self, env: gym.Env, crop: tuple[int, int, int]):
        super().__init__(env)
        self.crop = crop
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1, 80, 80), np.float32)

    def observation(self, obs):
        return process_mask_a3c_frame(obs, self.crop)


def rgb_mean_gray(rgb: np.ndarray) -> np.ndarray:
    """``rgb.mean(axis=-1, dtype=np.float32)`` of uint8 RGB, bit for bit, about 4× faster.

    The three channels are added in float32, where sums of integers up to 765 are exact, and
    divided by 3 in float32, which is what NumPy's mean does; NumPy's reduction over a
    last axis of length 3 is the slow part it replaces (6 % of the actor-critic trainer's time).
    """
    if rgb.shape[-1] != 3:
        raise ValueError(f"expected RGB frames (..., 3), got shape {rgb.shape}")
    s = rgb[..., 0].astype(np.float32)
    s += rgb[..., 1]
    s += rgb[..., 2]
    s /= np.float32(3)
    return s


def process_mask_a3c_frame(rgb: np.ndarray, crop: tuple[int, int, int]) -> np.ndarray:
    """Itaya's ``process_frame`` on one raw 210×160×3 frame (or a batch of them)."""
    c1, c2, dim2 = crop
    x = rgb_mean_gray(rgb[..., c1 : c2 + 160, :160, :]) / 255.0
    if x.ndim == 2:
        x = cv2.resize(cv2.resize(x, (80, dim2)), (80, 80))
        return x[None]
    return np.stack([cv2.resize(cv2.resize(f, (80, dim2)), (80, 80)) for f in x])[:, None]


class NormalizeObservation(gym.ObservationWrapper):
    """Running mean/std normalisation of whole frames (α = 0.9999, bias-corrected)."""

    def __init__(self, env: gym.Env, alpha: float = 0.9999):
        super().__init__(env)
        self.alpha = alpha
        self.mean = 0.0
        self.std = 0.0
        self.n = 0

    def observation(self, obs):
        """The frame ``obs`` normalised by the running mean and standard deviation, updated with it first."""
        self.n += 1
        a = self.alpha
        self.mean = self.mean * a + float(obs.mean()) * (1 - a)
        self.std = self.std * a + float(obs.std()) * (1 - a)
        corr = 1 - a**self.n
        return ((obs - self.mean / corr) / (self.std / corr + 1e-8)).astype(np.float32)


def make_env(
    game: str,
    preset: str = "dqn",
    *,
    mode: str = "eval",
    fixed_start: bool = False,
    noop_max: int | None = None,
    clip_rewards: bool = False,
    max_episode_frames: int | None = None,
    render_mode: str | None = None,
    repeat_action_probability: float = 0.0,
    record_ram: bool = False,
) -> gym.Env:
    """Build the wrapped Atari environment of one preset.

    Parameters
    ----------
    game : str
        Game name such as ``"Breakout"`` (see :func:`saliency_lib.games.valid_games`).
    preset : {"dqn", "mask_a3c"}
        Preprocessing of Huber et al. (``dqn``) or Itaya et al. (``mask_a3c``).
    mode : {"eval", "train"}
        ``train`` adds episodic life and reward handling; ``eval`` plays full games
        with raw scores.
    fixed_start : bool, optional
        Huber's benchmark start (``dqn`` preset only).
    noop_max : int, optional
        Maximum random NOOPs on reset. Default: 30 (training, Mask-A3C) or 1
        (``dqn`` evaluation, as the paper's scripts).
    clip_rewards : bool, optional
        ``dqn`` training: clip rewards to [-1, 1] instead of dividing by the
        game's minimum reward.
    max_episode_frames : int, optional
        Raw-frame cap. Default 108 000 (``dqn``) or 40 000 (``mask_a3c``).
    repeat_action_probability : float, optional
        Sticky actions: ALE's probability of repeating the previous action at each raw
        frame (0.25 in Machado et al. 2018). Default 0: the deterministic emulator of
        both papers.
    record_ram : bool, optional
        Also record the emulator RAM behind every stacked frame (:class:`RecordRam`; read
        it with :func:`ram_stack`), for the object extraction of :mod:`saliency_lib.objects`.
        Observations, rewards and the emulator's course are the same either way.

    Returns
    -------
    gymnasium.Env
        Observations are float32 arrays of :func:`obs_shape` ``(preset)``.

    Raises
    ------
    ValueError
        For an unknown game, preset or mode, with the valid values.
    """
    info = game_info(game)
    _check_choice("preset", preset, PRESETS)
    _check_choice("mode", mode, MODES)
    if fixed_start and preset != "dqn":
        raise ValueError("fixed_start is Huber's protocol and exists for preset='dqn' only")
    if not 0.0 <= repeat_action_probability < 1.0:
        raise ValueError(f"repeat_action_probability must be in [0, 1), got {repeat_action_probability}")
    frames = max_episode_frames or (108_000 if preset == "dqn" else 40_000)
    env = gym.make(
        f"{game}NoFrameskip-v4",
        max_num_frames_per_episode=frames,
        repeat_action_probability=float(repeat_action_probability),
        frameskip=1,
        render_mode=render_mode,
    )
    train = mode == "train"
    if preset == "dqn":
        extra = 0 if train else info.reset_noop_frames
        env = NoopReset(env, noop_max or (30 if train else 1), extra)
        env = MaxAndSkip(env, 4, record_ram)
        if train:
            env = EpisodicLife(env)
        if info.fire_reset:
            env = FireReset(env)
            if not train:
                env = FireOnLifeLoss(env)
        env = WarpGray84(env)
        env = StackFrames(RecordRam(env, 4) if record_ram else env, 4, scale=True)
        if train:
            env = ScaleReward(env, info.min_reward, clip_rewards)
        if fixed_start:
            env = FixedStart(env, info.fixed_start_noops, info.fill_action)
    else:
        env = NoopReset(env, noop_max or 30, 0)
        env = MaxAndSkip(env, 4, record_ram)
        env = EpisodicLife(env)
        if env.unwrapped.get_action_meanings()[1] == "FIRE":
            env = FireReset(env)
        if not train:
            env = ContinueAfterLifeLoss(env)
        if record_ram:
            env = RecordRam(env, 1)
        env = NormalizeObservation(MaskA3CFrame(env, mask_a3c_crop(game)))
        if train:
            env = ScaleReward(env, None, clip=True)
    return env


def raw_frame(env: gym.Env) -> np.ndarray:
    """The last max-pooled raw RGB frame (210×160×3) behind the current observation."""
    return env.get_wrapper_attr("last_rgb")


def ram_stack(env: gym.Env) -> np.ndarray:
    """The RAM behind each frame of the current observation: ``(k, 2, 128)`` int16 (see :class:`RecordRam`).

    Raises
    ------
    AttributeError
        If the env was not built with ``make_env(..., record_ram=True)``.
    """
    return env.get_wrapper_attr("ram_stack")


def _all_games() -> list[str]:  # used by the CLI's help text
    return valid_games()
