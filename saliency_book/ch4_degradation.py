"""Chapter 4 (Input degradation): insertion and deletion curves, AUC tables beside Huber et al.'s, rankings.

The chapter's notebook (``notebooks/04_degradation.py``) only calls these functions.
Every number comes from the study's result table (:func:`saliency_study.study.study_results`
units, experiments ``"insertion"`` and ``"deletion"``); nothing here scores a map.

* :class:`DegradationChapter`: the chapter's frozen configuration.
* :func:`degradation_results`: the study's insertion/deletion rows of the chapter's agents
  (computes only the units that are not stored).
* :data:`PAPER_AUC`: Huber et al.'s insertion AUCs (reference notes §6.1), a typed table.
* :func:`auc_summary`, :func:`paper_layout_table`, :func:`our_auc_table`: AUC means and
  tables, the paper's four tables in their layout with our rows beside them.
* :func:`curve_bands`, :func:`curves_figure`: mean curves with moving-block bootstrap bands over states.
* :mod:`saliency_book.ch4_rankings`: the rankings, the paper's order beside ours and the sentences
  on both; :mod:`saliency_book.ch4_paper`: the paper's AUCs beside ours for every game.

Functions whose input is missing return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, fields
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note
from saliency_lib.games import game_info
from saliency_study.evidence import DEGENERATE_MEASURES
from saliency_study.paths import RESULTS_DIR

__all__ = [
    "DegradationChapter", "PAPER_AUC", "PAPER_GAMES", "PAPER_METHODS", "PAPER_SUBSTRATES", "MEASURE_ROLE",
    "MEASURE_LABELS", "PAPER_ANALOGUE", "SHORT_LABELS", "agent_label", "short_label", "measure_label", "pick_agent",
    "no_agent", "notes_pass", "chapter_agents", "degradation_results", "sweep_note", "auc_rows", "measures_of",
    "auc_summary", "best_non_random", "paper_layout_table", "our_auc_table",
]

DEGRADATION_EXPERIMENTS = ("insertion", "deletion")
PAPER_SUBSTRATES = ("black", "random")
"""Substrates of Huber et al.'s insertion metric; ``blur`` and deletion are this study's additions."""

PAPER_GAMES = MappingProxyType({"MsPacman": "Pac-Man", "Breakout": "Breakout", "Frostbite": "Frostbite",
                                "SpaceInvaders": "Space Inv."})
"""Our game name → the name in Huber et al.'s tables, in their row order."""

PAPER_METHODS = ("occlusion", "ns_original", "sarfa", "rise", "lime_felzenszwalb", "lime_quickshift", "lime_slic",
                 "random")
"""Registry names of the columns of Huber et al.'s tables, in their order (Occl, NS, SARFA, RISE,
LIME-Felz, LIME-Quick, LIME-SLIC, Rnd). Their NS is ``noise_3_1``, the original score with blur: our
``ns_original``."""

SHORT_LABELS = MappingProxyType({
    "occlusion": "Occl", "ns_original": "NS", "ns_chosen": "NS chosen", "ns_black": "NS black", "sarfa": "SARFA",
    "rise": "RISE", "lime_felzenszwalb": "LIME-Felz", "lime_quickshift": "LIME-Quick", "lime_slic": "LIME-SLIC",
    "gradient": "Gradient", "integrated_gradients": "IG", "gradcam": "Grad-CAM", "mask_policy": "Mask policy",
    "mask_value": "Mask value", "random": "Rnd",
})
"""Short column labels (the paper's where it has the method)."""

MEASURE_ROLE = MappingProxyType({"q_ratio": "value", "advantage": "action", "value": "value", "prob": "action"})
"""What a measure follows: the agent's estimate of the state's worth (``value``) or its choice of
action (``action``). Huber et al.'s first factor (reference §7): the Q-ratio of the chosen action
tracks the value estimate, the advantage tracks the action choice; for actor-critic agents the state
value V and the policy probability of the action play these roles."""

MEASURE_LABELS = MappingProxyType({"q_ratio": "Q-ratio", "advantage": "advantage", "value": "state value V",
                                   "prob": "policy probability"})
SHORT_MEASURES = {"q_ratio": "Q-ratio", "advantage": "advantage", "value": "V", "prob": "π(a)"}
SMALL = 'style="font-size: 0.82em"'
"""Table attribute of the wide tables, so that they fit the page."""

PAPER_ANALOGUE = MappingProxyType({"q_ratio": "q_ratio", "advantage": "advantage", "value": "q_ratio",
                                   "prob": "advantage"})
"""Our measure → the paper's measure it is compared with. ``q_ratio`` and ``advantage`` are the
paper's own definitions; ``value`` and ``prob`` (actor-critic agents) are analogues by role
(:data:`MEASURE_ROLE`), comparable by rank only."""


def _paper_auc() -> pd.DataFrame:
    from saliency_study.paper import paper_insertion

    p = paper_insertion("main")
    p = p[p["method"].isin(PAPER_METHODS)].assign(experiment="insertion")
    order = {m: i for i, m in enumerate(PAPER_METHODS)}
    p = p.sort_values(["game", "substrate", "measure", "method"], key=lambda c: c.map(order) if c.name == "method" else c)
    df = p[["game", "experiment", "substrate", "measure", "method", "mean", "std", "n"]].reset_index(drop=True)
    return df.astype({"game": "string", "experiment": "string", "substrate": "string", "measure": "string",
                      "method": "string", "mean": "float64", "std": "float64", "n": "int64"})


PAPER_AUC: pd.DataFrame = _paper_auc()
"""Huber et al.'s insertion AUCs: mean ± std over 997 states per game, substrate, measure and method.

Source: the main rows of ``data/reference/huber2021/insertion_mean_aucs.csv``, read through
:func:`saliency_study.paper.paper_insertion`: the official result files
``applications/atari/insertion_metric/results/<game>_mean_AUCS.csv`` (commit c534007d) of
belimmer/PerturbationSaliencyEvaluation, the paper's tables (reference notes §6.1). AUC = the plain mean of the 85 step values (our ``<measure>_auc``). Every cell of those
tables is present, so the table has no NA. Columns: ``game`` (our name, :data:`PAPER_GAMES`),
``experiment`` (``"insertion"``), ``substrate`` (``"black"``/``"random"``), ``measure``
(``"q_ratio"``: the paper's "Q-value" measure; ``"advantage"``), ``method`` (registry name,
:data:`PAPER_METHODS`), ``mean``, ``std``, ``n`` (states).
"""


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
    name = os.path.basename(spec.removeprefix("advstream:").rstrip("/"))
    return f"DQN{', advantage stream' if stream else ''} ({name})"


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
    kind = {"dqn": "DQN", "mask_a3c": "Mask-A3C"}.get(preset, preset)
    return Note(f"No {kind} agent in this chapter's results, so there is no {what} for it. "
                + ("The chapter shows one when its `agent` parameter names one, or, with `agent=None`, once a "
                   "study DQN agent is shipped in `data/agents` (or recorded by chapter 1)." if preset == "dqn" else
                   "The chapter shows one when its `agent` parameter names one (`official:<Game>`), or, with "
                   "`agent=None`, when the official Mask-A3C checkpoints are fetched (`make fetch-official`)."),
                title=f"No {kind} agent")


# -- configuration ---------------------------------------------------------------------------


def _as_int(value, name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _as_unit(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0 < v < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return v


@dataclass(frozen=True)
class DegradationChapter:
    """Configuration of chapter 4; every field is a parameter of the notebook."""

    game: str = "Breakout"
    """Atari game of the chapter."""
    agent: str | None = None
    """Agent spec, or several separated by commas; None: the study's agents of the game
    (:func:`~saliency_study.catalog.study_agents`)."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full``; it sizes the sweep (:class:`~saliency_study.profiles.Profile`)."""
    seed: int = 0
    """Seed of the sweep (random substrate, random maps)."""
    device: str = "cpu"
    """Torch device of the illustration figure (the sweep's units run on the CPU, one thread)."""
    results_dir: str = RESULTS_DIR
    """Where the sweep's units are stored (relative paths are under the repository root)."""
    executor: str = "local"
    """Executor of the missing units: ``local``, ``processes`` or ``ray``."""
    alpha: float = 0.05
    """Family-wise significance level of the Holm-corrected paired block-bootstrap tests."""
    confidence: float = 0.95
    """Level of the bootstrap confidence intervals and bands."""
    study_profile: str = "full"
    """Profile of the stored study that the per-game comparisons with the paper read (they compute nothing)."""

    def __post_init__(self):
        from saliency_lib.sweep import EXECUTORS
        from saliency_study.profiles import PROFILE_NAMES

        game_info(self.game)
        if self.agent in ("", "None"):
            object.__setattr__(self, "agent", None)
        for name in (self.profile, self.study_profile):
            if name not in PROFILE_NAMES:
                raise ValueError(f"unknown profile {name!r}; valid profiles are: {', '.join(PROFILE_NAMES)}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown executor {self.executor!r}; valid executors are: {', '.join(EXECUTORS)}")
        object.__setattr__(self, "seed", _as_int(self.seed, "seed"))
        object.__setattr__(self, "alpha", _as_unit(self.alpha, "alpha"))
        object.__setattr__(self, "confidence", _as_unit(self.confidence, "confidence"))

    @property
    def n_resamples(self) -> int:
        """Bootstrap resamples of the CIs and bands (:attr:`~saliency_study.profiles.Profile.bootstrap_resamples`)."""
        from saliency_study.profiles import get_profile

        return get_profile(self.profile).bootstrap_resamples

    def _repr_markdown_(self) -> str:
        from saliency_study.profiles import get_profile

        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self))
        sizes = "; ".join(f"{kind}: {n} states" for kind, (n, _, _) in get_profile(self.profile).sweep.items())
        return (f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** states per agent: {sizes}; "
                f"bootstrap resamples: {self.n_resamples}.\n")


# -- the study's rows ----------------------------------------------------------------------------

def chapter_agents(cfg: DegradationChapter) -> list[str]:
    """The agents of the chapter: ``cfg.agent``, or the study's agents of the game (DQN first)."""
    from saliency_study.catalog import study_agents

    if cfg.agent:
        return [a.strip() for a in cfg.agent.split(",") if a.strip()]
    return study_agents(cfg.game, results_dir=cfg.results_dir)


def degradation_results(cfg: DegradationChapter, *, progress: bool = False) -> pd.DataFrame | Note:
    """The study's insertion and deletion rows of the chapter's agents.

    The sweeps are the study's (:func:`~saliency_study.study.profile_specs`) restricted to
    the experiments ``insertion`` and ``deletion``: their units, and so their stored files, are
    those of :func:`~saliency_study.study.study_results`, so the chapter reads what a study
    run stored and computes only what is missing, without the sanity checks.
    """
    from saliency_lib.sweep import run_sweep
    from saliency_study.study import profile_specs

    agents = chapter_agents(cfg)
    if not agents:
        return Note(f"No agent to evaluate for {cfg.game}: no study DQN agent exists yet and the official Mask-A3C "
                    "checkpoint is not fetched (`make fetch-official`).", kind="warning", title="No agent")
    specs = profile_specs(cfg.profile, cfg.game, agents=agents, seed=cfg.seed, results_dir=cfg.results_dir)
    tables = [run_sweep(dataclasses.replace(s, experiments=DEGRADATION_EXPERIMENTS), executor=cfg.executor,
                        results_dir=cfg.results_dir, progress=progress).table for s in specs]
    df = pd.concat(tables, ignore_index=True)
    df = df[df["experiment"].isin(DEGRADATION_EXPERIMENTS)].reset_index(drop=True)
    df.attrs["results_dir"] = str(cfg.results_dir)  # where the figures find the rows' mean curves (by unit key)
    return df


def sweep_note(cfg: DegradationChapter, results: pd.DataFrame | Note):
    """Which agents the chapter shows, on how many states, with which explainer parameters (Markdown)."""
    from IPython.display import Markdown

    from saliency_book.common import describe_params
    from saliency_study.profiles import sweep_sizes

    if isinstance(results, Note):
        return results
    parts = []
    for spec in dict.fromkeys(results["agent"]):
        _, _, params = sweep_sizes(cfg.profile, _preset(str(spec)))
        states = results.loc[results["agent"] == spec, "state"].nunique()
        text = f"**{agent_label(spec)}**: {states} states"
        if params:
            coarse = describe_params(params, label=short_label, sep="=")
            text += (f", explainers with coarser parameters than the library's defaults, Huber et al.'s final "
                     f"parameters (profile `{cfg.profile}`: {coarse}); its numbers are therefore not those of the "
                     "final methods")
        else:
            text += ", explainers with the library's defaults (Huber et al.'s final parameters)"
        parts.append(text + ".")
    return Markdown(" ".join(parts))


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
    order = {"value": 0, "action": 1}
    return sorted(present, key=lambda m: (order.get(MEASURE_ROLE.get(m, ""), 2), m))


@notes_pass
def auc_summary(results: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
                ) -> pd.DataFrame:
    """Mean, std (ddof 0, as the paper) and bootstrap CI of the AUC per agent, setting and method.

    Returns
    -------
    DataFrame
        Columns ``agent, experiment, substrate, measure, method, n, n_nan, mean, std, ci_low,
        ci_high, higher_is_better``.
    """
    from saliency_lib.metrics import summarise

    t = auc_rows(results)
    by = ["agent", "experiment", "substrate", "measure", "method"]
    s = summarise(t, by=by, confidence=confidence, n_resamples=n_resamples, seed=seed)
    hib = t.groupby(["experiment"])["higher_is_better"].first().astype(bool)
    return s.assign(higher_is_better=s["experiment"].map(hib))


def _pm(mean: float, std: float) -> str:
    if pd.isna(mean):
        return "NA"
    return f"{mean:.3f}±{std:.3f}".replace("-", "−")


def best_non_random(means: pd.Series, higher_is_better: bool = True) -> str | None:
    m = means.drop(labels=["random"], errors="ignore").dropna()
    if m.empty:
        return None
    return m.idxmax() if higher_is_better else m.idxmin()


@notes_pass
def paper_layout_table(summary: pd.DataFrame, substrate: str, paper_measure: str) -> pd.DataFrame:
    """One of Huber et al.'s four insertion tables, with our agents' rows beside the paper's.

    Rows: the paper's games (its numbers), then one row per agent of ``summary`` (ours, on the
    measure whose :data:`PAPER_ANALOGUE` is ``paper_measure``; a measure of
    :data:`~saliency_study.evidence.DEGENERATE_MEASURES` has no row). Columns: the paper's methods in
    its order, then our other methods (NA in the paper's rows). Cells: ``mean±std`` strings;
    ``attrs["best"]`` maps each row to its best non-random method (bold in the paper).
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
    rows, best, index = [], {}, []
    for game, label in PAPER_GAMES.items():
        g = paper[paper["game"] == game].set_index("method")
        rows.append([_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in cols])
        index.append(f"Huber et al.: {label}")
        best[index[-1]] = best_non_random(g["mean"])
    for (agent, measure), g in ours.groupby(["agent", "measure"], sort=False):
        g = g.set_index("method")
        rows.append([_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in cols])
        suffix = "" if measure == paper_measure else f", {measure_label(measure)}"
        index.append(f"Ours: {agent_label(agent)}{suffix}")
        best[index[-1]] = best_non_random(g["mean"])
    out = pd.DataFrame(rows, index=pd.Index(index), columns=[short_label(m) for m in cols])
    out.attrs["best"] = {k: (short_label(v) if v else None) for k, v in best.items()}
    return out


@notes_pass
def our_auc_table(summary: pd.DataFrame, preset: str) -> pd.DataFrame | Note:
    """Every setting of the agent with ``preset``: rows (experiment, substrate, measure), columns methods.

    Cells ``mean±std``; ``attrs["best"]`` maps each row label to the best non-random method
    (insertion: highest, deletion: lowest AUC), None for a measure of
    :data:`~saliency_study.evidence.DEGENERATE_MEASURES` (labelled "not ranked"). A Note when there
    is no such agent.
    """
    agent = pick_agent(summary, preset)
    if agent is None:
        return no_agent(preset, "AUC table")
    s = summary[summary["agent"] == agent]
    methods = [m for m in SHORT_LABELS if m in set(s["method"])] + sorted(set(s["method"]) - set(SHORT_LABELS))
    rows, index, best = [], [], {}
    subs = {"black": 0, "random": 1, "blur": 2}
    keys = sorted(s.groupby(["experiment", "substrate", "measure"]).groups,
                  key=lambda k: (DEGRADATION_EXPERIMENTS.index(k[0]), subs.get(k[1], 9), {"value": 0, "action": 1}.get(MEASURE_ROLE.get(k[2]), 2), k[2]))
    for exp, sub, meas in keys:
        g = s[(s["experiment"] == exp) & (s["substrate"] == sub) & (s["measure"] == meas)].set_index("method")
        degenerate = meas in DEGENERATE_MEASURES  # shown, not ranked: no best method in bold
        label = (exp, sub, SHORT_MEASURES.get(meas, meas) + (" (not ranked)" if degenerate else ""))
        index.append(label)
        rows.append([_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in methods])
        b = None if degenerate else best_non_random(g["mean"], bool(g["higher_is_better"].iloc[0]))
        best[label] = short_label(b) if b else None
    out = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["Experiment", "Substrate", "Measure"]),
                       columns=[short_label(m) for m in methods])
    out.attrs["best"] = best
    return out

