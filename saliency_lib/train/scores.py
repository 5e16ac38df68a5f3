"""The scores table of the shipped agents (``data/agents/scores.csv``) and the seed-level comparison.

One row per (agent, evaluation protocol), with the columns :data:`SCORES_COLUMNS`:

* ``protocol``: ``"greedy"`` (the papers' protocol on the deterministic emulator, 10 games)
  or ``"sticky"`` (sticky actions with ``repeat_action_probability=0.25``, 30 games); see
  :data:`saliency_lib.play.PROTOCOLS`;
* ``episodes``, ``mean``, ``std`` (population sd over the games), ``scores`` (JSON list of the
  games' scores);
* ``distinct_games``: how many of the ``episodes`` games differ (fingerprints of the played
  games, :mod:`saliency_lib.play`). A greedy agent on the deterministic emulator replays a few
  games: a mean over 10 games of which 3 are distinct is a mean over 3 games.

Readers that expect one row per agent take the greedy rows: ``read_scores(path, protocol="greedy")``.
A table written before the protocol column existed reads as greedy rows with unknown
``distinct_games``.

:func:`compare_variants` compares training variants (A3C without mask, Mask-A3C ...) over
training seeds: one number per seed, CIs over seeds, never over games.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_write
from ..agents.mask_a3c import VARIANT_NAMES, VARIANTS

__all__ = ["SCORES_COLUMNS", "PROTOCOL_NAMES", "read_scores", "update_scores", "scores_row", "evaluate_protocols",
           "VariantComparison", "compare_variants", "VARIANT_NAMES"]

SCORES_COLUMNS = ["agent", "algo", "game", "variant", "seed", "frames", "protocol", "episodes", "distinct_games", "mean", "std", "scores",
                  "random_score", "ratio_to_random", "published", "published_source"]

PROTOCOL_NAMES = ("greedy", "sticky")


def _normalise(df: pd.DataFrame) -> pd.DataFrame:
    """A scores table in the current schema: rows without a protocol are greedy (the only protocol before)."""
    df = df.copy()
    if "protocol" not in df.columns:
        df["protocol"] = "greedy"
    df["protocol"] = df["protocol"].fillna("greedy")
    if "distinct_games" not in df.columns:
        df["distinct_games"] = np.nan
    for c in SCORES_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan
    extra = [c for c in df.columns if c not in SCORES_COLUMNS]
    return df[SCORES_COLUMNS + extra]


def read_scores(csv_path: str | os.PathLike, protocol: str | None = None) -> pd.DataFrame:
    """The scores table (current schema, see the module docstring); ``protocol``: only its rows (one per agent)."""
    df = _normalise(pd.read_csv(csv_path))
    if protocol is not None:
        df = df[df["protocol"] == protocol].reset_index(drop=True)
    return df


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path``'s directory (a shipping run and a re-evaluation may write at once);
    no lock file is left next to the table."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def update_scores(csv_path: str | os.PathLike, rows: dict | Iterable[dict]) -> pd.DataFrame:
    """Insert or replace the rows of (agent, protocol) pairs in the scores table (locked, atomic write).

    A row without ``protocol`` is a greedy row. Rows are sorted by agent, and an agent's greedy row
    comes last: a reader written for one row per agent that keeps an agent's last row (as the
    chapters' score tables did before the protocol column) reads the greedy one, the papers' protocol.
    """
    csv_path = Path(csv_path)
    rows = [rows] if isinstance(rows, dict) else list(rows)
    new = _normalise(pd.DataFrame(rows))[SCORES_COLUMNS]
    with _locked(csv_path):
        df = read_scores(csv_path) if csv_path.exists() else pd.DataFrame(columns=SCORES_COLUMNS)
        key = df["agent"].astype(str) + "\0" + df["protocol"].astype(str)
        df = df[~key.isin(set(new["agent"].astype(str) + "\0" + new["protocol"].astype(str)))]
        df = pd.concat([df[SCORES_COLUMNS].astype(object), new.astype(object)], ignore_index=True)
        order = {p: -i for i, p in enumerate(PROTOCOL_NAMES)}  # greedy last (see the docstring)
        df = df.sort_values(["agent", "protocol"], key=lambda c: c.map(lambda p: order.get(p, -len(order))) if c.name == "protocol" else c,
                            kind="stable").reset_index(drop=True)
        for c in ("episodes", "distinct_games"):  # counts, written as integers (empty when unknown)
            df[c] = pd.to_numeric(df[c], errors="coerce").round().astype("Int64")
        atomic_write(csv_path, lambda tmp: df.to_csv(tmp, index=False))
    return df


def scores_row(name: str, meta: dict, game: str, result: dict, *, published: float | None = None, published_source: str = "") -> dict:
    """A scores-table row from an agent's metadata and a :func:`saliency_lib.play.evaluate` result."""
    from ..games import game_info

    rnd = game_info(game).random_score
    return {"agent": name, "algo": meta.get("algo", ""), "game": game, "variant": meta.get("variant", ""), "seed": meta.get("seed", ""),
            "frames": meta.get("frames", ""), "protocol": result["protocol"], "episodes": len(result["scores"]),
            "distinct_games": result["distinct_games"], "mean": result["mean"], "std": result["std"], "scores": json.dumps(result["scores"]),
            "random_score": rnd, "ratio_to_random": result["mean"] / rnd if rnd else np.nan, "published": published,
            "published_source": published_source}


def evaluate_protocols(agent, episodes: dict[str, int], *, seed: int = 0, progress: bool = True, on_result=None) -> dict[str, dict]:
    """Evaluate ``agent`` under each protocol of ``episodes`` (``{"greedy": 10, "sticky": 30}``; 0 skips one).

    ``on_result(protocol, result)`` is called as soon as each evaluation ends (to write its row).
    """
    from ..play import evaluate, get_protocol

    out = {}
    for name, n in episodes.items():
        get_protocol(name)
        if not n:
            continue
        out[name] = r = evaluate(agent, n, seed, protocol=name, progress=progress)
        if on_result is not None:
            on_result(name, r)
    return out


# -- the seed-level comparison -------------------------------------------------------------------

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
    sentence : str
        Generated from the numbers above only.
    """

    table: pd.DataFrame
    difference: dict
    verdict: str | None
    reason: str | None
    sentence: str
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


def _frames_text(frames: float) -> str:
    return f"{frames / 1e6:.3g} M frames" if np.isfinite(frames) else "an unknown number of frames"


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
    difference with. The sentence then says so and gives no direction.

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
        Names of the variants in the sentence (default :data:`VARIANT_NAMES`).

    Returns
    -------
    VariantComparison

    Raises
    ------
    ValueError
        Unknown protocol, a level outside (0, 1), baseline or treatment not in ``variants``, or
        no row of ``game`` under ``protocol``.
    """
    from ..play import get_protocol

    get_protocol(protocol)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    for name, v in (("baseline", baseline), ("treatment", treatment)):
        if v not in variants:
            raise ValueError(f"{name} {v!r} is not among the variants {variants}")
    labels = {**VARIANT_NAMES, **(labels or {})}
    df = _normalise(scores)
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
    how = f"({protocol} evaluation)"
    verdict = reason = None
    if len(a) == 0 or len(b) == 0:
        missing = " and ".join(lab for lab, x in ((la, a), (lb, b)) if len(x) == 0)
        reason = f"{missing} has no {protocol} evaluation on {game}"
        sentence = f"No comparison of {lb} with {la} on {game} {how}: {reason}."
    elif len(a) < 2 or len(b) < 2:
        few = " and ".join(f"{lab} has {len(x)} seed" for lab, x in ((la, a), (lb, b)) if len(x) < 2)
        reason = f"{few}; a difference between variants needs at least 2 seeds of each"
        sentence = (f"No verdict on {lb} against {la} on {game} at {_frames_text(frames)} {how}: {reason}. "
                    f"The means are {np.mean(b):,.1f} ({treatment}) and {np.mean(a):,.1f} ({baseline}); without 2 seeds of each, "
                    "the CI of their difference cannot be computed.")
    else:
        seeds = f"{len(a)} seeds" if len(a) == len(b) else f"{len(a)} seeds of {la} and {len(b)} of {lb}"
        nums = (f"difference {treatment} − {baseline} {diff['diff']:+,.1f} (means {np.mean(b):,.1f} and {np.mean(a):,.1f}), "
                f"{100 * level:g} % CI {diff['ci_low']:+,.1f} to {diff['ci_high']:+,.1f} (Welch t over seeds)")
        if diff["ci_low"] > 0:
            verdict = "higher"
        elif diff["ci_high"] < 0:
            verdict = "lower"
        else:
            verdict = "no detectable difference"
        if verdict == "no detectable difference":
            sentence = f"Between {la} and {lb} on {game} there is no detectable difference at {_frames_text(frames)}, {seeds} {how}: {nums}."
        else:
            sentence = f"{lb} scores {verdict} than {la} on {game} at {_frames_text(frames)}, {seeds} {how}: {nums}."
    return VariantComparison(table=table, difference=diff, verdict=verdict, reason=reason, sentence=sentence, protocol=protocol,
                             game=game, baseline=baseline, treatment=treatment, level=level, frames=frames, labels=labels)
