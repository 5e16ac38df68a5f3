"""Training variants compared over seeds: chapter 5's test of Itaya et al.'s score claim.

* :func:`compare_variants`: the final evaluation score (``scores.csv``, one protocol) per variant,
  and ``treatment − baseline`` with its Welch interval over seeds, the minimum detectable effect
  (:func:`minimum_detectable_effect`) and the verdict (:func:`decide`);
* :func:`curve_aggregates`, :func:`compare_curves`: the same on a learning-curve aggregate, the
  mean or the IQM (:func:`iqm`) of each seed's evaluation checkpoints;
* :func:`seed_comparisons`: all of them for one game, :func:`verdict_table` their verdicts;
* :func:`actor_critic_runs`, :func:`final_scores`: our actor-critic runs and their final scores
  per variant, beside the official run at the same frames.

The unit is always the training seed: one number per seed, intervals over seeds, never over games.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_lib.agents.mask_a3c import VARIANT_NAMES, VARIANTS
from saliency_lib.train.scores import normalise_scores

from .catalog import official_available
from .masks import AC_ALGOS, variant
from .paths import AGENTS_DIR, RUNS_DIR, repo_path
from .scores import score_table

__all__ = ["VariantComparison", "compare_variants", "compare_curves", "curve_aggregates", "seed_comparisons",
           "verdict_table", "minimum_detectable_effect", "iqm", "decide", "equivalent", "actor_critic_runs",
           "final_scores", "VARIANT_NAMES", "MARGIN", "POWER", "ALPHA", "CURVE_AGGREGATES", "FINAL_FRACTION"]

MARGIN = 0.2
"""Equivalence margin: a share of the baseline's mean (issue "Is it the agent?" §3)."""
POWER, ALPHA = 0.8, 0.05
"""Power and two-sided level of the minimum detectable effect."""
CURVE_AGGREGATES = ("curve_mean", "curve_iqm")
"""Learning-curve aggregates of :func:`curve_aggregates`: the mean and the IQM of a seed's checkpoints."""
FINAL_FRACTION = 0.1
"""Share of a run's logged frames, counted back from its last logged game, whose training games
:func:`final_scores` averages."""
_RUN_NAME = re.compile(r"^(?P<algo>a3c(?:-sync)?)-(?P<game>[A-Za-z]+)-(?P<variant>[a-z]+)-s(?P<seed>\d+)$")


def equivalent(margin: float = MARGIN) -> str:
    """The verdict's name for an interval inside ± ``margin`` × the baseline's mean."""
    return f"equivalent within {100 * margin:g} %"


@dataclass
class VariantComparison:
    """Result of :func:`compare_variants` and :func:`compare_curves`.

    Attributes
    ----------
    table : DataFrame
        One row per variant: ``variant, label, seeds, per_seed`` (list of the seeds' numbers, in seed
        order), ``seed_ids``, ``mean`` (over seeds), ``sd`` (over seeds, ddof 1), ``ci_low, ci_high``
        (t-interval over seeds; NaN below 2 seeds), ``games`` (all seeds), ``distinct_games`` (all seeds;
        NaN when unknown), ``frames`` (median).
    difference : dict
        ``treatment − baseline``: ``diff, se, df, ci_low, ci_high, n_baseline, n_treatment`` (Welch t over
        seeds; CI NaN when no verdict can be given), ``pooled_sd``, ``mde`` (the smallest difference the
        design detects with :data:`POWER`, :func:`minimum_detectable_effect`) and ``margin`` (± ``MARGIN`` ×
        the baseline's mean, the equivalence bounds).
    verdict : str or None
        :func:`decide`'s; None when the numbers cannot support one (``reason`` says why).
    reason : str or None
        Why there is no verdict (a short phrase), None with one. The book words the verdict.
    measure : str
        ``final`` (the evaluation's mean score) or one of :data:`CURVE_AGGREGATES`.
    """

    table: pd.DataFrame
    difference: dict
    verdict: str | None
    reason: str | None
    protocol: str
    game: str
    baseline: str
    treatment: str
    level: float
    frames: float = float("nan")
    labels: dict = field(default_factory=dict)
    measure: str = "final"


def _t_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    from scipy import stats

    n = len(x)
    if n < 2:
        return float("nan"), float("nan")
    m, se = float(np.mean(x)), float(np.std(x, ddof=1)) / math.sqrt(n)
    q = float(stats.t.ppf(0.5 + level / 2, n - 1))
    return m - q * se, m + q * se


def _welch(a: np.ndarray, b: np.ndarray, level: float) -> dict:
    """``mean(b) − mean(a)`` with its Welch t-interval (a: baseline, b: treatment)."""
    from scipy import stats

    na, nb = len(a), len(b)
    diff = float(np.mean(b) - np.mean(a)) if na and nb else float("nan")
    out = {"diff": diff, "se": float("nan"), "df": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
           "n_baseline": na, "n_treatment": nb}
    if na < 2 or nb < 2:
        return out
    va, vb = float(np.var(a, ddof=1)) / na, float(np.var(b, ddof=1)) / nb
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1)) if se > 0 else float(na + nb - 2)
    q = float(stats.t.ppf(0.5 + level / 2, df))
    out.update(se=se, df=df, ci_low=diff - q * se, ci_high=diff + q * se)
    return out


def minimum_detectable_effect(sd: float, n_baseline: int, n_treatment: int, *, alpha: float = ALPHA,
                              power: float = POWER) -> float:
    """The smallest difference of means that a two-sample t-test detects with ``power``.

    Two-sided, at level ``alpha``, with ``n_baseline`` and ``n_treatment`` seeds and the common
    standard deviation ``sd`` (the pooled sd over seeds): ``d · sd``, where ``d`` solves the power
    equation of the noncentral t (:class:`statsmodels.stats.power.TTestIndPower`). It uses the pooled
    t-test's ``n₁ + n₂ − 2`` degrees of freedom: Welch's interval with unequal spreads is a little wider.
    NaN below 2 seeds in either arm or without a finite sd.

    Raises
    ------
    ValueError
        ``alpha`` or ``power`` outside (0, 1), or a negative ``sd``.
    """
    from statsmodels.stats.power import TTestIndPower

    for name, v in (("alpha", alpha), ("power", power)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must lie in (0, 1), got {v!r}")
    if not np.isfinite(sd) or n_baseline < 2 or n_treatment < 2:
        return float("nan")
    if sd < 0:
        raise ValueError(f"sd must be >= 0, got {sd!r}")
    d = TTestIndPower().solve_power(effect_size=None, nobs1=n_baseline, ratio=n_treatment / n_baseline, alpha=alpha,
                                    power=power, alternative="two-sided")
    return float(d) * float(sd)


def _pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return float("nan")
    return math.sqrt(((na - 1) * np.var(a, ddof=1) + (nb - 1) * np.var(b, ddof=1)) / (na + nb - 2))


def iqm(x) -> float:
    """Interquartile mean: the mean of the middle half of ``x`` (25 % trimmed from each end, as
    :func:`scipy.stats.trim_mean`; Agarwal et al. 2021). NaN when empty."""
    from scipy.stats import trim_mean

    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(trim_mean(x, 0.25)) if x.size else float("nan")


def decide(ci_low: float, ci_high: float, baseline_mean: float, *, margin: float = MARGIN) -> str:
    """The verdict of a difference's interval.

    ``higher`` or ``lower`` when it excludes 0 (a direction is shown first, even inside the margin);
    else :func:`equivalent` when it lies inside ± ``margin`` × ``|baseline_mean|``; else
    ``no detectable difference`` (the design's minimum detectable effect says how large a difference
    could hide in it). The interval is the comparison's own (95 % by default), stricter than the
    90 % interval of a two one-sided tests procedure at 5 %.
    """
    if ci_low > 0:
        return "higher"
    if ci_high < 0:
        return "lower"
    bound = margin * abs(baseline_mean)
    return equivalent(margin) if -bound < ci_low and ci_high < bound else "no detectable difference"


def _compare(per_seed: pd.DataFrame, *, protocol: str, game: str, variants, baseline: str, treatment: str,
             level: float, labels: dict, margin: float, measure: str, what: str) -> VariantComparison:
    """The comparison of ``per_seed`` rows (``variant, seed, value, games, distinct_games, frames``)."""
    rows, values = [], {}
    for v in [v for v in variants if v in set(per_seed["variant"])]:
        g = per_seed[per_seed["variant"] == v]
        by_seed = g.groupby("seed", sort=True).agg(value=("value", "mean"), games=("games", "sum"),
                                                   distinct=("distinct_games", lambda d: d.sum(min_count=len(d))))
        x = by_seed["value"].to_numpy(float)
        values[v] = x
        lo, hi = _t_interval(x, level)
        rows.append({"variant": v, "label": labels.get(v, v), "seeds": len(x), "per_seed": [float(m) for m in x],
                     "seed_ids": [int(s) for s in by_seed.index], "mean": float(np.mean(x)),
                     "sd": float(np.std(x, ddof=1)) if len(x) > 1 else float("nan"), "ci_low": lo, "ci_high": hi,
                     "games": float(by_seed["games"].sum()),
                     "distinct_games": float(by_seed["distinct"].sum(min_count=len(by_seed))),
                     "frames": float(g["frames"].median())})
    a, b = values.get(baseline, np.array([])), values.get(treatment, np.array([]))
    diff = _welch(a, b, level)
    sd = _pooled_sd(a, b)
    diff.update(pooled_sd=sd, mde=minimum_detectable_effect(sd, len(a), len(b)),
                margin=margin * abs(float(np.mean(a))) if len(a) else float("nan"))
    frames = float(per_seed.loc[per_seed["variant"].isin([baseline, treatment]), "frames"].median())
    la, lb = labels.get(baseline, baseline), labels.get(treatment, treatment)
    verdict = reason = None
    if len(a) == 0 or len(b) == 0:
        reason = f"{' and '.join(lab for lab, x in ((la, a), (lb, b)) if len(x) == 0)} has no {what} on {game}"
    elif len(a) < 2 or len(b) < 2:
        few = " and ".join(f"{lab} has {len(x)} seed" for lab, x in ((la, a), (lb, b)) if len(x) < 2)
        reason = f"{few}; a difference between variants needs at least 2 seeds of each"
    else:
        verdict = decide(diff["ci_low"], diff["ci_high"], float(np.mean(a)), margin=margin)
    return VariantComparison(table=pd.DataFrame(rows), difference=diff, verdict=verdict, reason=reason, protocol=protocol,
                             game=game, baseline=baseline, treatment=treatment, level=level, frames=frames,
                             labels=labels, measure=measure)


def _check(level: float, margin: float, variants, baseline: str, treatment: str) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    for name, v in (("baseline", baseline), ("treatment", treatment)):
        if v not in variants:
            raise ValueError(f"{name} {v!r} is not among the variants {variants}")


def compare_variants(scores: pd.DataFrame, *, protocol: str, game: str = "Breakout",
                     variants: tuple[str, ...] = VARIANTS, baseline: str = "none", treatment: str = "double",
                     level: float = 0.95, labels: dict | None = None, margin: float = MARGIN) -> VariantComparison:
    """Compare training variants over seeds: the mean of each variant and ``treatment − baseline``, with CIs over seeds.

    The unit is the training seed. Each seed's evaluation (its games under ``protocol``) is
    averaged to ONE number per seed first (several rows of the same variant and seed are
    averaged too); games are never treated as independent samples: the games of one agent
    share its weights, and under the greedy protocol many of them are replays of each other.

    The CIs are t-intervals over seeds: ``mean ± t(level, n − 1) · sd / √n`` per variant, and
    Welch's interval for the difference (unequal variances, Welch–Satterthwaite degrees of
    freedom). With 2 or 3 seeds a bootstrap over seeds is degenerate (3 values give at most 10
    distinct resampled means, and its percentile interval is far too narrow), while the
    t-interval is exact when seed means are normal and honest about how little 3 seeds say.
    Beside the interval, the minimum detectable effect of the design at :data:`POWER`, and the
    verdict of :func:`decide` (direction, equivalence within ``margin``, or no detectable difference).

    No verdict is given (``verdict`` None, with ``reason``) when the baseline or the treatment
    has fewer than 2 seeds: one seed per variant has no spread over seeds to compare a
    difference with.

    Parameters
    ----------
    scores : DataFrame
        The scores table (:func:`read_scores`; a table without ``protocol`` is read as greedy),
        with ``game, variant, seed, protocol, mean`` and optionally ``scores``, ``episodes``,
        ``distinct_games``, ``frames``.
    protocol : {"greedy", "sticky"}
        Which evaluation to compare (required: the two protocols answer different questions).
    game : str
    variants : tuple of str
        Variants to put in the table (those without a row are left out).
    baseline, treatment : str
        The difference is ``treatment − baseline``.
    level : float
        Confidence level of the intervals.
    labels : dict, optional
        Names of the variants in the table and the reason (default :data:`VARIANT_NAMES`).
    margin : float
        Equivalence margin, a share of the baseline's mean.

    Returns
    -------
    VariantComparison

    Raises
    ------
    ValueError
        Unknown protocol, a level outside (0, 1), a margin ≤ 0, baseline or treatment not in
        ``variants``, or no row of ``game`` under ``protocol``.
    """
    from saliency_lib.play import get_protocol

    get_protocol(protocol)
    _check(level, margin, variants, baseline, treatment)
    df = normalise_scores(scores)
    df = df[(df["game"] == game) & (df["protocol"] == protocol) & df["variant"].isin(variants)]
    if df.empty:
        raise ValueError(f"no {protocol} evaluation of the variants {', '.join(variants)} on {game} in the scores table")
    games = df["scores"].map(lambda s: len(json.loads(s)) if isinstance(s, str) and s.startswith("[") else np.nan)
    per_seed = pd.DataFrame({
        "variant": df["variant"], "seed": pd.to_numeric(df["seed"], errors="coerce"),
        "value": pd.to_numeric(df["mean"], errors="coerce"),
        "games": games.fillna(pd.to_numeric(df["episodes"], errors="coerce")),
        "distinct_games": pd.to_numeric(df["distinct_games"], errors="coerce"),
        "frames": pd.to_numeric(df["frames"], errors="coerce")})
    return _compare(per_seed, protocol=protocol, game=game, variants=variants, baseline=baseline, treatment=treatment,
                    level=level, labels={**VARIANT_NAMES, **(labels or {})}, margin=margin, measure="final",
                    what=f"{protocol} evaluation")


# -- learning curves -------------------------------------------------------------------------------

def curve_aggregates(agents_dir: str | os.PathLike = AGENTS_DIR, game: str = "Breakout") -> pd.DataFrame:
    """Per shipped actor-critic agent of ``game``: the aggregates of its evaluation checkpoints.

    Each checkpoint of ``eval_log.csv`` is a greedy evaluation during training (``eval_mean`` over its
    ``eval_scores`` games; rows a resumed run replayed are dropped). ``curve_mean`` is their mean and
    ``curve_iqm`` their interquartile mean (:func:`iqm`): both use the whole run, not only its end.

    Returns
    -------
    DataFrame
        ``agent, game, variant, seed, checkpoints, games, frames, curve_mean, curve_iqm``; agents without
        an ``eval_log.csv`` are left out.
    """
    from saliency_lib.train.common import read_log

    from .catalog import shipped_agents

    cols = ["agent", "game", "variant", "seed", "checkpoints", "games", "frames", *CURVE_AGGREGATES]
    df = shipped_agents(agents_dir)
    rows = []
    for r in df[(df["game"] == game) & df["algo"].isin(AC_ALGOS)].itertuples():
        path = repo_path(r.path) / "eval_log.csv"
        if not path.is_file():
            continue
        log = read_log(path).dropna(subset=["eval_mean"])
        if log.empty:
            continue
        meta = json.loads((repo_path(r.path) / "meta.json").read_text())
        games = log["eval_scores"].map(lambda s: len(json.loads(s)) if isinstance(s, str) else np.nan)
        x = log["eval_mean"].to_numpy(float)
        rows.append({"agent": r.agent, "game": game, "variant": variant(r._asdict()), "seed": int(meta.get("seed", 0)),
                     "checkpoints": len(x), "games": float(games.sum()), "frames": float(log["frames"].max()),
                     "curve_mean": float(x.mean()), "curve_iqm": iqm(x)})
    return pd.DataFrame(rows, columns=cols)


def compare_curves(curves: pd.DataFrame, *, aggregate: str = "curve_mean", game: str = "Breakout",
                   variants: tuple[str, ...] = VARIANTS, baseline: str = "none", treatment: str = "double",
                   level: float = 0.95, labels: dict | None = None, margin: float = MARGIN) -> VariantComparison:
    """:func:`compare_variants` on a learning-curve aggregate of :func:`curve_aggregates` (one number per seed).

    ``games`` counts every evaluation game of the checkpoints; the checkpoints' protocol is greedy.

    Raises
    ------
    ValueError
        An unknown ``aggregate``, the checks of :func:`compare_variants`, or no row of ``game``.
    """
    if aggregate not in CURVE_AGGREGATES:
        raise ValueError(f"aggregate must be one of {CURVE_AGGREGATES}, got {aggregate!r}")
    _check(level, margin, variants, baseline, treatment)
    df = curves[(curves["game"] == game) & curves["variant"].isin(variants)]
    if df.empty:
        raise ValueError(f"no evaluation checkpoints of the variants {', '.join(variants)} on {game}")
    per_seed = pd.DataFrame({"variant": df["variant"], "seed": df["seed"], "value": df[aggregate], "games": df["games"],
                             "distinct_games": np.nan, "frames": df["frames"]})
    return _compare(per_seed, protocol="greedy", game=game, variants=variants, baseline=baseline, treatment=treatment,
                    level=level, labels={**VARIANT_NAMES, **(labels or {})}, margin=margin, measure=aggregate,
                    what="evaluation checkpoints")


def seed_comparisons(game: str = "Breakout", agents_dir: str | os.PathLike = AGENTS_DIR, **kw) -> dict:
    """Every comparison of chapter 5 for ``game``: ``{"greedy", "sticky"}`` (the final score under each protocol of
    ``<agents_dir>/scores.csv``) and :data:`CURVE_AGGREGATES` (the evaluation checkpoints). Each maps to a
    :class:`VariantComparison`, or to the reason there is none (a short phrase). ``kw`` go to every comparison."""
    from saliency_lib.train.scores import PROTOCOL_NAMES, read_scores

    path = repo_path(agents_dir) / "scores.csv"
    table = read_scores(path) if path.is_file() else None
    out: dict = {}
    for p in PROTOCOL_NAMES:
        try:
            out[p] = compare_variants(table, protocol=p, game=game, **kw) if table is not None else f"no scores table at {path}"
        except ValueError as e:  # no agent of the game was evaluated under this protocol
            out[p] = str(e)
    curves = curve_aggregates(agents_dir, game)
    for a in CURVE_AGGREGATES:
        try:
            out[a] = compare_curves(curves, aggregate=a, game=game, **kw)
        except ValueError as e:
            out[a] = str(e)
    return out


VERDICT_COLUMNS = ("measure", "protocol", "baseline", "treatment", "level", "mean_baseline", "mean_treatment", "frames",
                   "diff", "se", "df", "ci_low", "ci_high", "n_baseline", "n_treatment", "pooled_sd", "mde", "margin")


def verdict_table(comparisons: Mapping[str, VariantComparison | str], *, baseline: str = "none",
                  treatment: str = "double") -> pd.DataFrame:
    """One row per comparison (the keys of ``comparisons``, in order): ``key`` and :data:`VERDICT_COLUMNS`, every
    further field of the comparison's ``difference``, ``verdict`` ("no verdict" where there is none) and ``reason``.

    A value that is not a :class:`VariantComparison` is the reason there is none (its ``str``): the row has NaN
    numbers, so that the prose can always quote it."""
    rows = []
    for key, c in comparisons.items():
        if not isinstance(c, VariantComparison):
            rows.append({"key": key, "baseline": baseline, "treatment": treatment, "level": np.nan, "n_baseline": 0,
                         "n_treatment": 0, "verdict": "no verdict", "reason": str(c)})
            continue
        mean = c.table.set_index("variant")["mean"]
        rows.append({"key": key, "measure": c.measure, "protocol": c.protocol, "baseline": c.baseline,
                     "treatment": c.treatment, "level": c.level, "mean_baseline": mean.get(c.baseline, np.nan),
                     "mean_treatment": mean.get(c.treatment, np.nan), "frames": c.frames, **c.difference,
                     "verdict": c.verdict or "no verdict", "reason": c.reason or ""})
    t = pd.DataFrame(rows)
    cols = ["key", *VERDICT_COLUMNS]
    return t.reindex(columns=[*cols, *[k for k in t.columns if k not in cols]])


# -- our runs and their final scores -----------------------------------------------------------------

def actor_critic_runs(game: str, agents_dir: str | os.PathLike = AGENTS_DIR, runs_dir: str | os.PathLike | None = RUNS_DIR,
                      scores_csv: str | os.PathLike | None = None) -> pd.DataFrame:
    """Our actor-critic training runs of ``game``: shipped agents and, optionally, runs in progress.

    Shipped agents are the ``agents_dir`` folders with ``algo`` a3c; their final score comes from
    ``scores.csv`` next to them (``scores_csv``) or ``eval_score`` in ``meta.json`` (:func:`~saliency_study.scores.score_table`).
    Runs in progress are ``<runs_dir>/a3c-<game>-<variant>-s<seed>`` with a ``train_log.csv`` and no shipped
    agent of the same name; they have no final score.

    Returns
    -------
    DataFrame
        Columns ``agent, variant, seed, frames, mean, std, episodes, shipped, logs`` (the folder with
        ``train_log.csv``/``eval_log.csv``, or None).
    """
    cols = ["agent", "variant", "seed", "frames", "mean", "std", "episodes", "shipped", "logs"]
    base = repo_path(agents_dir)
    scores = score_table(agents_dir, scores_csv if scores_csv is not None else base / "scores.csv", games=[game])
    rows = []
    for _, s in scores[scores["algo"].isin(AC_ALGOS)].iterrows():
        d = repo_path(s["path"])
        rows.append({"agent": s["agent"], "variant": variant(s), "seed": json.loads((d / "meta.json").read_text()).get("seed"),
                     "frames": s["frames"], "mean": s["mean"], "std": s["std"], "episodes": s["episodes"], "shipped": True,
                     "logs": str(d) if (d / "train_log.csv").is_file() else None})
    shipped = {r["agent"] for r in rows}
    runs = repo_path(runs_dir) if runs_dir is not None else None
    for d in sorted(runs.glob(f"a3c*-{game}-*-s*")) if runs is not None and runs.is_dir() else []:
        m = _RUN_NAME.match(d.name)
        if not m or m["game"] != game or d.name in shipped or not (d / "train_log.csv").is_file():
            continue
        tr = pd.read_csv(d / "train_log.csv")
        rows.append({"agent": d.name, "variant": m["variant"], "seed": int(m["seed"]),
                     "frames": float(tr["frames"].max()) if len(tr) else 0.0, "mean": np.nan, "std": np.nan,
                     "episodes": np.nan, "shipped": False, "logs": str(d)})
    order = {v: i for i, v in enumerate(VARIANTS)}
    return pd.DataFrame(rows, columns=cols).sort_values(
        ["variant", "seed"], key=lambda c: c.map(order) if c.name == "variant" else c).reset_index(drop=True)


def _final_training_mean(logs) -> tuple[float, int]:
    """Mean score and count of the training games in the last :data:`FINAL_FRACTION` of the frames of the
    run's last logged game."""
    from saliency_lib.train.common import read_log

    if not isinstance(logs, (str, os.PathLike)) or not (Path(logs) / "train_log.csv").is_file():  # None or NaN: none
        return float("nan"), 0
    log = read_log(Path(logs) / "train_log.csv").dropna(subset=["episode_score"])
    if log.empty:
        return float("nan"), 0
    last = log[log["frames"] > (1 - FINAL_FRACTION) * log["frames"].max()]
    return float(last["episode_score"].mean()), len(last)


def final_scores(runs: pd.DataFrame, game: str) -> pd.DataFrame:
    """Final scores per variant of the shipped runs of :func:`actor_critic_runs`: seeds, frames, mean ± sd over seeds
    of the agents' evaluation means (empty when none is shipped).

    Columns ``variant, seeds, frames, train_final, train_games, mean, sd_seeds, min, max, per_seed`` (the seeds'
    means), ``test_games``, ``test_sd``.
    ``train_final`` is a second, less noisy measure: the mean over seeds of each run's training games (sampled
    actions) in the last :data:`FINAL_FRACTION` of its frames (``train_games`` games in all). A last row
    (``variant`` "official") gives the official Mask-A3C run at the same number of frames (its last 20 greedy
    test games before it: ``test_games`` of them, with their sd ``test_sd``), when its log is available.
    """
    from saliency_lib.agents.official import OFFICIAL_GAMES, official_test_log

    cols = ["variant", "seeds", "frames", "train_final", "train_games", "mean", "sd_seeds", "min", "max", "per_seed",
            "test_games", "test_sd"]
    done = runs[runs["shipped"] & runs["mean"].notna()] if len(runs) else runs
    if done.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for v in [v for v in VARIANTS if v in set(done["variant"])]:
        g = done[done["variant"] == v]
        final = [_final_training_mean(logs) for logs in g["logs"]]
        train = [m for m, n in final if n]
        rows.append({"variant": v, "seeds": len(g), "frames": float(g["frames"].median()),
                     "train_final": float(np.mean(train)) if train else np.nan, "train_games": sum(n for _, n in final),
                     "mean": float(g["mean"].mean()), "sd_seeds": float(g["mean"].std(ddof=1)) if len(g) > 1 else np.nan,
                     "min": float(g["mean"].min()), "max": float(g["mean"].max()), "per_seed": list(g["mean"]),
                     "test_games": 0, "test_sd": np.nan})
    frames = float(done["frames"].median())
    if game in OFFICIAL_GAMES and official_available(game, logs=True):
        log = official_test_log(game)
        s = log.loc[log["frames"] <= frames, "score"].tail(20)
        if len(s):
            rows.append({"variant": "official", "seeds": 1, "frames": frames, "train_final": np.nan, "train_games": 0,
                         "mean": float(s.mean()), "sd_seeds": np.nan, "min": np.nan, "max": np.nan, "per_seed": [],
                         "test_games": len(s), "test_sd": float(s.std(ddof=0))})
    return pd.DataFrame(rows, columns=cols)
