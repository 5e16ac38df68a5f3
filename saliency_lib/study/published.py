"""Published reference scores that the study's agents are compared with.

Random-play scores live in :data:`saliency_lib.games.GAMES`. This module adds the
human and Nature-DQN scores of the same table.

Source: Mnih et al. (2015), *Human-level control through deep reinforcement
learning*, Nature 518, Extended Data Table 2 (mean score of the professional
human tester; DQN mean ± sd over 30 games of up to 5 minutes with ε = 0.05, from
up to 30 random NOOPs). Transcribed by hand; check a number against the paper
before quoting it elsewhere.

Huber et al. (2021/22) publish no agent scores (their agents' scores went to an
uncommitted folder; reference notes §1.4). For Mask-A3C the reference is the
level logged by the official runs (:func:`saliency_lib.agents.official.official_logged_level`),
not a number from the paper.
"""

from __future__ import annotations

__all__ = ["HUMAN", "DQN_NATURE", "published_scores"]

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


def published_scores(game: str) -> dict:
    """Random, human and Nature-DQN scores of ``game`` (NaN where not published)."""
    from ..games import game_info

    info = game_info(game)
    nan = float("nan")
    dqn = DQN_NATURE.get(game, (nan, nan))
    return {"random": info.random_score if info.random_score is not None else nan, "human": HUMAN.get(game, nan),
            "dqn_nature": dqn[0], "dqn_nature_sd": dqn[1]}
