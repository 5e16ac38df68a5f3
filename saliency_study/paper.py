"""Huber et al.'s published numbers, and ours beside them per game and pooled over the games.

The authors' result files, extracted as numbers, are committed under
``data/reference/huber2021/`` (a copy of the project's shared reference extract; its README
says where every number comes from). Chapters 3 and 4 read them only through this module.

* :func:`paper_sanity`, :func:`paper_insertion`: the two tables in our names (games,
  methods, measures, levels).
* :func:`stored_units`, :func:`stored_rows`: the study's stored units and rows of several
  games, computing nothing.
* :func:`compare_per_game`: per game and setting, the paper's value beside our mean with
  its moving-block bootstrap CI, n, effective sample size and a verdict (:func:`paper_verdict`).
* :func:`compare_pooled`: the same pooled over the games, as Huber et al. pool them (99 % CI).

Showing these tables is the book's (chapters 3 and 4).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_lib.games import BENCHMARK_STATES, HUBER_GAMES
from saliency_study.evidence import TOO_FEW, enough_states
from saliency_study.paths import RESULTS_DIR, repo_path

__all__ = [
    "REFERENCE_DIR", "GAMES", "GAME_ORDER", "GAME_LABELS", "LEVEL_LAYERS", "paper_sanity", "paper_insertion",
    "stored_units", "stored_rows", "paper_verdict", "compare_per_game", "compare_pooled", "NOT_RUN", "VERDICTS",
]

REFERENCE_DIR = "data/reference/huber2021"
"""The committed copy of the authors' extracted results (relative to the repository root)."""

GAMES = MappingProxyType({"pacman": "MsPacman", "breakout": "Breakout", "frostbite": "Frostbite",
                          "spaceInvaders": "SpaceInvaders"})
"""The extract's game label → our game name, in the row order of the paper's tables."""
GAME_ORDER = HUBER_GAMES
"""Our names of the paper's four games, in the study's one order (:data:`saliency_lib.games.HUBER_GAMES`)."""
GAME_LABELS = MappingProxyType({"MsPacman": "Ms. Pac-Man", "Breakout": "Breakout", "Frostbite": "Frostbite",
                                "SpaceInvaders": "Space Invaders"})


_SANITY_MEASURES = {"spearman": "spearman", "ssim": "ssim", "pearson": "hog_pearson"}
_INSERTION_METHODS = {"ns": "ns_original", "random_baseline": "random"}
_INSERTION_MEASURES = {"qvals": "q_ratio", "advantage": "advantage"}

LEVEL_LAYERS = MappingProxyType({1: "output", 2: "fc", 3: "conv3", 4: "conv2", 5: "conv1"})
"""The extract's ``rand_layer`` 1–5 (cascade from the output layer) → the layer group our DQN
agents randomise at the same level (their level equals the paper's ``rand_layer``: same five
groups, same order). Levels 6 and 7 are the paper's random-map baselines, not randomisations."""

NOT_RUN = "not yet run"
VERDICTS = ("consistent", "differs", TOO_FEW, NOT_RUN)
"""The verdicts of :func:`paper_verdict`, in display order."""


@functools.lru_cache(maxsize=4)
def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(repo_path(REFERENCE_DIR) / name)


def paper_sanity(levels: Sequence[int] = tuple(LEVEL_LAYERS)) -> pd.DataFrame:
    """Huber et al.'s mean similarity per game, method, cascade level and measure.

    The extract holds two contiguous stretches of each game's trajectory (≈ 100 early and
    ≈ 33 late states); they are pooled here into one mean, each stretch weighted by its
    states, and one standard deviation (the pooled sample std of both stretches).

    Returns
    -------
    DataFrame
        ``game`` (ours), ``method`` (registry name), ``level`` (= ``rand_layer``), ``layer``
        (:data:`LEVEL_LAYERS`), ``measure`` (``spearman``, ``ssim``, ``hog_pearson``), ``mean``,
        ``std``, ``n`` (states read).
    """
    t = _read("sanity_summary.csv")
    t = t[t["rand_layer"].isin(list(levels))]
    rows = []
    for (game, method, level), g in t.groupby(["game", "method", "rand_layer"], sort=False):
        n = g["n_states"].to_numpy(dtype=float)
        for theirs, ours in _SANITY_MEASURES.items():
            m, s = g[f"{theirs}_mean"].to_numpy(dtype=float), g[f"{theirs}_std"].to_numpy(dtype=float)
            mean = float(np.sum(n * m) / n.sum())
            var = (np.sum((n - 1) * s**2) + np.sum(n * (m - mean) ** 2)) / (n.sum() - 1)
            rows.append({"game": GAMES[game], "method": method, "level": int(level),
                         "layer": LEVEL_LAYERS.get(int(level), f"rand_layer {level}"), "measure": ours,
                         "mean": mean, "std": float(np.sqrt(var)), "n": int(n.sum())})
    return pd.DataFrame(rows)


def paper_insertion(variant: str = "main") -> pd.DataFrame:
    """Huber et al.'s published mean insertion AUCs (997 states per game) in our names.

    Parameters
    ----------
    variant : {"main", "ablation"}
        ``main``: the paper's tables (§6.1); ``ablation``: the §6.2 files with gray occlusion
        and blurred SARFA (the other columns equal the main ones).

    Returns
    -------
    DataFrame
        ``game``, ``method`` (registry name; their ``ns`` is our ``ns_original``, their random
        baseline our ``random``), ``substrate`` (``black``/``random``), ``measure``
        (``q_ratio``: their "qvals"; ``advantage``), ``mean``, ``std`` (ddof 0), ``n`` (997)
        and ``differs_from_main`` (the two ablation columns that change).
    """
    if variant not in ("main", "ablation"):
        raise ValueError(f"variant must be 'main' or 'ablation', got {variant!r}")
    t = _read("insertion_mean_aucs.csv")
    t = t[t["ablation"] == (variant == "ablation")]
    return pd.DataFrame({
        "game": t["game"].map(GAMES), "method": t["method"].map(lambda m: _INSERTION_METHODS.get(m, m)),
        "substrate": t["substrate"], "measure": t["measure"].map(_INSERTION_MEASURES),
        "mean": t["auc"].astype(float), "std": t["auc_std"].astype(float), "n": BENCHMARK_STATES,
        "differs_from_main": t["variant_differs_from_main"].astype(bool)}).reset_index(drop=True)


@functools.lru_cache(maxsize=64)
def _preset(spec: str) -> str:
    from saliency_lib.agents import load_agent

    return load_agent(spec).preset


def _stored(units: list, results_dir, packed_only: bool = False) -> list:
    """The units of ``units`` that the store holds (loose or packed; ``packed_only``: packed)."""
    if packed_only:
        from saliency_lib.sweep import packed_keys

        keys = packed_keys(units, results_dir=results_dir)
        return [u for u in units if u.key in keys]
    try:
        from saliency_lib.sweep import stored_keys
    except ImportError:  # a store that keeps every unit as one loose file
        from saliency_lib.sweep import unit_path

        return [u for u in units if unit_path(u, results_dir).exists()]
    keys = stored_keys(units, results_dir=results_dir)
    return [u for u in units if u.key in keys]


def stored_units(profile: str, games: Sequence[str] = GAME_ORDER, *, experiments: Sequence[str],
                 preset: str | None = "dqn", agents: Sequence[str] | None = None, seed: int = 0,
                 results_dir=RESULTS_DIR, packed_only: bool = False) -> list:
    """The study's units of ``experiments`` for ``games`` that are stored, computing nothing.

    The units are those the study plans (:func:`~saliency_study.study.profile_specs`,
    ``agents`` or the study's agents of each game); ``preset`` keeps the agents of one kind
    (``"dqn"``: the agents whose measures are the paper's; None: every agent). ``packed_only``
    keeps the packed units, the ones a commit holds (a run in progress also leaves loose ones).
    """
    from saliency_lib.sweep import plan_units
    from saliency_study.study import profile_specs

    out = []
    for game in games:
        for spec in profile_specs(profile, game, agents=agents, seed=seed, results_dir=results_dir):
            if preset is not None and _preset(spec.agents[0]) != preset:
                continue
            units, _ = plan_units(dataclasses.replace(spec, experiments=tuple(experiments)), results_dir=results_dir,
                                  states=False)
            out += _stored(units, results_dir, packed_only)
    return out


def stored_rows(profile: str, games: Sequence[str] = GAME_ORDER, *, experiments: Sequence[str],
                preset: str | None = "dqn", agents: Sequence[str] | None = None, seed: int = 0, results_dir=RESULTS_DIR,
                packed_only: bool = False) -> pd.DataFrame:
    """The study's stored rows of ``experiments`` for ``games``, computing nothing (:func:`stored_units`).

    A game the study has not reached has no rows.
    """
    from saliency_lib.sweep import load_units

    units = stored_units(profile, games, experiments=experiments, preset=preset, agents=agents, seed=seed,
                         results_dir=results_dir, packed_only=packed_only)
    if not units:
        return pd.DataFrame(columns=["experiment", "agent", "game", "method", "substrate", "state", "level", "layer",
                                     "step", "measure", "value"])
    t = load_units(units, results_dir=results_dir)
    return t[t["experiment"].isin(list(experiments))].reset_index(drop=True)


def paper_verdict(paper: float, ci_low: float, ci_high: float, n: int) -> str:
    """The pre-stated verdict of one comparison with the paper.

    * ``"not yet run"``: no state of ours;
    * ``"too few states"``: fewer than :data:`~saliency_study.evidence.MIN_STATES` states;
    * ``"consistent"``: the paper's value lies inside our confidence interval;
    * ``"differs"``: it lies outside.

    The paper's value is itself an estimate from correlated states of another agent, so
    "differs" says that our agent's mean is not the paper's, not that either is wrong.
    """
    if not n:
        return NOT_RUN
    if not enough_states(n):
        return TOO_FEW
    if not (np.isfinite(paper) and np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "no data"
    return "consistent" if ci_low <= paper <= ci_high else "differs"


def _ordered_values(g: pd.DataFrame) -> np.ndarray:
    # trajectory order: the block bootstrap resamples consecutive states
    v = g.sort_values("state", kind="stable")["value"]
    return pd.to_numeric(v, errors="coerce").to_numpy(dtype=np.float64)


def compare_per_game(ours: pd.DataFrame, paper: pd.DataFrame, keys: Sequence[str], *,
                     games: Sequence[str] = GAME_ORDER, confidence: float = 0.95,
                     n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per game and setting: the paper's mean beside ours, with our block-bootstrap CI, n, ESS and a verdict.

    Parameters
    ----------
    ours : DataFrame
        State-level rows with ``game``, ``state``, ``value`` and the ``keys`` columns (one
        agent per game).
    paper : DataFrame
        ``game``, the ``keys`` columns and ``mean`` (the paper's value).
    keys : sequence of str
        The columns of a setting, e.g. ``("method", "level")``.
    games : sequence of str
        Every game gets rows, with the paper's value alone and ``"not yet run"`` where we
        have no states.

    Returns
    -------
    DataFrame
        ``game``, ``keys``…, ``paper``, ``mean``, ``ci_low``, ``ci_high``, ``n``, ``n_eff``,
        ``verdict`` (:func:`paper_verdict`).
    """
    from saliency_lib.metrics.dependence import block_bootstrap_ci, effective_sample_size

    keys = list(keys)
    groups = {k: g for k, g in ours.groupby(["game", *keys], sort=False)} if len(ours) else {}
    rows = []
    for game in games:
        for _, p in paper[paper["game"] == game].iterrows():
            key = (game, *(p[k] for k in keys))
            g = groups.get(key)
            v = _ordered_values(g) if g is not None else np.array([])
            v = v[np.isfinite(v)]
            lo, hi = block_bootstrap_ci(v, confidence=confidence, n_resamples=n_resamples, seed=seed)
            rows.append({"game": game, **{k: p[k] for k in keys}, "paper": float(p["mean"]),
                         "mean": float(v.mean()) if v.size else np.nan, "ci_low": lo, "ci_high": hi, "n": int(v.size),
                         "n_eff": effective_sample_size(v), "verdict": paper_verdict(p["mean"], lo, hi, v.size)})
    return pd.DataFrame(rows, columns=["game", *keys, "paper", "mean", "ci_low", "ci_high", "n", "n_eff", "verdict"])


def compare_pooled(ours: pd.DataFrame, paper: pd.DataFrame, keys: Sequence[str], *, confidence: float = 0.99,
                   n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per setting, pooled over the games that we have run: the paper's pooled mean beside ours, 99 % CI.

    Only settings the paper has. Ours: :func:`~saliency_lib.metrics.dependence.pooled_block_ci` (every state counts once, as
    in Huber et al.'s pooled figures; blocks resampled within each game). The paper's: the mean
    over the same games, each weighted by the states behind its value, so that both sides
    pool the same games. A verdict needs :data:`~saliency_study.evidence.MIN_STATES` pooled states.

    Returns
    -------
    DataFrame
        ``keys``…, ``games`` (comma-separated), ``paper``, ``mean``, ``ci_low``, ``ci_high``,
        ``n``, ``n_eff``, ``verdict``.
    """
    from saliency_lib.metrics.dependence import pooled_block_ci

    keys = list(keys)
    cols = [*keys, "games", "paper", "mean", "ci_low", "ci_high", "n", "n_eff", "verdict"]
    if ours.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in ours.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        series = {game: _ordered_values(gg) for game, gg in g.groupby("game", sort=False)}
        r = pooled_block_ci(series, confidence=confidence, n_resamples=n_resamples, seed=seed)
        p = paper[(paper["game"].isin(r["groups"])) & np.logical_and.reduce([paper[k] == v for k, v in zip(keys, key)])]
        if p.empty:
            continue  # a setting the paper did not run (e.g. our gradient methods): nothing to pool beside
        pm = float(np.average(p["mean"], weights=p["n"]))
        rows.append({**dict(zip(keys, key)), "games": ", ".join(r["groups"]), "paper": pm, "mean": r["mean"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"], "n_eff": r["n_eff"],
                     "verdict": paper_verdict(pm, r["ci_low"], r["ci_high"], r["n"])})
    return pd.DataFrame(rows, columns=cols)
