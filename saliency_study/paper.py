"""Huber et al.'s published numbers, and ours beside them per game and pooled over the games.

The authors' result files, extracted as numbers, are committed under
``data/reference/huber2021/`` (a copy of the project's shared reference extract; its README
says where every number comes from). Chapters 3 and 4 read them only through this module.

* :func:`paper_sanity`, :func:`paper_insertion`: the two tables in our names (games,
  methods, measures, levels).
* :func:`stored_units`, :func:`stored_rows`: the study's stored units and rows of several
  games, computing nothing.
* :func:`compare_per_game`: per game and setting, the paper's value beside our mean with its
  interval, n, effective sample size, the pre-stated margin, the difference with its 90 %
  interval and an equivalence verdict (reproduced, differs, inconclusive or withheld; see
  :mod:`saliency_lib.metrics.equivalence` and :func:`saliency_study.evidence.margin`).
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
from saliency_study.catalog import agent_preset
from saliency_study.evidence import MIN_ESS, margin
from saliency_study.paths import RESULTS_DIR, repo_path

__all__ = [
    "REFERENCE_DIR", "GAMES", "GAME_ORDER", "GAME_LABELS", "LEVEL_LAYERS", "paper_sanity", "paper_insertion",
    "stored_units", "stored_rows", "compare_per_game", "compare_pooled", "COMPARISON_COLUMNS", "NOT_RUN", "VERDICTS",
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
VERDICTS = ("reproduced", "differs", "inconclusive", "withheld", NOT_RUN)
"""The verdicts of :func:`compare_per_game` and :func:`compare_pooled`, in display order."""


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
        ``std`` (sample std, ``ddof`` 1), ``n`` (states read).
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
                         "mean": mean, "std": float(np.sqrt(var)), "n": int(n.sum()), "ddof": 1})
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
        "ddof": 0, "differs_from_main": t["variant_differs_from_main"].astype(bool)}).reset_index(drop=True)


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
            if preset is not None and agent_preset(spec.agents[0]) != preset:
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


def _ordered_values(g: pd.DataFrame) -> np.ndarray:
    # trajectory order: the block bootstrap resamples consecutive states
    v = g.sort_values("state", kind="stable")["value"]
    return pd.to_numeric(v, errors="coerce").to_numpy(dtype=np.float64)


COMPARISON_COLUMNS = ["paper", "mean", "ci_low", "ci_high", "n", "n_eff", "margin", "difference", "diff_low",
                      "diff_high", "verdict", "reason"]
"""The columns of a comparison after its setting's keys."""


def _verdict_row(values: np.ndarray, p: pd.Series, measure: str, confidence: float) -> dict:
    """One comparison: our values (trajectory order) against the paper's row ``p``."""
    from saliency_lib.metrics.dependence import effective_sample_size, mean_ci
    from saliency_lib.metrics.equivalence import compare_with_reference

    if not values.size:
        return {"paper": float(p["mean"]), "mean": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": 0, "n_eff": np.nan,
                "margin": margin(measure, p.get("std")), "difference": np.nan, "diff_low": np.nan, "diff_high": np.nan,
                "verdict": NOT_RUN, "reason": "no state of ours"}
    n_eff = effective_sample_size(values)
    lo, hi = mean_ci(values, confidence=confidence, n_eff=n_eff)
    v = compare_with_reference(values, float(p["mean"]), margin=margin(measure, p.get("std")), reference_sd=p["std"],
                               reference_n=p["n"], reference_ddof=int(p["ddof"]), min_ess=MIN_ESS)
    return {"paper": float(p["mean"]), "mean": float(values.mean()), "ci_low": lo, "ci_high": hi, "n": int(values.size),
            "n_eff": n_eff, "margin": v.margin, "difference": v.difference, "diff_low": v.ci_low, "diff_high": v.ci_high,
            "verdict": v.verdict, "reason": v.reason}


def compare_per_game(ours: pd.DataFrame, paper: pd.DataFrame, keys: Sequence[str], *,
                     games: Sequence[str] = GAME_ORDER, confidence: float = 0.95, **_) -> pd.DataFrame:
    """Per game and setting: the paper's mean beside ours, and whether ours reproduces it.

    Our mean comes with its ``confidence`` interval (t on the effective sample size:
    :func:`~saliency_lib.metrics.dependence.mean_ci`). The verdict is an equivalence test (TOST at
    5 %, i.e. the 90 % interval of ``ours − paper`` against the pre-stated margin
    :func:`~saliency_study.evidence.margin`), with the paper's own sampling error from its standard
    deviation and count (Welch): **reproduced** (interval inside ±margin), **differs** (outside),
    **inconclusive** (straddles a margin), **withheld** (effective sample size below
    :data:`~saliency_study.evidence.MIN_ESS`), or **not yet run**.

    Parameters
    ----------
    ours : DataFrame
        State-level rows with ``game``, ``state``, ``value`` and the ``keys`` columns (one
        agent per game); ``measure`` among the keys or constant.
    paper : DataFrame
        ``game``, the ``keys`` columns, ``measure``, ``mean``, ``std``, ``n``, ``ddof``
        (:func:`paper_sanity`, :func:`paper_insertion`).
    keys : sequence of str
        The columns of a setting, e.g. ``("method", "level", "measure")``.
    games : sequence of str
        Every game gets rows, with the paper's value alone and ``"not yet run"`` where we
        have no states.

    Returns
    -------
    DataFrame
        ``game``, ``keys``…, then :data:`COMPARISON_COLUMNS`.
    """
    keys = list(keys)
    groups = {k: g for k, g in ours.groupby(["game", *keys], sort=False)} if len(ours) else {}
    rows = []
    for game in games:
        for _, p in paper[paper["game"] == game].iterrows():
            g = groups.get((game, *(p[k] for k in keys)))
            v = _ordered_values(g) if g is not None else np.array([])
            rows.append({"game": game, **{k: p[k] for k in keys},
                         **_verdict_row(v[np.isfinite(v)], p, p["measure"], confidence)})
    return pd.DataFrame(rows, columns=["game", *keys, *COMPARISON_COLUMNS])


def compare_pooled(ours: pd.DataFrame, paper: pd.DataFrame, keys: Sequence[str], *, confidence: float = 0.99,
                   **_) -> pd.DataFrame:
    """Per setting, pooled over the games that we have run: the paper's pooled mean beside ours, and a verdict.

    Only settings the paper has. Ours: :func:`~saliency_lib.metrics.dependence.pooled_block_ci`
    (every state counts once, as in Huber et al.'s pooled figures, with each game's own
    dependence), at ``confidence`` (99 %, the paper's). The paper's: the mean over the same games,
    each weighted by the states behind its value, so that both sides pool the same games; its
    standard error pools the games' ``std / √n`` alike. The verdict is the per-game one
    (:func:`compare_per_game`) on the pooled difference: its 90 % interval, widened by the paper's
    standard error, against the margin of the games' mean standard deviation.

    Returns
    -------
    DataFrame
        ``keys``…, ``games`` (comma-separated), then :data:`COMPARISON_COLUMNS`.
    """
    from scipy import stats

    from saliency_lib.metrics.dependence import pooled_block_ci
    from saliency_lib.metrics.equivalence import equivalence_verdict

    keys = list(keys)
    cols = [*keys, "games", *COMPARISON_COLUMNS]
    if ours.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in ours.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        series = {game: _ordered_values(gg) for game, gg in g.groupby("game", sort=False)}
        r = pooled_block_ci(series, confidence=confidence)
        p = paper[(paper["game"].isin(r["groups"])) & np.logical_and.reduce([paper[k] == v for k, v in zip(keys, key)])]
        if p.empty:
            continue  # a setting the paper did not run (e.g. our gradient methods): nothing to pool beside
        w = p["n"].to_numpy(float) / p["n"].sum()
        pm = float(np.sum(w * p["mean"]))
        p_se = float(np.sqrt(np.sum(w**2 * p["std"].to_numpy(float) ** 2 / p["n"].to_numpy(float))))
        r90 = pooled_block_ci(series, confidence=0.90)
        half = np.array([r90["mean"] - r90["ci_low"], r90["ci_high"] - r90["mean"]])
        half = np.sqrt(half**2 + (stats.norm.ppf(0.95) * p_se) ** 2)
        diff = r["mean"] - pm
        m = margin(str(p["measure"].iloc[0]), float(np.sum(w * p["std"])))
        v = equivalence_verdict(diff, diff - half[0], diff + half[1], margin=m, n_eff=r["n_eff"], n=r["n"],
                                min_ess=MIN_ESS)
        rows.append({**dict(zip(keys, key)), "games": ", ".join(r["groups"]), "paper": pm, "mean": r["mean"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": r["n"], "n_eff": r["n_eff"], "margin": m,
                     "difference": diff, "diff_low": v.ci_low, "diff_high": v.ci_high, "verdict": v.verdict,
                     "reason": v.reason})
    return pd.DataFrame(rows, columns=cols)
