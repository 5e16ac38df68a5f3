"""Chapter 3 (Sanity checks): the chapter's configuration and its results, read through the study.

:mod:`saliency_study.sanity` and :mod:`saliency_study.tied_blocks` compute and judge the results; this
module reads them for the chapter's two agents and turns a missing agent or an empty table into a
:class:`~saliency_book.common.Note`; :mod:`saliency_book.ch3_figures` shows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from saliency_book.common import METHODS, ExplainedAgent, Note, as_count, chapter_agents, notes_pass, sweep_table
from saliency_book.config import ChapterConfig, as_float
from saliency_book.maps import as_methods
from saliency_lib.explainers import method_label
from saliency_study import sanity as sn
from saliency_study import tied_blocks as tb
from saliency_study.evidence import verdict_counts as _counts
from saliency_study.paper import GAME_LABELS
from saliency_study.profiles import profile_settings
from saliency_study.sanity import THRESHOLD

__all__ = ["SanityChapter", "SanityResults", "chapter_results", "chapter_verdicts", "verdict_counts", "extremes",
           "ns_findings", "layer_groups_table", "chapter_sweep_table", "ns_example", "tied_blocks", "tied_block_test",
           "tied_block_summary", "zero_share", "study_tied_block_tests", "precedents"]


@dataclass(frozen=True)
class SanityChapter(ChapterConfig):
    """Chapter 3's configuration: the common parameters, the verdict's threshold and the stored study."""

    threshold: float = THRESHOLD
    """A method passes when the upper bound of its Spearman similarity's interval after full randomisation is below this."""
    study_profile: str = "full"
    """Profile of the stored study that the comparisons with the paper read (they compute nothing)."""
    methods: tuple[str, ...] | None = None
    """The study's methods to sweep (list or comma-separated string); None: all of them."""
    n_states: int | None = None
    """States per agent of the sweep; None: the profile's."""

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "threshold", as_float("threshold", self.threshold, low=0, high=1,
                                                       low_open=True, high_open=True))
        profile_settings(self.study_profile)  # validates the name
        object.__setattr__(self, "methods", as_methods(self.methods))
        object.__setattr__(self, "n_states", as_count(self.n_states, "n_states"))


@dataclass
class SanityResults:
    """Per agent kind (``"dqn"``, ``"mask_a3c"``): the agent, its sanity rows, their summary and the
    random-map references; a Note where the agent is missing."""

    agents: dict[str, ExplainedAgent]
    tables: dict[str, pd.DataFrame | Note]
    summaries: dict[str, pd.DataFrame | Note]
    refs: dict[str, pd.DataFrame | Note]


def chapter_results(cfg: SanityChapter) -> SanityResults:
    """Sanity rows (:func:`~saliency_study.sanity.sanity_table`), summaries and random-map references of the
    chapter's two agents (DQN, Mask-A3C)."""
    dqn, mask = chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)
    agents = {"dqn": dqn, "mask_a3c": mask}
    tables = {k: sn.sanity_table(cfg.profile, cfg.game, a.spec, seed=cfg.seed, results_dir=cfg.results_dir,
                                 executor=cfg.executor, methods=cfg.methods, n_states=cfg.n_states)
              if a else a.note() for k, a in agents.items()}
    summaries = {k: notes_pass(sn.layer_summary)(t, seed=cfg.seed) for k, t in tables.items()}
    refs = {k: notes_pass(sn.reference_summary)(t, seed=cfg.seed) for k, t in tables.items()}
    return SanityResults(agents, tables, summaries, refs)


def chapter_verdicts(res: SanityResults, threshold: float = THRESHOLD) -> pd.DataFrame | Note:
    """:func:`~saliency_study.sanity.verdict_table` of every available agent (the gallery's method order),
    stacked, with the agent's name in ``title``."""
    parts = [sn.verdict_table(s, res.refs[k], threshold=threshold, order=METHODS).assign(title=res.agents[k].label)
             for k, s in res.summaries.items() if isinstance(s, pd.DataFrame) and len(s)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return Note("No sanity-check results: no agent is available for this game.", kind="warning", title="No results")
    return pd.concat(parts, ignore_index=True)


verdict_counts = notes_pass(_counts)


def extremes(verdicts: pd.DataFrame | Note, title: str) -> tuple[str, str]:
    """The most and the least similar method of agent ``title`` after full randomisation, by the means:
    "Name (ρ = 0.95)" each, "–" without two methods."""
    v = pd.DataFrame() if isinstance(verdicts, Note) else verdicts[verdicts["title"] == title].dropna(subset=["spearman"])
    if len(v) < 2:
        return "–", "–"
    return tuple(f"{method_label(r['method'])} (ρ = {r['spearman']:.2f})"
                 for r in (v.loc[v["spearman"].idxmax()], v.loc[v["spearman"].idxmin()]))


def ns_findings(res: SanityResults) -> pd.DataFrame | Note:
    """:func:`~saliency_study.sanity.ns_table` of the available agents, by their names."""
    t = sn.ns_table({res.agents[k].label: s for k, s in res.summaries.items() if isinstance(s, pd.DataFrame)})
    return t if len(t) else Note("No Noise Sensitivity results to compare.", title="No results")


def layer_groups_table(agents: Sequence[ExplainedAgent], device: str = "cpu") -> pd.DataFrame | Note:
    """The cascade of each available agent (:func:`~saliency_study.sanity.layer_groups`)."""
    parts = [sn.layer_groups(a.spec, device).assign(Agent=a.label) for a in agents if a]
    if not parts:
        return Note("No agent is available for this game.", kind="warning", title="No agents")
    t = pd.concat(parts, ignore_index=True)
    return t[["Agent", *[c for c in t.columns if c != "Agent"]]]


def chapter_sweep_table(cfg: SanityChapter, agents: Sequence[ExplainedAgent]) -> pd.DataFrame | Note:
    """:func:`~saliency_book.common.sweep_table` of the available agents in ``cfg.profile``."""
    specs = {a.label: a.spec for a in agents if a}
    return sweep_table(cfg.profile, specs, {spec: cfg.n_states for spec in specs.values()} if cfg.n_states else None)


def ns_example(cfg: SanityChapter, who: ExplainedAgent, table: pd.DataFrame | Note, *, state: int | None = None):
    """:func:`~saliency_study.sanity.ns_example` of the chapter's agent ``who``; its Note when it is missing."""
    if isinstance(table, Note) or not who:
        return table if isinstance(table, Note) else who.note()
    return sn.ns_example(who.spec, table, profile=cfg.profile, game=cfg.game, seed=cfg.seed, device=cfg.device,
                         results_dir=cfg.results_dir, state=state)


def tied_blocks(cfg: SanityChapter, who: ExplainedAgent, methods: Sequence[str] | None = None, *,
                n_states: int = tb.N_STATES) -> pd.DataFrame | Note:
    """:func:`~saliency_study.tied_blocks.tied_blocks` of the chapter's agent ``who``; its Note when it is missing."""
    if not who:
        return who.note()
    return tb.tied_blocks(who.spec, profile=cfg.profile, game=cfg.game, methods=methods, n_states=n_states,
                          seed=cfg.seed, device=cfg.device, results_dir=cfg.results_dir)


tied_block_test = notes_pass(tb.tied_block_test)
tied_block_summary = notes_pass(tb.tied_block_summary)


def zero_share(table: pd.DataFrame | Note) -> str:
    """:func:`~saliency_study.tied_blocks.zero_share` in per cent ("–": none)."""
    share = float("nan") if isinstance(table, Note) else tb.zero_share(table)
    return "–" if share != share else f"{share:.0%}"


def study_tied_block_tests(rows: pd.DataFrame, **kw) -> pd.DataFrame | Note:
    """:func:`~saliency_study.tied_blocks.study_tied_block_tests`, or a Note when the store holds none."""
    t = tb.study_tied_block_tests(rows, **kw)
    return t if len(t) else Note("The stored study holds no Spearman similarity outside the tied block yet, so the "
                                 "black-screen claim is not tested on it.", title="Not yet run")


def precedents(verdicts: pd.DataFrame | Note, who: ExplainedAgent, game: str, *, threshold: float = THRESHOLD,
               study: pd.DataFrame | None = None) -> pd.DataFrame | Note:
    """:func:`~saliency_study.sanity.precedents` of the chapter's agent ``who``, or a Note saying why there are none."""
    if isinstance(verdicts, Note):
        return verdicts
    if not who or game not in GAME_LABELS:
        return Note(f"Huber et al. have no sanity-check numbers to compare for {game} or this agent.", title="No paper")
    t = sn.precedents(verdicts, who.spec, game, threshold=threshold, study=study)
    return t if len(t) else Note(f"No method's map of the {who.label} keeps a mean Spearman similarity of "
                                 f"{threshold:.2f} or more once every layer is random.", title="No such method")
