"""Chapter 4 (Input degradation): insertion and deletion AUCs, the paper's tables beside ours, rankings.

The notebook (``notebooks/04_degradation.py``) says what the tables show; :mod:`saliency_book.ch4_paper`
compares with Huber et al. and :mod:`saliency_book.ch4_figures` draws and styles. Every number comes
from the study's result table (experiments ``"insertion"`` and ``"deletion"``); nothing here scores a
map. Functions whose input is missing return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note, as_count, describe_params
from saliency_book.config import ChapterConfig, as_float
from saliency_book.maps import as_methods
from saliency_study import paper as huber
from saliency_study.evidence import DEGENERATE_MEASURES, MIN_STATES
from saliency_study.profiles import get_profile, profile_settings

__all__ = [
    "DegradationChapter", "PAPER_AUC", "PAPER_GAMES", "PAPER_METHODS", "PAPER_SUBSTRATES", "MEASURE_ROLE",
    "MEASURE_LABELS", "PAPER_ANALOGUE", "SHORT_LABELS", "agent_label", "short_label", "measure_label", "pick_agent",
    "no_agent", "notes_pass", "chapter_agents", "degradation_results", "sweep_table", "auc_rows", "measures_of",
    "auc_summary", "best_non_random", "paper_layout_table", "our_auc_table", "rankings", "vs_random",
    "ranking_detail", "significance_counts",
]

DEGRADATION_EXPERIMENTS = ("insertion", "deletion")
PAPER_SUBSTRATES = ("black", "random")
"""Substrates of Huber et al.'s insertion metric; ``blur`` and deletion are this study's additions."""
PAPER_GAMES = MappingProxyType({"MsPacman": "Pac-Man", "Breakout": "Breakout", "Frostbite": "Frostbite",
                                "SpaceInvaders": "Space Inv."})
"""Our game name → the name in Huber et al.'s tables, in their row order."""
PAPER_METHODS = ("occlusion", "ns_original", "sarfa", "rise", "lime_felzenszwalb", "lime_quickshift", "lime_slic",
                 "random")
"""Registry names of the columns of Huber et al.'s tables, in their order (their NS is ``noise_3_1``, the
original score with blur: our ``ns_original``)."""
SHORT_LABELS = MappingProxyType({
    "occlusion": "Occl", "ns_original": "NS", "ns_chosen": "NS chosen", "ns_black": "NS black", "sarfa": "SARFA",
    "rise": "RISE", "lime_felzenszwalb": "LIME-Felz", "lime_quickshift": "LIME-Quick", "lime_slic": "LIME-SLIC",
    "gradient": "Gradient", "integrated_gradients": "IG", "gradcam": "Grad-CAM", "mask_policy": "Mask policy",
    "mask_value": "Mask value", "random": "Rnd"})
"""Short column labels (the paper's where it has the method)."""
MEASURE_ROLE = MappingProxyType({"q_ratio": "value", "advantage": "action", "value": "value", "prob": "action"})
"""What a measure follows (Huber et al.'s first factor, reference §7): the agent's estimate of the state's
worth (``value``: the Q-ratio, or V for actor-critic agents) or its choice of action (``action``: the
advantage, or the policy probability)."""
MEASURE_LABELS = MappingProxyType({"q_ratio": "Q-ratio", "advantage": "advantage", "value": "state value V",
                                   "prob": "policy probability"})
SHORT_MEASURES = MappingProxyType({"q_ratio": "Q-ratio", "advantage": "advantage", "value": "V", "prob": "π(a)"})
PAPER_ANALOGUE = MappingProxyType({"q_ratio": "q_ratio", "advantage": "advantage", "value": "q_ratio",
                                   "prob": "advantage"})
"""Our measure → the paper's measure it is compared with (``value`` and ``prob``: analogues by role,
comparable by rank only)."""


def _paper_auc() -> pd.DataFrame:
    p = huber.paper_insertion("main")
    p = p[p["method"].isin(PAPER_METHODS)].assign(experiment="insertion")
    order = {m: i for i, m in enumerate(PAPER_METHODS)}
    p = p.sort_values(["game", "substrate", "measure", "method"], key=lambda c: c.map(order) if c.name == "method" else c)
    df = p[["game", "experiment", "substrate", "measure", "method", "mean", "std", "n"]].reset_index(drop=True)
    return df.astype({"game": "string", "experiment": "string", "substrate": "string", "measure": "string",
                      "method": "string", "mean": "float64", "std": "float64", "n": "int64"})


PAPER_AUC: pd.DataFrame = _paper_auc()
"""Huber et al.'s insertion AUCs (their tables, reference notes §6.1): mean ± std over 997 states per game,
substrate, measure (``q_ratio``: their "Q-value"; ``advantage``) and method (:data:`PAPER_METHODS`),
read through :func:`saliency_study.paper.paper_insertion`. Every cell is present."""


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
    stream = spec.startswith("advstream:")
    return f"DQN{', advantage stream' if stream else ''} ({os.path.basename(spec.removeprefix('advstream:').rstrip('/'))})"


@functools.lru_cache(maxsize=32)
def _preset(spec: str) -> str:
    from saliency_lib.agents import load_agent

    return load_agent(spec).preset


def pick_agent(results: pd.DataFrame | Note, preset: str) -> str | None:
    """The first agent of ``results`` with the preprocessing ``preset`` (``"dqn"`` or ``"mask_a3c"``), or None."""
    if isinstance(results, Note):
        return None
    return next((a for a in dict.fromkeys(results["agent"]) if _preset(str(a)) == preset), None)


def notes_pass(func):
    """A Note among the positional arguments is returned as is, so a missing input stays visible downstream."""
    @functools.wraps(func)
    def wrapper(*args, **kw):
        note = next((a for a in args if isinstance(a, Note)), None)
        return note if note is not None else func(*args, **kw)

    return wrapper


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
    """Family-wise significance level of the Holm-corrected paired block-bootstrap tests."""
    confidence: float = 0.95
    """Level of the bootstrap confidence intervals and bands."""
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
        """Bootstrap resamples of the CIs and bands (:attr:`~saliency_study.profiles.Profile.bootstrap_resamples`)."""
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
    """The study's insertion and deletion rows of the chapter's agents.

    The study's sweeps (:func:`~saliency_study.study.profile_specs`) restricted to insertion and deletion:
    their units, and so their stored files, are those of :func:`~saliency_study.study.study_results`, so
    the chapter reads what a study run stored and computes only what is missing.
    """
    from saliency_lib.sweep import run_sweep
    from saliency_study.study import profile_specs

    agents = chapter_agents(cfg)
    if not agents:
        return Note(f"No agent to evaluate for {cfg.game}: no study DQN agent exists yet and the official Mask-A3C "
                    "checkpoint is not fetched (`make fetch-official`).", kind="warning", title="No agent")
    specs = profile_specs(cfg.profile, cfg.game, agents=agents, seed=cfg.seed, results_dir=cfg.results_dir,
                          n_states=cfg.n_states, methods=cfg.methods)
    tables = [run_sweep(dataclasses.replace(s, experiments=DEGRADATION_EXPERIMENTS), executor=cfg.executor,
                        results_dir=cfg.results_dir, progress=progress).table for s in specs]
    df = pd.concat(tables, ignore_index=True)
    df = df[df["experiment"].isin(DEGRADATION_EXPERIMENTS)].reset_index(drop=True)
    df.attrs["results_dir"] = str(cfg.results_dir)  # where the figures find the rows' mean curves (by unit key)
    return df


@notes_pass
def sweep_table(cfg: DegradationChapter, results: pd.DataFrame) -> pd.DataFrame:
    """Per agent of ``results``: its states and the explainer parameters coarser than Huber et al.'s final ones."""
    from saliency_study.profiles import sweep_sizes

    rows = []
    for spec in dict.fromkeys(results["agent"]):
        params = sweep_sizes(cfg.profile, _preset(str(spec)))[2]
        rows.append({"agent": spec, "states": results.loc[results["agent"] == spec, "state"].nunique(),
                     "coarser parameters": describe_params(params, label=short_label, sep="=") if params else "none"})
    return pd.DataFrame(rows)


# -- AUCs ------------------------------------------------------------------------------------------

def auc_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Per-state AUC rows (the paper's plain-mean AUC, ``<measure>_auc``), ``measure`` without the suffix."""
    t = results[results["step"].isna()]
    t = t[t["measure"].str.endswith("_auc")]
    return t.assign(measure=t["measure"].str.removesuffix("_auc")).reset_index(drop=True)


def measures_of(results: pd.DataFrame, agent: str) -> list[str]:
    """The curve measures stored for ``agent``, value role first (e.g. ``["q_ratio", "advantage"]``)."""
    t = auc_rows(results)
    present = list(dict.fromkeys(t.loc[t["agent"] == agent, "measure"]))
    return sorted(present, key=lambda m: ({"value": 0, "action": 1}.get(MEASURE_ROLE.get(m, ""), 2), m))


@notes_pass
def auc_summary(results: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
                ) -> pd.DataFrame:
    """Mean, std (ddof 0, as the paper) and bootstrap CI of the AUC per agent, setting and method: columns
    ``agent, experiment, substrate, measure, method, n, n_nan, mean, std, ci_low, ci_high, higher_is_better``."""
    from saliency_lib.metrics import summarise

    t = auc_rows(results)
    s = summarise(t, by=["agent", "experiment", "substrate", "measure", "method"], confidence=confidence,
                  n_resamples=n_resamples, seed=seed)
    hib = t.groupby(["experiment"])["higher_is_better"].first().astype(bool)
    return s.assign(higher_is_better=s["experiment"].map(hib))


def _pm(mean: float, std: float) -> str:
    return "NA" if pd.isna(mean) else f"{mean:.3f}±{std:.3f}".replace("-", "−")


def best_non_random(means: pd.Series, higher_is_better: bool = True) -> str | None:
    """The method with the best mean, the random map left out (None without one)."""
    m = means.drop(labels=["random"], errors="ignore").dropna()
    return None if m.empty else m.idxmax() if higher_is_better else m.idxmin()


def _cells(rows: list, index, columns: list[str], best: dict) -> pd.DataFrame:
    out = pd.DataFrame(rows, index=index, columns=[short_label(m) for m in columns])
    out.attrs["best"] = {k: (short_label(v) if v else None) for k, v in best.items()}
    return out


@notes_pass
def paper_layout_table(summary: pd.DataFrame, substrate: str, paper_measure: str) -> pd.DataFrame:
    """One of Huber et al.'s four insertion tables, our agents' rows under the paper's.

    Rows: the paper's games, then one row per agent of ``summary`` on the measure whose
    :data:`PAPER_ANALOGUE` is ``paper_measure`` (none on a measure of
    :data:`~saliency_study.evidence.DEGENERATE_MEASURES`). Columns: the paper's methods in its order,
    then our other methods. Cells ``mean±std``; ``attrs["best"]``: each row's best non-random method.
    """
    if substrate not in PAPER_SUBSTRATES or paper_measure not in ("q_ratio", "advantage"):
        raise ValueError(f"the paper has insertion tables for substrates {PAPER_SUBSTRATES} and measures "
                         f"('q_ratio', 'advantage'), got substrate={substrate!r}, measure={paper_measure!r}")
    ours = summary[(summary["experiment"] == "insertion") & (summary["substrate"] == substrate)
                   & (summary["measure"].map(PAPER_ANALOGUE) == paper_measure)
                   & ~summary["measure"].isin(list(DEGENERATE_MEASURES))]
    extra = [m for m in dict.fromkeys(ours["method"]) if m not in PAPER_METHODS]
    cols = list(PAPER_METHODS) + sorted(extra, key=lambda m: list(SHORT_LABELS).index(m) if m in SHORT_LABELS else 99)
    paper = PAPER_AUC[(PAPER_AUC["substrate"] == substrate) & (PAPER_AUC["measure"] == paper_measure)]
    groups = [(f"Huber et al.: {label}", paper[paper["game"] == game]) for game, label in PAPER_GAMES.items()]
    groups += [(f"Ours: {agent_label(a)}" + ("" if m == paper_measure else f", {measure_label(m)}"), g)
               for (a, m), g in ours.groupby(["agent", "measure"], sort=False)]
    rows, best = [], {}
    for label, g in groups:
        g = g.set_index("method")
        rows.append([_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in cols])
        best[label] = best_non_random(g["mean"])
    return _cells(rows, pd.Index([label for label, _ in groups]), cols, best)


@notes_pass
def our_auc_table(summary: pd.DataFrame, preset: str) -> pd.DataFrame | Note:
    """Every setting of the agent with ``preset``: rows (experiment, substrate, measure), columns methods.

    Cells ``mean±std``; ``attrs["best"]``: the best non-random method per row (insertion: highest,
    deletion: lowest), None on a degenerate measure (labelled "not ranked").
    """
    agent = pick_agent(summary, preset)
    if agent is None:
        return no_agent(preset, "AUC table")
    s = summary[summary["agent"] == agent]
    methods = [m for m in SHORT_LABELS if m in set(s["method"])] + sorted(set(s["method"]) - set(SHORT_LABELS))
    subs = {"black": 0, "random": 1, "blur": 2}
    keys = sorted(s.groupby(["experiment", "substrate", "measure"]).groups, key=lambda k: (
        DEGRADATION_EXPERIMENTS.index(k[0]), subs.get(k[1], 9), {"value": 0, "action": 1}.get(MEASURE_ROLE.get(k[2]), 2), k[2]))
    rows, index, best = [], [], {}
    for exp, sub, meas in keys:
        g = s[(s["experiment"] == exp) & (s["substrate"] == sub) & (s["measure"] == meas)].set_index("method")
        degenerate = meas in DEGENERATE_MEASURES  # shown, not ranked: no best method in bold
        index.append((exp, sub, SHORT_MEASURES.get(meas, meas) + (" (not ranked)" if degenerate else "")))
        rows.append([_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in methods])
        best[index[-1]] = None if degenerate else best_non_random(g["mean"], bool(g["higher_is_better"].iloc[0]))
    return _cells(rows, pd.MultiIndex.from_tuples(index, names=["Experiment", "Substrate", "Measure"]), methods, best)


# -- rankings --------------------------------------------------------------------------------------

@notes_pass
def rankings(results: pd.DataFrame, *, alpha: float = 0.05, confidence: float = 0.95, n_resamples: int = 2000,
             seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_lib.metrics.ranking_table` of the AUC per agent, experiment, substrate and measure, stacked.

    Insertion ranks higher-is-better, deletion lower-is-better; the paired tests are block-bootstrap tests in
    the states' order, none significant below :data:`~saliency_study.evidence.MIN_STATES` states; a measure of
    :data:`~saliency_study.evidence.DEGENERATE_MEASURES` is not ranked.
    """
    from saliency_lib.metrics import ranking_table

    t = auc_rows(results)
    t = t[~t["measure"].isin(list(DEGENERATE_MEASURES))]
    if t.empty:
        return Note("No insertion or deletion AUCs on a measure that can be ranked.", title="Nothing to rank")
    front = ["agent", "experiment", "substrate", "measure"]
    parts = []
    for key, g in t.groupby(front, sort=False):
        hib = bool(g["higher_is_better"].iloc[0])
        r = ranking_table(g, higher_is_better=hib, alpha=alpha, confidence=confidence, n_resamples=n_resamples,
                          seed=seed, test="block", min_n=MIN_STATES)
        parts.append(r.assign(**dict(zip(front, key)), higher_is_better=hib))
    out = pd.concat(parts, ignore_index=True)
    return out[front + [c for c in out.columns if c not in front]]


def vs_random(row) -> int:
    """+1: significantly better than the random map; −1: significantly worse; 0: neither."""
    return 1 if "random" in str(row["better_than"]).split(", ") else -1 if "random" in str(row["worse_than"]).split(
        ", ") else 0


@notes_pass
def ranking_detail(ranks: pd.DataFrame, preset: str, experiment: str = "insertion", substrate: str = "black",
                   role: str = "value") -> pd.DataFrame | Note:
    """The ranking of one setting of the agent with ``preset`` (rank, mean, CI, significant differences);
    ``role`` picks the measure (:data:`MEASURE_ROLE`); ``attrs`` name the setting."""
    agent = pick_agent(ranks, preset)
    if agent is None:
        return no_agent(preset, "ranking")
    measure = next((m for m in dict.fromkeys(ranks.loc[ranks["agent"] == agent, "measure"])
                    if MEASURE_ROLE.get(m) == role), None)
    if measure is None:
        dropped = [measure_label(m) for m, r in MEASURE_ROLE.items() if r == role and m in DEGENERATE_MEASURES]
        why = f" The {' and '.join(dropped)} is not ranked: it is degenerate." if dropped else ""
        return Note(f"{agent_label(agent)} has no ranked measure in the {role} role.{why}", title="Not ranked")
    r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == experiment) & (ranks["substrate"] == substrate)
              & (ranks["measure"] == measure)]
    out = r[["rank", "method", "n", "mean", "std", "ci_low", "ci_high", "better_than", "worse_than"]].assign(
        **{c: r[c].map(lambda s: ", ".join(short_label(m) for m in s.split(", ")) if s else "")
           for c in ("better_than", "worse_than")}).reset_index(drop=True)
    out.attrs.update(agent=agent, experiment=experiment, substrate=substrate, measure=measure)
    return out


@notes_pass
def significance_counts(ranks: pd.DataFrame) -> pd.DataFrame:
    """Per agent: states and ESS range, settings, significant pairwise differences of all pairs, method ×
    setting cells significantly better or worse than the random map, and settings where the random map
    has the best mean (below :data:`~saliency_study.evidence.MIN_STATES` states nothing is significant)."""
    rows = []
    for agent, ra in ranks.groupby("agent", sort=False):
        groups = ra.groupby(["experiment", "substrate", "measure"], sort=False)
        beat = ra[ra["method"] != "random"].apply(vs_random, axis=1)
        rows.append({"agent": agent, "states": int(ra["n"].min()), "ess_low": ra["n_eff"].min(),
                     "ess_high": ra["n_eff"].max(), "settings": groups.ngroups,
                     "pairs": sum(len(g) * (len(g) - 1) // 2 for _, g in groups),
                     "significant": int(ra["better_than"].map(lambda s: len(s.split(", ")) if s else 0).sum()),
                     "beat random": int((beat == 1).sum()), "lose to random": int((beat == -1).sum()),
                     "cells": len(beat), "random first": int(((ra["method"] == "random") & (ra["rank"] == 1)).sum())})
    return pd.DataFrame(rows)
