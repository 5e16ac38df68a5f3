"""Training variants compared over seeds: chapter 5's test of Itaya et al.'s score claim.

:func:`compare_variants` compares training variants (A3C without mask, Mask-A3C ...) over
training seeds: one number per seed, CIs over seeds, never over games.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from saliency_lib.agents.mask_a3c import VARIANT_NAMES, VARIANTS
from saliency_lib.train.scores import normalise_scores

__all__ = ["VariantComparison", "compare_variants", "VARIANT_NAMES"]


@dataclass
class VariantComparison:
    """Result of :func:`compare_variants`.

    Attributes
    ----------
    table : DataFrame
        One row per variant: ``variant, label, seeds, per_seed`` (list of the seeds' evaluation
        means, in seed order), ``seed_ids``, ``mean`` (over seeds), ``sd`` (over seeds, ddof 1),
        ``ci_low, ci_high`` (t-interval over seeds; NaN below 2 seeds), ``games`` (all seeds),
        ``distinct_games`` (all seeds; NaN when unknown), ``frames`` (median).
    difference : dict
        ``treatment − baseline``: ``diff, se, df, ci_low, ci_high, n_baseline, n_treatment``
        (Welch t over seeds; CI NaN when no verdict can be given).
    verdict : {"higher", "lower", "no detectable difference"} or None
        Of the treatment against the baseline; None when the numbers cannot support one
        (``reason`` says why).
    reason : str or None
        Why there is no verdict (a short phrase), None with one. The book words the verdict.
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


def compare_variants(scores: pd.DataFrame, *, protocol: str, game: str = "Breakout",
                     variants: tuple[str, ...] = VARIANTS, baseline: str = "none", treatment: str = "double",
                     level: float = 0.95, labels: dict | None = None) -> VariantComparison:
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

    Returns
    -------
    VariantComparison

    Raises
    ------
    ValueError
        Unknown protocol, a level outside (0, 1), baseline or treatment not in ``variants``, or
        no row of ``game`` under ``protocol``.
    """
    from saliency_lib.play import get_protocol

    get_protocol(protocol)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    for name, v in (("baseline", baseline), ("treatment", treatment)):
        if v not in variants:
            raise ValueError(f"{name} {v!r} is not among the variants {variants}")
    labels = {**VARIANT_NAMES, **(labels or {})}
    df = normalise_scores(scores)
    df = df[(df["game"] == game) & (df["protocol"] == protocol) & df["variant"].isin(variants)]
    if df.empty:
        raise ValueError(f"no {protocol} evaluation of the variants {', '.join(variants)} on {game} in the scores table")
    df = df.assign(seed=pd.to_numeric(df["seed"], errors="coerce"), mean=pd.to_numeric(df["mean"], errors="coerce"))
    games = df["scores"].map(lambda s: len(json.loads(s)) if isinstance(s, str) and s.startswith("[") else np.nan)
    df = df.assign(games=games.fillna(pd.to_numeric(df["episodes"], errors="coerce")),
                   distinct_games=pd.to_numeric(df["distinct_games"], errors="coerce"), frames=pd.to_numeric(df["frames"], errors="coerce"))
    rows, per_seed = [], {}
    for v in [v for v in variants if v in set(df["variant"])]:
        g = df[df["variant"] == v]
        by_seed = g.groupby("seed", sort=True).agg(mean=("mean", "mean"), games=("games", "sum"),
                                                   distinct=("distinct_games", lambda d: d.sum(min_count=len(d))))
        x = by_seed["mean"].to_numpy(float)
        per_seed[v] = x
        lo, hi = _t_interval(x, level)
        rows.append({"variant": v, "label": labels.get(v, v), "seeds": len(x), "per_seed": [float(m) for m in x],
                     "seed_ids": [int(s) for s in by_seed.index], "mean": float(np.mean(x)),
                     "sd": float(np.std(x, ddof=1)) if len(x) > 1 else float("nan"), "ci_low": lo, "ci_high": hi,
                     "games": float(by_seed["games"].sum()), "distinct_games": float(by_seed["distinct"].sum(min_count=len(by_seed))),
                     "frames": float(g["frames"].median())})
    table = pd.DataFrame(rows)
    a, b = per_seed.get(baseline, np.array([])), per_seed.get(treatment, np.array([]))
    diff = _welch(a, b, level)
    frames = float(df.loc[df["variant"].isin([baseline, treatment]), "frames"].median())
    la, lb = labels.get(baseline, baseline), labels.get(treatment, treatment)
    verdict = reason = None
    if len(a) == 0 or len(b) == 0:
        missing = " and ".join(lab for lab, x in ((la, a), (lb, b)) if len(x) == 0)
        reason = f"{missing} has no {protocol} evaluation on {game}"
    elif len(a) < 2 or len(b) < 2:
        few = " and ".join(f"{lab} has {len(x)} seed" for lab, x in ((la, a), (lb, b)) if len(x) < 2)
        reason = f"{few}; a difference between variants needs at least 2 seeds of each"
    else:
        verdict = "higher" if diff["ci_low"] > 0 else "lower" if diff["ci_high"] < 0 else "no detectable difference"
    return VariantComparison(table=table, difference=diff, verdict=verdict, reason=reason, protocol=protocol,
                             game=game, baseline=baseline, treatment=treatment, level=level, frames=frames, labels=labels)
