"""Per-game facts used by the presets, the evaluation protocol and the score tables.

Every number here comes from the reference notes in ``docs/`` of the study
(Huber et al. 2021, §1; Itaya et al. 2021, §1.1 and §3) or from the published
papers named next to it.

Published scores (:data:`HUMAN`, :data:`DQN_NATURE`, :data:`DQN_10M_NEC`, :data:`DQN_10M_DOPAMINE`):

Random-play scores live in :data:`saliency_lib.games.GAMES`. This module adds the
human and Nature-DQN scores of the same table.

Source: Mnih et al. (2015), *Human-level control through deep reinforcement
learning*, Nature 518, Extended Data Table 2 (mean score of the professional
human tester; DQN mean ± sd over 30 games of up to 5 minutes with ε = 0.05, from
up to 30 random NOOPs). Transcribed by hand; check a number against the paper
before quoting it elsewhere.

DQN at the study's budget of 10 M frames, from two sources with different protocols:

* :data:`DQN_10M_NEC`: Pritzel et al. (2017), *Neural Episodic Control*, ICML,
  Appendix A, Table 3 "Scores at 10 Million Frames", column "Nature DQN" (DeepMind's
  baseline learning curves, averaged over 5 seeds, evaluated every million steps;
  rewards clipped; the paper does not define its evaluation protocol further).
* :data:`DQN_10M_DOPAMINE`: Castro et al. (2018), *Dopamine*, baseline data
  ``baselines/atari/data/<game>.json`` of ``google/dopamine``: DQN, iteration 9 (agent
  steps 2.25–2.5 M, i.e. frames 9–10 M), mean and sd over its 5 runs. Dopamine trains
  with sticky actions (p = 0.25), RMSProp and ε = 0.01; the files do not say whether
  the value is the training or the evaluation return of the iteration.

Both were read from stored copies of the sources and transcribed by hand.

Huber et al. (2021/22) publish no agent scores (their agents' scores went to an
uncommitted folder; reference notes §1.4). For Mask-A3C the reference is the
level logged by the official runs (:func:`saliency_lib.agents.official.official_logged_level`),
not a number from the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GameInfo", "GAMES", "ACTION_COUNTS", "HUBER_GAMES", "BENCHMARK_STATES", "EPISODE_STEP_CAP", "game_info", "valid_games",
    "MASK_A3C_CROPS", "mask_a3c_crop", "HUMAN", "DQN_NATURE", "DQN_10M_NEC", "DQN_10M_DOPAMINE", "DQN_10M_SOURCE",
    "published_scores",
]


@dataclass(frozen=True)
class GameInfo:
    """Facts about one Atari game.

    Attributes
    ----------
    name : str
        Canonical name, as in ``<name>NoFrameskip-v4``.
    min_reward : float
        Smallest non-zero in-game reward. Huber et al. train on ``reward / min_reward``.
    fire_reset : bool
        Whether Huber's evaluation wrapper presses FIRE on reset and after a life loss.
    fixed_start_noops : int
        Raw NOOP frames of Huber's fixed start (Pac-Man 200, others 1).
    reset_noop_frames : int
        Extra raw NOOP frames inside every reset of Huber's wrapper (250 for games
        without fire reset: Pac-Man and Frostbite).
    fill_action : int
        Action of the first 4 agent steps that fill the frame stack (Breakout: FIRE).
    random_score : float or None
        Random-play score (Mnih et al. 2015, Extended Data Table 2).
    """

    name: str
    min_reward: float
    fire_reset: bool
    fixed_start_noops: int
    reset_noop_frames: int
    fill_action: int
    random_score: float | None = None


GAMES: dict[str, GameInfo] = {
    g.name: g
    for g in [
        GameInfo("Breakout", 1.0, True, 1, 0, 1, 1.7),
        GameInfo("MsPacman", 10.0, False, 200, 250, 0, 307.3),
        GameInfo("SpaceInvaders", 5.0, True, 1, 0, 0, 148.0),
        GameInfo("Frostbite", 10.0, False, 1, 250, 0, 65.2),
        GameInfo("Seaquest", 20.0, True, 1, 0, 0, 68.4),
        GameInfo("BeamRider", 44.0, True, 1, 0, 0, 363.9),
        GameInfo("FishingDerby", 1.0, True, 1, 0, 0, -91.7),
        GameInfo("Pong", 1.0, True, 1, 0, 0, -20.7),
    ]
}

ACTION_COUNTS: dict[str, int] = {
    "Breakout": 4, "MsPacman": 9, "SpaceInvaders": 6, "Frostbite": 18, "Seaquest": 18, "BeamRider": 9, "FishingDerby": 18,
    "Pong": 6,
}
"""Size of each game's minimal action set in ALE (``<game>NoFrameskip-v4``'s action space), the actions
of our environments; ``tests/lib/test_agents.py`` checks it against ale-py."""

HUBER_GAMES: tuple[str, ...] = ("Breakout", "MsPacman", "SpaceInvaders", "Frostbite")
"""The four games of Huber et al.'s benchmark: the one game order of every table and figure."""

BENCHMARK_STATES = 997
"""States per game of Huber et al.'s benchmark: steps 4–1000 of the agent's fixed-start game."""

EPISODE_STEP_CAP = 10_000
"""Agent steps at which an evaluation game is cut off (both papers' evaluations end far earlier)."""

# Itaya et al. crop table (official config.json): crop1, crop2, dimension2.
MASK_A3C_CROPS: dict[str, tuple[int, int, int]] = {
    "Default": (34, 34, 80),
    "Asteroids": (16, 34, 94),
    "BeamRider": (20, 20, 80),
    "Breakout": (34, 34, 80),
    "Centipede": (36, 56, 90),
    "MsPacman": (2, 10, 84),
    "Pong": (34, 34, 80),
    "Seaquest": (30, 30, 80),
    "SpaceInvaders": (8, 36, 94),
    "VideoPinball": (42, 60, 89),
    "Qbert": (12, 40, 94),
    "Boxing": (30, 30, 80),
}


def valid_games() -> list[str]:
    """Names accepted by :func:`game_info` and :func:`saliency_lib.envs.make_env`."""
    return sorted(GAMES)


def game_info(game: str) -> GameInfo:
    """Look up a game, with an error that lists the valid names."""
    if not isinstance(game, str) or game not in GAMES:
        raise ValueError(f"unknown game {game!r}; valid games are: {', '.join(valid_games())}")
    return GAMES[game]


def mask_a3c_crop(game: str) -> tuple[int, int, int]:
    """(crop1, crop2, dimension2) of the Mask-A3C preset; unlisted games use 'Default'."""
    game_info(game)
    return MASK_A3C_CROPS.get(game, MASK_A3C_CROPS["Default"])


HUMAN: dict[str, float] = {
    "Breakout": 31.8, "MsPacman": 15693.0, "SpaceInvaders": 1652.0, "Frostbite": 4335.0,
    "Seaquest": 20182.0, "BeamRider": 5775.0, "FishingDerby": 5.1, "Pong": 9.3,
}
"""Professional human tester (Mnih et al. 2015, Extended Data Table 2)."""


DQN_NATURE: dict[str, tuple[float, float]] = {
    "Breakout": (401.2, 26.9), "MsPacman": (2311.0, 525.0), "SpaceInvaders": (1976.0, 893.0),
    "Frostbite": (328.3, 250.5), "Seaquest": (5286.0, 1310.0), "BeamRider": (6846.0, 1619.0),
    "FishingDerby": (-0.8, 19.0), "Pong": (18.9, 1.3),
}
"""Nature DQN (mean, sd) (Mnih et al. 2015, Extended Data Table 2)."""


DQN_10M_NEC: dict[str, float] = {"Breakout": 36.8, "MsPacman": 1657.0, "SpaceInvaders": 642.2, "Frostbite": 339.1}
"""Nature DQN after 10 M frames (Pritzel et al. 2017, Table 3; mean over 5 seeds)."""


DQN_10M_DOPAMINE: dict[str, tuple[float, float]] = {
    "Breakout": (21.5, 4.0), "MsPacman": (2187.2, 81.6), "SpaceInvaders": (663.3, 16.2), "Frostbite": (269.1, 36.2),
}
"""Dopamine DQN at iteration 9 (frames 9–10 M; mean, sd over 5 runs; Castro et al. 2018)."""


DQN_10M_SOURCE = "Nature DQN at 10M frames: Pritzel et al. (2017), Neural Episodic Control, Table 3"
"""How the shipped score table cites :data:`DQN_10M_NEC`."""


def published_scores(game: str) -> dict:
    """Random, human, Nature-DQN (200 M frames) and DQN-at-10 M-frames scores of ``game`` (NaN where not published)."""
    info = game_info(game)
    nan = float("nan")
    dqn = DQN_NATURE.get(game, (nan, nan))
    dopamine = DQN_10M_DOPAMINE.get(game, (nan, nan))
    return {"random": info.random_score if info.random_score is not None else nan, "human": HUMAN.get(game, nan),
            "dqn_nature": dqn[0], "dqn_nature_sd": dqn[1], "dqn_10m": DQN_10M_NEC.get(game, nan),
            "dqn_10m_dopamine": dopamine[0], "dqn_10m_dopamine_sd": dopamine[1]}
