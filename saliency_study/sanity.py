"""Cascading parameter randomisation: the study's sanity rows, their verdicts, and Huber et al.'s numbers beside them.

The similarities come from the study's sweep (experiment ``"sanity"``). Every interval is the
mean's interval on the effective sample size (ESS) of the states in trajectory order
(:func:`saliency_lib.metrics.summarise`), and no verdict rests on fewer than
:data:`~saliency_study.evidence.MIN_ESS` effective states: below it the verdict is
``"withheld"``, with :func:`~saliency_study.evidence.withheld_reason` in ``reason``.

* :func:`sweep_specs`, :func:`sanity_table`: one agent's sanity rows (stored units are read);
* :func:`layer_summary`, :func:`reference_summary`: means and intervals per level and measure;
* :func:`verdict`, :func:`verdict_table`: passes, fails or undecided after full randomisation;
* :func:`ns_table`: Huber et al.'s finding on Noise Sensitivity, per agent;
* :func:`layer_groups`, :func:`model_at`, :func:`ns_example`: the cascade and one state's maps;
* :func:`sanity_rows`, :func:`per_game`, :func:`pooled`, :func:`precedents`: the stored
  paper-scale study beside the paper (:mod:`saliency_study.paper`).

Chapter 3 shows these tables; the black screen's tied pixels are :mod:`saliency_study.tied_blocks`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from saliency_study import paper as huber
from saliency_study.catalog import load_spec
from saliency_study.evidence import MIN_ESS, WITHHELD, enough_ess, withheld_reason
from saliency_study.paths import RESULTS_DIR

__all__ = [
    "MEASURES", "NS_METHODS", "THRESHOLD", "CONFIDENCE", "LEVELS", "sweep_specs", "sanity_table", "layer_summary",
    "reference_summary", "verdict", "verdict_table", "ns_table", "layer_groups", "model_at", "NSExample",
    "ns_example", "median_state", "sanity_rows", "per_game", "pooled", "study_means", "precedents",
]

MEASURES = ("spearman", "ssim", "hog_pearson")
"""The paper's three similarity measures (reference §5), in display order."""
NS_METHODS = ("ns_original", "ns_chosen")
"""Noise Sensitivity as Greydanus et al. defined it, and Huber et al.'s chosen-action fix."""
THRESHOLD = 0.5
"""Default verdict threshold on the Spearman similarity after full randomisation (see :func:`verdict`).
At ρ < 0.5 the randomised map's ranking explains less than a quarter of the trained one's; the value
separates Huber et al.'s failure (NS original, ρ = 0.73–0.84) from the fixed variant (0.1–0.4)."""
CONFIDENCE = 0.95
"""Level of the intervals of the means."""
LEVELS = (1, 5)
"""The levels compared with the paper: only the output layer random, and every layer random."""


# -- the sweep's rows and their summaries ------------------------------------------------------------

def sweep_specs(profile: str, game: str, spec: str, *, seed: int = 0, results_dir=RESULTS_DIR,
                methods: Sequence[str] | None = None, n_states: int | None = None) -> list:
    """The study's sweep specs of agent ``spec`` in ``profile``, reduced to the sanity experiment
    (the units, and so the stored results, of :func:`~saliency_study.study.study_results`);
    ``methods`` keeps a subset, ``n_states`` replaces the profile's state count."""
    from saliency_study.study import profile_specs

    return [dataclasses.replace(s, experiments=("sanity",))
            for s in profile_specs(profile, game, agents=[spec], seed=seed, results_dir=results_dir,
                                   n_states=n_states, methods=methods)]


def sanity_table(profile: str, game: str, spec: str, *, seed: int = 0, results_dir=RESULTS_DIR,
                 executor: str = "local", methods: Sequence[str] | None = None,
                 n_states: int | None = None) -> pd.DataFrame:
    """The sanity rows of the study's table for one agent (``experiment == "sanity"``); units not
    stored yet are computed."""
    from saliency_lib.sweep import run_sweep

    tables = [run_sweep(s, executor=executor, results_dir=results_dir, progress=False).table
              for s in sweep_specs(profile, game, spec, seed=seed, results_dir=results_dir, methods=methods,
                                   n_states=n_states)]
    t = pd.concat(tables, ignore_index=True)
    return t[t["experiment"] == "sanity"].reset_index(drop=True)


def layer_summary(table: pd.DataFrame, *, measures: Sequence[str] = MEASURES, confidence: float = CONFIDENCE,
                  seed: int = 0) -> pd.DataFrame:
    """Mean, std, interval and ESS of each (agent, method, level, layer, measure) over the states
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


# -- verdicts ---------------------------------------------------------------------------------------

def verdict(ci_low: float, ci_high: float, threshold: float = THRESHOLD, *, n_eff: float | None = None,
            min_ess: float = MIN_ESS) -> str:
    """``"passes"`` if the whole interval lies below ``threshold``, ``"fails"`` if it lies at or above
    it, ``"undecided"`` if it straddles it; ``"no data"`` without an interval and ``"withheld"`` when
    the effective sample size ``n_eff`` behind it is below ``min_ess`` (None: not checked)."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "no data"
    if n_eff is not None and not enough_ess(n_eff, min_ess):
        return WITHHELD
    return "passes" if ci_high < threshold else "fails" if ci_low >= threshold else "undecided"


def _reason(v: str, n_eff, min_ess: float = MIN_ESS) -> str:
    return withheld_reason(n_eff, min_ess) if v == WITHHELD else ""


def _method_order(methods, order: Sequence[str] | None) -> dict:
    order = list(order or [])
    ranked = sorted(set(methods), key=lambda m: (order.index(m) if m in order else len(order), m))
    return {m: i for i, m in enumerate(ranked)}


def verdict_table(summary: pd.DataFrame, refs: pd.DataFrame | None = None, *, threshold: float = THRESHOLD,
                  min_ess: float = MIN_ESS, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Per agent and method: every measure after full randomisation and the verdict on Spearman.

    Columns ``agent, method, level, layer``, ``<measure>``, ``<measure>_low``, ``<measure>_high`` per
    measure, ``n, n_eff`` (of the Spearman similarities), ``random_spearman`` (mean Spearman similarity
    with a uniform-random map), ``verdict`` (:func:`verdict` of the Spearman interval) and ``reason``
    (why a verdict is withheld). Methods in ``order`` (others after it, by name).
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
    rank = _method_order(out["method"], order)
    out = out.sort_values(["agent", "method"], key=lambda c: c.map(agents if c.name == "agent" else rank))
    out["verdict"] = [verdict(lo, hi, threshold, n_eff=e, min_ess=min_ess)
                      for lo, hi, e in zip(out["spearman_low"], out["spearman_high"], out["n_eff"])]
    out["reason"] = [_reason(v, e, min_ess) for v, e in zip(out["verdict"], out["n_eff"])]
    return out.reset_index(drop=True)


def ns_table(summaries: Mapping[str, pd.DataFrame], *, min_ess: float = MIN_ESS) -> pd.DataFrame:
    """NS original against NS chosen action once only the output layer (the heads) is random, per agent.

    ``summaries``: :func:`layer_summary` per agent name. Columns ``agent, layer, n, original,
    original_low, original_high, original_ess`` (and the same for ``chosen``), ``finding`` (whether
    Huber et al.'s finding holds: NS original stays more similar, the intervals apart; is reversed;
    is not settled by overlapping intervals; or is withheld below ``min_ess`` effective states of
    either variant) and ``reason``. Empty when no agent has both variants.
    """
    rows = []
    for name, s in summaries.items():
        first = s[(s["level"] == 1) & (s["measure"] == "spearman")].set_index("method") if len(s) else s
        if not set(NS_METHODS) <= set(first.index):
            continue
        o, c = first.loc["ns_original"], first.loc["ns_chosen"]
        row = {"agent": name, "layer": o["layer"], "n": int(min(o["n"], c["n"]))}
        for label, r in (("original", o), ("chosen", c)):
            row.update({label: r["mean"], f"{label}_low": r["ci_low"], f"{label}_high": r["ci_high"],
                        f"{label}_ess": r["n_eff"]})
        ess = min(o["n_eff"], c["n_eff"])
        if not enough_ess(ess, min_ess):
            row["finding"] = WITHHELD
        elif o["ci_low"] > c["ci_high"]:
            row["finding"] = "reproduced: NS original more similar"
        elif c["ci_low"] > o["ci_high"]:
            row["finding"] = "reversed: NS chosen action more similar"
        else:
            row["finding"] = "not settled: the CIs overlap" if o["mean"] > c["mean"] else "NS original not more similar"
        row["reason"] = _reason(row["finding"], ess, min_ess)
        rows.append(row)
    return pd.DataFrame(rows)


# -- the test's set-up -------------------------------------------------------------------------------

def layer_groups(spec: str, device: str = "cpu") -> pd.DataFrame:
    """The cascade of agent ``spec``: ``Level, Layer group, Modules, Parameters``, from the output down."""
    agent = load_spec(spec, device)
    names = {id(m): n for n, m in agent.net.named_modules()}
    return pd.DataFrame([{"Level": level, "Layer group": group,
                          "Modules": ", ".join(names.get(id(m), type(m).__name__) for m in modules),
                          "Parameters": sum(p.numel() for m in modules for p in m.parameters())}
                         for level, (group, modules) in enumerate(agent.layer_groups(), start=1)])


def model_at(agent, level: int, seed: int):
    """The sweep's model with the first ``level`` layer groups randomised (cascading, Glorot); 0: ``agent``."""
    from saliency_lib.metrics import randomised_models

    if level == 0:
        return agent
    return list(randomised_models(agent, order="cascading", init="glorot", seed=seed, levels=level))[-1][2]


# -- the Noise Sensitivity example -------------------------------------------------------------------

@dataclass
class NSExample:
    """NS original and NS chosen maps of one sweep state for the original and randomised models."""

    spec: str
    game: str
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


def median_state(table: pd.DataFrame) -> int:
    """The state whose NS-original Spearman similarity after the first level is the (lower) median."""
    t = table[(table["method"] == "ns_original") & (table["level"] == 1) & (table["measure"] == "spearman")]
    t = t.dropna(subset=["value"]).sort_values(["value", "state"], kind="stable")
    return int(table["state"].min()) if t.empty else int(t["state"].iloc[(len(t) - 1) // 2])


def ns_example(spec: str, table: pd.DataFrame, *, profile: str, game: str, seed: int = 0, device: str = "cpu",
               results_dir=RESULTS_DIR, state: int | None = None) -> NSExample:
    """NS original and NS chosen maps of one sweep state: original, output-randomised and fully randomised model.

    The sweep's models (cascading, Glorot, ``seed``), explainer parameters and states, so the
    similarities equal ``table``'s rows (:func:`sanity_table`) for that state. ``state`` defaults to
    :func:`median_state`. Each map is cached as ``.npy`` under ``<results_dir>/_local/media``.
    """
    import torch

    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import ConstantMapWarning
    from saliency_lib.metrics.similarity import spearman
    from saliency_lib.results import config_hash
    from saliency_lib.sweep import spec_states
    from saliency_study.cache import cached_file

    torch.set_num_threads(1)
    agent = load_spec(spec, device)
    sweep = sweep_specs(profile, game, spec, seed=seed, results_dir=results_dir)[0]
    states, scfg = spec_states(sweep, spec, results_dir=results_dir)  # the sweep's own states and selection
    i = median_state(table) if state is None else int(state)
    if not 0 <= i < len(states):
        raise ValueError(f"state must index the {len(states)} sweep states, got {state!r}")
    groups = agent.layer_groups()
    levels = [(0, "original"), (1, groups[0][0]), (len(groups), groups[-1][0])]
    target = int(states.actions[i])
    hidden = None if states.hidden is None else tuple(h[i:i + 1].to(agent.device) for h in states.hidden)
    x = states.states[i:i + 1].to(agent.device)
    maps: dict[tuple[str, int], np.ndarray] = {}
    for method in NS_METHODS:
        params = dict(sweep.params.get(method, {}))
        explainer_config = {k: v for k, v in get_explainer(method, agent, **params).config.items() if k != "batch_size"}
        for level, _ in levels:
            config = {"what": "sanity_ns_map", "agent": spec, "sha256": agent.meta.get("sha256"),
                      "states": config_hash(scfg), "state": i, "explainer": explainer_config, "target": target,
                      "level": level, "order": "cascading", "init": "glorot", "seed": seed}

            def make(path, method=method, level=level, params=params):
                model = model_at(agent, level, seed)
                res = get_explainer(method, model, **params).attribute(x, target=torch.tensor([target]), hidden=hidden)
                with open(path, "wb") as f:
                    np.save(f, res.maps[0].detach().cpu().numpy().astype(np.float32))

            maps[(method, level)] = np.load(cached_file("sanity_ns_map", config, ".npy", make, results_dir=results_dir))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantMapWarning)
        rho = {(m, lv): spearman(maps[(m, 0)], maps[(m, lv)], sign_invariant=True) for m in NS_METHODS for lv, _ in levels}
    return NSExample(spec, game, agent.preset, states.frames[i], i, int(states.steps[i]), target, levels, maps, rho)


# -- Huber et al.'s numbers beside ours ------------------------------------------------------------

def sanity_rows(study_profile: str = "full", games: Sequence[str] = huber.GAME_ORDER, *, seed: int = 0,
                results_dir=RESULTS_DIR, measures: Sequence[str] = MEASURES) -> pd.DataFrame:
    """The stored sanity rows (levels 1–5, ``measures``) of the study's DQN agents on ``games``.

    Read from the packs of ``study_profile`` (:func:`saliency_study.paper.stored_rows`): nothing is
    computed and a game the study has not run has no rows. Our DQN agents randomise Huber et al.'s five
    layer groups in their order, so our level is their ``rand_layer``. Columns ``agent, game, method,
    level, layer, measure, state, value``.
    """
    t = huber.stored_rows(study_profile, games, experiments=("sanity",), preset="dqn", seed=seed,
                          results_dir=results_dir, packed_only=True)
    t = t[t["level"].isin(list(huber.LEVEL_LAYERS)) & t["measure"].isin(list(measures))]
    t = t.assign(level=t["level"].astype(int))
    return t[["agent", "game", "method", "level", "layer", "measure", "state", "value"]].reset_index(drop=True)


def _paper(measure: str, levels: Sequence[int]) -> pd.DataFrame:
    p = huber.paper_sanity(levels)
    return p[p["measure"] == measure]


def per_game(rows: pd.DataFrame, *, measure: str = "spearman", levels: Sequence[int] = LEVELS,
             confidence: float = CONFIDENCE) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_per_game` of one measure at ``levels``, every game (the paper's
    value: its mean over the ≈ 135 states of the extract); rows by game, level and method."""
    ours = rows[(rows["measure"] == measure) & rows["level"].isin(list(levels))]
    t = huber.compare_per_game(ours, _paper(measure, levels), ("method", "level"), confidence=confidence)
    order = {g: i for i, g in enumerate(huber.GAME_ORDER)}
    return t.sort_values(["game", "level", "method"], key=lambda c: c.map(order) if c.name == "game" else c,
                         kind="stable").reset_index(drop=True)


def pooled(rows: pd.DataFrame, *, measure: str = "spearman", levels: Sequence[int] = LEVELS) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_pooled` over the games we have run, 99 % CI (the paper's figures)."""
    ours = rows[(rows["measure"] == measure) & rows["level"].isin(list(levels))]
    t = huber.compare_pooled(ours, _paper(measure, levels), ("method", "level"), confidence=0.99)
    return t.sort_values(["level", "method"], kind="stable").reset_index(drop=True)


def study_means(rows: pd.DataFrame, agent: str, game: str, *, level: int = 5) -> pd.DataFrame | None:
    """Per method, the mean Spearman similarity of ``agent`` on ``game`` at ``level`` over the stored study's
    states (:func:`sanity_rows`) in trajectory order: ``agent, method, spearman, n, n_eff``; None when none
    is stored."""
    from saliency_lib.metrics.dependence import effective_sample_size

    if rows.empty:
        return None
    r = rows[(rows["agent"] == agent) & (rows["game"] == game) & (rows["measure"] == "spearman") & (rows["level"] == level)]
    if r.empty:
        return None
    out = []
    for method, g in r.groupby("method"):
        v = pd.to_numeric(g.sort_values("state", kind="stable")["value"], errors="coerce").to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        out.append({"agent": agent, "method": method, "spearman": float(v.mean()) if v.size else np.nan,
                    "n": int(v.size), "n_eff": effective_sample_size(v)})
    return pd.DataFrame(out)


def precedents(verdicts: pd.DataFrame, spec: str, game: str, *, threshold: float = THRESHOLD, level: int = 5,
               study: pd.DataFrame | None = None) -> pd.DataFrame:
    """The methods whose map stays similar once every layer is random, beside Huber et al.'s mean on ``game``.

    "Stays similar": our mean Spearman similarity at the deepest level is at or above ``threshold``,
    whatever the verdict (this lists means; it judges nothing). Our means come from the stored
    paper-scale study (``study``, :func:`sanity_rows`, :func:`study_means`) where it holds every method
    of ``verdicts`` (:func:`verdict_table`) for ``spec`` on ``game`` with at least as many states as the
    chapter's own (its states continue the chapter's trajectory), else from ``verdicts``; an effective
    sample size is no guide here, since a long trajectory that drifts is worth fewer effective states
    than its own first twenty. Columns ``method,
    ours, n, n_eff, source, paper`` (their mean at ``level``) and ``paper_shows_it`` (``yes``/``no``:
    theirs is at or above τ too, or ``not run`` by the paper), so that an effect the paper's own data
    holds is not presented as new. Empty when no method stays similar or the paper has not run ``game``.
    """
    cols = ["method", "ours", "n", "n_eff", "source", "paper", "paper_shows_it"]
    if game not in huber.GAME_LABELS:
        return pd.DataFrame(columns=cols)
    mine = verdicts[verdicts["agent"] == spec].set_index("method")["n"]
    stored = study_means(study, spec, game, level=level) if study is not None and len(study) else None
    if stored is not None:
        theirs = stored.set_index("method")["n"].reindex(mine.index)
        stored = stored if len(mine) and (theirs.fillna(-1) >= mine.fillna(0)).all() else None
    v = verdicts if stored is None else stored
    v = v[(v["agent"] == spec) & (v["spearman"] >= threshold)]
    p = _paper("spearman", [level])
    paper = v["method"].map(p[p["game"] == game].set_index("method")["mean"]).astype(float)
    shows = np.where(paper.isna(), "not run", np.where(paper >= threshold, "yes", "no"))
    return pd.DataFrame({"method": v["method"], "ours": v["spearman"], "n": v["n"].astype(int), "n_eff": v["n_eff"],
                         "source": "paper-scale study" if stored is not None else "this chapter", "paper": paper,
                         "paper_shows_it": shows}, columns=cols).reset_index(drop=True)
