"""Which states are explained: the benchmark trajectory and HIGHLIGHTS-DIV summaries.

:func:`collect_states` plays the greedy agent and records every state it sees
(reference §2.1). :func:`highlights_div` picks a few important, mutually
different states (reference §2.2; Amir & Amir 2018, as adapted in HIGHLIGHTS-LRP).

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

__all__ = ["StateSet", "collect_states", "spread_indices", "collect_spread_states", "importance", "diversity_threshold", "Highlights", "highlights_div", "select_highlights"]

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
        """Write the set with ``torch.save``, atomically; arrays as tensors, ``meta`` as JSON,
        so that :meth:`load` can use the tensors-only unpickler."""
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


def _play(agent: Agent, seed: int, *, one_game: bool, frames: bool, rams: bool = False):
    """Greedy play: per agent step ``(x, action, out, hidden_in, t, game_index, rgb, ram, game_over)``.

    ``hidden_in`` is the recurrent state fed into the network at that step (None for
    feed-forward agents), ``t`` the agent step in its game, ``rgb`` the raw frame (None unless
    ``frames``), ``ram`` the RAM stack behind the state (None unless ``rams``) and ``game_over``
    whether the step ended the game. After a game over the next game starts (seed ``seed + game
    index``), unless ``one_game``, which ends the play.
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
            yield x, action, out, hidden_in, t, game_index, rgb, ram, bool(term or trunc)
            t += 1
            if info.get("life_lost") and hidden is not None:
                hidden = agent.initial_hidden(1)
            if term or trunc:
                if one_game:
                    return
                env.close()
                game_index += 1
                env = _make_env(agent, game_index, rams)
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


@torch.no_grad()
def collect_states(agent: Agent, n: int = 997, *, seed: int = 0, frames: bool = False, progress: bool = False,
                   rams: bool = False) -> StateSet:
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
    """
    _check_n(n)
    play = _play(agent, seed, one_game=False, frames=frames, rams=rams)
    records = [next(play) for _ in _bar(range(n), progress, f"states {agent.game}")]
    play.close()
    return _state_set(agent, records, seed, frames, rams=rams)


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
def collect_spread_states(agent: Agent, n: int, *, seed: int = 0, max_steps: int = 10_000, frames: bool = False,
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


# -- HIGHLIGHTS-DIV ------------------------------------------------------------------
def importance(scores) -> np.ndarray:
    """HIGHLIGHTS importance: best minus second-best output per state (``compare_to='second'``).

    Parameters
    ----------
    scores : array_like, shape (N, A), A >= 2
        Q-values (or policy logits) per state.
    """
    s = np.asarray(scores.detach().cpu() if isinstance(scores, torch.Tensor) else scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"scores must have shape (N, A) with A >= 2 actions, got {s.shape}")
    top2 = np.sort(s, axis=1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


def _features(features) -> np.ndarray:
    f = np.asarray(features.detach().cpu() if isinstance(features, torch.Tensor) else features, dtype=np.float64)
    if f.ndim < 2:
        raise ValueError(f"features must have shape (N, D), got {f.shape}")
    return f.reshape(f.shape[0], -1)


def diversity_threshold(features, *, percentile: float = 3.0, n_sample: int = 1000, seed: int = 42) -> float:
    """The ``percentile``-th percentile of pairwise Euclidean feature distances.

    Distances are taken among ``n_sample`` states drawn without replacement
    (all states if there are fewer), over all unordered pairs.
    """
    from scipy.spatial.distance import pdist

    f = _features(features)
    if not 0 <= percentile <= 100:
        raise ValueError(f"percentile must lie in [0, 100], got {percentile!r}")
    if isinstance(n_sample, bool) or not isinstance(n_sample, (int, np.integer)) or n_sample < 2:
        raise ValueError(f"n_sample must be an integer >= 2, got {n_sample!r}")
    if f.shape[0] < 2:
        raise ValueError(f"need at least 2 states to compute a diversity threshold, got {f.shape[0]}")
    if f.shape[0] > n_sample:
        f = f[np.random.default_rng(seed).choice(f.shape[0], n_sample, replace=False)]
    return float(np.percentile(pdist(f), percentile))


@dataclass(frozen=True)
class Highlights:
    """Result of :func:`highlights_div`.

    Attributes
    ----------
    states : list of int
        The chosen states, in ascending order.
    with_context : list of int
        The chosen states with ``context_length`` neighbours on each side
        (clipped to the trajectory), ascending, no duplicates.
    threshold : float
        The diversity threshold used.
    """

    states: list[int]
    with_context: list[int]
    threshold: float


def _context(chosen: list[int], context_length: int, n: int) -> list[int]:
    out: set[int] = set()
    for s in chosen:
        out.update(range(max(s - context_length, 0), min(s + context_length, n - 1) + 1))
    return sorted(out)


def highlights_div(
    importance_scores,
    features,
    *,
    budget: int = 5,
    context_length: int = 10,
    minimum_gap: int = 10,
    percentile: float = 3.0,
    n_sample: int = 1000,
    seed: int = 42,
    threshold: float | None = None,
) -> Highlights:
    """HIGHLIGHTS-DIV summary states (reference §2.2).

    Greedy loop over the states in descending importance (ties: lower index first):

    1. skip a state if an already chosen state lies closer than
       ``context_length + minimum_gap`` steps (strictly) to it;
    2. otherwise accept it if nothing is chosen yet, or if its minimum Euclidean
       feature distance to every chosen state *and their ±context_length
       neighbours* exceeds the diversity threshold;
    3. stop when ``budget`` states are chosen.

    Parameters
    ----------
    importance_scores : array_like, shape (N,)
        E.g. :func:`importance` of the Q-values.
    features : array_like, shape (N, D)
        Penultimate-layer activations (the ``features`` output).
    budget, context_length, minimum_gap : int
        Paper: 5, 10, 10.
    percentile : float
        Diversity threshold = this percentile of the pairwise distances among up
        to ``n_sample`` random states (paper: 3; its Breakout figures: 75).
    n_sample : int
        States sampled for the threshold (paper: 1000).
    seed : int
        Seed of that sample.
    threshold : float, optional
        Use this threshold instead of computing it.

    Returns
    -------
    Highlights

    Raises
    ------
    ValueError
        For mismatched lengths, negative context or gap, or a budget below 1.
    """
    imp = np.asarray(importance_scores.detach().cpu() if isinstance(importance_scores, torch.Tensor) else importance_scores, dtype=np.float64).reshape(-1)
    f = _features(features)
    n = imp.shape[0]
    if f.shape[0] != n:
        raise ValueError(f"importance_scores ({n}) and features ({f.shape[0]}) must have one entry per state")
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}")
    for name, v in (("context_length", context_length), ("minimum_gap", minimum_gap)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    if np.isnan(imp).any():
        raise ValueError("importance_scores contain NaN")
    thr = float(threshold) if threshold is not None else diversity_threshold(f, percentile=percentile, n_sample=n_sample, seed=seed)
    span = context_length + minimum_gap
    chosen: list[int] = []
    for s in np.argsort(-imp, kind="stable"):
        s = int(s)
        if any(abs(s - c) < span for c in chosen):
            continue
        if chosen:
            ctx = _context(chosen, context_length, n)
            dmin = float(np.sqrt(((f[ctx] - f[s]) ** 2).sum(axis=1)).min())
            if not dmin > thr:
                continue
        chosen.append(s)
        if len(chosen) == budget:
            break
    chosen.sort()
    return Highlights(states=chosen, with_context=_context(chosen, context_length, n), threshold=thr)


def select_highlights(states: StateSet, **kwargs) -> Highlights:
    """:func:`highlights_div` on a :class:`StateSet`: importance of its ``q``/``logits``, its ``features``."""
    scores = states.outputs.get("q", states.outputs.get("logits"))
    if scores is None or "features" not in states.outputs:
        raise ValueError("the StateSet needs 'q' or 'logits' and 'features' outputs for HIGHLIGHTS-DIV")
    return highlights_div(importance(scores), states.outputs["features"], **kwargs)
