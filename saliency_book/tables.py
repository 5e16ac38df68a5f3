"""One display for the book's tidy tables: intervals in one cell, verdicts in colour.

Every chapter shows its numbers as tidy tables whose columns come from the study: a value with
``<x>_low``/``<x>_high``, a verdict, counts of states and effective states. :func:`show_table`
turns any such table into a captioned pandas Styler, so a chapter need not know which columns a
comparison has (the verdicts of the issue "Reproduced, or not" add ``margin`` and ``diff_*``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note
from saliency_lib.explainers import method_label
from saliency_study.evidence import TOO_FEW
from saliency_study.paper import GAME_LABELS, NOT_RUN

__all__ = ["show_table", "VERDICT_STYLE", "NAMES", "VERDICT_COLUMNS"]

SMALL = 'style="font-size: 0.82em"'
"""Table attribute of the wide tables, so that they fit the page."""
GOOD, BAD, OPEN, GREY = "color: #1a7f37", "color: #cf222e; font-weight: bold", "color: #9a6700", "color: #6e7781"
VERDICT_STYLE = MappingProxyType({
    "passes": GOOD, "consistent": GOOD, "reproduced": GOOD, "fails": BAD, "differs": BAD,
    "undecided": OPEN, "inconclusive": OPEN, "withheld": OPEN, TOO_FEW: OPEN, NOT_RUN: GREY, "not tested": GREY,
    "carried by the block": BAD})
"""Colour of a verdict cell (a verdict that starts with one of these keys takes its colour)."""
VERDICT_COLUMNS = ("verdict", "finding", "paper_shows_it", "degenerate", "holds")
"""Columns whose cells are verdicts; ``yes`` is good there, except in ``degenerate``."""
NAMES = MappingProxyType({
    "method": "Method", "agent": "Agent", "title": "Agent", "game": "Game", "games": "Games", "substrate": "Substrate",
    "measure": "Measure", "paper": "Huber et al.", "mean": "Ours", "ours": "Ours", "n": "States", "n_eff": "ESS",
    "verdict": "Verdict", "margin": "Margin", "difference": "Difference", "diff": "Difference", "level": "Randomised"})
"""Display names of the study's usual columns; others are capitalised with spaces."""
ALIASES = MappingProxyType({"ci": ("mean", "ours"), "diff": ("difference", "diff"), "ess": ()})
"""``<prefix>_low``/``<prefix>_high`` columns whose interval belongs to a differently named column."""
LEVEL_NAMES = MappingProxyType({1: "output layer", 2: "down to fc", 3: "down to conv3", 4: "down to conv2",
                                5: "all layers"})
"""The sanity cascade's levels (chapter 3), by how far down they randomise."""


def _interval(m, lo, hi, digits: int) -> str:
    """"m [lo, hi]" ("[lo, hi]" when ``m`` is None), "–" without a value."""
    ci = f"[{lo:.{digits}f}, {hi:.{digits}f}]" if np.isfinite(lo) and np.isfinite(hi) else ""
    if m is None or not np.isfinite(m):
        return ci if m is None and ci else "–"
    return f"{m:.{digits}f} {ci}".rstrip()


def _verdict_css(column: str) -> Callable[[object], str]:
    def css(v) -> str:
        if str(v) == "yes":
            return BAD if column == "degenerate" else GOOD
        return next((style for k, style in VERDICT_STYLE.items() if str(v).startswith(k)), "")
    return css


_LABELS: Mapping[str, Callable] = MappingProxyType({
    "method": method_label, "game": lambda g: GAME_LABELS.get(g, g), "level": lambda v: LEVEL_NAMES.get(v, v),
    "degenerate": lambda v: {True: "yes", False: "no"}.get(v, v)})


def show_table(table: pd.DataFrame | Note, caption: str, *, names: dict | None = None, index=None, digits: int = 2,
               formats: dict | None = None, labels: Mapping[str, Callable] | None = None, small: bool = False):
    """A tidy table as a captioned Styler, whatever its numeric and verdict columns.

    Every ``x``, ``x_low``, ``x_high`` become one cell "x [low, high]" (``ci_*`` go with ``mean`` or
    ``ours``, ``diff_*`` with ``difference``); numbers get ``digits`` decimals, ESS one, states none;
    the cells of :data:`VERDICT_COLUMNS` are coloured (:data:`VERDICT_STYLE`); methods, games and
    levels get their names, and ``labels`` maps other columns' values (e.g. measures). Columns are
    renamed by ``names``, then :data:`NAMES`; ``index`` columns become the index, else it is hidden.
    ``small`` sets a smaller font for wide tables. A Note passes through.
    """
    if isinstance(table, Note):
        return table
    if table.empty:
        return Note("Nothing to tabulate.", title="No results")
    t = table.copy()
    for low in [c for c in t.columns if c.endswith("_low") and c[:-4] + "_high" in t.columns]:
        prefix, high = low[:-4], low[:-4] + "_high"
        base = next((b for b in ALIASES.get(prefix, (prefix,)) if b in t.columns), None)
        m = t[base].astype(float) if base else [None] * len(t)
        d = 1 if prefix == "ess" else digits
        t[base or prefix] = [_interval(*v, d) for v in zip(m, t[low].astype(float), t[high].astype(float))]
        t = t.drop(columns=[low, high])
    for col, f in {**_LABELS, **(labels or {})}.items():
        if col in t.columns:
            t[col] = t[col].map(f)
    fmt = {c: f"{{:.{digits}f}}" for c in t.columns if pd.api.types.is_float_dtype(t[c])}
    # an ESS range ("ess_low"/"ess_high") became a text cell above: only numeric ESS columns get a number format
    fmt |= {c: "{:.1f}" for c in t.columns if (c.endswith("ess") or c == "n_eff") and pd.api.types.is_numeric_dtype(t[c])}
    fmt |= {c: "{:.0f}" for c in ("n", "states") if c in t.columns} | (formats or {})
    rename = {c: (names or {}).get(c, NAMES.get(c, c.replace("_", " ").capitalize())) for c in t.columns}
    verdicts = [c for c in t.columns if c in VERDICT_COLUMNS]
    t = t.rename(columns=rename)
    s = (t.set_index([rename[c] for c in index]) if index else t).style
    s = s.format({rename[c]: f for c, f in fmt.items() if c in rename}, na_rep="–")
    for c in verdicts:
        s = s.map(_verdict_css(c), subset=[rename[c]])
    s = (s if index else s.hide(axis="index")).set_caption(caption)
    return s.set_table_attributes(SMALL) if small else s
