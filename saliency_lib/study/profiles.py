"""Execution profiles of the book: how much work each chapter does.

A chapter's ``parameters`` cell takes ``profile`` and optional overrides (``None``
means "the profile's value"); the next line builds the chapter's frozen config
from :func:`profile_settings`. ``saliency-study book --profile P`` passes only
``profile=P``, so the book, papermill on the command line and the CI test all go
through the same code.

* ``tiny``: the CI smoke profile. Every cell runs, on almost no data (minutes for
  the whole book). Numbers are meaningless.
* ``quick``: the default book. Enough games and states for the figures to say
  something on a 2-core CPU; expensive results are cached under ``data/results``.
* ``full``: the study's reported numbers (hours).
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["PROFILES", "profile_settings", "PROFILE_NAMES"]

_TINY = {
    "episodes": 1,              # evaluation games of the study agent (when data/agents/scores.csv lacks it)
    "eval_max_steps": 200,      # agent-step cap per evaluation game (None: play to the end)
    "gif_steps": 40,            # agent steps shown in each GIF
    "official_games": "game",   # "game": only the chapter's game; "all": the six official games
    "official_episodes": 1,     # games per official checkpoint when data/official_scores.csv is missing
    "official_max_steps": 200,  # agent-step cap per official game
    "train_frames": 4_000,      # frames when a chapter trains an agent and `frames` is not given
    "n_states": 2,              # explained states per game (chapters 2-7)
    "book_games": "game",       # "game": the book's chapters for its game; "all": also a page per other benchmark game
}
_QUICK = {
    "episodes": 3,
    "eval_max_steps": 10_000,
    "gif_steps": 300,
    "official_games": "all",
    "official_episodes": 1,
    "official_max_steps": 10_000,
    "train_frames": 500_000,
    "n_states": 20,
    "book_games": "game",
}
_FULL = {
    "episodes": 10,
    "eval_max_steps": 10_000,
    "gif_steps": 1_500,
    "official_games": "all",
    "official_episodes": 10,
    "official_max_steps": 10_000,
    "train_frames": 10_000_000,
    "n_states": 100,
    "book_games": "all",
}

PROFILES = MappingProxyType({name: MappingProxyType(s) for name, s in (("tiny", _TINY), ("quick", _QUICK), ("full", _FULL))})
"""Profile name → read-only settings."""
PROFILE_NAMES = tuple(PROFILES)


def profile_settings(profile: str, **overrides) -> dict:
    """The settings of ``profile`` with the non-``None`` ``overrides`` applied.

    Raises
    ------
    ValueError
        Unknown profile, or an override that is not a setting of the profiles.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles are: {', '.join(PROFILE_NAMES)}")
    settings = dict(PROFILES[profile])
    unknown = sorted(k for k in overrides if k not in settings)
    if unknown:
        raise ValueError(f"unknown profile settings {unknown}; valid settings are: {', '.join(settings)}")
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return settings
