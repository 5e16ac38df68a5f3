"""The chapters' configuration: one base that validates papermill's inputs once.

Each chapter's ``parameters`` cell holds primitives; the next cell builds the chapter's frozen config, a
subclass of :class:`ChapterConfig`. papermill passes ``-p seed 3`` as ``"3"`` and ``-p agent None`` as
``"None"``; the base turns those into what they mean and refuses the rest with the same message everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar

from saliency_lib.games import HUBER_GAMES, game_info
from saliency_lib.sweep import EXECUTORS
from saliency_lib.validation import check_bool, check_choice, check_float, check_int
from saliency_study.paths import RESULTS_DIR
from saliency_study.profiles import get_profile, profile_settings

__all__ = ["ChapterConfig", "as_int", "as_float", "as_bool", "as_optional"]


def as_optional(value):
    """``None`` for papermill's spellings of it (``""``, ``"None"``), else ``value``."""
    return None if value in ("", "None", None) else value


def as_int(name: str, value, *, minimum: int | None = None) -> int:
    """``value`` as an int (papermill's ``"3"`` and ``2e6`` included), checked by :func:`~saliency_lib.validation.check_int`."""
    if (isinstance(value, str) and value.strip().lstrip("-").isdigit()) or (isinstance(value, float) and value.is_integer()):
        value = int(value)
    return check_int(name, value, minimum=minimum)


def as_float(name: str, value, **bounds) -> float:
    """``value`` as a float (papermill's ``"0.5"`` included), checked by :func:`~saliency_lib.validation.check_float`
    with ``bounds`` (``low``, ``high``, ``low_open``, ``high_open``)."""
    try:
        value = float(value) if isinstance(value, str) else value
    except ValueError:
        pass
    return check_float(name, value, **bounds)


def as_bool(name: str, value) -> bool:
    """``value`` as a bool (papermill's ``"true"``/``"false"`` included).

    Checked by :func:`~saliency_lib.validation.check_bool`.
    """
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    return check_bool(name, value)


@dataclass(frozen=True)
class ChapterConfig:
    """What every chapter is run with; a chapter's config adds its own fields after these."""

    game: str = "Breakout"
    """Atari game of the chapter (one of the benchmark's four for the paper's comparisons)."""
    agent: str | None = None
    """Agent spec (``load_agent``); None: the study's agents of the game."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full`` (sizes: :class:`~saliency_study.profiles.Profile`)."""
    seed: int = 0
    """Seed of everything random in the chapter (sweep, bootstrap, example states)."""
    device: str = "cpu"
    """Torch device of the maps computed in the chapter (the sweep runs on the CPU)."""
    results_dir: str = RESULTS_DIR
    """Stored results (relative paths are under the repository root)."""
    executor: str = "local"
    """Executor of the sweep's missing units: ``local``, ``processes`` or ``ray``."""
    settings: dict = field(init=False, repr=False, compare=False)
    """The profile's settings (:func:`~saliency_study.profiles.profile_settings`)."""

    USED: ClassVar[tuple[str, ...]] = ()
    """Profile settings the chapter reads, shown with its parameters (empty: the sweep's sizes)."""

    def __post_init__(self):
        if not isinstance(self.game, str):
            raise ValueError(f"game must be a game name such as {HUBER_GAMES[0]!r}, got {self.game!r}")
        game_info(self.game)
        object.__setattr__(self, "agent", as_optional(self.agent))
        object.__setattr__(self, "seed", as_int("seed", self.seed, minimum=0))
        check_choice("executor", self.executor, EXECUTORS)
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"device must be a torch device name such as 'cpu', got {self.device!r}")
        object.__setattr__(self, "settings", profile_settings(self.profile))

    def _profile_markdown(self) -> str:
        """What the chapter takes from its profile, for :meth:`_repr_markdown_`."""
        if self.USED:
            return ", ".join(f"`{k}={self.settings[k]!r}`" for k in self.USED)
        return "; ".join(f"{'DQN' if kind == 'dqn' else 'Mask-A3C'} agents: {n} states"
                         for kind, (n, _, _) in get_profile(self.profile).sweep.items())

    def _repr_markdown_(self) -> str:
        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.init)
        return f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** {self._profile_markdown()}.\n"
