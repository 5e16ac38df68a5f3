"""Equivalence verdicts: whether a number was reproduced, within a margin stated before looking.

"The paper's mean lies inside our 95 % interval" measures our precision, not agreement: with
a thousand states the interval is so narrow that any real-world difference reads "differs".
An equivalence test asks the question a reader has instead: is the difference between our
number and the paper's smaller than a margin that matters, stated in advance?

The convention (Schuirmann's two one-sided tests, TOST, at level α = 5 %):

* **reproduced**: the (1 − 2α) = 90 % interval of the difference lies inside ``(−margin, +margin)``;
  equivalently both one-sided tests reject, ``p_tost < α``;
* **differs**: the 90 % interval lies entirely beyond ``+margin`` or below ``−margin`` (the
  difference exceeds the margin, at the same level);
* **inconclusive**: the interval straddles ``−margin`` or ``+margin``;
* **withheld**: the data are worth fewer than ``min_ess`` independent states (default
  :data:`MIN_ESS`), or there is no interval; the verdict says why in a short phrase.

The 90 % interval is not a typo: a 5 % TOST is the same decision as a 90 % interval inside the
margin (each one-sided test spends 5 % in its own tail).

* :func:`equivalence_verdict` classifies a difference whose interval is already known (any
  method: a t interval, a bootstrap, a pooled interval);
* :func:`compare_with_reference` computes it from our values in trajectory order and the reference
  number, including the reference's own sampling error from its standard deviation and count:
  statsmodels' TOST (``DescrStatsW.ttost_mean``; ``CompareMeans.ttost_ind`` with Welch's
  unequal variances), with our values counted by their effective sample size.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..validation import check_float
from .dependence import effective_sample_size, ess_weighted, finite_series

__all__ = ["VERDICTS", "MIN_ESS", "Verdict", "equivalence_verdict", "compare_with_reference"]

VERDICTS = ("reproduced", "differs", "inconclusive", "withheld")
"""The outcomes of an equivalence verdict, in the words a reader sees."""

MIN_ESS = 30.0
"""Default minimum effective sample size below which no verdict is given."""


@dataclass(frozen=True)
class Verdict:
    """An equivalence verdict with the numbers it rests on.

    Attributes
    ----------
    verdict : str
        One of :data:`VERDICTS`.
    reason : str
        A short phrase saying why, e.g. ``"90 % interval inside ±0.1"`` or
        ``"effective sample size 17 < 30"``.
    difference : float
        Ours minus the reference.
    ci_low, ci_high : float
        The interval of the difference at ``confidence``.
    confidence : float
        ``1 − 2α`` (0.90 for a 5 % TOST).
    margin : float
        The equivalence margin: equivalent means ``|difference| < margin``.
    p_tost : float
        The TOST p-value (the larger of the two one-sided p-values); NaN where only an interval
        was given.
    n_eff : float
        Effective sample size of our values.
    n : int or None
        Our finite values, where known.
    """

    verdict: str
    reason: str
    difference: float
    ci_low: float
    ci_high: float
    confidence: float
    margin: float
    p_tost: float
    n_eff: float
    n: int | None = None

    def as_dict(self) -> dict:
        """The fields as a dict (one row of a verdict table)."""
        return asdict(self)


def _classify(lo: float, hi: float, margin: float, pct: str) -> tuple[str, str]:
    m = f"{margin:g}"
    if -margin < lo and hi < margin:
        return "reproduced", f"{pct} interval inside ±{m}"
    if lo > margin:
        return "differs", f"{pct} interval above +{m}"
    if hi < -margin:
        return "differs", f"{pct} interval below −{m}"
    return "inconclusive", f"{pct} interval straddles ±{m}"


def equivalence_verdict(difference: float, ci_low: float, ci_high: float, *, margin: float, n_eff: float,
                        confidence: float = 0.90, p_tost: float = float("nan"), n: int | None = None,
                        min_ess: float = MIN_ESS) -> Verdict:
    """Classify a difference by where its interval lies relative to ``±margin``.

    Parameters
    ----------
    difference : float
        Ours minus the reference.
    ci_low, ci_high : float
        The interval of the difference at ``confidence``; for the 5 % TOST convention, a 90 %
        interval. NaN bounds give ``"withheld"``.
    margin : float
        Equivalence margin, > 0, stated before the comparison.
    n_eff : float
        Effective sample size the interval rests on; below ``min_ess`` the verdict is withheld.
    confidence : float
        Level of the interval, in (0, 1); it is named in the reason.
    p_tost : float, optional
        The TOST p-value, if the interval came with one (reported, not used to classify).
    n : int, optional
        Count of values, reported.
    min_ess : float
        Minimum effective sample size for a verdict (default :data:`MIN_ESS`); 0 never withholds.

    Returns
    -------
    Verdict

    Raises
    ------
    ValueError
        If ``margin`` is not a positive finite number, ``confidence`` is outside (0, 1),
        ``min_ess`` is negative, or ``ci_low > ci_high``.
    """
    margin = check_float("margin", margin, low=0, low_open=True, hint="; state the equivalence margin, e.g. 0.1")
    confidence = check_float("confidence", confidence, low=0, high=1, low_open=True, high_open=True)
    min_ess = check_float("min_ess", min_ess, low=0)
    lo, hi = float(ci_low), float(ci_high)
    if lo > hi:
        raise ValueError(f"ci_low must not exceed ci_high, got ({lo}, {hi}); pass the interval's bounds in order")
    pct = f"{100 * confidence:g} %"
    n_eff = float(n_eff)
    if not n_eff >= min_ess:  # NaN too
        verdict, reason = "withheld", f"effective sample size {n_eff:.0f} < {min_ess:g}"
    elif math.isnan(lo) or math.isnan(hi):
        verdict, reason = "withheld", "no interval"
    else:
        verdict, reason = _classify(lo, hi, margin, pct)
    return Verdict(verdict=verdict, reason=reason, difference=float(difference), ci_low=lo, ci_high=hi,
                   confidence=confidence, margin=margin, p_tost=float(p_tost), n_eff=n_eff, n=n)


def _summary_sample(mean: float, sd: float, n: float, ddof: int):
    """The ``DescrStatsW`` (statsmodels) of a sample known only by its mean, standard deviation and count.

    Two values ``mean ± a`` with frequency weights ``n / 2`` each, ``a = sd √((n − ddof) / n)``:
    their weighted mean, population variance and count are the sample's, and those are all that
    statsmodels' t tests and intervals read. So the reference's standard error is
    ``sd √((n − ddof) / (n (n − 1)))``, i.e. ``sd / √n`` for a sample standard deviation.
    """
    from statsmodels.stats.weightstats import DescrStatsW

    a = sd * math.sqrt((n - ddof) / n)
    return DescrStatsW(np.array([mean - a, mean + a]), weights=np.array([n / 2, n / 2]))


def compare_with_reference(values, reference: float, *, margin: float, reference_sd: float | None = None,
                           reference_n: float | None = None, reference_ddof: int | None = None, alpha: float = 0.05,
                           min_ess: float = MIN_ESS) -> Verdict:
    """Equivalence of the mean of our values (one trajectory, in order) with a reference number.

    The difference is ``mean(values) − reference``. Our values count by their
    :func:`~saliency_lib.metrics.dependence.effective_sample_size` (statsmodels ``DescrStatsW``
    with frequency weights summing to it; see :func:`~saliency_lib.metrics.dependence.ess_t_ci`).

    * Without ``reference_sd``: the reference is taken as exact; statsmodels'
      ``DescrStatsW.ttost_mean`` and ``tconfint_mean``.
    * With ``reference_sd`` and ``reference_n``: the reference is the mean of its own sample, and
      its sampling error enters: statsmodels' ``CompareMeans.ttost_ind`` and ``tconfint_diff``
      with ``usevar="unequal"`` (Welch, Satterthwaite degrees of freedom).

    Parameters
    ----------
    values : array_like, 1-D
        Our per-state values in trajectory order (NaNs dropped).
    reference : float
        The reference mean (e.g. the paper's).
    margin : float
        Equivalence margin, > 0, stated before the comparison.
    reference_sd, reference_n : float, optional
        The reference's standard deviation and the count it was computed over. Its states too may
        be consecutive and correlated, so ``sd / √n`` may understate its error; pass an effective
        count as ``reference_n`` where one is known.
    reference_ddof : {0, 1}
        Required with ``reference_sd``: its delta degrees of freedom (0 for ``np.std``'s
        population std, 1 for the sample std).
    alpha : float
        Level of each one-sided test, in (0, 0.5); the interval reported is ``1 − 2 alpha``.
    min_ess : float
        Minimum effective sample size of our values for a verdict (default :data:`MIN_ESS`).

    Returns
    -------
    Verdict
        With ``p_tost`` and ``n``. Fewer than 2 values, or an effective sample size below 2, give
        a NaN interval (and ``"withheld"``).

    Raises
    ------
    ValueError
        On a bad margin, alpha or reference (see the messages).
    """
    alpha = check_float("alpha", alpha, low=0, high=0.5, low_open=True, high_open=True)
    reference = check_float("reference", reference)
    margin = check_float("margin", margin, low=0, low_open=True, hint="; state the equivalence margin, e.g. 0.1")
    ref = None
    if reference_sd is not None or reference_n is not None:
        if reference_sd is None or reference_n is None:
            raise ValueError(f"reference_sd and reference_n go together, got reference_sd={reference_sd!r}, "
                             f"reference_n={reference_n!r}; pass both, or neither to take the reference as exact")
        sd = check_float("reference_sd", reference_sd, low=0)
        n_ref = check_float("reference_n", reference_n, low=2)
        if reference_ddof not in (0, 1):
            raise ValueError(f"reference_ddof must be 0 (np.std's population std) or 1 (the sample std), "
                             f"got {reference_ddof!r}; say which standard deviation reference_sd is")
        ref = _summary_sample(reference, sd, n_ref, reference_ddof)
    v = finite_series(values)
    n = int(v.size)
    n_eff = effective_sample_size(v)
    diff = float(v.mean()) - reference if n else float("nan")
    confidence = 1 - 2 * alpha
    if n < 2 or not n_eff >= 2:
        return equivalence_verdict(diff, float("nan"), float("nan"), margin=margin, n_eff=n_eff,
                                   confidence=confidence, n=n, min_ess=min_ess)
    ours = ess_weighted(v, n_eff)
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant series has no spread: t = ±inf
        if ref is None:
            p = ours.ttost_mean(reference - margin, reference + margin)[0]
            lo, hi = (float(b) - reference for b in ours.tconfint_mean(alpha=2 * alpha))
        else:
            from statsmodels.stats.weightstats import CompareMeans

            cm = CompareMeans(ours, ref)
            p = cm.ttost_ind(-margin, margin, usevar="unequal")[0]
            lo, hi = (float(b) for b in cm.tconfint_diff(alpha=2 * alpha, usevar="unequal"))
    if np.ptp(v) == 0 and (ref is None or reference_sd == 0):
        lo = hi = diff  # no spread on either side: the difference is exact
        p = 0.0 if abs(diff) < margin else 1.0
    return equivalence_verdict(diff, lo, hi, margin=margin, n_eff=n_eff, confidence=confidence, p_tost=float(p),
                               n=n, min_ess=min_ess)
