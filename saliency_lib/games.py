"""Per-game facts used by the presets, the evaluation protocol and the score tables.

Every number here comes from the reference notes in ``docs/`` of the study
(Huber et al. 2021, §1; Itaya et al. 2021, §1.1 and §3) or from the published
papers named next to it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GameInfo", "GAMES", "HUBER_GAMES", "game_info", "valid_games", "MASK_A3C_CROPS", "mask_a3c_crop"]


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

HUBER_GAMES: tuple[str, ...] = ("Breakout", "MsPacman", "SpaceInvaders", "Frostbite")
"""The four games of Huber et al.'s benchmark, in their order."""

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
