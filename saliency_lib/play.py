"""Playing and scoring agents with the evaluation protocols of both papers.

Two evaluation protocols (:data:`PROTOCOLS`), both with greedy actions:

``"greedy"``
    The papers' protocol on the deterministic emulator: Huber et al.'s wrapper for
    ``dqn`` agents (the first game from the fixed start, later games after 1..30 NOOPs)
    and Itaya et al.'s for ``mask_a3c`` agents (1..30 NOOPs). 10 games by default. A
    greedy agent on a deterministic emulator replays the same game whenever it gets the
    same start, so its games are few: count them with ``distinct_games``.
``"sticky"``
    The same starts with sticky actions (ALE's ``repeat_action_probability=0.25``,
    Machado et al. 2018): at every raw frame the emulator keeps the previous action with
    probability 0.25, so games differ. 30 games by default.

Game ``i`` of an evaluation with ``seed`` is played in an environment reset with
``seed + i`` (which also seeds ALE's sticky-action RNG), whether the games are played
one after the other or side by side.

Distinct games
--------------
Each game is fingerprinted step by step: a running hash (BLAKE2b, 64 bits) of, at every
agent step, the newest frame of the agent's observation, the action it chose and the
reward it got; ``fingerprint`` is its value at the game's end. A game *replays* another
when its steps are the other's first steps: equal, or cut shorter by the frame cap (the
cap counts the raw frames of the NOOP start, so greedy replays that reach it stop a few
steps apart). ``distinct_games`` counts the games that replay no other (longest first).
It is exact up to hash collisions, unlike distinct scores, which only bound it from below
(two different games can score the same).

Batched play
------------
:func:`evaluate` steps the games of an evaluation in lockstep, one environment each,
and runs one batched forward pass per step. A batched forward pass differs from a
one-state pass in the last bits of float arithmetic, so for every game whose two best
action scores lie within ``1e-4 · (1 + |best|)`` of each other the action is recomputed
with the one-state pass that sequential play uses: the chosen actions, and so the games,
are those of sequential play (``batched=False``). Networks with max-pooling
(``mask_a3c``) run on a channels-last copy, where PyTorch's CPU max-pooling is several
times faster.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from .agents.base import Agent
from .envs import make_env, raw_frame

__all__ = ["Protocol", "PROTOCOLS", "get_protocol", "Episode", "play_episode", "evaluate", "count_distinct", "play_env"]


@dataclass(frozen=True)
class Protocol:
    """An evaluation protocol: greedy actions, the preset's starts, and sticky actions or not."""

    name: str
    repeat_action_probability: float
    episodes: int  # games of an evaluation unless told otherwise
    description: str


PROTOCOLS: dict[str, Protocol] = {
    "greedy": Protocol("greedy", 0.0, 10, "greedy actions on the deterministic emulator, the papers' starts (as both papers)"),
    "sticky": Protocol("sticky", 0.25, 30, "greedy actions with sticky actions, repeat_action_probability 0.25 "
                       "(Machado et al. 2018), the papers' starts"),
}

TIE_TOLERANCE = 1e-4
"""Relative gap between the two best action scores below which a batched step recomputes the
action with a one-state forward pass (see the module docstring)."""


def get_protocol(protocol: str | Protocol) -> Protocol:
    """A :class:`Protocol` from its name (a Protocol passes through)."""
    if isinstance(protocol, Protocol):
        return protocol
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; valid protocols are: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[protocol]


@dataclass
class Episode:
    """One played game."""

    score: float
    steps: int
    frames: list = field(default_factory=list)  # raw RGB frames, when recorded
    masks: dict = field(default_factory=dict)  # name -> list of (10, 10) arrays, when recorded
    fingerprint: str = ""  # hash of the game (observations, actions, rewards); see the module docstring
    capped: bool = False  # ended by the frame cap or max_steps, not by the game
    chain: list = field(default_factory=list, repr=False)  # the running hash after each step (replays are prefixes)


def play_env(agent: Agent, first: bool, protocol: Protocol = PROTOCOLS["greedy"]):
    """The evaluation environment of ``agent``'s preset for one game of a run.

    The first game of a run (``first``) starts from Huber et al.'s fixed start (DQN agents), later
    ones after 1–30 NOOPs; sticky actions as the ``protocol`` says.
    """
    p = protocol.repeat_action_probability
    if agent.preset == "dqn":
        # Huber's protocol: the fixed start; later games of the same run start with 1..30 NOOPs.
        return make_env(agent.game, "dqn", mode="eval", fixed_start=True, noop_max=1 if first else 30,
                        repeat_action_probability=p)
    return make_env(agent.game, "mask_a3c", mode="eval", repeat_action_probability=p)


def _new_fingerprint():
    return hashlib.blake2b(digest_size=8)


def _fingerprint_step(h, chain: list, obs: np.ndarray, action: int, reward: float) -> None:
    h.update(np.ascontiguousarray(obs[-1]).tobytes())
    h.update(np.array([action], np.int64).tobytes())
    h.update(np.array([reward], np.float64).tobytes())
    chain.append(h.digest())


def count_distinct(chains: list[list[bytes]]) -> int:
    """The number of games that replay no other game, from their running hashes ``chains``.

    A game whose running hash after its last step equals another (longer or equally long, already
    counted) game's at that step is a replay of it.
    """
    kept: list[list[bytes]] = []
    for c in sorted(chains, key=len, reverse=True):
        n = len(c)
        if not any(n and len(k) >= n and k[n - 1] == c[n - 1] for k in kept):
            kept.append(c)
    return len(kept)


@torch.no_grad()
def play_episode(agent: Agent, *, seed: int, first: bool = True, record: bool = False, max_steps: int | None = None,
                 sig5: bool = False, protocol: str | Protocol = "greedy") -> Episode:
    """Play one full game greedily and return its raw score.

    ``dqn`` agents use Huber's evaluation wrapper with the fixed start (``first``) or
    1..30 NOOPs; ``mask_a3c`` agents use Itaya's wrappers, with the ConvLSTM state zeroed
    at every life loss. ``protocol`` "sticky" adds sticky actions (see :data:`PROTOCOLS`).
    """
    env = play_env(agent, first, get_protocol(protocol))
    obs, _ = env.reset(seed=seed)
    hidden = agent.initial_hidden(1)
    ep = Episode(0.0, 0)
    fp = _new_fingerprint()
    names = [n for n in ("policy_mask", "value_mask") if n in agent.outputs] if record else []
    for n in names:
        ep.masks[n] = []
    while True:
        x = torch.as_tensor(obs, device=agent.device)[None]
        out = agent.forward(x, hidden)
        action = int(out[agent.default_output].argmax(1)[0])
        if record:
            ep.frames.append(raw_frame(env).copy())
            for n in names:
                m = torch.sigmoid(5 * out[n.replace("_mask", "_att")]) if sig5 else out[n]
                ep.masks[n].append(m[0].cpu().numpy())
        hidden = out.get("hidden")
        prev = obs
        obs, r, term, trunc, info = env.step(action)
        _fingerprint_step(fp, ep.chain, prev, action, float(r))
        ep.score += float(r)
        ep.steps += 1
        if info.get("life_lost") and hidden is not None:
            hidden = agent.initial_hidden(1)
        if term or trunc or (max_steps and ep.steps >= max_steps):
            ep.capped = not term
            break
    env.close()
    ep.fingerprint = fp.hexdigest()
    return ep


class _Game:
    """One game of a batched evaluation: its index, environment, last observation and running totals."""

    def __init__(self, index: int, env, obs):
        self.index, self.env, self.obs = index, env, obs
        self.ep = Episode(0.0, 0)
        self.fp = _new_fingerprint()


def _fast_agent(agent: Agent) -> Agent:
    """The agent to run batched forward passes with: a channels-last copy for ``mask_a3c`` networks.

    Their max-pooling is several times faster on channels-last tensors (PyTorch CPU). Our
    :class:`~saliency_lib.agents.MaskA3CNet` is built channels-last, so it plays as it is.
    """
    if agent.preset != "mask_a3c":
        return agent
    convs = [m.weight for m in agent.net.modules() if isinstance(m, torch.nn.Conv2d)]
    if convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs):
        return agent
    try:
        fast = agent.clone()
        fast.net.to(memory_format=torch.channels_last)
        return fast
    except Exception:  # pragma: no cover - an agent that cannot be copied plays as it is
        return agent


def _set_rows(hidden, rows: list[int], init) -> None:
    """Put the initial recurrent state into ``rows`` of ``hidden`` (in place)."""
    for t, t0 in zip(hidden, init):
        t[rows] = t0[0]


def _greedy_actions(agent: Agent, x: torch.Tensor, hidden, scores: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Argmax of a batch of action scores; near-ties recomputed with the one-state pass of sequential play."""
    actions = scores.argmax(1)
    if scores.shape[1] < 2:
        return actions, 0
    top = scores.topk(2, dim=1).values
    close = ((top[:, 0] - top[:, 1]) <= TIE_TOLERANCE * (1 + top[:, 0].abs())).nonzero()[:, 0].tolist()
    for j in close:
        h = agent.index_hidden(hidden, torch.tensor([j], device=x.device)) if hidden is not None else None
        actions[j] = agent.forward(x[j : j + 1], h)[agent.default_output].argmax(1)[0]
    return actions, len(close)


@torch.no_grad()
def _play_batched(agent: Agent, episodes: int, seed: int, protocol: Protocol, max_steps: int | None, envs: int,
                  bar) -> tuple[list[Episode], int]:
    fast = _fast_agent(agent)
    init = agent.initial_hidden(1)
    ties = 0
    results: list[Episode | None] = [None] * episodes
    next_index = 0

    def start() -> _Game:
        nonlocal next_index
        i, next_index = next_index, next_index + 1
        env = play_env(agent, i == 0, protocol)
        obs, _ = env.reset(seed=seed + i)
        return _Game(i, env, obs)

    games = [start() for _ in range(min(envs, episodes))]
    hidden = agent.initial_hidden(len(games))
    steps, shown = 0, time.monotonic()
    while games:
        x = torch.as_tensor(np.stack([g.obs for g in games]), device=agent.device)
        out = fast.forward(x, hidden)
        actions, n = _greedy_actions(agent, x, hidden, out[agent.default_output])
        ties += n
        actions = actions.tolist()
        hidden = out.get("hidden")
        if hidden is not None:
            hidden = tuple(t.contiguous() for t in hidden)
        reset_rows, keep = [], []
        for j, g in enumerate(games):
            prev = g.obs
            g.obs, r, term, trunc, info = g.env.step(actions[j])
            _fingerprint_step(g.fp, g.ep.chain, prev, actions[j], float(r))
            g.ep.score += float(r)
            g.ep.steps += 1
            if info.get("life_lost") and hidden is not None:
                reset_rows.append(j)
            if term or trunc or (max_steps and g.ep.steps >= max_steps):
                g.ep.capped = not term
                g.ep.fingerprint = g.fp.hexdigest()
                g.env.close()
                results[g.index] = g.ep
                bar.update(1)
                if next_index < episodes:  # a new game takes the slot, from the initial recurrent state
                    games[j] = start()
                    reset_rows.append(j)
                    keep.append(j)
            else:
                keep.append(j)
        if hidden is not None and reset_rows:
            _set_rows(hidden, reset_rows, init)
        if len(keep) < len(games):
            games = [games[j] for j in keep]
            hidden = (agent.index_hidden(hidden, torch.tensor(keep, dtype=torch.long, device=x.device))
                      if hidden is not None and keep else None)
        steps += 1
        if steps % 100 == 0 and time.monotonic() - shown > 5:  # the step count, at most every 5 s (logs stay short)
            shown = time.monotonic()
            bar.set_postfix(step=steps, playing=len(games), refresh=True)
    return [ep for ep in results if ep is not None], ties


def _summary(eps: list[Episode], protocol: Protocol, ties: int | None = None) -> dict:
    scores = [ep.score for ep in eps]
    steps = sum(ep.steps for ep in eps)
    fps = [ep.fingerprint for ep in eps]
    out = {"protocol": protocol.name, "repeat_action_probability": protocol.repeat_action_probability, "episodes": len(eps),
           "scores": scores, "mean": float(np.mean(scores)), "std": float(np.std(scores)),
           "distinct_games": count_distinct([ep.chain for ep in eps]),
           "lengths": [ep.steps for ep in eps], "fingerprints": fps, "capped": sum(ep.capped for ep in eps),
           "steps": steps, "frames": 4 * steps}
    if ties is not None:
        out["near_ties"] = ties
    return out


def evaluate(agent: Agent, episodes: int | None = 10, seed: int = 0, *, protocol: str | Protocol = "greedy",
             max_steps: int | None = None, progress: bool = True, batched: bool = True, envs: int | None = None) -> dict:
    """Scores of ``episodes`` greedy games under an evaluation protocol.

    Parameters
    ----------
    agent : Agent
    episodes : int or None
        Games (None: the protocol's default, 10 greedy or 30 sticky).
    seed : int
        Game ``i`` is played from ``reset(seed=seed + i)``.
    protocol : {"greedy", "sticky"} or Protocol
        See :data:`PROTOCOLS`.
    max_steps : int, optional
        Cap on agent steps per game.
    progress : bool
        A tqdm bar of finished games (with the step count and the games still playing).
    batched : bool
        Play the games side by side with one batched forward pass per step (default), or
        one after the other with :func:`play_episode`. Both play the same games.
    envs : int, optional
        Games played side by side (default: all of them); a finished game's slot takes the next game.

    Returns
    -------
    dict
        ``protocol``, ``repeat_action_probability``, ``episodes``, ``scores`` (per game), ``mean``,
        ``std`` (population sd over games), ``distinct_games`` (games that replay no other; see the module docstring),
        ``lengths`` (agent steps per game), ``fingerprints``, ``capped`` (games ended by a cap,
        not by the game), ``steps`` and ``frames`` (all games), and, when batched, ``near_ties``
        (steps whose action was recomputed with a one-state pass).
    """
    proto = get_protocol(protocol)
    episodes = proto.episodes if episodes is None else episodes
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if envs is not None and envs < 1:
        raise ValueError(f"envs must be >= 1, got {envs}")
    desc = f"evaluate {agent.game} ({proto.name})"
    if batched:
        with tqdm(total=episodes, desc=desc, unit="game", disable=not progress) as bar:
            eps, ties = _play_batched(agent, episodes, seed, proto, max_steps, envs or episodes, bar)
        return _summary(eps, proto, ties)
    eps = [play_episode(agent, seed=seed + i, first=i == 0, max_steps=max_steps, protocol=proto)
           for i in tqdm(range(episodes), desc=desc, unit="game", disable=not progress)]
    return _summary(eps, proto)
