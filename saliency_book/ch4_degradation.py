"""Chapter 4 (Input degradation): insertion and deletion curves, AUC tables beside Huber et al.'s, rankings.

The chapter's notebook (``notebooks/04_degradation.py``) only calls these functions.
Every number comes from the study's result table (:func:`saliency_lib.experiments.sweep.study_results`
units, experiments ``"insertion"`` and ``"deletion"``); nothing here scores a map.

* :class:`DegradationChapter`: the chapter's frozen configuration.
* :func:`degradation_results`: the study's insertion/deletion rows of the chapter's agents
  (computes only the units that are not stored).
* :data:`PAPER_AUC`: Huber et al.'s insertion AUCs (reference notes §6.1), a typed table.
* :func:`auc_summary`, :func:`paper_layout_table`, :func:`our_auc_table`: AUC means and
  tables, the paper's four tables in their layout with our rows beside them.
* :func:`curve_bands`, :func:`curves_figure`: mean curves with moving-block bootstrap bands over states.
* :func:`rankings`, :func:`style_rankings`, :func:`ranking_detail`: rankings with Holm-corrected
  paired block-bootstrap tests (:func:`saliency_lib.metrics.ranking_table`) per setting, on at
  least :data:`~saliency_book.evidence.MIN_STATES` states and never on a measure of
  :data:`~saliency_book.evidence.DEGENERATE_MEASURES`.
* :func:`side_by_side`, :func:`rank_agreement`: the paper's numbers beside ours for the
  chapter's game and the rank correlations between the two.
* :func:`factors_summary`, :func:`comparison_summary`, :func:`paper_factors_summary`:
  sentences formatted from the numbers.
* :func:`degraded_images`, :func:`degradation_figure`: what the agent sees along the paths.

Functions whose input is missing return a :class:`~saliency_book.common.Note`.
"""

# module-size: over 600 lines because the sentences this chapter generates from its numbers sit beside the
# tables they describe; its figures and styled tables are in the chapter's _figures module.

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, fields
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note, fmt2, join_words
from saliency_book.evidence import DEGENERATE_MEASURES, MIN_STATES, enough_states, too_few
from saliency_lib.experiments.paths import RESULTS_DIR
from saliency_lib.games import game_info

__all__ = [
    "DegradationChapter", "PAPER_AUC", "PAPER_GAMES", "PAPER_METHODS", "PAPER_SUBSTRATES", "MEASURE_ROLE",
    "MEASURE_LABELS", "PAPER_ANALOGUE", "SHORT_LABELS", "agent_label", "short_label", "chapter_agents",
    "degradation_results", "sweep_note", "auc_rows", "measures_of", "auc_summary", "pick_agent", "paper_layout_table", "our_auc_table", "rankings", "ranking_detail", "significance_summary", "side_by_side",
    "rank_agreement", "comparison_summary", "factors_summary", "paper_factors_summary",
]

DEGRADATION_EXPERIMENTS = ("insertion", "deletion")
PAPER_SUBSTRATES = ("black", "random")
"""Substrates of Huber et al.'s insertion metric; ``blur`` and deletion are this study's additions."""

PAPER_GAMES = MappingProxyType({"MsPacman": "Pac-Man", "Breakout": "Breakout", "Frostbite": "Frostbite",
                                "SpaceInvaders": "Space Inv."})
"""Our game name → the name in Huber et al.'s tables, in their row order."""
_GAME_NAMES = {"MsPacman": "Ms. Pac-Man", "SpaceInvaders": "Space Invaders"}

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
    from saliency_book.paper import paper_insertion

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
:func:`saliency_book.paper.paper_insertion`: the official result files
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
    (:func:`~saliency_lib.experiments.sweep.study_agents`)."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full``; it sizes the sweep (:class:`~saliency_lib.experiments.profiles.Profile`)."""
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
        from saliency_lib.experiments.executors import EXECUTORS
        from saliency_lib.experiments.profiles import PROFILE_NAMES

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
        """Bootstrap resamples of the CIs and bands (:attr:`~saliency_lib.experiments.profiles.Profile.bootstrap_resamples`)."""
        from saliency_lib.experiments.profiles import get_profile

        return get_profile(self.profile).bootstrap_resamples

    def _repr_markdown_(self) -> str:
        from saliency_lib.experiments.profiles import get_profile

        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self))
        sizes = "; ".join(f"{kind}: {n} states" for kind, (n, _, _) in get_profile(self.profile).sweep.items())
        return (f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** states per agent: {sizes}; "
                f"bootstrap resamples: {self.n_resamples}.\n")


# -- the study's rows ----------------------------------------------------------------------------

def chapter_agents(cfg: DegradationChapter) -> list[str]:
    """The agents of the chapter: ``cfg.agent``, or the study's agents of the game (DQN first)."""
    from saliency_lib.experiments.catalog import study_agents

    if cfg.agent:
        return [a.strip() for a in cfg.agent.split(",") if a.strip()]
    return study_agents(cfg.game, results_dir=cfg.results_dir)


def degradation_results(cfg: DegradationChapter, *, progress: bool = False) -> pd.DataFrame | Note:
    """The study's insertion and deletion rows of the chapter's agents.

    The sweeps are the study's (:func:`~saliency_lib.experiments.sweep.profile_specs`) restricted to
    the experiments ``insertion`` and ``deletion``: their units, and so their stored files, are
    those of :func:`~saliency_lib.experiments.sweep.study_results`, so the chapter reads what a study
    run stored and computes only what is missing, without the sanity checks.
    """
    from saliency_lib.experiments.executors import run_sweep
    from saliency_lib.experiments.study import profile_specs

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
    from saliency_lib.experiments.profiles import sweep_sizes

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


def _best_non_random(means: pd.Series, higher_is_better: bool = True) -> str | None:
    m = means.drop(labels=["random"], errors="ignore").dropna()
    if m.empty:
        return None
    return m.idxmax() if higher_is_better else m.idxmin()


@notes_pass
def paper_layout_table(summary: pd.DataFrame, substrate: str, paper_measure: str) -> pd.DataFrame:
    """One of Huber et al.'s four insertion tables, with our agents' rows beside the paper's.

    Rows: the paper's games (its numbers), then one row per agent of ``summary`` (ours, on the
    measure whose :data:`PAPER_ANALOGUE` is ``paper_measure``; a measure of
    :data:`~saliency_book.evidence.DEGENERATE_MEASURES` has no row). Columns: the paper's methods in
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
        best[index[-1]] = _best_non_random(g["mean"])
    for (agent, measure), g in ours.groupby(["agent", "measure"], sort=False):
        g = g.set_index("method")
        rows.append([_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in cols])
        suffix = "" if measure == paper_measure else f", {measure_label(measure)}"
        index.append(f"Ours: {agent_label(agent)}{suffix}")
        best[index[-1]] = _best_non_random(g["mean"])
    out = pd.DataFrame(rows, index=pd.Index(index), columns=[short_label(m) for m in cols])
    out.attrs["best"] = {k: (short_label(v) if v else None) for k, v in best.items()}
    return out


@notes_pass
def our_auc_table(summary: pd.DataFrame, preset: str) -> pd.DataFrame | Note:
    """Every setting of the agent with ``preset``: rows (experiment, substrate, measure), columns methods.

    Cells ``mean±std``; ``attrs["best"]`` maps each row label to the best non-random method
    (insertion: highest, deletion: lowest AUC), None for a measure of
    :data:`~saliency_book.evidence.DEGENERATE_MEASURES` (labelled "not ranked"). A Note when there
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
        b = None if degenerate else _best_non_random(g["mean"], bool(g["higher_is_better"].iloc[0]))
        best[label] = short_label(b) if b else None
    out = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["Experiment", "Substrate", "Measure"]),
                       columns=[short_label(m) for m in methods])
    out.attrs["best"] = best
    return out


# -- curves ----------------------------------------------------------------------------------------


# -- rankings --------------------------------------------------------------------------------------

@notes_pass
def rankings(results: pd.DataFrame, *, alpha: float = 0.05, confidence: float = 0.95, n_resamples: int = 2000,
             seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_lib.metrics.ranking_table` of the AUC per agent, experiment, substrate and measure.

    Insertion AUCs rank higher-is-better, deletion AUCs lower-is-better. The paired tests are
    block-bootstrap tests in the order of the states, and a setting with fewer than
    :data:`~saliency_book.evidence.MIN_STATES` states gets no significant difference. Measures
    of :data:`~saliency_book.evidence.DEGENERATE_MEASURES` are not ranked. Returns the ranking
    tables stacked, with the setting columns ``agent, experiment, substrate, measure`` in front.
    """
    from saliency_lib.metrics import ranking_table

    t = auc_rows(results)
    t = t[~t["measure"].isin(list(DEGENERATE_MEASURES))]
    if t.empty:
        return Note("No insertion or deletion AUCs on a measure that can be ranked.", title="Nothing to rank")
    parts = []
    for (agent, exp, sub, meas), g in t.groupby(["agent", "experiment", "substrate", "measure"], sort=False):
        r = ranking_table(g, higher_is_better=bool(g["higher_is_better"].iloc[0]), alpha=alpha,
                          confidence=confidence, n_resamples=n_resamples, seed=seed, test="block", min_n=MIN_STATES)
        parts.append(r.assign(agent=agent, experiment=exp, substrate=sub, measure=meas,
                              higher_is_better=bool(g["higher_is_better"].iloc[0])))
    out = pd.concat(parts, ignore_index=True)
    front = ["agent", "experiment", "substrate", "measure"]
    return out[front + [c for c in out.columns if c not in front]]


def _top_group(r: pd.DataFrame) -> list[str]:
    """Methods that no method beats significantly."""
    return r.loc[r["worse_than"] == "", "method"].tolist()


def vs_random(row) -> int:
    """+1: significantly better than the random map; −1: significantly worse; 0: neither."""
    if "random" in str(row["better_than"]).split(", "):
        return 1
    if "random" in str(row["worse_than"]).split(", "):
        return -1
    return 0


@notes_pass
def ranking_detail(ranks: pd.DataFrame, preset: str, experiment: str = "insertion", substrate: str = "black",
                   role: str = "value") -> pd.DataFrame | Note:
    """The full ranking table of one setting of the agent with ``preset`` (rank, mean, CI, significant differences).

    ``role`` picks the measure by :data:`MEASURE_ROLE` (``"value"``: Q-ratio or V; ``"action"``:
    advantage or policy probability). ``attrs["agent"]`` and ``attrs["measure"]`` name the setting.
    """
    agent = pick_agent(ranks, preset)
    if agent is None:
        return no_agent(preset, "ranking")
    measure = next((m for m in dict.fromkeys(ranks.loc[ranks["agent"] == agent, "measure"])
                    if MEASURE_ROLE.get(m) == role), None)
    if measure is None:
        dropped = [m for m, r in MEASURE_ROLE.items() if r == role and m in DEGENERATE_MEASURES]
        why = (f" The {join_words([measure_label(m) for m in dropped])} is not ranked: it is degenerate "
               "(see the section on the state value)." if dropped else "")
        return Note(f"{agent_label(agent)} has no ranked measure in the {role} role.{why}", title="Not ranked")
    r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == experiment) & (ranks["substrate"] == substrate)
              & (ranks["measure"] == measure)]
    lab = lambda s: ", ".join(short_label(m) for m in s.split(", ")) if s else ""  # noqa: E731
    out = pd.DataFrame({
        "Rank": r["rank"], "Method": r["method"].map(short_label), "States": r["n"], "Mean": r["mean"],
        "Std": r["std"], "CI low": r["ci_low"], "CI high": r["ci_high"],
        "Significantly better than": r["better_than"].map(lab), "Significantly worse than": r["worse_than"].map(lab),
    }).reset_index(drop=True)
    out.attrs.update(agent=agent, experiment=experiment, substrate=substrate, measure=measure)
    return out


@notes_pass
def significance_summary(ranks: pd.DataFrame, *, alpha: float = 0.05):
    """How many pairwise differences are significant per agent, with the states and their effective number (Markdown).

    Below :data:`~saliency_book.evidence.MIN_STATES` states it gives the means' order only and
    says that the states are too few for a verdict.
    """
    from IPython.display import Markdown

    out = []
    for agent, ra in ranks.groupby("agent", sort=False):
        n_states = int(ra["n"].max())
        ess = ra["n_eff"].dropna()
        ess_t = f", effective sample size {ess.min():.0f}–{ess.max():.0f}" if len(ess) else ""
        n_set = ra.groupby(["experiment", "substrate", "measure"]).ngroups
        rnd_first = int(((ra["method"] == "random") & (ra["rank"] == 1)).sum())
        head = f"**{agent_label(agent)}** ({n_states} states{ess_t}): "
        tail = f"The random map has the best mean AUC of all methods in {rnd_first} of {n_set} settings."
        if not enough_states(int(ra["n"].min())):
            out.append(head + f"{too_few(int(ra['n'].min()))} on which method is better, so the ranks below are only "
                       f"the order of the means (a verdict needs {MIN_STATES} states). " + tail)
            continue
        n_pairs = n_sig = 0
        for _, r in ra.groupby(["experiment", "substrate", "measure"], sort=False):
            k = len(r)
            n_pairs += k * (k - 1) // 2
            n_sig += int(r["better_than"].map(lambda s: len(s.split(", ")) if s else 0).sum())
        beat = ra[ra["method"] != "random"].apply(vs_random, axis=1)
        out.append(head + f"{n_sig} of {n_pairs} pairwise differences ({100 * n_sig / max(n_pairs, 1):.0f} %) are "
                   f"significant at a family-wise level of {alpha:g} per setting (paired block-bootstrap tests, Holm); "
                   f"a method beats the random map significantly in {int((beat == 1).sum())} and loses to it "
                   f"significantly in {int((beat == -1).sum())} of {len(beat)} method × setting cells. " + tail)
    dropped = [measure_label(m) for m in DEGENERATE_MEASURES]
    out.append(f"The {join_words(dropped)} is not ranked: it is degenerate (see the section on the state value).")
    return Markdown("\n\n".join(out))


# -- beside the paper ------------------------------------------------------------------------------

@notes_pass
def side_by_side(summary: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """The paper's insertion AUCs of ``game`` next to ours, for the methods both have.

    Returns
    -------
    DataFrame or Note
        One row per (agent, substrate, paper measure, method): ``agent, substrate, paper_measure,
        our_measure, method, paper_mean, paper_std, our_mean, our_std, n, paper_rank, our_rank``
        (rank 1 = highest AUC among the common methods of the setting). A Note if the paper has
        no table for ``game``.
    """
    if game not in PAPER_GAMES:
        return Note(f"Huber et al. evaluated {join_words(list(PAPER_GAMES))}, not {game}; there is nothing to put beside "
                    "our numbers.", title="Not in the paper")
    paper = PAPER_AUC[PAPER_AUC["game"] == game]
    ours = summary[(summary["experiment"] == "insertion") & summary["substrate"].isin(PAPER_SUBSTRATES)]
    ours = ours[ours["method"].isin(PAPER_METHODS)].assign(paper_measure=lambda d: d["measure"].map(PAPER_ANALOGUE))
    ours = ours.dropna(subset=["paper_measure"])
    ours = ours[~ours["measure"].isin(list(DEGENERATE_MEASURES))]  # not compared by rank: see DEGENERATE_MEASURES
    m = ours.merge(paper, left_on=["substrate", "paper_measure", "method"], right_on=["substrate", "measure", "method"],
                   suffixes=("_ours", "_paper"))
    out = pd.DataFrame({
        "agent": m["agent"], "substrate": m["substrate"], "paper_measure": m["paper_measure"],
        "our_measure": m["measure_ours"], "method": m["method"], "paper_mean": m["mean_paper"],
        "paper_std": m["std_paper"], "our_mean": m["mean_ours"], "our_std": m["std_ours"], "n": m["n_ours"]})
    key = ["agent", "substrate", "paper_measure"]
    out["paper_rank"] = out.groupby(key)["paper_mean"].rank(ascending=False, method="min").astype(int)
    out["our_rank"] = out.groupby(key)["our_mean"].rank(ascending=False, method="min").astype("Int64")
    order = {"method": {m: i for i, m in enumerate(PAPER_METHODS)}, "paper_measure": {"q_ratio": 0, "advantage": 1},
             "substrate": {s: i for i, s in enumerate(PAPER_SUBSTRATES)}}
    agents = {a: i for i, a in enumerate(dict.fromkeys(out["agent"]))}
    return out.sort_values(key + ["method"], key=lambda c: c.map(order.get(c.name, agents))).reset_index(drop=True)


def rank_agreement(side: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Spearman ρ and Kendall τ between the paper's and our method means, per agent and setting.

    Returns
    -------
    DataFrame or Note
        Columns ``agent, substrate, paper_measure, our_measure, methods, n`` (our fewest states of a
        common method), ``spearman, spearman_p, kendall, kendall_p, paper_best, our_best`` (best
        non-random common method) and
        ``paper_random_last`` / ``our_random_last`` (the random map has the lowest mean).
    """
    from scipy.stats import kendalltau, spearmanr

    if isinstance(side, Note):
        return side
    rows = []
    for (agent, sub, pm), g in side.groupby(["agent", "substrate", "paper_measure"], sort=False):
        g = g.dropna(subset=["our_mean"])
        rho = tau = p_rho = p_tau = np.nan
        if len(g) >= 3 and g["our_mean"].nunique() > 1:
            rho, p_rho = spearmanr(g["paper_mean"], g["our_mean"])
            tau, p_tau = kendalltau(g["paper_mean"], g["our_mean"])
        gi = g.set_index("method")
        rows.append({"agent": agent, "substrate": sub, "paper_measure": pm, "our_measure": g["our_measure"].iloc[0],
                     "methods": len(g), "n": int(g["n"].min()) if len(g) else 0,
                     "spearman": float(rho), "spearman_p": float(p_rho), "kendall": float(tau),
                     "kendall_p": float(p_tau), "paper_best": _best_non_random(gi["paper_mean"]),
                     "our_best": _best_non_random(gi["our_mean"]),
                     "paper_random_last": bool(gi["paper_mean"].idxmin() == "random") if "random" in gi.index else None,
                     "our_random_last": bool(gi["our_mean"].idxmin() == "random") if "random" in gi.index else None})
    return pd.DataFrame(rows)


def comparison_summary(agreement: pd.DataFrame | Note, game: str):
    """What reproduced and what did not, formatted from :func:`rank_agreement` (Markdown, or a Note)."""
    from IPython.display import Markdown

    if isinstance(agreement, Note):
        return agreement
    out = []
    for agent, a in agreement.groupby("agent", sort=False):
        analogue = bool((a["our_measure"] != a["paper_measure"]).any())
        same_best = a[a["paper_best"] == a["our_best"]]
        pos = a[a["spearman"] > 0]
        role = ", measures compared by role, so only the ranks are comparable" if analogue else ""
        text = (f"**{agent_label(agent)}** ({int(a['n'].min())} states{role}): "
                f"over the {int(a['methods'].max())} methods that both studies ran, our order of the mean AUCs agrees "
                f"positively with the paper's {game} order in {len(pos)} of {len(a)} settings")
        rho = a["spearman"].dropna()
        if len(rho):
            text += (f" (Spearman ρ from {fmt2(rho.min())} to {fmt2(rho.max())}, Kendall τ from {fmt2(a['kendall'].min())} "
                     f"to {fmt2(a['kendall'].max())})")
        sig = a[(a["spearman_p"] < 0.05) & (a["spearman"] > 0)]
        text += f"; the agreement is significant at 5 % in {len(sig)} of them."
        if len(same_best):
            settings = [f"{r.substrate} insertion with the {measure_label(r.our_measure)} ({short_label(r.our_best)})"
                        for r in same_best.itertuples()]
            text += f" The best non-random common method is the same as in the paper for {join_words(settings)}."
        else:
            text += " The best non-random common method differs from the paper's in every setting."
        rl = a.dropna(subset=["paper_random_last", "our_random_last"])
        agree_rl = int((rl["paper_random_last"] == rl["our_random_last"]).sum())
        text += (f" Whether the random map comes last agrees with the paper in {agree_rl} of {len(rl)} settings "
                 f"(last in the paper: {int(rl['paper_random_last'].sum())}; in ours: {int(rl['our_random_last'].sum())}).")
        out.append(text)
    return Markdown("\n\n".join(out))


def _winner(summary: pd.DataFrame, agent: str, experiment: str, substrate: str, measure: str) -> str | None:
    g = summary[(summary["agent"] == agent) & (summary["experiment"] == experiment) & (summary["substrate"] == substrate)
                & (summary["measure"] == measure)]
    if g.empty:
        return None
    return _best_non_random(g.set_index("method")["mean"], bool(g["higher_is_better"].iloc[0]))


def _order_corr(summary: pd.DataFrame, agent: str, a: tuple[str, str, str], b: tuple[str, str, str]) -> float:
    """Spearman ρ between the method means of two settings (experiment, substrate, measure) of one agent."""
    from scipy.stats import spearmanr

    s = summary[summary["agent"] == agent].set_index(["experiment", "substrate", "measure", "method"])["mean"]
    try:
        x, y = s.loc[a], s.loc[b]
    except KeyError:
        return float("nan")
    both = pd.concat([x, y], axis=1, join="inner").dropna()
    if len(both) < 3 or both.iloc[:, 0].nunique() < 2 or both.iloc[:, 1].nunique() < 2:
        return float("nan")
    return float(spearmanr(both.iloc[:, 0], both.iloc[:, 1])[0])


@notes_pass
def factors_summary(summary: pd.DataFrame, ranks: pd.DataFrame):
    """The two factors in our insertion results, formatted from the numbers (Markdown).

    Factor 1, what is explained: per substrate, the best non-random method under the value-role
    and the action-role measure (:data:`MEASURE_ROLE`) and the rank correlation of the method
    means between the two. Factor 2, the substrate: per measure, the best method on each substrate
    and the rank correlation between the black and random substrates (and blur).
    """
    from IPython.display import Markdown

    out = []
    for agent in dict.fromkeys(summary["agent"]):
        ms = [m for m in measures_of(summary.assign(step=pd.NA, measure=summary["measure"] + "_auc"), agent)
              if m in MEASURE_ROLE]
        vm = next((m for m in ms if MEASURE_ROLE[m] == "value"), None)
        am = next((m for m in ms if MEASURE_ROLE[m] == "action"), None)
        subs = [s for s in ("black", "random", "blur")
                if s in set(summary.loc[(summary["agent"] == agent) & (summary["experiment"] == "insertion"), "substrate"])]
        if vm in DEGENERATE_MEASURES:
            out.append(f"**{agent_label(agent)}**: the two factors are not read off, because its value-role measure, "
                       f"the {measure_label(vm)}, is degenerate and not ranked (see the section on the state value).")
            continue
        if vm is None or am is None or not subs:
            continue
        parts, differ = [], 0
        for s in subs:
            wv, wa = _winner(summary, agent, "insertion", s, vm), _winner(summary, agent, "insertion", s, am)
            differ += wv != wa
            rho = _order_corr(summary, agent, ("insertion", s, vm), ("insertion", s, am))
            rho_t = f", ρ = {fmt2(rho)}" if np.isfinite(rho) else ""
            parts.append(f"{s}: {short_label(wv)} vs {short_label(wa)}{rho_t}")
        f1 = (f"**{agent_label(agent)}, what is explained.** The best non-random method under the "
              f"{measure_label(vm)} and under the {measure_label(am)} differs on {differ} of {len(subs)} substrates "
              f"({'; '.join(parts)}; ρ: Spearman correlation of the method means under the two measures).")
        parts, changes = [], 0
        for m in (vm, am):
            wins = {s: _winner(summary, agent, "insertion", s, m) for s in subs}
            changes += len(set(wins.values())) > 1
            rho = _order_corr(summary, agent, ("insertion", "black", m), ("insertion", "random", m))
            rho_t = f"; black vs random ρ = {fmt2(rho)}" if np.isfinite(rho) else ""
            parts.append(f"{measure_label(m)}: " + ", ".join(f"{short_label(w)} on {s}" for s, w in wins.items()) + rho_t)
        f2 = (f"**{agent_label(agent)}, the substrate.** The best non-random method changes with the substrate for "
              f"{changes} of 2 measures ({'; '.join(parts)}).")
        r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == "insertion")]
        groups = r.groupby(["substrate", "measure"], sort=False)
        if all(len(_top_group(g)) == len(g) for _, g in groups):
            few = "" if r.empty or enough_states(int(r["n"].min())) else f"; {too_few(int(r['n'].min()))}"
            f3 = ("No method is significantly better than another in any insertion setting (Holm-corrected paired "
                  f"block-bootstrap tests{few}).")
        else:
            tops = [f"{s}/{measure_label(m)}: " + (f"all {len(g)} methods" if len(_top_group(g)) == len(g)
                                                    else join_words([short_label(x) for x in _top_group(g)]))
                    for (s, m), g in groups]
            f3 = "Top groups (no method significantly better, Holm-corrected paired block-bootstrap tests): " + "; ".join(tops) + "."
        n = int(summary.loc[summary["agent"] == agent, "n"].min())
        gate = [] if enough_states(n) else [f"*{too_few(n).capitalize()}: these sentences give the order of the means "
                                             "only.*"]
        out.append(" ".join([*gate, f1, f2, f3]))
    if not out:
        return Markdown("The results hold no pair of value and action measures, so the two factors cannot be read off.")
    return Markdown("\n\n".join(out))


def paper_factors_summary():
    """The two factors in Huber et al.'s own tables (:data:`PAPER_AUC`), formatted from their numbers (Markdown)."""
    from IPython.display import Markdown

    p = PAPER_AUC.set_index(["game", "substrate", "measure", "method"])["mean"].sort_index()
    games = list(PAPER_GAMES)

    def best(g, s, m):
        return _best_non_random(p.loc[(g, s, m)])

    f1 = {s: [g for g in games if best(g, s, "q_ratio") != best(g, s, "advantage")] for s in PAPER_SUBSTRATES}
    f2 = {m: [g for g in games if best(g, "black", m) != best(g, "random", m)] for m in ("q_ratio", "advantage")}
    sarfa = [g for g in games if best(g, "black", "advantage") == "sarfa"]
    rnd = [g for g in games if p.loc[(g, "random", "advantage")].idxmax() == "random"]
    text = (f"In Huber et al.'s tables, the best non-random method differs between the Q-value and the advantage measure "
            f"in {len(f1['black'])} of {len(games)} games under black insertion and in {len(f1['random'])} of "
            f"{len(games)} under random insertion; it differs between the black and the random substrate in "
            f"{len(f2['q_ratio'])} of {len(games)} games for the Q-value and {len(f2['advantage'])} of {len(games)} "
            f"for the advantage. SARFA is best under black insertion with the advantage in "
            f"{join_words([_GAME_NAMES.get(g, g) for g in sarfa])}; under random insertion with the advantage the random map "
            f"has the highest mean of all columns in {join_words([_GAME_NAMES.get(g, g) for g in rnd])}.")
    return Markdown(text)


# -- what the agent sees ---------------------------------------------------------------------------


