"""Mean insertion/deletion curves from per-chunk summaries that pool exactly.

The study does not keep every state's curve (85 evaluations × measures × substrates × modes
per state: gigabytes at the paper's sizes). A unit keeps, per curve point (experiment, agent,
game, method, substrate, measure, step), three numbers over its states: ``n`` (finite values),
their ``mean`` and ``m2`` (sum of squared deviations from that mean), plus ``nonfinite`` (values
left out: a Q-ratio whose clean Q-value is 0 is inf). Summaries of disjoint sets of states
combine exactly (Chan, Golub & LeVeque 1979)::

    n = n_a + n_b,   mean = (n_a·mean_a + n_b·mean_b) / n,
    m2 = m2_a + m2_b + n_a·n_b/n · (mean_a − mean_b)²

so the mean curve and its band over all states are the same, to float rounding, whatever the
chunking of the states into units (``tests/study/test_store_compact.py`` checks it).

Only the metric's measures are summarised (Q-ratio, advantage, V, π(a): the curves with an
AUC). The raw network outputs per step (``q[j]``, ``logits[j]``) are stored by the metric so
that other measures could be computed per state; a mean over states cannot serve that, and
they would be most of the summaries' bytes (18 actions of Frostbite), so they are not kept.

The band is a t-interval of the mean, ``mean ± t(n_eff − 1) · std / √n_eff``: what a
summary of (n, mean, m2) allows. States of one trajectory are autocorrelated, so ``n`` states
are worth fewer independent ones: :func:`~saliency_lib.sweep._store.mean_curves`
passes ``n_eff``, the effective sample size (:func:`saliency_lib.metrics.dependence.effective_sample_size`)
of the same states' AUCs of that curve, which are the per-state means of the curve and are
kept state by state. Without ``n_eff`` (a curve without an AUC, or ``dependence=False``) the
band treats the states as independent, ``n_eff = n``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

__all__ = ["CURVE_KEY", "SUMMARY_COLUMNS", "BAND_COLUMNS", "summarise_curves", "pool_curves", "curve_bands_table",
           "raw_curve_rows", "output_rows"]

CURVE_KEY: tuple[str, ...] = ("experiment", "agent", "game", "method", "substrate", "measure", "step")
"""The columns that name one point of a mean curve."""
SUMMARY_COLUMNS: tuple[str, ...] = (*CURVE_KEY, "higher_is_better", "n", "nonfinite", "mean", "m2")
"""Columns of a curve summary (:func:`summarise_curves`, :func:`pool_curves`)."""
BAND_COLUMNS: tuple[str, ...] = (*CURVE_KEY, "higher_is_better", "n", "nonfinite", "n_eff", "mean", "std", "low",
                                  "high")
"""Columns of a mean-curve table with its band (:func:`curve_bands_table`)."""

_DTYPES = {"experiment": "string", "agent": "string", "game": "string", "method": "string", "substrate": "string",
           "measure": "string", "step": "int64", "higher_is_better": "boolean", "n": "int64", "nonfinite": "int64",
           "mean": "float64", "m2": "float64"}


def raw_curve_rows(rows: pd.DataFrame) -> pd.Series:
    """Boolean mask of the per-state curve rows of a tidy table (a state and a step), raw outputs included."""
    return rows["step"].notna() & rows["state"].notna()


def output_rows(rows: pd.DataFrame) -> pd.Series:
    """Boolean mask of the raw-output rows (measures ``<output>[<j>]``, e.g. ``q[2]``)."""
    return rows["measure"].astype("string").str.contains("[", regex=False).fillna(False).astype(bool)


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype({c: _DTYPES[c] for c in SUMMARY_COLUMNS})[list(SUMMARY_COLUMNS)]


def _empty() -> pd.DataFrame:
    return _typed(pd.DataFrame({c: pd.Series([], dtype="object") for c in SUMMARY_COLUMNS}))


def summarise_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """Per curve point: ``n`` finite values over the states, their ``mean`` and ``m2``.

    Parameters
    ----------
    rows : DataFrame
        Tidy rows (:mod:`saliency_lib.results` schema); only the per-state curve rows
        (``state`` and ``step`` set) of the measures are used, not the raw outputs
        (:func:`output_rows`).

    Returns
    -------
    DataFrame
        :data:`SUMMARY_COLUMNS`, one row per curve point, sorted. ``mean`` is NaN and ``m2``
        0 where no value is finite.
    """
    t = rows[raw_curve_rows(rows) & ~output_rows(rows)]
    if t.empty:
        return _empty()
    v = t["value"].to_numpy(dtype=np.float64)
    ok = np.isfinite(v)
    # one integer per curve point (codes of sorted factorised keys): bincounts instead of a groupby
    code = np.zeros(len(t), dtype=np.int64)
    for c in CURVE_KEY:
        f, uniques = pd.factorize(t[c], sort=True, use_na_sentinel=False)
        code = code * len(uniques) + f
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    n = np.bincount(inv, weights=ok.astype(np.float64))
    total = np.bincount(inv)
    x = np.where(ok, v, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.bincount(inv, weights=x) / n, np.nan)
    # m2 from the deviations about the point's own mean (Σv² − n·mean² would cancel badly)
    m2 = np.bincount(inv, weights=np.where(ok, (x - mean[inv]) ** 2, 0.0))
    out = t.iloc[first][list(CURVE_KEY) + ["higher_is_better"]].reset_index(drop=True)
    out = out.assign(n=n.astype(np.int64), nonfinite=(total - n).astype(np.int64), mean=mean, m2=m2)
    return _typed(out)


def pool_curves(parts: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Pool curve summaries of disjoint sets of states into one summary per curve point (exact).

    Parameters
    ----------
    parts : iterable of DataFrame
        Summaries (:data:`SUMMARY_COLUMNS`), e.g. one per unit. The caller makes sure their
        states are disjoint: pooling a state twice counts it twice.

    Returns
    -------
    DataFrame
        :data:`SUMMARY_COLUMNS`, one row per curve point, sorted.
    """
    parts = [p for p in parts if len(p)]
    if not parts:
        return _empty()
    t = pd.concat([p[list(SUMMARY_COLUMNS)] for p in parts], ignore_index=True)
    keys = list(CURVE_KEY)
    idx = pd.MultiIndex.from_frame(t[keys].astype({"step": "int64"}))
    n = t["n"].to_numpy(dtype=np.float64)
    mean_i = np.where(n > 0, t["mean"].to_numpy(dtype=np.float64), 0.0)
    frame = pd.DataFrame({"n": n, "w": n * mean_i, "m2": t["m2"].to_numpy(dtype=np.float64),
                          "nonfinite": t["nonfinite"].to_numpy(dtype=np.int64)}, index=idx)
    g = frame.groupby(level=keys, sort=True)
    tot = g[["n", "w", "m2", "nonfinite"]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(tot["n"] > 0, tot["w"] / tot["n"], np.nan)
    tot["mean"] = mean
    # between-part term Σ n_i (mean_i − mean)²: exact pooling of the squared deviations
    pooled_mean = tot["mean"].reindex(idx).to_numpy()
    between = np.where(n > 0, n * (mean_i - np.nan_to_num(pooled_mean)) ** 2, 0.0)
    tot["m2"] = tot["m2"] + pd.Series(between, index=idx).groupby(level=keys, sort=True).sum()
    hib = pd.Series(t["higher_is_better"].to_numpy(), index=idx).groupby(level=keys, sort=True).first()
    out = tot.assign(higher_is_better=hib).reset_index()
    out["n"] = out["n"].round().astype("int64")
    return _typed(out)


def curve_bands_table(summary: pd.DataFrame, *, confidence: float = 0.95, n_eff: pd.DataFrame | None = None
                      ) -> pd.DataFrame:
    """The mean curve and its ``confidence`` t-interval band from a (pooled) summary.

    Parameters
    ----------
    summary : DataFrame
        :data:`SUMMARY_COLUMNS` (several rows of one curve point are pooled first).
    confidence : float
    n_eff : DataFrame, optional
        Effective sample size per curve: columns ``experiment, agent, game, method, substrate,
        measure, n_eff``. Used for every step of that curve, capped at the step's ``n``;
        curves not listed use ``n``.

    Returns
    -------
    DataFrame
        :data:`BAND_COLUMNS`: ``std`` is the sample standard deviation over the states
        (ddof 1; NaN below 2 states); ``low`` and ``high`` equal ``mean`` below 2 states.
    """
    from scipy import stats

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    s = pool_curves([summary])  # one row per curve point, whatever was passed
    n = s["n"].to_numpy(dtype=np.float64)
    eff = n.copy()
    if n_eff is not None and len(n_eff) and len(s):
        keys = [c for c in CURVE_KEY if c != "step"]
        given = s[keys].astype(object).merge(n_eff[[*keys, "n_eff"]].astype({c: object for c in keys}), on=keys,
                                             how="left")["n_eff"].to_numpy(dtype=np.float64)
        eff = np.where(np.isfinite(given), np.minimum(given, n), n)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.where(n > 1, np.sqrt(s["m2"].to_numpy() / (n - 1)), np.nan)
        # fewer than 2 effective states still get a (wide) band from one degree of freedom
        half = np.where(n > 1, stats.t.ppf((1 + confidence) / 2, np.maximum(eff - 1, 1)) * std
                        / np.sqrt(np.maximum(eff, 1)), 0.0)
    mean = s["mean"].to_numpy()
    out = s.drop(columns=["m2"]).assign(n_eff=eff, std=std, low=mean - half, high=mean + half)
    return out[list(BAND_COLUMNS)].reset_index(drop=True)
