"""Chapter 4 (Input degradation): the chapter's configuration, its names, and its results read through the study.

:mod:`saliency_study.degradation`, :mod:`saliency_study.agreement` and :mod:`saliency_study.advantage_stream`
compute the AUCs, rankings, comparisons with Huber et al. and the advantage-stream reading; this module reads
them for the chapter's agents and turns a missing agent or an empty table into a
:class:`~saliency_book.common.Note`; :mod:`saliency_book.ch4_figures` shows them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from saliency_book.common import Note, as_count, notes_pass, sweep_table
from saliency_book.config import ChapterConfig, as_float
from saliency_book.maps import as_methods
from saliency_study import advantage_stream as adv
from saliency_study import agreement as ag
from saliency_study import degradation as dg
from saliency_study.evidence import DEGENERATE_MEASURES, MIN_ESS, withheld_reason
from saliency_study.profiles import get_profile, profile_settings

__all__ = [
    "DegradationChapter", "PAPER_GAMES", "SHORT_LABELS", "MEASURE_LABELS", "SHORT_MEASURES", "short_label",
    "measure_label", "agent_label", "no_agent", "chapter_agents", "degradation_results", "chapter_sweep_table",
    "pick_agent", "auc_summary", "rankings", "ranking_detail", "significance_counts", "side_by_side", "rank_agreement",
    "agreement_counts", "study_agreement", "factors", "mean_curve_table", "measure_degeneracy", "stream_results",
    "clean_outputs", "stream_agreement", "stream_better",
]

PAPER_GAMES = MappingProxyType({"MsPacman": "Pac-Man", "Breakout": "Breakout", "Frostbite": "Frostbite",
                                "SpaceInvaders": "Space Inv."})
"""Our game name → the name in Huber et al.'s tables, in their row order."""
SHORT_LABELS = MappingProxyType({
    "occlusion": "Occl", "ns_original": "NS", "ns_chosen": "NS chosen", "ns_black": "NS black", "sarfa": "SARFA",
    "rise": "RISE", "lime_felzenszwalb": "LIME-Felz", "lime_quickshift": "LIME-Quick", "lime_slic": "LIME-SLIC",
    "gradient": "Gradient", "integrated_gradients": "IG", "gradcam": "Grad-CAM", "mask_policy": "Mask policy",
    "mask_value": "Mask value", "random": "Rnd"})
"""Short column labels (the paper's where it has the method)."""
MEASURE_LABELS = MappingProxyType({"q_ratio": "Q-ratio", "advantage": "advantage", "value": "state value V",
                                   "prob": "policy probability"})
SHORT_MEASURES = MappingProxyType({"q_ratio": "Q-ratio", "advantage": "advantage", "value": "V", "prob": "π(a)"})


def short_label(name: str) -> str:
    """Short column label of a registry method (the name itself when unknown)."""
    return SHORT_LABELS.get(name, name)


def measure_label(measure: str) -> str:
    """Display name of a measure."""
    return MEASURE_LABELS.get(measure, measure)


def agent_label(spec: str) -> str:
    """``Mask-A3C (official:Breakout)``, ``DQN (<directory name>)`` or ``DQN, advantage stream (<directory name>)``."""
    spec = str(spec)
    if spec.startswith("official:"):
        return f"Mask-A3C ({spec})"
    stream = spec.startswith(adv.SCHEME)
    return f"DQN{', advantage stream' if stream else ''} ({os.path.basename(spec.removeprefix(adv.SCHEME).rstrip('/'))})"


def no_agent(preset: str, what: str) -> Note:
    """The Note of a chapter without an agent of ``preset``, saying how to get one."""
    kind = {"dqn": "DQN", "mask_a3c": "Mask-A3C"}.get(preset, preset)
    how = ("once a study DQN agent is shipped in `data/agents`" if preset == "dqn" else
           "when the official Mask-A3C checkpoints are fetched (`make fetch-official`)")
    return Note(f"No {kind} agent in this chapter's results, so there is no {what} for it. The chapter shows one when "
                f"its `agent` parameter names one, or, with `agent=None`, {how}.", title=f"No {kind} agent")


@dataclass(frozen=True)
class DegradationChapter(ChapterConfig):
    """Chapter 4's configuration: the common parameters (``agent`` may name several agents, comma-separated),
    the tests' level, the intervals' confidence and the stored study."""

    alpha: float = 0.05
    """Family-wise significance level of the Holm-corrected paired tests."""
    confidence: float = 0.95
    """Level of the confidence intervals and bands."""
    study_profile: str = "full"
    """Profile of the stored study that the per-game comparisons with the paper read (they compute nothing)."""

    methods: tuple[str, ...] | None = None
    """The study's methods to sweep (list or comma-separated string); None: all of them."""
    n_states: int | None = None
    """States per agent of the sweep; None: the profile's."""

    def __post_init__(self):
        super().__post_init__()
        for name in ("alpha", "confidence"):
            object.__setattr__(self, name, as_float(name, getattr(self, name), low=0, high=1, low_open=True,
                                                    high_open=True))
        profile_settings(self.study_profile)  # validates the name
        object.__setattr__(self, "methods", as_methods(self.methods))
        object.__setattr__(self, "n_states", as_count(self.n_states, "n_states"))

    @property
    def n_resamples(self) -> int:
        """Bootstrap resamples of the curves' bands (:attr:`~saliency_study.profiles.Profile.bootstrap_resamples`)."""
        return get_profile(self.profile).bootstrap_resamples

    def _repr_markdown_(self) -> str:
        return super()._repr_markdown_() + f"\n**Bootstrap resamples:** {self.n_resamples}.\n"


# -- the study's rows ----------------------------------------------------------------------------

def chapter_agents(cfg: DegradationChapter) -> list[str]:
    """The agents of the chapter: ``cfg.agent`` (comma-separated), or the study's agents of the game (DQN first)."""
    from saliency_study.catalog import study_agents

    if cfg.agent:
        return [a.strip() for a in cfg.agent.split(",") if a.strip()]
    return study_agents(cfg.game, results_dir=cfg.results_dir)


def degradation_results(cfg: DegradationChapter, *, progress: bool = False) -> pd.DataFrame | Note:
    """:func:`~saliency_study.degradation.degradation_table` of the chapter's agents, or a Note without any."""
    agents = chapter_agents(cfg)
    if not agents:
        return Note(f"No agent to evaluate for {cfg.game}: no study DQN agent exists yet and the official Mask-A3C "
                    "checkpoint is not fetched (`make fetch-official`).", kind="warning", title="No agent")
    return dg.degradation_table(cfg.profile, cfg.game, agents, seed=cfg.seed, results_dir=cfg.results_dir,
                                executor=cfg.executor, progress=progress, methods=cfg.methods, n_states=cfg.n_states)


@notes_pass
def chapter_sweep_table(cfg: DegradationChapter, results: pd.DataFrame) -> pd.DataFrame | Note:
    """:func:`~saliency_book.common.sweep_table` of the agents of ``results``, with the states they hold."""
    specs = list(dict.fromkeys(results["agent"]))
    return sweep_table(cfg.profile, specs, {a: results.loc[results["agent"] == a, "state"].nunique() for a in specs})


def pick_agent(results: pd.DataFrame | Note, preset: str) -> str | None:
    """:func:`~saliency_study.degradation.pick_agent` (None for a Note)."""
    return None if isinstance(results, Note) else dg.pick_agent(results, preset)


auc_summary = notes_pass(dg.auc_summary)


# -- rankings --------------------------------------------------------------------------------------

@notes_pass
def rankings(results: pd.DataFrame, **kw) -> pd.DataFrame | Note:
    """:func:`~saliency_study.degradation.rankings`, or a Note without a measure that can be ranked."""
    r = dg.rankings(results, **kw)
    return r if len(r) else Note("No insertion or deletion AUCs on a measure that can be ranked.", title="Nothing to rank")


@notes_pass
def ranking_detail(ranks: pd.DataFrame, preset: str, experiment: str = "insertion", substrate: str = "black",
                   role: str = "value") -> pd.DataFrame | Note:
    """:func:`~saliency_study.degradation.ranking_detail` of the agent with ``preset``, or a Note saying why not."""
    agent = dg.pick_agent(ranks, preset)
    if agent is None:
        return no_agent(preset, "ranking")
    out = dg.ranking_detail(ranks, agent, experiment, substrate, role)
    if out.attrs["measure"] is None:
        dropped = [measure_label(m) for m, r in dg.MEASURE_ROLE.items() if r == role and m in DEGENERATE_MEASURES]
        why = f" The {' and '.join(dropped)} is not ranked: it is degenerate." if dropped else ""
        return Note(f"{agent_label(agent)} has no ranked measure in the {role} role.{why}", title="Not ranked")
    return out


significance_counts = notes_pass(dg.significance_counts)


# -- against the paper -----------------------------------------------------------------------------

def _not_in_paper(game: str) -> Note:
    return Note(f"Huber et al. evaluated {', '.join(PAPER_GAMES)}, not {game}; there is nothing to put beside our "
                "numbers.", title="Not in the paper")


@notes_pass
def side_by_side(summary: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """:func:`~saliency_study.agreement.side_by_side`, or a Note for a game the paper did not run."""
    return ag.side_by_side(summary, game) if game in PAPER_GAMES else _not_in_paper(game)


rank_agreement = notes_pass(ag.rank_agreement)
factors = notes_pass(ag.factors)


def agreement_counts(agreements: dict[str, pd.DataFrame | Note]) -> pd.DataFrame | Note:
    """:func:`~saliency_study.agreement.agreement_counts` of the sources that are not Notes."""
    t = ag.agreement_counts({k: a for k, a in agreements.items() if isinstance(a, pd.DataFrame) and len(a)})
    return t if len(t) else Note("No rank agreement to count.", title="No results")


def study_agreement(cfg: DegradationChapter, game: str) -> pd.DataFrame | Note:
    """:func:`~saliency_study.agreement.study_agreement` of ``cfg.study_profile``; a Note when the study has not
    run ``game``, or when every setting's means rest on fewer than :data:`~saliency_study.evidence.MIN_ESS`
    effective states."""
    a = ag.study_agreement(game, study_profile=cfg.study_profile, seed=cfg.seed, results_dir=cfg.results_dir)
    if a.empty:
        return Note(f"The paper-scale study has no insertion units of {game} yet.", title="Not yet run")
    if not (a["n_eff"] >= MIN_ESS).any():
        return Note(f"The paper-scale study's AUCs on {game} are withheld so far: {withheld_reason(a['n_eff'].max())}.",
                    title="Withheld")
    return a


@notes_pass
def mean_curve_table(cfg: DegradationChapter, results: pd.DataFrame) -> pd.DataFrame | Note:
    """:func:`~saliency_study.degradation.mean_curve_table` of the chapter's results."""
    return dg.mean_curve_table(results, profile=cfg.profile, game=cfg.game, seed=cfg.seed, results_dir=cfg.results_dir)


@notes_pass
def measure_degeneracy(results: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame | Note:
    """:func:`~saliency_study.degradation.measure_degeneracy`, or a Note without curves."""
    t = dg.measure_degeneracy(results, curves)
    return t if len(t) else Note("No insertion or deletion curves in the results.", title="No curves")


# -- the advantage stream ------------------------------------------------------------------------------

@notes_pass
def stream_results(cfg: DegradationChapter, results: pd.DataFrame, *, progress: bool = False) -> pd.DataFrame | Note:
    """:func:`~saliency_study.advantage_stream.stream_results` of the chapter's DQN agent, or a Note saying why
    it has no advantage stream."""
    try:
        spec = adv.stream_spec(results)
    except LookupError as e:
        return Note(f"{str(e)[0].upper()}{str(e)[1:]}.", title="No advantage stream")
    return adv.stream_results(spec, profile=cfg.profile, seed=cfg.seed, results_dir=cfg.results_dir,
                              executor=cfg.executor, progress=progress)


@notes_pass
def clean_outputs(cfg: DegradationChapter, stream: pd.DataFrame) -> pd.DataFrame:
    """:func:`~saliency_study.advantage_stream.clean_outputs` on the chapter's states."""
    return adv.clean_outputs(stream, results_dir=cfg.results_dir)


@notes_pass
def stream_agreement(results: pd.DataFrame, stream: pd.DataFrame, game: str, **kw) -> pd.DataFrame | Note:
    """:func:`~saliency_study.advantage_stream.stream_agreement`, or a Note for a game the paper did not run."""
    a = adv.stream_agreement(results, stream, game, **kw)
    return a if len(a) else _not_in_paper(game)


def stream_better(agreement: pd.DataFrame | Note) -> dict[str, object]:
    """:func:`~saliency_study.advantage_stream.stream_better`; "–" for both counts without an agreement table."""
    return {"better": "–", "settings": "–"} if isinstance(agreement, Note) else adv.stream_better(agreement)
