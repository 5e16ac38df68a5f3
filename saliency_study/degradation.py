"""Insertion and deletion: the study's AUCs, the rankings of the methods, and whether a measure is degenerate.

Every number comes from the study's result table (experiments ``"insertion"`` and ``"deletion"``);
nothing here scores a map. No difference between methods is called significant when the paired
differences are worth fewer than :data:`~saliency_study.evidence.MIN_ESS` effective states.

* :func:`degradation_table`: the rows of a game's agents (stored units are read);
* :func:`auc_rows`, :func:`auc_summary`, :func:`best_non_random`: the AUCs per setting;
* :func:`rankings`, :func:`ranking_detail`, :func:`significance_counts`: paired tests, Holm;
* :func:`mean_curve_table`, :func:`measure_degeneracy`: does the substrate move the measure?
* :func:`curve_bands`, :func:`degraded_images`, :func:`path_state`: a band around a mean curve, the
  inputs along a path, and the state and map a path is drawn for.

The comparison with Huber et al.'s tables is :mod:`saliency_study.agreement`; chapter 4 shows both.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_study import paper as huber
from saliency_study.catalog import agent_preset
from saliency_study.evidence import DEGENERATE_MEASURES, MIN_ESS
from saliency_study.paths import RESULTS_DIR

__all__ = [
    "DEGRADATION_EXPERIMENTS", "PAPER_SUBSTRATES", "PAPER_METHODS", "MEASURE_ROLE", "PAPER_ANALOGUE", "PAPER_AUC",
    "pick_agent", "degradation_table", "auc_rows", "measures_of", "auc_summary", "best_non_random", "rankings",
    "vs_random", "ranking_detail", "significance_counts", "CURVE_COLUMNS", "mean_curve_table", "summary_curves",
    "measure_degeneracy", "curve_bands", "degraded_images", "path_state",
]

DEGRADATION_EXPERIMENTS = ("insertion", "deletion")
PAPER_SUBSTRATES = ("black", "random")
"""Substrates of Huber et al.'s insertion metric; ``blur`` and deletion are this study's additions."""
PAPER_METHODS = ("occlusion", "ns_original", "sarfa", "rise", "lime_felzenszwalb", "lime_quickshift", "lime_slic",
                 "random")
"""Registry names of the columns of Huber et al.'s tables, in their order (their NS is ``noise_3_1``, the
original score with blur: our ``ns_original``)."""
MEASURE_ROLE = MappingProxyType({"q_ratio": "value", "advantage": "action", "value": "value", "prob": "action"})
"""What a measure follows (Huber et al.'s first factor, reference §7): the agent's estimate of the state's
worth (``value``: the Q-ratio, or V for actor-critic agents) or its choice of action (``action``: the
advantage, or the policy probability)."""
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


def pick_agent(results: pd.DataFrame, preset: str) -> str | None:
    """The first agent of ``results`` with the preprocessing ``preset`` (``"dqn"`` or ``"mask_a3c"``), or None."""
    return next((a for a in dict.fromkeys(results["agent"]) if agent_preset(str(a)) == preset), None)


def degradation_table(profile: str, game: str, agents: Sequence[str], *, seed: int = 0, results_dir=RESULTS_DIR,
                      executor: str = "local", progress: bool = False, methods: Sequence[str] | None = None,
                      n_states: int | None = None) -> pd.DataFrame:
    """The study's insertion and deletion rows of ``agents`` on ``game`` (``methods`` keeps a subset of
    the study's, ``n_states`` replaces the profile's state count).

    The study's sweeps (:func:`~saliency_study.study.profile_specs`) restricted to insertion and deletion:
    their units, and so their stored files, are those of :func:`~saliency_study.study.study_results`, so
    a reader reads what a study run stored and computes only what is missing. ``attrs["results_dir"]``
    says where the rows' mean curves are stored.
    """
    from saliency_lib.sweep import run_sweep
    from saliency_study.study import profile_specs

    specs = profile_specs(profile, game, agents=list(agents), seed=seed, results_dir=results_dir,
                          methods=methods, n_states=n_states)
    tables = [run_sweep(dataclasses.replace(s, experiments=DEGRADATION_EXPERIMENTS), executor=executor,
                        results_dir=results_dir, progress=progress).table for s in specs]
    df = pd.concat(tables, ignore_index=True)
    df = df[df["experiment"].isin(DEGRADATION_EXPERIMENTS)].reset_index(drop=True)
    df.attrs["results_dir"] = str(results_dir)
    return df


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


def auc_summary(results: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
                ) -> pd.DataFrame:
    """Mean, std (ddof 0, as the paper) and interval of the AUC per agent, setting and method: columns
    ``agent, experiment, substrate, measure, method, n, n_nan, n_eff, mean, std, ci_low, ci_high,
    higher_is_better``."""
    from saliency_lib.metrics import summarise

    t = auc_rows(results)
    s = summarise(t, by=["agent", "experiment", "substrate", "measure", "method"], confidence=confidence,
                  n_resamples=n_resamples, seed=seed)
    hib = t.groupby(["experiment"])["higher_is_better"].first().astype(bool)
    return s.assign(higher_is_better=s["experiment"].map(hib))


def best_non_random(means: pd.Series, higher_is_better: bool = True) -> str | None:
    """The method with the best mean, the random map left out (None without one)."""
    m = means.drop(labels=["random"], errors="ignore").dropna()
    return None if m.empty else m.idxmax() if higher_is_better else m.idxmin()


# -- rankings --------------------------------------------------------------------------------------

def rankings(results: pd.DataFrame, *, alpha: float = 0.05, confidence: float = 0.95, n_resamples: int = 2000,
             seed: int = 0, min_ess: float = MIN_ESS) -> pd.DataFrame:
    """:func:`~saliency_lib.metrics.ranking_table` of the AUC per agent, experiment, substrate and measure, stacked.

    Insertion ranks higher-is-better, deletion lower-is-better; the paired tests run in the states'
    order, Holm-corrected per setting, and a pair whose differences are worth fewer than ``min_ess``
    effective states is not tested (never significant). A measure of
    :data:`~saliency_study.evidence.DEGENERATE_MEASURES` is not ranked. Empty without a rankable AUC.
    """
    from saliency_lib.metrics import ranking_table

    t = auc_rows(results)
    t = t[~t["measure"].isin(list(DEGENERATE_MEASURES))]
    front = ["agent", "experiment", "substrate", "measure"]
    parts = []
    for key, g in t.groupby(front, sort=False):
        hib = bool(g["higher_is_better"].iloc[0])
        r = ranking_table(g, higher_is_better=hib, alpha=alpha, confidence=confidence, n_resamples=n_resamples,
                          seed=seed, test="block", min_ess=min_ess)
        parts.append(r.assign(**dict(zip(front, key)), higher_is_better=hib))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    return out[front + [c for c in out.columns if c not in front]]


def vs_random(row) -> int:
    """+1: significantly better than the random map; −1: significantly worse; 0: neither."""
    return 1 if "random" in str(row["better_than"]).split(", ") else -1 if "random" in str(row["worse_than"]).split(
        ", ") else 0


def ranking_detail(ranks: pd.DataFrame, agent: str, experiment: str = "insertion", substrate: str = "black",
                   role: str = "value") -> pd.DataFrame:
    """The ranking of one setting of ``agent`` (rank, mean, CI, significant differences); ``role`` picks
    the measure (:data:`MEASURE_ROLE`); ``attrs`` name the setting. Empty when the agent has no ranked
    measure in that role (a degenerate one is not ranked)."""
    cols = ["rank", "method", "n", "n_eff", "mean", "std", "ci_low", "ci_high", "better_than", "worse_than"]
    measure = next((m for m in dict.fromkeys(ranks.loc[ranks["agent"] == agent, "measure"])
                    if MEASURE_ROLE.get(m) == role), None)
    r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == experiment) & (ranks["substrate"] == substrate)
              & (ranks["measure"] == measure)]
    out = r.reindex(columns=cols).reset_index(drop=True)
    out.attrs.update(agent=agent, experiment=experiment, substrate=substrate, measure=measure)
    return out


def significance_counts(ranks: pd.DataFrame) -> pd.DataFrame:
    """Per agent: states and ESS range, settings, significant pairwise differences of all pairs, method ×
    setting cells significantly better or worse than the random map, and settings where the random map
    has the best mean (nothing is significant below :data:`~saliency_study.evidence.MIN_ESS`)."""
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


# -- is a measure degenerate? ------------------------------------------------------------------------

CURVE_COLUMNS = ("experiment", "agent", "method", "substrate", "measure", "step", "mean")
"""The columns :func:`measure_degeneracy` reads of a mean-curve table."""


def summary_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """The rows of a mean-curve table that :func:`measure_degeneracy` reads: the summary measures (raw outputs
    such as ``q[0]`` or ``logits[1]`` left out), columns :data:`CURVE_COLUMNS`."""
    t = curves[~curves["measure"].astype(str).str.contains("[", regex=False)]
    return t[list(CURVE_COLUMNS)].reset_index(drop=True)


def mean_curve_table(results: pd.DataFrame, *, profile: str, game: str, seed: int = 0,
                     results_dir=RESULTS_DIR) -> pd.DataFrame:
    """Mean insertion/deletion curves (over the states) of the agents of ``results``, :data:`CURVE_COLUMNS`:
    from the per-state curves of ``results`` where it holds them, else from the store's mean curves
    (:func:`saliency_lib.sweep.mean_curves`) of the stored units of ``profile``. Computes nothing."""
    from saliency_lib.sweep import mean_curves

    rows = results[results["step"].notna() & results["experiment"].isin(DEGRADATION_EXPERIMENTS)]
    if len(rows):
        return summary_curves(rows.groupby(list(CURVE_COLUMNS[:-1]), observed=True)["value"].mean().rename("mean")
                              .reset_index())
    units = huber.stored_units(profile, [game], experiments=DEGRADATION_EXPERIMENTS, preset=None,
                               agents=list(dict.fromkeys(results["agent"])), seed=seed, results_dir=results_dir)
    return summary_curves(mean_curves(units, results_dir=results_dir) if units else
                          pd.DataFrame(columns=list(CURVE_COLUMNS)))


def measure_degeneracy(results: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """Does the substrate move the measure? One row per agent, substrate and measure.

    ``results`` gives the per-state AUCs, ``curves`` the mean curves (:func:`mean_curve_table`). The
    pre-stated rule: a measure is **degenerate** on a substrate when the random map has the best mean AUC of
    all methods under insertion *and* the worst under deletion (the metric then rewards disturbing the image,
    not the map's order). Columns ``agent, substrate, measure, n`` (states), ``clean``, ``substrate_value``
    (mean of the measure on the clean state and on the substrate), ``gap_share`` (their gap over the largest
    swing of a method's mean curve), ``peak`` (highest point of a mean curve over ``|clean|``),
    ``random_insertion``, ``random_deletion`` (the random map's rank by mean AUC, 1: best, of ``methods``)
    and ``degenerate``. Empty without curves.
    """
    cols = ["agent", "substrate", "measure", "n", "clean", "substrate_value", "gap_share", "peak", "random_insertion",
            "random_deletion", "methods", "degenerate"]
    aucs = results[results["step"].isna() & results["measure"].str.endswith("_auc")]
    rows = []
    for (agent, sub, meas), g in curves.groupby(["agent", "substrate", "measure"], sort=False):
        mine = aucs[(aucs["agent"] == agent) & (aucs["substrate"] == sub) & (aucs["measure"] == f"{meas}_auc")]
        row = {"agent": agent, "substrate": sub, "measure": meas, "n": int(mine["state"].nunique())}
        swing = peak = 0.0
        for exp in DEGRADATION_EXPERIMENTS:
            e = g[g["experiment"] == exp]
            if e.empty:
                continue
            wide = e.pivot_table(index="method", columns="step", values="mean", aggfunc="mean")
            first, last = wide[wide.columns.min()].mean(), wide[wide.columns.max()].mean()  # the path's two ends
            row.setdefault("clean", float(last if exp == "insertion" else first))
            row.setdefault("substrate_value", float(first if exp == "insertion" else last))
            swing = max(swing, float((wide.max(axis=1) - wide.min(axis=1)).max()))
            peak = max(peak, float(wide.max(axis=1).max()))
            a = mine[mine["experiment"] == exp].groupby("method")["value"].mean()
            if "random" in a.index:
                row[f"random_{exp}"] = int(a.rank(ascending=exp == "deletion", method="min")["random"])
                row["methods"] = len(a)
        if "clean" not in row:
            continue
        row["gap_share"] = abs(row["clean"] - row["substrate_value"]) / swing if swing > 0 else np.nan
        row["peak"] = peak / abs(row["clean"]) if row["clean"] else np.nan
        m = row.get("methods")
        row["degenerate"] = bool(m and row.get("random_insertion") == 1 and row.get("random_deletion") == m)
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


# -- curves and paths ------------------------------------------------------------------------------

def curve_bands(values: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
                block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean curve and moving-block bootstrap band over states.

    ``values``: one curve per state (rows, in the trajectory's order; non-finite values ignored). States
    are resampled as whole curves in blocks of consecutive states
    (:func:`~saliency_lib.metrics.dependence.block_indices`, block length ``block`` or
    :func:`~saliency_lib.metrics.dependence.block_length` of the curves' AUCs), so every step uses the
    same resamples. Returns ``(mean, low, high)``, each of shape ``(n_steps,)``; with fewer than two
    states ``low`` and ``high`` equal ``mean``.
    """
    from saliency_lib.metrics.dependence import block_indices, block_length

    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must have shape (n_states, n_steps), got {v.shape}")
    v = np.where(np.isfinite(v), v, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(v, axis=0)
        if v.shape[0] < 2:
            return mean, mean.copy(), mean.copy()
        b = block_length(np.nanmean(v, axis=1)) if block is None else int(block)
        boot = np.nanmean(v[block_indices(v.shape[0], b, n_resamples, np.random.default_rng(seed))], axis=1)
        quantile = np.nanquantile if np.isnan(boot).any() else np.quantile  # nanquantile is slow
        low, high = quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    return mean, low, high


def degraded_images(state, saliency, *, substrate: str, fractions, mode: str = "insertion", seed: int = 0,
                    state_id: int = 0, blur_sigma: float = 5.0):
    """The inputs along an insertion or deletion path of one state ``(C, H, W)``, as the metric builds them.

    Pixel locations change in order of decreasing ``saliency`` ``(H, W)`` (stable, as the metric);
    ``fractions`` in [0, 1] of the ``H·W`` locations are changed; ``seed``, ``state_id`` and ``blur_sigma``
    are the metric's for the substrate. Returns a tensor ``(len(fractions), C, H, W)``.
    """
    import torch

    from saliency_lib.metrics import make_substrate

    if mode not in DEGRADATION_EXPERIMENTS:
        raise ValueError(f"mode must be one of {DEGRADATION_EXPERIMENTS}, got {mode!r}")
    x = torch.as_tensor(state)
    if x.ndim != 3:
        raise ValueError(f"state must have shape (C, H, W), got {tuple(x.shape)}")
    c, h, w = x.shape
    s = np.asarray(saliency, dtype=np.float64)
    if s.shape != (h, w):
        raise ValueError(f"saliency must have shape {(h, w)} like the state, got {s.shape}")
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or ((fr < 0) | (fr > 1)).any():
        raise ValueError(f"fractions must be a 1-D sequence in [0, 1], got {fractions!r}")
    sub = make_substrate(x[None], substrate, seed=seed, state_ids=[state_id], blur_sigma=blur_sigma)[0]
    rank = torch.empty(h * w, dtype=torch.long)
    rank[torch.argsort(torch.from_numpy(-s.reshape(-1)), stable=True)] = torch.arange(h * w)
    out = []
    for f in fr:
        changed = (rank < int(round(f * h * w))).view(1, h, w)
        out.append(torch.where(changed, x, sub) if mode == "insertion" else torch.where(changed, sub, x))
    return torch.stack(out)


def path_state(spec: str, *, profile: str, method: str = "occlusion", device: str = "cpu", results_dir=RESULTS_DIR):
    """The last state that ``profile``'s sweep explains for agent ``spec`` and ``method``'s map of it (the
    sweep's parameters; cached as ``.npy`` under ``<results_dir>/_local/media``): ``(state, saliency, index)``,
    the state ``(C, H, W)`` on the CPU, the map ``(H, W)``, the state's index in the sweep."""
    import torch

    from saliency_lib.explainers import get_explainer
    from saliency_lib.sweep import study_states
    from saliency_study.cache import cached_file
    from saliency_study.catalog import load_spec
    from saliency_study.profiles import get_profile

    ag = load_spec(spec, device=device)
    prof = get_profile(profile)  # the sweep's states: the profile's selection for this kind of agent
    n, _, params = prof.sweep_size(ag.preset)
    states, scfg = study_states(spec, n, seed=0, results_dir=results_dir, agent=ag,
                                selection=prof.selection(ag.preset), episode_cap=prof.episode_cap())
    i = len(states) - 1
    kw = dict(params.get(method, {}))

    def make(path):
        torch.set_num_threads(1)
        hid = None if states.hidden is None else tuple(h[i:i + 1].to(ag.device) for h in states.hidden)
        res = get_explainer(method, ag, **kw).attribute(states.states[i:i + 1].to(ag.device),
                                                        target=states.actions[i:i + 1], hidden=hid)
        with open(path, "wb") as f:
            np.save(f, np.asarray(res.maps[0].detach().cpu().numpy() if hasattr(res.maps, "detach") else res.maps[0],
                                  dtype=np.float32))

    config = {"what": "degradation_map", "states": scfg, "index": i, "method": method, "params": kw}
    sal = np.load(cached_file("degradation_map", config, ".npy", make, results_dir=results_dir))
    return states.states[i].cpu(), sal, i


# -- Huber et al.'s §6.2 ablation and a robust aggregate -------------------------------------------

ABLATION_PAIRS = (("occlusion", "occlusion_gray"), ("sarfa", "sarfa_blur"))
"""§6.2's changes: gray occlusion instead of black, SARFA with blurred instead of black disks."""


def ablation_table(aucs: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """The §6.2 ablation beside the paper's, per game, method, substrate and measure of insertion.

    ``aucs``: per-state insertion AUC rows (:func:`auc_rows`, or any frame with ``game, method,
    substrate, measure, state, value``). Columns ``game, method, ablated, substrate, measure``,
    ``paper_main, paper_ablated, paper_change`` (the published means), ``change, change_low,
    change_high, p, n, n_eff`` (ours: ablated − main on the same states, the paired ESS-t test of
    :func:`~saliency_lib.metrics.dependence.paired_block_test`) and ``direction``: "agrees" or
    "opposite" where our change is significant at ``alpha``, "not significant" otherwise.
    """
    from saliency_lib.metrics.dependence import paired_block_test

    main, abl = huber.paper_insertion("main"), huber.paper_insertion("ablation")
    key = ["game", "substrate", "measure"]
    cols = ["game", "method", "ablated", "substrate", "measure", "paper_main", "paper_ablated", "paper_change",
            "change", "change_low", "change_high", "p", "n", "n_eff", "direction"]
    rows = []
    for base, variant in ABLATION_PAIRS:
        pm = main[main["method"] == base].set_index(key)["mean"]
        pa = abl[abl["method"] == base].set_index(key)["mean"]
        for k, g in aucs[aucs["method"].isin([base, variant])].groupby(key):
            w = g.pivot_table(index="state", columns="method", values="value").dropna()
            if base not in w or variant not in w or k not in pm.index or len(w) < 2:
                continue
            t = paired_block_test(w[variant].to_numpy(), w[base].to_numpy())
            paper_change = float(pa[k] - pm[k])
            direction = ("not significant" if not t["p"] < alpha
                         else "agrees" if np.sign(t["mean"]) == np.sign(paper_change) else "opposite")
            rows.append({"game": k[0], "method": base, "ablated": variant, "substrate": k[1], "measure": k[2],
                         "paper_main": float(pm[k]), "paper_ablated": float(pa[k]), "paper_change": paper_change,
                         "change": t["mean"], "change_low": t["ci_low"], "change_high": t["ci_high"], "p": t["p"],
                         "n": int(t["n"]), "n_eff": t["n_eff"], "direction": direction})
    return pd.DataFrame(rows, columns=cols)


def robust_aucs(aucs: pd.DataFrame) -> pd.DataFrame:
    """Beside each method's mean insertion AUC, aggregates that a few states cannot dominate.

    A Q-ratio AUC divides by the clean Q(a), so states whose Q(a) is near zero give AUCs of
    thousands (issue "Reproduced, or not": Frostbite's range −129,916 to +42,945) and the mean
    follows them. Per ``game, substrate, measure, method``: ``n``, ``mean``, ``median``, ``iqm``
    (the mean of the middle half, 25 % trimmed at each end) and ``paper`` (the published mean, where
    the paper has the cell).
    """
    from scipy.stats import trim_mean

    key = ["game", "substrate", "measure", "method"]
    if aucs.empty:
        return pd.DataFrame(columns=[*key, "n", "mean", "median", "iqm", "paper"])
    g = aucs.dropna(subset=["value"]).groupby(key)["value"]
    out = g.agg(n="size", mean="mean", median="median").reset_index()
    out["iqm"] = g.apply(lambda v: float(trim_mean(v, 0.25))).to_numpy()
    paper = huber.paper_insertion("main").set_index(key)["mean"]
    out["paper"] = [paper.get(tuple(r), np.nan) for r in out[key].itertuples(index=False)]
    return out
