"""Execution profiles: how much work the study and each chapter do. The single source of every size.

One frozen :class:`Profile` per name:

* ``tiny``: the CI smoke profile. Every cell runs, on almost no data (minutes for
  the whole book). Numbers are meaningless.
* ``quick``: the default book. Enough states for the figures to say something on a
  2-core CPU; expensive results are stored under ``data/results``.
* ``full``: the study at the paper's sizes (Huber et al.: 997 states of the fixed-start
  trajectory per game, the paper's explainer parameters), hours of CPU.

Which states a sweep explains is :attr:`Profile.state_selection`, per agent kind. The DQN
agents explain the first ``n_states`` *distinct* states of the greedy play from the fixed start
(``"distinct"``): Huber et al.'s trajectory up to its first game over or repeated screen, then
new states only, later games starting with random actions, so that no replayed state counts as
a new sample (:func:`saliency_lib.states.collect_states`). The units of the states before the
first change keep the keys of the plain trajectory's units (:func:`saliency_lib.sweep.plan_units`).
The Mask-A3C agents do the same in ``tiny`` and ``quick`` (their 5 states are the ball launch of
Breakout), and in ``full`` explain ``n_states`` states spread evenly over one whole greedy game
(``"spread"``, at most ``eval_max_steps`` agent steps; :func:`saliency_lib.states.collect_spread_states`),
so their 100 states see the whole game rather than its opening. The selection is part of the state
set's configuration, so the cached states and the unit keys of two selections never mix.

The sweep (:mod:`saliency_study.study`) reads :attr:`Profile.sweep`; a chapter's
``parameters`` cell takes ``profile`` and optional overrides, and the chapter's frozen
config reads the rest through :func:`get_profile` or :func:`profile_settings`, so the book,
papermill on the command line, ``saliency-study run`` and the tests all go through here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from saliency_lib.games import BENCHMARK_STATES, EPISODE_STEP_CAP

__all__ = ["SweepSize", "Profile", "PROFILES", "PROFILE_NAMES", "get_profile", "profile_settings", "sweep_sizes"]


def _frozen(params: Mapping[str, Mapping]) -> Mapping[str, Mapping]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in params.items()})


class SweepSize(NamedTuple):
    """Sizes of the sweep for one kind of agent (its preset): ``n_states, chunk, params``."""

    n_states: int
    """States per agent, picked from the agent's greedy play as :attr:`Profile.state_selection` says."""
    chunk: int
    """States per unit of work (and per stored result file)."""
    params: Mapping[str, Mapping]
    """Explainer parameters per method; ``{}``: every method at the paper's parameters."""


@dataclass(frozen=True)
class Profile:
    """Every size of one execution profile."""

    name: str
    sweep: Mapping[str, SweepSize]
    """Sweep sizes per agent kind: ``"dqn"`` (also any other preset) and ``"mask_a3c"``."""
    example_params: Mapping[str, Mapping]
    """Explainer parameters of the example maps of chapters 2 and 7 (``{}``: the paper's)."""
    highlight_states: int
    """HIGHLIGHTS-DIV states per agent in the gallery and the explorer (Huber et al.: 5)."""
    episodes: int
    """Evaluation games of the study agent (when ``data/agents/scores.csv`` lacks it)."""
    eval_max_steps: int | None
    """Agent-step cap per evaluation game (None: play to the end)."""
    gif_steps: int
    """Agent steps shown in each GIF."""
    official_games: str
    """``"game"``: only the chapter's game; ``"all"``: the six official Mask-A3C games."""
    official_episodes: int
    """Games per official checkpoint when ``data/official_scores.csv`` is missing."""
    official_max_steps: int
    """Agent-step cap per official game."""
    train_frames: int
    """Frames when chapter 1 trains an agent and ``frames`` is not given."""
    book_games: str
    """``"game"``: the book's chapters for its game; ``"all"``: also a page per other benchmark game."""
    play_steps: int
    """Agent steps of the game segment that chapter 5 plays."""
    bootstrap_resamples: int
    """Bootstrap resamples of chapter 4's confidence intervals and bands."""
    runtime_methods: tuple[str, ...] | None
    """Methods of chapter 6's run-time spot check (None: all)."""
    runtime_states: int
    """States each method is timed on in chapter 6's spot check."""
    ranked_own_agents: int | None = None
    """How many of our shipped masked Mask-A3C agents of the game chapter 5 ranks on the profile's
    states, in name order (None: every one). Each costs a Mask-A3C sweep of every method; the
    seed sweep of the stored study compares all seeds whatever this is."""
    actor_critic_agents: tuple[str, ...] = ()
    """Our shipped actor-critic agents that the sweep explains besides the DQN and official agents
    (in the plan of their own game)."""
    actor_critic_states: int | None = None
    """States of each of :attr:`actor_critic_agents` (None: the ``mask_a3c`` sweep size)."""
    state_selection: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """How each agent kind's sweep picks its states (:data:`~saliency_lib.sweep._units.STATE_SELECTIONS`):
    ``"distinct"`` (kinds not named here) or ``"spread"``; see the module notes."""

    def selection(self, kind: str) -> str:
        """The state selection of an agent kind's sweep: ``"distinct"`` unless the profile names another."""
        return self.state_selection.get(kind, "distinct")

    def episode_cap(self) -> int:
        """Agent-step cap of the game a ``"spread"`` selection spreads its states over."""
        return self.eval_max_steps or EPISODE_STEP_CAP

    def sweep_size(self, kind: str) -> SweepSize:
        """The sweep sizes of an agent kind; kinds other than ``mask_a3c`` get the DQN sizes."""
        return self.sweep.get(kind, self.sweep["dqn"])

    def settings(self) -> dict:
        """The chapters' settings as a plain dict (what :func:`profile_settings` overrides)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in ("name", "sweep", "state_selection", "actor_critic_agents", "actor_critic_states")}


# Cheap explainer parameters of the smoke profile: every code path runs, on a coarse grid.
_CHEAP = _frozen({"occlusion": {"patch": 12}, "ns_original": {"stride": 12}, "ns_chosen": {"stride": 12},
                  "ns_black": {"stride": 12}, "sarfa": {"stride": 12}, "occlusion_gray": {"patch": 12},
                  "sarfa_blur": {"stride": 12}, "rise": {"n_masks": 64},
                  "lime_slic": {"n_samples": 64}, "lime_quickshift": {"n_samples": 64},
                  "lime_felzenszwalb": {"n_samples": 64}, "integrated_gradients": {"n_steps": 8}})
# The Mask-A3C network costs ~35 DQN forward passes per row here (80x80 convolutions and a
# ConvLSTM), so the quick profile runs its perturbation methods on a coarser grid.
_COARSE = _frozen({"occlusion": {"patch": 4}, "ns_original": {"stride": 4}, "ns_chosen": {"stride": 4},
                   "ns_black": {"stride": 4}, "sarfa": {"stride": 4}, "rise": {"n_masks": 500}, "lime_slic": {"n_samples": 500},
                   "lime_quickshift": {"n_samples": 500}, "lime_felzenszwalb": {"n_samples": 500}})
_PAPER = _frozen({})

PROFILES: Mapping[str, Profile] = MappingProxyType({
    "tiny": Profile(
        "tiny", MappingProxyType({"dqn": SweepSize(2, 2, _CHEAP), "mask_a3c": SweepSize(2, 2, _CHEAP)}),
        example_params=_CHEAP, highlight_states=2, episodes=1, eval_max_steps=200, gif_steps=40, official_games="game",
        official_episodes=1, official_max_steps=200, train_frames=4_000, book_games="game", play_steps=40,
        bootstrap_resamples=200, runtime_methods=("random", "gradient", "mask_policy"), runtime_states=1,
        ranked_own_agents=1),
    "quick": Profile(
        "quick", MappingProxyType({"dqn": SweepSize(20, 5, _PAPER), "mask_a3c": SweepSize(5, 5, _COARSE)}),
        example_params=_PAPER, highlight_states=5, episodes=3, eval_max_steps=EPISODE_STEP_CAP, gif_steps=300,
        official_games="all", official_episodes=1, official_max_steps=EPISODE_STEP_CAP, train_frames=500_000, book_games="game",
        play_steps=400, bootstrap_resamples=2000, runtime_methods=None, runtime_states=1),
    "full": Profile(
        # Huber et al.'s 997 states per game for the DQN agents; 100 per Mask-A3C agent, whose forward
        # pass costs ~17x a DQN pass (the paper-scale issue sizes it so).
        "full", MappingProxyType({"dqn": SweepSize(BENCHMARK_STATES, 25, _PAPER), "mask_a3c": SweepSize(100, 10, _PAPER)}),
        example_params=_PAPER, highlight_states=5, episodes=10, eval_max_steps=EPISODE_STEP_CAP, gif_steps=1_500,
        official_games="all", official_episodes=10, official_max_steps=EPISODE_STEP_CAP, train_frames=10_000_000,
        book_games="all", play_steps=1500, bootstrap_resamples=2000, runtime_methods=None, runtime_states=3,
        # the Mask-A3C agents' 100 states span a whole greedy game, not its launch (issue 18)
        state_selection=MappingProxyType({"mask_a3c": "spread"}),
        # our two Breakout actor-critic agents, 50 states each (issue 18)
        actor_critic_agents=("data/agents/a3c-Breakout-none-s0", "data/agents/a3c-Breakout-double-s0"),
        actor_critic_states=50),
})
"""Profile name → :class:`Profile`."""
PROFILE_NAMES = tuple(PROFILES)


def get_profile(profile: str | Profile) -> Profile:
    """The :class:`Profile` named ``profile`` (a Profile is returned as it is).

    Raises
    ------
    ValueError
        Unknown profile name (the message lists the valid ones).
    """
    if isinstance(profile, Profile):
        return profile
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles are: {', '.join(PROFILE_NAMES)}")
    return PROFILES[profile]


def profile_settings(profile: str, **overrides) -> dict:
    """The chapters' settings of ``profile`` with the non-``None`` ``overrides`` applied.

    Raises
    ------
    ValueError
        Unknown profile, or an override that is not a setting of the profiles.
    """
    settings = get_profile(profile).settings()
    unknown = sorted(k for k in overrides if k not in settings)
    if unknown:
        raise ValueError(f"unknown profile settings {unknown}; valid settings are: {', '.join(settings)}")
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return settings


def sweep_sizes(profile: str, kind: str) -> SweepSize:
    """(states, states per unit, explainer parameters) of an agent kind (preset) in ``profile``;
    kinds other than ``mask_a3c`` get the DQN sizes."""
    return get_profile(profile).sweep_size(kind)
