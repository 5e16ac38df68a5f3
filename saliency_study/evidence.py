"""How much evidence the study needs before it gives a verdict, shared by every finding.

The study's states are consecutive states of one greedy game, so a handful of them is
worth even fewer independent samples (:func:`saliency_lib.metrics.effective_sample_size`).
Every verdict on a method, a finding of the paper or a difference between methods asks
:func:`enough_ess` first and, below :data:`MIN_ESS`, is withheld with :func:`withheld_reason`.

* :data:`MIN_ESS`, :func:`enough_ess`, :func:`withheld_reason`: the bar on the *effective* sample
  size below which no verdict, ranking or comparison with a paper is given, and the short phrase
  that says so; :data:`MIN_STATES`, :func:`enough_states`, :func:`too_few`: the older bar on the
  count of states, kept for chapter 5 until it moves to the effective one.
* :func:`verdict_counts`: how many rows of a verdict table get each verdict.
* :func:`margin`: the equivalence margins, stated before any number of ours was compared.
* :data:`DEGENERATE_MEASURES`: insertion/deletion measures that no chapter ranks maps on.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pandas as pd

__all__ = ["MIN_ESS", "WITHHELD", "enough_ess", "withheld_reason", "verdict_counts", "SIMILARITY_MARGIN",
           "INSERTION_MARGIN_SD", "margin", "MIN_STATES", "TOO_FEW", "enough_states", "too_few", "DEGENERATE_MEASURES"]

MIN_ESS = 30.0
"""Fewest *effective* states behind any verdict: a check passed or failed, a finding of a paper,
a significant difference between methods, a comparison with a paper (the issue "Reproduced, or
not"). Consecutive states of one game are correlated; 997 of them may be worth 15. At an
effective sample size of 30 the t interval of a mean covers at its nominal level on autocorrelated
series (tests/lib/test_interval_coverage.py), and a margin of a tenth of a similarity's range is
resolvable: below it, the verdict is withheld."""

WITHHELD = "withheld"
"""The verdict of a row whose data are worth fewer than :data:`MIN_ESS` independent states."""


def enough_ess(n_eff, min_ess: float = MIN_ESS) -> bool:
    """Whether an effective sample size ``n_eff`` carries a verdict: ``n_eff ≥ min_ess`` (NaN: no)."""
    return n_eff is not None and bool(np.isfinite(n_eff)) and float(n_eff) >= min_ess


def withheld_reason(n_eff, min_ess: float = MIN_ESS) -> str:
    """The short phrase beside a withheld verdict, as the equivalence verdicts say it:
    ``effective sample size 17 < 30`` (``no finite values`` without an effective sample size)."""
    if n_eff is None or not np.isfinite(n_eff):
        return "no finite values"
    return f"effective sample size {float(n_eff):.0f} < {min_ess:g}"


def verdict_counts(table: pd.DataFrame, by: str) -> pd.DataFrame:
    """How many rows of ``table`` get each ``verdict``, per ``by`` (in the order of first appearance),
    with ``states``: the most states (``n``) behind one row."""
    counts = pd.crosstab(table[by], table["verdict"]).reindex(list(dict.fromkeys(table[by])))
    return counts.assign(states=table.groupby(by)["n"].max()).reset_index()


SIMILARITY_MARGIN = 0.10
"""Equivalence margin of a sanity similarity (Spearman, SSIM, HOG Pearson; each in [−1, 1]): ours
reproduces the paper's mean when their difference is surely within ±0.10. Stated before looking, as
a tenth of the range over which the paper draws its conclusions (it reads a similarity near 1 as a
failed check, near 0 as a passed one, in steps no finer than 0.1 in its figures), and wider than
the paper's own sampling error (its two stretches of states differ by up to about 0.05)."""

INSERTION_MARGIN_SD = 0.25
"""Equivalence margin of an insertion AUC, in units of the paper's per-state standard deviation of
that AUC: the AUCs' scales differ by game, measure and substrate by two orders of magnitude, so a
fixed margin would be vacuous for some and impossible for others. A quarter of a standard
deviation is a small standardised effect (Cohen's d = 0.25), stated before looking."""


def margin(measure: str, paper_sd: float | None = None) -> float:
    """The pre-stated equivalence margin of a comparison on ``measure``.

    Similarities (``spearman``, ``ssim``, ``ssim_2d``, ``hog_pearson``, ``spearman_untied``) get
    :data:`SIMILARITY_MARGIN`; insertion measures (``q_ratio``, ``advantage``, ``policy``, ...) get
    :data:`INSERTION_MARGIN_SD` times ``paper_sd``, the paper's per-state standard deviation.

    Raises
    ------
    ValueError
        An insertion measure without a positive finite ``paper_sd``.
    """
    if measure in ("spearman", "ssim", "ssim_2d", "hog_pearson", "spearman_untied"):
        return SIMILARITY_MARGIN
    if paper_sd is None or not np.isfinite(paper_sd) or paper_sd <= 0:
        raise ValueError(f"the margin of {measure!r} is {INSERTION_MARGIN_SD} × the paper's standard deviation, "
                         f"got paper_sd={paper_sd!r}")
    return INSERTION_MARGIN_SD * float(paper_sd)

MIN_STATES = 50
"""Fewest states behind any verdict, claim about the paper or significant difference (issue 18:
no finding rests on fewer than 50 states). With the autocorrelation of one trajectory, 50
consecutive states are worth about 5 to 25 independent ones (the effective sample sizes the
chapters print), the least for which a block-bootstrap interval is more than the values' range."""

TOO_FEW = "too few states"
"""The verdict cell of a table below :data:`MIN_STATES`."""


def enough_states(n) -> bool:
    """Whether ``n`` states (finite values) carry a verdict: ``n ≥`` :data:`MIN_STATES`."""
    return n is not None and bool(np.isfinite(n)) and int(n) >= MIN_STATES


def too_few(n) -> str:
    """The sentence a chapter prints instead of a verdict: ``too few states (n=20) for a verdict``."""
    return f"{TOO_FEW} (n={int(n)}) for a verdict"


DEGENERATE_MEASURES = MappingProxyType({
    "value": "the state value V of the Mask-A3C agents: the substrates leave V about where the clean state puts "
             "it, while half-revealed inputs push it far above, so the map that disturbs the image most, the random "
             "map, scores best on insertion and worst on deletion (chapter 4's degeneracy check measures this from the "
             "stored curves; the introduction's generated finding gives the numbers for our Mask-A3C seeds)",
})
"""Insertion/deletion measures that no chapter ranks maps on, with the reason (chapter 4 measures
it from the stored curves: :func:`saliency_study.degradation.measure_degeneracy`). Insertion and
deletion assume that the substrate removes what the measure follows; where it does not, the
area under the curve rewards whatever lifts the measure in the middle of the path. A normalised
V, ``(V_t − V_substrate) / (V_clean − V_substrate)``, does not help: its denominator is about
zero. A substrate that moves V would be a new sweep; until one exists, V is shown, not ranked."""
