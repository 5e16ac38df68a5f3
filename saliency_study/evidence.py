"""How much evidence a chapter needs before it prints a verdict, shared by every chapter.

The study's states are consecutive states of one greedy game, so a handful of them is
worth even fewer independent samples (:func:`saliency_lib.metrics.effective_sample_size`).
Every chapter that judges a method, a finding of the paper or a difference between
methods asks :func:`enough_states` first and, below :data:`MIN_STATES`, prints
:func:`too_few` instead of a verdict.

* :data:`MIN_STATES`, :func:`enough_states`, :func:`too_few`: the bar and its wording.
* :data:`DEGENERATE_MEASURES`: insertion/deletion measures that no chapter ranks maps on.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

__all__ = ["MIN_STATES", "TOO_FEW", "enough_states", "too_few", "DEGENERATE_MEASURES"]

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
it from the stored curves: :func:`saliency_book.ch4_paper.measure_degeneracy`). Insertion and
deletion assume that the substrate removes what the measure follows; where it does not, the
area under the curve rewards whatever lifts the measure in the middle of the path. A normalised
V, ``(V_t − V_substrate) / (V_clean − V_substrate)``, does not help: its denominator is about
zero. A substrate that moves V would be a new sweep; until one exists, V is shown, not ranked."""
