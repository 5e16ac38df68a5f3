"""Which states are explained: the benchmark trajectory and HIGHLIGHTS-DIV summaries.

:func:`collect_states` plays the greedy agent and records every state it sees
(reference §2.1); :mod:`saliency_lib.highlights` picks a few important, mutually
different ones among them (reference §2.2).

Benchmark trajectory (``dqn`` preset)
-------------------------------------
Huber et al. run 1001 greedy agent steps from the fixed start; steps 0–3 only
fill the frame stack and the 997 later states are explained. Our
``make_env(game, "dqn", mode="eval", fixed_start=True)`` performs the 4 fill
steps inside ``reset``, so its first observation *is* the paper's step-4 state:
:func:`collect_states` records that observation and the next ``n - 1`` greedy
steps (``n = 997`` reproduces the paper; ``StateSet.steps`` holds the paper's
step numbers 4 … 1000). After a game over the next game starts as in
:func:`saliency_lib.play.play_episode`: fixed start with 1..30 random NOOPs,
seeded ``seed + game index``.

Distinct states (``collect_states(..., distinct=True)``)
-------------------------------------------------------
On the deterministic emulator a greedy agent replays its first game frame for frame after a
game over: the NOOPs change the emulator's frame counter, not what the agent sees. Its
screen also stands still at times (a pause between rounds, a death animation), so a
trajectory of 997 states can hold far fewer distinct ones (:func:`duplicate_states`). A
repeated state adds nothing to a mean but weight, and makes a sample look larger than it
is. With ``distinct=True`` a state equal to an earlier one (the stacked observation, and for
a recurrent agent the recurrent state fed in) is not recorded, and every game after the first
starts with 1..30 uniformly random actions (seeded ``seed + game index``), so the games differ.
Up to the first skipped state or game over, the distinct trajectory is the plain one; its
``meta["first_change"]`` says where they part.

Mask-A3C trajectory (``mask_a3c`` preset)
-----------------------------------------
Greedy play in ``make_env(game, "mask_a3c", mode="eval")`` reset with ``seed``;
the ConvLSTM state is carried from step to step and zeroed after each life
loss and each new game. ``StateSet.hidden`` holds the recurrent state that was
*fed into* the network at each recorded step, so an explainer that holds it
fixed reproduces the agent's own outputs at that step.

Spread over one game (:func:`collect_spread_states`)
----------------------------------------------------
The first ``n`` states of a game are its opening (for Breakout, the launch of the ball).
:func:`collect_spread_states` plays one whole greedy game from the same start (up to
``max_steps`` agent steps) and keeps ``n`` states evenly spaced over it, the first and the
last included (:func:`spread_indices`). The game is played twice: once to learn its length,
once more to record the chosen states with the recurrent state fed into the network there;
both plays are the same game (greedy agent, seeded emulator), which the second checks
action by action, so ``n`` states cost two games of forward passes, not ``n`` stored ones.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ._io import atomic_write
from .agents.base import Agent
from .games import BENCHMARK_STATES, EPISODE_STEP_CAP

__all__ = ["StateSet", "collect_states", "duplicate_states", "spread_indices", "collect_spread_states"]

#: Outputs that are not per-state vectors and are not stored in a StateSet.
_SKIP_OUTPUTS = ("hidden",)


@dataclass
class StateSet:
    """States of one greedy trajectory and what the agent computed on them.

    Attributes
    ----------
    states : Tensor, shape (N, C, H, W), float32
        The preprocessed observations.
    actions : Tensor, shape (N,), int64
        The greedy action taken in each state.
    outputs : dict of str to Tensor
        The agent's outputs per state (first axis N): ``q``/``advantage`` or
        ``logits``/``probs``/``value``, attention masks, and ``features``
        (penultimate layer).
    hidden : tuple of Tensor or None
        Recurrent state fed into the network at each state (first axis N);
        ``None`` for feed-forward agents.
    frames : ndarray, shape (N, 210, 160, 3), uint8, or None
        Raw RGB frames, if recorded.
    steps : ndarray, shape (N,), int64
        Agent step of each state in its game (the paper's numbering for the
        fixed start: 4, 5, …).
    episode : ndarray, shape (N,), int64
        Game index (0 = the first game of the trajectory).
    game, preset, agent : str
    seed : int
    meta : dict
    rams : ndarray, shape (N, K, 2, 128), int16, or None
        The emulator RAM behind each of the state's ``K`` stacked frames (4 for ``dqn``, 1 for
        ``mask_a3c``), after each of the two raw frames max-pooled into it; ``-1`` for the zero
        frames of a reset. Recorded with ``rams=True`` (:func:`saliency_lib.envs.ram_stack`), for
        :mod:`saliency_lib.objects`; ``None`` otherwise. The states do not depend on it.
    """

    states: torch.Tensor
    actions: torch.Tensor
    outputs: dict[str, torch.Tensor]
    hidden: tuple[torch.Tensor, ...] | None
    frames: np.ndarray | None
    steps: np.ndarray
    episode: np.ndarray
    game: str = ""
    preset: str = ""
    agent: str = ""
    seed: int = 0
    meta: dict = field(default_factory=dict)
    rams: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def subset(self, index) -> StateSet:
        """The states at ``index`` (int array, list or slice), same order."""
        if isinstance(index, slice):
            index = np.arange(len(self))[index]
        idx = torch.as_tensor(np.asarray(index, dtype=np.int64))
        if idx.numel() and (int(idx.min()) < -len(self) or int(idx.max()) >= len(self)):
            raise ValueError(f"index out of range for a StateSet of {len(self)} states")
        ni = idx.numpy()
        return StateSet(
            states=self.states[idx], actions=self.actions[idx], outputs={k: v[idx] for k, v in self.outputs.items()},
            hidden=None if self.hidden is None else tuple(h[idx] for h in self.hidden),
            frames=None if self.frames is None else self.frames[ni], steps=self.steps[ni], episode=self.episode[ni],
            game=self.game, preset=self.preset, agent=self.agent, seed=self.seed, meta=dict(self.meta),
            rams=None if self.rams is None else self.rams[ni],
        )

    _ARRAYS = ("frames", "steps", "episode", "rams")

    def save(self, path: str | os.PathLike) -> Path:
        """Write the set with ``torch.save``, atomically.

        Arrays are stored as tensors and ``meta`` as JSON, so that :meth:`load` can use the
        tensors-only unpickler.
        """
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in self._ARRAYS:
            d[k] = None if d[k] is None else torch.from_numpy(np.ascontiguousarray(d[k]))
        d["meta"] = json.dumps(d["meta"], default=str)
        return atomic_write(path, lambda tmp: torch.save(d, tmp))

    @classmethod
    def load(cls, path: str | os.PathLike) -> StateSet:
        """Read a set written by :meth:`save` (``weights_only=True``: no code runs from the file)."""
        d = torch.load(path, weights_only=True)
        for k in cls._ARRAYS:
            d[k] = None if d.get(k) is None else d[k].numpy()  # sets saved before ``rams`` existed lack it
        d["meta"] = json.loads(d["meta"])
        return cls(**d)


def _make_env(agent: Agent, game_index: int, rams: bool = False):
    from .envs import make_env

    if agent.preset == "dqn":
        return make_env(agent.game, "dqn", mode="eval", fixed_start=True, noop_max=1 if game_index == 0 else 30,
                        record_ram=rams)
    return make_env(agent.game, agent.preset, mode="eval", record_ram=rams)


_RANDOM_START = 30
"""A game after the first of a distinct trajectory starts with 1 to this many random actions."""
_STILL_STEPS = 500
"""A game of a distinct trajectory ends after this many agent steps in a row without a new state
(an agent that waits forever on a still screen), and the next one starts."""


def _random_start(env, agent: Agent, rng: np.random.Generator):
    """Reset ``env`` for a later game of a distinct trajectory: 1..30 random actions first."""
    obs, info = env.reset(seed=int(rng.integers(2**31 - 1)))
    for _ in range(int(rng.integers(1, _RANDOM_START + 1))):
        obs, _, term, trunc, info = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc:
            obs, info = env.reset(seed=int(rng.integers(2**31 - 1)))
    return obs


def _play(agent: Agent, seed: int, *, one_game: bool, frames: bool, rams: bool = False, random_starts: bool = False):
    """Greedy play: per agent step ``(x, action, out, hidden_in, t, game_index, rgb, ram, game_over)``.

    ``hidden_in`` is the recurrent state fed into the network at that step (None for
    feed-forward agents), ``t`` the agent step in its game, ``rgb`` the raw frame (None unless
    ``frames``), ``ram`` the RAM stack behind the state (None unless ``rams``) and ``game_over``
    whether the step ended the game. After a game over the next game starts (seed ``seed + game
    index``), unless ``one_game``, which ends the play; with ``random_starts`` it begins with
    1..30 random actions. ``send(True)`` into the generator ends the current game (an agent stuck
    on a still screen) and starts the next.
    """
    from .envs import ram_stack, raw_frame

    game_index = 0
    env = _make_env(agent, game_index, rams)
    try:
        obs, _ = env.reset(seed=seed)
        hidden = agent.initial_hidden(1)
        step0 = 4 if agent.preset == "dqn" else 0
        t = step0
        while True:
            x = torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=agent.device)[None]
            out = agent(x, hidden)
            action = int(out[agent.default_output].argmax(1)[0])
            rgb = raw_frame(env).copy() if frames else None
            ram = ram_stack(env) if rams else None
            hidden_in = hidden
            hidden = out.get("hidden") if agent.recurrent else None
            obs, _, term, trunc, info = env.step(action)
            stuck = yield x, action, out, hidden_in, t, game_index, rgb, ram, bool(term or trunc)
            t += 1
            if info.get("life_lost") and hidden is not None:
                hidden = agent.initial_hidden(1)
            if term or trunc or stuck:
                if one_game:
                    return
                env.close()
                game_index += 1
                env = _make_env(agent, game_index, rams)
                if random_starts:
                    obs = _random_start(env, agent, np.random.default_rng(seed + game_index))
                else:
                    obs, _ = env.reset(seed=seed + game_index)
                hidden = agent.initial_hidden(1)
                t = step0
    finally:
        env.close()


def _state_set(agent: Agent, records: list, seed: int, frames: bool, meta: dict | None = None,
               rams: bool = False) -> StateSet:
    outs: dict[str, list] = {}
    for _, _, out, *_ in records:
        for k, v in out.items():
            if k in _SKIP_OUTPUTS or not isinstance(v, torch.Tensor):
                continue
            outs.setdefault(k, []).append(v[0].detach().cpu())
    hid = [tuple(h[0].cpu() for h in r[3]) for r in records if r[3] is not None]
    return StateSet(
        states=torch.stack([r[0][0].cpu() for r in records]), actions=torch.tensor([r[1] for r in records], dtype=torch.int64),
        outputs={k: torch.stack(v) for k, v in outs.items()},
        hidden=tuple(torch.stack(h) for h in zip(*hid)) if hid else None,
        frames=np.stack([r[6] for r in records]) if frames else None,
        steps=np.asarray([r[4] for r in records], dtype=np.int64), episode=np.asarray([r[5] for r in records], dtype=np.int64),
        game=agent.game, preset=agent.preset, agent=str(agent.meta.get("source", type(agent.net).__name__)), seed=int(seed),
        meta=dict(meta or {}), rams=np.stack([r[7] for r in records]) if rams else None,
    )


def _check_n(n, name: str = "n") -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive integer number of states, got {n!r}")


def _state_key(x: torch.Tensor, hidden) -> bytes:
    """What makes two states the same for the agent: the observation, and the recurrent state fed in."""
    import hashlib

    h = hashlib.sha256(x.detach().cpu().numpy().tobytes())
    for part in hidden or ():
        h.update(part.detach().cpu().numpy().tobytes())
    return h.digest()


@torch.no_grad()
def collect_states(agent: Agent, n: int = BENCHMARK_STATES, *, seed: int = 0, frames: bool = False, progress: bool = False,
                   distinct: bool = False, rams: bool = False) -> StateSet:
    """Play the greedy agent and record ``n`` consecutive states.

    Parameters
    ----------
    agent : Agent
        Its ``game`` and ``preset`` choose the environment (see the module notes).
    n : int, optional
        Number of states (default 997, the paper's benchmark).
    seed : int, optional
        Seed of the first game's ``reset``; game ``k`` uses ``seed + k``.
    frames : bool, optional
        Also record the raw RGB frames (about 100 kB per state).
    progress : bool, optional
        Show a tqdm bar.
    distinct : bool, optional
        Record ``n`` distinct states: a state equal to an earlier one is left out, and every game
        after the first begins with 1..30 random actions (see the module notes). Its ``meta``
        records ``selection="distinct"``, ``first_change`` (the first index at which the set differs
        from the plain trajectory's), ``skipped`` (repeated states left out) and ``games``.
    rams : bool, optional
        Also record the emulator RAM behind every stacked frame (``StateSet.rams``, 1 kB per
        state), from which :mod:`saliency_lib.objects` reads the game's objects. The states,
        actions and outputs are the same either way.

    Returns
    -------
    StateSet

    Raises
    ------
    ValueError
        If ``n`` is not a positive integer.
    RuntimeError
        With ``distinct``, if the play keeps repeating itself (more than ``100 n`` repeats).
    """
    _check_n(n)
    if not distinct:
        play = _play(agent, seed, one_game=False, frames=frames, rams=rams)
        records = [next(play) for _ in _bar(range(n), progress, f"states {agent.game}")]
        play.close()
        return _state_set(agent, records, seed, frames, rams=rams)
    play = _play(agent, seed, one_game=False, frames=frames, rams=rams, random_starts=True)
    records, seen, skipped, still, first_change = [], set(), 0, 0, None
    bar = _bar(range(n), progress, f"distinct states {agent.game}")
    rec = next(play)
    while True:
        key = _state_key(rec[0], rec[3])
        if key in seen:
            skipped, still = skipped + 1, still + 1
            first_change = len(records) if first_change is None else first_change
            if skipped > 100 * n + _STILL_STEPS:
                raise RuntimeError(f"found only {len(records)} distinct states of {n} after {skipped} repeats: the agent's "
                                   "play does not reach enough different screens")
        else:
            seen.add(key)
            records.append(rec)
            still = 0
            if progress:
                bar.update(1)
            if len(records) == n:
                break
        if rec[8] and first_change is None:  # a game over: the next game starts otherwise than the plain trajectory's
            first_change = len(records)
        rec = play.send(still >= _STILL_STEPS)
        if still >= _STILL_STEPS:
            still = 0
    play.close()
    if progress:
        bar.close()
    meta = {"selection": "distinct", "first_change": n if first_change is None else first_change, "skipped": skipped,
            "games": int(records[-1][5]) + 1}
    return _state_set(agent, records, seed, frames, meta, rams=rams)


def duplicate_states(states: StateSet) -> np.ndarray:
    """For each state, the index of the first earlier state equal to it, or -1 (the first of its kind).

    Equal means the same stacked observation and, for a recurrent agent, the same recurrent state
    fed in: the agent computes the same on both, so a repeated state is no new sample.

    Returns
    -------
    ndarray of int64, shape (N,)
    """
    first: dict[bytes, int] = {}
    out = np.full(len(states), -1, dtype=np.int64)
    for i in range(len(states)):
        hid = None if states.hidden is None else tuple(h[i] for h in states.hidden)
        out[i] = first.setdefault(_state_key(states.states[i], hid), i)
        if out[i] == i:
            out[i] = -1
    return out


def _bar(it, progress: bool, desc: str):
    if not progress:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc)


def spread_indices(length: int, n: int) -> np.ndarray:
    """``n`` indices evenly spaced over ``0 … length − 1``, both ends included, ascending and distinct.

    Index ``i`` is ``round(i · (length − 1) / (n − 1))``; one state is index 0.

    Raises
    ------
    ValueError
        ``n`` or ``length`` is not a positive integer, or ``n > length`` (fewer states than asked for).
    """
    _check_n(n)
    _check_n(length, "length")
    if n > length:
        raise ValueError(f"cannot pick {n} evenly spaced states from an episode of {length} states; "
                         f"ask for at most {length}")
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    return np.rint(np.arange(n) * ((length - 1) / (n - 1))).astype(np.int64)


@torch.no_grad()
def collect_spread_states(agent: Agent, n: int, *, seed: int = 0, max_steps: int = EPISODE_STEP_CAP, frames: bool = False,
                          progress: bool = False, rams: bool = False) -> StateSet:
    """``n`` states evenly spaced over one whole greedy game from the start (see the module notes).

    Parameters
    ----------
    agent : Agent
    n : int
        Number of states, at most the game's length.
    seed : int, optional
        Seed of the game's ``reset`` (the same start as :func:`collect_states`).
    max_steps : int, optional
        Agent-step cap of the game (default 10 000: 40 000 frames, the Mask-A3C environment's
        own cap); a game cut there is spread over its first ``max_steps`` states.
    frames, progress, rams : bool, optional
        As :func:`collect_states`.

    Returns
    -------
    StateSet
        Its ``steps`` are the chosen agent steps, ``episode`` is 0 and ``meta`` records
        ``selection="spread"``, ``episode_length``, ``truncated`` and ``indices``.

    Raises
    ------
    ValueError
        ``n`` or ``max_steps`` is not a positive integer, or the game is shorter than ``n`` states.
    RuntimeError
        The second play of the game differs from the first (a non-deterministic agent or emulator).
    """
    _check_n(n)
    _check_n(max_steps, "max_steps")
    actions, over = [], False
    for _, action, *_, game_over in _bar(_play(agent, seed, one_game=True, frames=False), progress,
                                         f"game {agent.game}"):
        actions.append(action)
        over = game_over
        if len(actions) == max_steps:
            break
    length = len(actions)
    idx = spread_indices(length, n)
    keep, records = set(idx.tolist()), []
    play = _play(agent, seed, one_game=True, frames=frames, rams=rams)
    for i, rec in enumerate(play):
        if rec[1] != actions[i]:
            raise RuntimeError(f"the replay of the game took action {rec[1]} at step {i}, the first play {actions[i]}: "
                               "the agent or the emulator is not deterministic, so the spread states cannot be recorded")
        if i in keep:
            records.append(rec)
        if i == idx[-1]:
            break
    play.close()
    meta = {"selection": "spread", "episode_length": length, "truncated": not over, "indices": idx.tolist()}
    return _state_set(agent, records, seed, frames, meta, rams=rams)
