"""Summaries and tests on tidy result tables.

The rows of one setting are the states of one greedy trajectory, in the order of the
``state`` column, and consecutive states are strongly correlated. Every interval and
paired test here therefore accounts for that dependence
(:mod:`saliency_lib.metrics.dependence`: by default the t interval on the effective sample
size, which covers where the percentile block bootstrap does not) and reports the effective
sample size.

* :func:`summarise`: per group, n, the effective sample size, mean ± std (as the paper
  reports) and a confidence interval of the mean (:func:`~saliency_lib.metrics.dependence.mean_ci`).
* :func:`paired_block_tests`: paired tests between every pair of methods on the states both
  were evaluated on (:func:`~saliency_lib.metrics.dependence.paired_block_test`), with Holm
  correction.
* :func:`paired_wilcoxon`: Wilcoxon signed-rank tests (scipy) between every pair of methods.
  Kept for pairs that *are* independent (states of separate episodes) and for callers
  that report this test by name (``saliency-study insertion``); on the
  states of one trajectory it is anti-conservative, so :func:`ranking_table` no longer
  uses it by default.
* :func:`holm`: Holm-corrected p-values (statsmodels' adjustment, without its cost per call).
* :func:`ranking_table`: methods ranked by their mean, with the methods each one is
  significantly better or worse than.

All functions take a table in the :mod:`saliency_lib.results` schema (or any
DataFrame with the named columns) and return a new DataFrame.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from .dependence import DEFAULT_INTERVAL, block_length, effective_sample_size, mean_ci, paired_block_test

__all__ = ["summarise", "holm", "paired_block_tests", "paired_wilcoxon", "ranking_table", "TESTS"]

TESTS = ("block", "wilcoxon")
"""Paired tests of :func:`ranking_table`: the moving-block bootstrap test (states of one
trajectory) and the Wilcoxon signed-rank test (independent pairs)."""


def _group_cols(df: pd.DataFrame, by: Sequence[str]) -> list[str]:
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise ValueError(f"group columns {missing} are not in the table; available columns: {', '.join(df.columns)}")
    return list(by)


DEFAULT_BY = ("experiment", "agent", "game", "method", "substrate", "level", "layer", "step", "measure")


def _in_order(g: pd.DataFrame, order: str | None) -> pd.DataFrame:
    """The rows of one group in trajectory order (stable; unchanged without an ``order`` column)."""
    if order is None or order not in g.columns:
        return g
    return g.sort_values(order, kind="stable")


def summarise(
    df: pd.DataFrame,
    by: Sequence[str] = DEFAULT_BY,
    *,
    value: str = "value",
    order: str | None = "state",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    ddof: int = 0,
    interval: str = DEFAULT_INTERVAL,
) -> pd.DataFrame:
    """Mean, std, effective sample size and a dependence-aware CI of the mean of ``value`` per group.

    Parameters
    ----------
    df : DataFrame
    by : sequence of str
        Group columns; columns that are entirely NA are dropped from the
        grouping (e.g. ``step`` for sanity tables). Default: every key column
        except ``state``.
    value : str
        Column to summarise.
    order : str or None
        Column giving the trajectory order of a group's rows (default ``state``). The effective
        sample size, the block length and the CI follow the dependence between consecutive
        values in this order; None, or a table without the column, keeps the rows' order.
    confidence, interval, n_resamples, seed
        See :func:`~saliency_lib.metrics.dependence.mean_ci` (default ``"ess_t"``, the t
        interval on the effective sample size; ``"block"``: the percentile moving-block
        bootstrap). Every group uses the same seed.
    ddof : int
        Delta degrees of freedom of the std (default 0, NumPy's default, as the
        paper's tables).

    Returns
    -------
    DataFrame
        Group columns plus ``n`` (finite values), ``n_nan``, ``n_eff`` (effective sample
        size of the finite values), ``block`` (Politis–White block length of the finite values,
        the block bootstrap's), ``mean``, ``std``, ``ci_low``, ``ci_high``.
    """
    by = _group_cols(df, by)
    if value not in df.columns:
        raise ValueError(f"value column {value!r} is not in the table")
    by = [c for c in by if not df[c].isna().all()]
    rows = []
    groups = df.groupby(by, dropna=False, sort=True) if by else [((), df)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        v = pd.to_numeric(_in_order(g, order)[value], errors="coerce").to_numpy(dtype=np.float64)
        fin = v[np.isfinite(v)]
        n_eff = effective_sample_size(fin)
        lo, hi = mean_ci(fin, confidence=confidence, interval=interval, n_resamples=n_resamples, seed=seed, n_eff=n_eff)
        rows.append({**dict(zip(by, key)), "n": int(fin.size), "n_nan": int(v.size - fin.size),
                     "n_eff": n_eff, "block": block_length(fin),
                     "mean": float(fin.mean()) if fin.size else float("nan"),
                     "std": float(fin.std(ddof=ddof)) if fin.size > ddof else float("nan"),
                     "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def holm(pvalues) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (NaNs stay NaN and do not count).

    The adjustment of statsmodels' ``multipletests(method="holm")``, to which the tests compare
    it, computed here for two reasons: statsmodels' Holm branch runs a full garbage collection
    on every call (about 0.9 s in a process with the study's modules loaded, and a ranking table
    calls it once per setting), and it does not allow NaN p-values (pairs that were not tested).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    # the i-th smallest of m p-values times (m − i), made monotone, capped at 1
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def _wide(df: pd.DataFrame, pair_on: Sequence[str], between: str, value: str) -> pd.DataFrame:
    dup = df.duplicated([*pair_on, between], keep=False)
    if dup.any():
        raise ValueError(
            f"the table has several rows per ({', '.join([*pair_on, between])}); filter it to one measure, "
            "level/step and substrate first (e.g. df[df.measure == 'q_ratio_auc'])"
        )
    return df.pivot(index=list(pair_on), columns=between, values=value)


PERMUTATION_MAX_N = 13
"""Pairs up to which :func:`scipy.stats.wilcoxon` (``method="auto"``) runs an exact permutation
test when the differences have ties or zeros (2¹³ sign flips fit its 9999 resamples)."""


def _signed_rank_exact(d: np.ndarray, alternative: str) -> tuple[float, float]:
    """Wilcoxon signed-rank statistic and exact p-value of differences ``d`` with ties or zeros.

    Ours, and kept beside :func:`scipy.stats.wilcoxon` for one case only: scipy's exact
    distribution assumes no ties and no zeros, so with them and at most
    :data:`PERMUTATION_MAX_N` pairs it enumerates all 2ⁿ sign flips as a permutation test,
    about 0.6 s per pair of methods at n = 12; a ranking of 12 methods has 66 pairs. Every other
    case goes to scipy, and the tests check that both give the same statistic and p-value.

    Zeros are dropped (Wilcoxon's method) and tied absolute differences get mid-ranks. Under
    the null hypothesis every sign pattern of the remaining differences is equally likely, so
    the distribution of T⁺ (the rank sum of the positive differences) is the convolution of
    one two-point distribution {0, rᵢ} per difference; on the doubled ranks, which are
    integers, that is a short recursion. This is the distribution that scipy's permutation
    test enumerates for ``n ≤ 13``, computed here in microseconds instead of a second, and
    the p-values are the same: ``2·min(P(T⁺ ≤ t), P(T⁺ ≥ t))`` (clipped at 1) for two-sided.
    """
    from scipy.stats import rankdata

    d = d[d != 0]
    ranks2 = np.rint(2 * rankdata(np.abs(d))).astype(np.int64)  # mid-ranks are multiples of ½
    t_plus, t_minus = int(ranks2[d > 0].sum()), int(ranks2[d < 0].sum())
    pmf = np.zeros(int(ranks2.sum()) + 1)
    pmf[0] = 1.0
    for r in ranks2:  # each difference adds its rank with probability ½
        pmf[r:] = 0.5 * pmf[r:] + 0.5 * pmf[: pmf.size - r].copy()
        pmf[:r] *= 0.5
    cdf, sf = pmf[: t_plus + 1].sum(), pmf[t_plus:].sum()
    p = {"less": cdf, "greater": sf}.get(alternative, min(1.0, 2 * min(cdf, sf)))
    stat = min(t_plus, t_minus) if alternative == "two-sided" else t_plus
    return stat / 2, float(p)


def paired_wilcoxon(
    df: pd.DataFrame,
    *,
    between: str = "method",
    pair_on: Sequence[str] = ("state",),
    value: str = "value",
    alternative: str = "two-sided",
) -> pd.DataFrame:
    """Paired Wilcoxon signed-rank tests between every pair of ``between`` groups.

    Parameters
    ----------
    df : DataFrame
        One measure of one setting: exactly one row per (``pair_on``, ``between``).
    between : str
        Column whose values are compared (default ``"method"``).
    pair_on : sequence of str
        Columns that identify a pair (default ``("state",)``: the same state).
    value : str
        Value column.
    alternative : {"two-sided", "less", "greater"}
        Passed to :func:`scipy.stats.wilcoxon` (``a`` versus ``b``). Where scipy would run its
        exact permutation test (ties or zeros, at most :data:`PERMUTATION_MAX_N` pairs), the
        same exact p-value is computed directly (:func:`_signed_rank_exact`), much faster.

    Returns
    -------
    DataFrame
        Columns ``a``, ``b``, ``n`` (pairs with finite values), ``mean_diff``
        and ``median_diff`` (a − b), ``statistic``, ``p_value``, ``p_holm``
        (Holm-corrected over all pairs).

    Raises
    ------
    ValueError
        If a (pair, group) combination has several rows.
    """
    from scipy.stats import wilcoxon

    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"unknown alternative {alternative!r}; valid values are: two-sided, less, greater")
    wide = _wide(df, pair_on, between, value)
    names = list(wide.columns)
    rows = []
    for a, b in combinations(names, 2):
        x = wide[a].to_numpy(dtype=np.float64)
        y = wide[b].to_numpy(dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        d = x[ok] - y[ok]
        stat = p = float("nan")
        if d.size and np.any(d != 0):
            nz = np.abs(d[d != 0])
            if d.size <= PERMUTATION_MAX_N and (nz.size < d.size or np.unique(nz).size < nz.size):
                stat, p = _signed_rank_exact(d, alternative)  # scipy's exact permutation test, fast
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = wilcoxon(x[ok], y[ok], alternative=alternative)
                stat, p = float(r.statistic), float(r.pvalue)
        elif d.size:
            stat, p = 0.0, 1.0
        rows.append({"a": a, "b": b, "n": int(d.size), "mean_diff": float(d.mean()) if d.size else float("nan"),
                     "median_diff": float(np.median(d)) if d.size else float("nan"), "statistic": stat, "p_value": p})
    out = pd.DataFrame(rows, columns=["a", "b", "n", "mean_diff", "median_diff", "statistic", "p_value"])
    out["p_holm"] = holm(out["p_value"].to_numpy()) if len(out) else pd.Series(dtype=float)
    return out


def paired_block_tests(
    df: pd.DataFrame,
    *,
    between: str = "method",
    pair_on: Sequence[str] = ("state",),
    value: str = "value",
    n_resamples: int = 2000,
    seed: int = 0,
    min_n: int = 2,
    interval: str = DEFAULT_INTERVAL,
    min_ess: float = 0.0,
) -> pd.DataFrame:
    """Paired tests that keep the dependence between states, between every pair of ``between`` groups.

    Each pair's differences, in the order of ``pair_on`` (the trajectory order of the
    states), go through :func:`~saliency_lib.metrics.dependence.paired_block_test`: by
    default the t test on the effective sample size of the differences; with
    ``interval="block"``, the moving-block bootstrap, which resamples the same blocks of
    consecutive states for both methods.

    Parameters
    ----------
    df : DataFrame
        One measure of one setting: exactly one row per (``pair_on``, ``between``).
    between, pair_on, value
        As :func:`paired_wilcoxon`.
    n_resamples, seed, interval
        See :func:`~saliency_lib.metrics.dependence.paired_block_test` (every pair uses the same seed).
    min_n : int
        Pairs with fewer finite pairs are not tested (``p_value`` NaN).
    min_ess : float
        Pairs whose differences have a smaller effective sample size are not tested either
        (``p_value`` NaN): the bar of a study that judges on effective, not counted, states.

    Returns
    -------
    DataFrame
        Columns ``a``, ``b``, ``n`` (finite pairs), ``n_eff`` (effective sample size of the
        differences), ``block``, ``mean_diff`` (a − b), ``ci_low``, ``ci_high`` (95 % CI of
        the mean difference), ``p_value`` and ``p_holm`` (Holm-corrected over all pairs).
    """
    wide = _wide(df, pair_on, between, value)
    rows = []
    for a, b in combinations(list(wide.columns), 2):
        x = wide[a].to_numpy(dtype=np.float64)
        y = wide[b].to_numpy(dtype=np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        r = paired_block_test(x[ok], y[ok], n_resamples=n_resamples, seed=seed, interval=interval)
        p = r["p"] if r["n"] >= min_n and r["n_eff"] >= min_ess else float("nan")
        rows.append({"a": a, "b": b, "n": r["n"], "n_eff": r["n_eff"], "block": r["block"], "mean_diff": r["mean"],
                     "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_value": p})
    cols = ["a", "b", "n", "n_eff", "block", "mean_diff", "ci_low", "ci_high", "p_value"]
    out = pd.DataFrame(rows, columns=cols)
    out["p_holm"] = holm(out["p_value"].to_numpy()) if len(out) else pd.Series(dtype=float)
    return out


def ranking_table(
    df: pd.DataFrame,
    *,
    higher_is_better: bool = True,
    between: str = "method",
    pair_on: Sequence[str] = ("state",),
    value: str = "value",
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    test: str = "block",
    min_n: int = 2,
    interval: str = DEFAULT_INTERVAL,
    min_ess: float = 0.0,
) -> pd.DataFrame:
    """Rank methods by their mean on one measure and say which differences are significant.

    Parameters
    ----------
    df : DataFrame
        One measure of one setting (see :func:`paired_block_tests`).
    higher_is_better : bool
        Direction of the measure (insertion AUC: True; deletion AUC and
        sanity-check similarity: False).
    alpha : float
        Family-wise significance level of the Holm-corrected paired tests.
    test : {"block", "wilcoxon"}
        ``"block"`` (default): :func:`paired_block_tests`, for the states of one trajectory;
        ``"wilcoxon"``: :func:`paired_wilcoxon`, which assumes independent pairs.
    interval : {"ess_t", "block"}
        The CIs of the means (:func:`summarise`) and, with ``test="block"``, the paired tests
        (:func:`paired_block_tests`): the t interval on the effective sample size (default) or
        the moving-block bootstrap.
    min_n : int
        Fewest finite pairs for a test; below it no difference is significant.
    min_ess : float
        Smallest effective sample size of a pair's differences for a test (``test="block"``);
        below it no difference is significant.

    Returns
    -------
    DataFrame
        One row per method, best first: ``rank``, ``method``, ``n``, ``n_eff``, ``mean``,
        ``std``, ``ci_low``, ``ci_high`` (:func:`summarise`, in the order of ``pair_on``),
        ``better_than`` and ``worse_than`` (comma-separated methods with a significant
        difference) and ``tied_with`` (methods not significantly different).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; valid values are: {', '.join(TESTS)}")
    order = pair_on[0] if len(pair_on) == 1 else None
    summ = summarise(df, by=[between], value=value, order=order, confidence=confidence, n_resamples=n_resamples,
                     seed=seed, interval=interval)
    if test == "block":
        tests = paired_block_tests(df, between=between, pair_on=pair_on, value=value, n_resamples=n_resamples,
                                   seed=seed, min_n=min_n, interval=interval, min_ess=min_ess)
    else:
        tests = paired_wilcoxon(df, between=between, pair_on=pair_on, value=value)
        tests.loc[tests["n"] < min_n, "p_holm"] = np.nan
    summ = summ.sort_values("mean", ascending=not higher_is_better, kind="stable").reset_index(drop=True)
    better = {m: [] for m in summ[between]}
    worse = {m: [] for m in summ[between]}
    tied = {m: [] for m in summ[between]}
    for t in tests.itertuples():
        if np.isfinite(t.p_holm) and t.p_holm < alpha:
            a_wins = (t.mean_diff > 0) == higher_is_better
            win, lose = (t.a, t.b) if a_wins else (t.b, t.a)
            better[win].append(str(lose))
            worse[lose].append(str(win))
        else:
            tied[t.a].append(str(t.b))
            tied[t.b].append(str(t.a))
    summ.insert(0, "rank", np.arange(1, len(summ) + 1))
    summ["better_than"] = [", ".join(better[m]) for m in summ[between]]
    summ["worse_than"] = [", ".join(worse[m]) for m in summ[between]]
    summ["tied_with"] = [", ".join(tied[m]) for m in summ[between]]
    return summ.drop(columns=["n_nan", "block"])
