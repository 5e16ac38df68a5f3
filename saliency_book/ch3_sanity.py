"""Chapter 3 (Sanity checks): the tables of cascading parameter randomisation, ours and the paper's.

The notebook (``notebooks/03_sanity.py``) says what they show; :mod:`saliency_book.ch3_figures`
draws and styles them, :mod:`saliency_book.ch3_tied_blocks` splits a similarity at the black
screen's tied pixels. The similarities come from the study's sweep (experiment ``"sanity"``).
Every CI is a moving-block bootstrap over the states in trajectory order, reported with the
effective sample size (ESS); no verdict rests on fewer than
:data:`~saliency_study.evidence.MIN_STATES` states. A missing agent gives a Note.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from saliency_book.common import METHODS, ExplainedAgent, Note, as_count, chapter_agents, describe_params, load
from saliency_book.config import ChapterConfig, as_float
from saliency_book.maps import as_methods
from saliency_lib.explainers import method_label
from saliency_study import paper as huber
from saliency_study.evidence import MIN_STATES, TOO_FEW, enough_states
from saliency_study.profiles import profile_settings

__all__ = [
    "MEASURES", "NS_METHODS", "THRESHOLD", "CONFIDENCE", "MIN_STATES", "LEVELS", "SanityChapter", "SanityResults",
    "chapter_results", "sweep_specs", "sanity_results", "layer_summary", "reference_summary", "level_labels",
    "verdict", "verdict_table", "chapter_verdicts", "extremes", "ns_table", "verdict_counts", "layer_groups_table",
    "sweep_table", "model_at", "NSExample", "ns_example", "sanity_rows", "per_game", "pooled", "study_means",
    "precedents",
]

MEASURES = ("spearman", "ssim", "hog_pearson")
"""The paper's three similarity measures (reference §5), in display order."""
NS_METHODS = ("ns_original", "ns_chosen")
"""Noise Sensitivity as Greydanus et al. defined it, and Huber et al.'s chosen-action fix."""
THRESHOLD = 0.5
"""Default verdict threshold on the Spearman similarity after full randomisation (see :func:`verdict`)."""
CONFIDENCE = 0.95
"""Level of the moving-block bootstrap confidence intervals."""
LEVELS = (1, 5)
"""The levels compared with the paper: only the output layer random, and every layer random."""


@dataclass(frozen=True)
class SanityChapter(ChapterConfig):
    """Chapter 3's configuration: the common parameters, the verdict's threshold and the stored study."""

    threshold: float = THRESHOLD
    """A method passes when the upper CI bound of its Spearman similarity after full randomisation is below this."""
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


# -- the sweep's rows and their summaries ----------------------------------------------------------

def sweep_specs(cfg: SanityChapter, spec: str, methods: Sequence[str] | None = None):
    """The study's sweep specs of agent ``spec`` in ``cfg.profile``, reduced to the sanity experiment
    (the units, and so the stored results, of :func:`~saliency_study.study.study_results`);
    ``methods`` keeps a subset."""
    from saliency_study.study import profile_specs

    out = []
    for s in profile_specs(cfg.profile, cfg.game, agents=[spec], seed=cfg.seed, results_dir=cfg.results_dir,
                           n_states=cfg.n_states, methods=cfg.methods):
        keep = s.methods if methods is None else tuple(m for m in s.methods if m in set(methods))
        out.append(dataclasses.replace(s, experiments=("sanity",), methods=keep))
    return out


def sanity_results(cfg: SanityChapter, who: ExplainedAgent, *, methods: Sequence[str] | None = None
                   ) -> pd.DataFrame | Note:
    """The sanity rows of the study's table for one agent (``experiment == "sanity"``); units not stored
    yet are computed. The agent's Note when it is missing."""
    from saliency_lib.sweep import run_sweep

    if not who:
        return who.note()
    tables = [run_sweep(s, executor=cfg.executor, results_dir=cfg.results_dir, progress=False).table
              for s in sweep_specs(cfg, who.spec, methods)]
    t = pd.concat(tables, ignore_index=True)
    return t[t["experiment"] == "sanity"].reset_index(drop=True)


def layer_summary(table: pd.DataFrame, *, measures: Sequence[str] = MEASURES, confidence: float = CONFIDENCE,
                  seed: int = 0) -> pd.DataFrame:
    """Mean, std and bootstrap CI of each (agent, method, level, layer, measure) over the states
    (the random-map rows, ``level`` NA, are :func:`reference_summary`)."""
    from saliency_lib.metrics import summarise

    t = table[table["level"].notna() & table["measure"].isin(measures)]
    s = summarise(t, by=["agent", "method", "level", "layer", "measure"], confidence=confidence, seed=seed)
    if len(s):
        s["level"] = s["level"].astype(int)
    return s


def reference_summary(table: pd.DataFrame, *, measures: Sequence[str] = MEASURES, confidence: float = CONFIDENCE,
                      seed: int = 0) -> pd.DataFrame:
    """Similarity of the original maps with the uniform- and Gaussian-random maps, per (agent, method, layer, measure)."""
    from saliency_lib.metrics import REFERENCE_LAYERS, summarise

    t = table[table["layer"].isin(REFERENCE_LAYERS) & table["measure"].isin(measures)]
    return summarise(t, by=["agent", "method", "layer", "measure"], confidence=confidence, seed=seed)


@dataclass
class SanityResults:
    """Per agent kind (``"dqn"``, ``"mask_a3c"``): the agent, its sanity rows, their summary and the
    random-map references; a Note where the agent is missing."""

    agents: dict[str, ExplainedAgent]
    tables: dict[str, pd.DataFrame | Note]
    summaries: dict[str, pd.DataFrame | Note]
    refs: dict[str, pd.DataFrame | Note]


def chapter_results(cfg: SanityChapter) -> SanityResults:
    """Sanity rows, summaries and random-map references of the chapter's two agents (DQN, Mask-A3C)."""
    dqn, mask = chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)
    agents = {"dqn": dqn, "mask_a3c": mask}
    tables = {k: sanity_results(cfg, a) for k, a in agents.items()}
    summaries = {k: t if isinstance(t, Note) else layer_summary(t, seed=cfg.seed) for k, t in tables.items()}
    refs = {k: t if isinstance(t, Note) else reference_summary(t, seed=cfg.seed) for k, t in tables.items()}
    return SanityResults(agents, tables, summaries, refs)


def level_labels(summary: pd.DataFrame) -> list[tuple[int, str]]:
    """``(level, tick label)`` of a cascade: ``none``, the output group, then ``+ <group>`` …"""
    pairs = sorted(set(zip(summary["level"].astype(int), summary["layer"])))
    return [(lv, "none" if lv == 0 else name if lv == 1 else f"+ {name}") for lv, name in pairs]


# -- verdicts ---------------------------------------------------------------------------------------

def verdict(ci_low: float, ci_high: float, threshold: float = THRESHOLD, *, n: int | None = None,
            min_states: int = MIN_STATES) -> str:
    """``"passes"`` if the whole CI lies below ``threshold``, ``"fails"`` if it lies at or above it,
    ``"undecided"`` if it straddles it; ``"no data"`` without a CI and ``"too few states"`` when ``n``
    (finite values behind the CI) is below ``min_states``."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "no data"
    if n is not None and n < min_states:
        return TOO_FEW
    return "passes" if ci_high < threshold else "fails" if ci_low >= threshold else "undecided"


def verdict_table(summary: pd.DataFrame, refs: pd.DataFrame | None = None, *, threshold: float = THRESHOLD,
                  min_states: int = MIN_STATES) -> pd.DataFrame:
    """Per agent and method (the gallery's order): every measure after full randomisation and the verdict on Spearman.

    Columns ``agent, method, level, layer``, ``<measure>``, ``<measure>_low``, ``<measure>_high`` per
    measure, ``n, n_eff`` (of the Spearman similarities), ``random_spearman`` (mean Spearman similarity
    with a uniform-random map) and ``verdict`` (:func:`verdict` of the Spearman CI).
    """
    if summary.empty:
        return pd.DataFrame()
    top = summary[summary["level"] == summary.groupby(["agent", "method"])["level"].transform("max")]
    wide = top.pivot_table(index=["agent", "method", "level", "layer"], columns="measure", aggfunc="first",
                           values=["mean", "ci_low", "ci_high"], dropna=False)
    wide.columns = [m + {"mean": "", "ci_low": "_low", "ci_high": "_high"}[v] for v, m in wide.columns]
    spearman = top[top["measure"] == "spearman"].set_index(["agent", "method"])
    out = wide.reset_index().join(spearman[["n", "n_eff"]], on=["agent", "method"])
    ref = refs[(refs["layer"] == "random_uniform") & (refs["measure"] == "spearman")] if refs is not None and len(
        refs) else pd.DataFrame(columns=["agent", "method", "mean"])
    out = out.join(ref.set_index(["agent", "method"])["mean"].rename("random_spearman"), on=["agent", "method"])
    for m in ("spearman", "spearman_low", "spearman_high"):
        out[m] = out.get(m, np.nan)
    agents = {a: i for i, a in enumerate(dict.fromkeys(summary["agent"]))}
    rank = {m: i for i, m in enumerate(sorted(set(out["method"]), key=lambda m: (METHODS.index(m) if m in METHODS
                                                                                 else len(METHODS), m)))}
    out = out.sort_values(["agent", "method"], key=lambda c: c.map(agents if c.name == "agent" else rank))
    out["verdict"] = [verdict(lo, hi, threshold, n=None if pd.isna(n) else int(n), min_states=min_states)
                      for lo, hi, n in zip(out["spearman_low"], out["spearman_high"], out["n"])]
    return out.reset_index(drop=True)


def chapter_verdicts(res: SanityResults, threshold: float = THRESHOLD) -> pd.DataFrame | Note:
    """:func:`verdict_table` of every available agent, stacked, with the agent's name in ``title``."""
    parts = [verdict_table(s, res.refs[k], threshold=threshold).assign(title=res.agents[k].label)
             for k, s in res.summaries.items() if isinstance(s, pd.DataFrame) and len(s)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return Note("No sanity-check results: no agent is available for this game.", kind="warning", title="No results")
    return pd.concat(parts, ignore_index=True)


def extremes(verdicts: pd.DataFrame | Note, title: str) -> tuple[str, str]:
    """The most and the least similar method of agent ``title`` after full randomisation, by the means:
    "Name (ρ = 0.95)" each, "–" without two methods."""
    v = pd.DataFrame() if isinstance(verdicts, Note) else verdicts[verdicts["title"] == title].dropna(subset=["spearman"])
    if len(v) < 2:
        return "–", "–"
    return tuple(f"{method_label(r['method'])} (ρ = {r['spearman']:.2f})"
                 for r in (v.loc[v["spearman"].idxmax()], v.loc[v["spearman"].idxmin()]))


def verdict_counts(verdicts: pd.DataFrame | Note, by: str = "title") -> pd.DataFrame | Note:
    """How many methods get each verdict, per ``by`` (an agent or a game), with the most states behind one."""
    if isinstance(verdicts, Note):
        return verdicts
    counts = pd.crosstab(verdicts[by], verdicts["verdict"]).reindex(list(dict.fromkeys(verdicts[by])))
    return counts.assign(states=verdicts.groupby(by)["n"].max()).reset_index()


def ns_table(res: SanityResults) -> pd.DataFrame | Note:
    """NS original against NS chosen action once only the output layer (the heads) is random, per agent.

    Columns ``agent, layer, n, original, original_low, original_high, original_ess`` (and the same
    for ``chosen``) and ``finding``: whether Huber et al.'s finding holds (NS original stays more
    similar, the CIs apart), is reversed, not settled (overlapping CIs), or not judged below
    :data:`~saliency_study.evidence.MIN_STATES` states.
    """
    rows = []
    for kind, s in res.summaries.items():
        if isinstance(s, Note) or s.empty:
            continue
        first = s[(s["level"] == 1) & (s["measure"] == "spearman")].set_index("method")
        if not set(NS_METHODS) <= set(first.index):
            continue
        o, c = first.loc["ns_original"], first.loc["ns_chosen"]
        row = {"agent": res.agents[kind].label, "layer": o["layer"], "n": int(min(o["n"], c["n"]))}
        for name, r in (("original", o), ("chosen", c)):
            row.update({name: r["mean"], f"{name}_low": r["ci_low"], f"{name}_high": r["ci_high"],
                        f"{name}_ess": r["n_eff"]})
        if not enough_states(row["n"]):
            row["finding"] = TOO_FEW
        elif o["ci_low"] > c["ci_high"]:
            row["finding"] = "reproduced: NS original more similar"
        elif c["ci_low"] > o["ci_high"]:
            row["finding"] = "reversed: NS chosen action more similar"
        else:
            row["finding"] = "not settled: the CIs overlap" if o["mean"] > c["mean"] else "NS original not more similar"
        rows.append(row)
    return pd.DataFrame(rows) if rows else Note("No Noise Sensitivity results to compare.", title="No results")


# -- the test's set-up ------------------------------------------------------------------------------

def layer_groups_table(agents: Sequence[ExplainedAgent], device: str = "cpu") -> pd.DataFrame | Note:
    """The cascade of each available agent: level, layer group, its modules and parameter count."""
    rows = []
    for who in (a for a in agents if a):
        agent = load(who.spec, device)
        names = {id(m): n for n, m in agent.net.named_modules()}
        for level, (group, modules) in enumerate(agent.layer_groups(), start=1):
            rows.append({"Agent": who.label, "Level": level, "Layer group": group,
                         "Modules": ", ".join(names.get(id(m), type(m).__name__) for m in modules),
                         "Parameters": sum(p.numel() for m in modules for p in m.parameters())})
    return pd.DataFrame(rows) if rows else Note("No agent is available for this game.", kind="warning", title="No agents")


def sweep_table(cfg: SanityChapter, agents: Sequence[ExplainedAgent]) -> pd.DataFrame | Note:
    """Per available agent: its spec, the states its results cover, and the explainer parameters that
    differ from Huber et al.'s final ones in ``cfg.profile``."""
    from saliency_study.profiles import sweep_sizes

    rows = []
    for who in (a for a in agents if a):
        n, _, params = sweep_sizes(cfg.profile, load(who.spec, cfg.device).preset)
        rows.append({"agent": who.label, "spec": who.spec, "states": cfg.n_states or n,
                     "coarser parameters": describe_params(params, label=method_label) if params else "none"})
    return pd.DataFrame(rows) if rows else Note("No agent is available for this game.", kind="warning", title="No agents")


def model_at(agent, level: int, seed: int):
    """The sweep's model with the first ``level`` layer groups randomised (cascading, Glorot); 0: ``agent``."""
    from saliency_lib.metrics import randomised_models

    if level == 0:
        return agent
    return list(randomised_models(agent, order="cascading", init="glorot", seed=seed, levels=level))[-1][2]


# -- the Noise Sensitivity example ----------------------------------------------------------------

@dataclass
class NSExample:
    """NS original and NS chosen maps of one sweep state for the original and randomised models."""

    agent: ExplainedAgent
    preset: str
    frame: np.ndarray
    """Raw RGB frame of the state."""
    state: int
    """Index of the state in the sweep's state set (the ``state`` column)."""
    step: int
    action: int
    levels: list[tuple[int, str]]
    """``(level, name)`` of the models shown: 0 (original), 1 (output randomised), the last level."""
    maps: dict[tuple[str, int], np.ndarray]
    """``(method, level)`` → map at the agent's input resolution."""
    spearman: dict[tuple[str, int], float]
    """``(method, level)`` → Spearman similarity with the original model's map (sign-invariant, as the sweep)."""


def _median_state(table: pd.DataFrame) -> int:
    """The state whose NS-original Spearman similarity after the first level is the (lower) median."""
    t = table[(table["method"] == "ns_original") & (table["level"] == 1) & (table["measure"] == "spearman")]
    t = t.dropna(subset=["value"]).sort_values(["value", "state"], kind="stable")
    return int(table["state"].min()) if t.empty else int(t["state"].iloc[(len(t) - 1) // 2])


def ns_example(cfg: SanityChapter, who: ExplainedAgent, table: pd.DataFrame | Note, *,
               state: int | None = None) -> NSExample | Note:
    """NS original and NS chosen maps of one sweep state: original, output-randomised and fully randomised model.

    The sweep's models (cascading, Glorot, seed ``cfg.seed``), explainer parameters and states, so the
    similarities equal the table's rows for that state. ``state`` defaults to the state with the
    median NS-original similarity after the first level. Each map is cached as ``.npy`` under
    ``<results_dir>/_local/media``.
    """
    import torch

    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import ConstantMapWarning
    from saliency_lib.metrics.similarity import spearman
    from saliency_lib.results import config_hash
    from saliency_lib.sweep import spec_states
    from saliency_study.cache import cached_file

    if isinstance(table, Note):
        return table
    if not who:
        return who.note()
    torch.set_num_threads(1)
    agent = load(who.spec, cfg.device)
    spec = sweep_specs(cfg, who.spec)[0]
    states, scfg = spec_states(spec, who.spec, results_dir=cfg.results_dir)  # the sweep's own states and selection
    i = _median_state(table) if state is None else int(state)
    if not 0 <= i < len(states):
        raise ValueError(f"state must index the {len(states)} sweep states, got {state!r}")
    groups = agent.layer_groups()
    levels = [(0, "original"), (1, groups[0][0]), (len(groups), groups[-1][0])]
    target = int(states.actions[i])
    hidden = None if states.hidden is None else tuple(h[i:i + 1].to(agent.device) for h in states.hidden)
    x = states.states[i:i + 1].to(agent.device)
    maps: dict[tuple[str, int], np.ndarray] = {}
    for method in NS_METHODS:
        params = dict(spec.params.get(method, {}))
        explainer_config = {k: v for k, v in get_explainer(method, agent, **params).config.items() if k != "batch_size"}
        for level, _ in levels:
            config = {"what": "sanity_ns_map", "agent": who.spec, "sha256": agent.meta.get("sha256"),
                      "states": config_hash(scfg), "state": i, "explainer": explainer_config, "target": target,
                      "level": level, "order": "cascading", "init": "glorot", "seed": cfg.seed}

            def make(path, method=method, level=level, params=params):
                model = model_at(agent, level, cfg.seed)
                res = get_explainer(method, model, **params).attribute(x, target=torch.tensor([target]), hidden=hidden)
                with open(path, "wb") as f:
                    np.save(f, res.maps[0].detach().cpu().numpy().astype(np.float32))

            maps[(method, level)] = np.load(cached_file("sanity_ns_map", config, ".npy", make,
                                                        results_dir=cfg.results_dir))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantMapWarning)
        rho = {(m, lv): spearman(maps[(m, 0)], maps[(m, lv)], sign_invariant=True) for m in NS_METHODS for lv, _ in levels}
    return NSExample(who, agent.preset, states.frames[i], i, int(states.steps[i]), target, levels, maps, rho)


# -- Huber et al.'s numbers beside ours ------------------------------------------------------------

def sanity_rows(cfg: SanityChapter, games: Sequence[str] = huber.GAME_ORDER, *,
                measures: Sequence[str] = MEASURES) -> pd.DataFrame:
    """The stored sanity rows (levels 1–5, ``measures``) of the study's DQN agents on ``games``.

    Read from the packs of ``cfg.study_profile`` (:func:`saliency_study.paper.stored_rows`): nothing is
    computed and a game the study has not run has no rows. Our DQN agents randomise Huber et al.'s five
    layer groups in their order, so our level is their ``rand_layer``. Columns ``agent, game, method,
    level, layer, measure, state, value``.
    """
    t = huber.stored_rows(cfg.study_profile, games, experiments=("sanity",), preset="dqn", seed=cfg.seed,
                    results_dir=cfg.results_dir, packed_only=True)
    t = t[t["level"].isin(list(huber.LEVEL_LAYERS)) & t["measure"].isin(list(measures))]
    t = t.assign(level=t["level"].astype(int))
    return t[["agent", "game", "method", "level", "layer", "measure", "state", "value"]].reset_index(drop=True)


def _paper(measure: str, levels: Sequence[int]) -> pd.DataFrame:
    p = huber.paper_sanity(levels)
    return p[p["measure"] == measure]


def per_game(rows: pd.DataFrame, *, measure: str = "spearman", levels: Sequence[int] = LEVELS,
             confidence: float = CONFIDENCE, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_per_game` of one measure at ``levels``, every game (the paper's
    value: its mean over the ≈ 135 states of the extract); rows by game, level and method."""
    ours = rows[(rows["measure"] == measure) & rows["level"].isin(list(levels))]
    t = huber.compare_per_game(ours, _paper(measure, levels), ("method", "level"), confidence=confidence,
                               n_resamples=n_resamples, seed=seed)
    order = {g: i for i, g in enumerate(huber.GAME_ORDER)}
    return t.sort_values(["game", "level", "method"], key=lambda c: c.map(order) if c.name == "game" else c,
                         kind="stable").reset_index(drop=True)


def pooled(rows: pd.DataFrame, *, measure: str = "spearman", levels: Sequence[int] = LEVELS, n_resamples: int = 2000,
           seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_pooled` over the games we have run, 99 % CI (the paper's figures)."""
    ours = rows[(rows["measure"] == measure) & rows["level"].isin(list(levels))]
    t = huber.compare_pooled(ours, _paper(measure, levels), ("method", "level"), confidence=0.99,
                             n_resamples=n_resamples, seed=seed)
    return t.sort_values(["level", "method"], kind="stable").reset_index(drop=True)


def study_means(rows: pd.DataFrame, agent: str, game: str, *, level: int = 5) -> pd.DataFrame | None:
    """Per method, the mean Spearman similarity of ``agent`` on ``game`` at ``level`` over the stored study's
    states (:func:`sanity_rows`): ``agent, method, spearman, n``; None when a method has fewer than
    :data:`~saliency_study.evidence.MIN_STATES` states (or none is stored)."""
    r = rows[(rows["agent"] == agent) & (rows["game"] == game) & (rows["measure"] == "spearman") & (rows["level"] == level)]
    if r.empty:
        return None
    t = r.groupby("method")["value"].agg(spearman="mean", n="count").reset_index().assign(agent=agent)
    return t[["agent", "method", "spearman", "n"]] if all(enough_states(n) for n in t["n"]) else None


def precedents(verdicts: pd.DataFrame | Note, who: ExplainedAgent, game: str, *, threshold: float = THRESHOLD,
               level: int = 5, study: pd.DataFrame | None = None) -> pd.DataFrame | Note:
    """The methods whose map stays similar once every layer is random, beside Huber et al.'s mean on ``game``.

    "Stays similar": our mean Spearman similarity at the deepest level is at or above ``threshold``,
    whatever the verdict. Our means come from the stored paper-scale study (``study``,
    :func:`sanity_rows`) where it holds every method of ``who`` on ``game`` with enough states
    (:func:`study_means`), else from ``verdicts``. Columns ``method, ours, n, source, paper`` (their
    mean at ``level``) and ``paper_shows_it`` (``yes``/``no``: theirs is at or above τ too, or
    ``not run`` by the paper), so that an effect the paper's own data holds is not presented as new.
    """
    if isinstance(verdicts, Note):
        return verdicts
    if not who or game not in huber.GAME_LABELS:
        return Note(f"Huber et al. have no sanity-check numbers to compare for {game} or this agent.", title="No paper")
    stored = study_means(study, who.spec, game, level=level) if study is not None and len(study) else None
    v = verdicts if stored is None else stored
    v = v[(v["agent"] == who.spec) & (v["spearman"] >= threshold)]
    p = _paper("spearman", [level])
    paper = v["method"].map(p[p["game"] == game].set_index("method")["mean"]).astype(float)
    shows = np.where(paper.isna(), "not run", np.where(paper >= threshold, "yes", "no"))
    if v.empty:
        return Note(f"No method's map of the {who.label} keeps a mean Spearman similarity of {threshold:.2f} or more "
                    "once every layer is random.", title="No such method")
    return pd.DataFrame({"method": v["method"], "ours": v["spearman"], "n": v["n"].astype(int),
                         "source": "paper-scale study" if stored is not None else "this chapter", "paper": paper,
                         "paper_shows_it": shows}).reset_index(drop=True)
