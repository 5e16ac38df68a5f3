"""Chapter 3 (sanity checks): its figures and styled tables.

The numbers come from :mod:`saliency_book.ch3_sanity`; this module only draws them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from saliency_book.ch3_ns_example import NSExample
from saliency_book.ch3_sanity import (
    COLORS,
    CONFIDENCE,
    GRADIENT_METHODS,
    MEASURE_LABELS,
    MEASURES,
    NS_METHODS,
    ci,
    level_labels,
    ordered,
)
from saliency_book.common import Note, figure_image
from saliency_book.maps import overlay_map
from saliency_lib.explainers import method_label

__all__ = ["curves_figure", "ns_figure", "ns_example_figure", "style_verdicts", "style_layer_groups"]


def _style(method: str) -> dict:
    ls = "--" if method in GRADIENT_METHODS else ":" if method.startswith("mask_") else "-"
    return {"color": COLORS.get(method, "0.3"), "ls": ls}


def style_verdicts(table: pd.DataFrame | Note, labels: dict[str, str], caption: str):
    """The verdict table as a captioned Styler, one row group per agent; ``labels`` maps agent specs to names."""
    if isinstance(table, Note):
        return table
    if table.empty:
        return Note("No sanity-check results to tabulate.", title="No results")
    short = {"spearman": "Spearman", "ssim": "SSIM", "hog_pearson": "HOG"}
    t = pd.DataFrame({
        "Agent": table["agent"].map(lambda a: labels.get(a, a)),
        "Method": table["method"].map(method_label),
        "States": table["n"],
        "ESS": table["n_eff"] if "n_eff" in table else np.nan,
        **{short[m]: [ci(r.get(m, np.nan), r.get(f"{m}_low", np.nan), r.get(f"{m}_high", np.nan))
                      for _, r in table.iterrows()] for m in MEASURES},
        "Spearman, random map": table["random_spearman"],
        "Verdict": table["verdict"],
    }).set_index(["Agent", "Method"])
    colors = {"passes": "color: #1a7f37", "fails": "color: #cf222e; font-weight: bold", "undecided": "color: #9a6700"}
    return (t.style.format({"States": "{:.0f}", "ESS": "{:.1f}", "Spearman, random map": "{:.2f}"}, na_rep="–")
            .map(lambda v: colors.get(v, ""), subset=["Verdict"]).set_caption(caption))


def _errorbar(ax, xs, d: pd.DataFrame, method: str, offset: float, label: str | None):
    # clip: when every state has the same similarity the interval equals the mean up to rounding
    lo = np.clip(np.nan_to_num((d["mean"] - d["ci_low"]).to_numpy(dtype=float)), 0.0, None)
    hi = np.clip(np.nan_to_num((d["ci_high"] - d["mean"]).to_numpy(dtype=float)), 0.0, None)
    return ax.errorbar(xs + offset, d["mean"].to_numpy(dtype=float), yerr=np.vstack([lo, hi]),
                       marker="o", ms=3.5, lw=1.3, capsize=2, label=label, **_style(method))


def curves_figure(summary: pd.DataFrame | Note, refs: pd.DataFrame | None, title: str, *,
                  measures: Sequence[str] = MEASURES, methods: Sequence[str] | None = None, dpi: int = 100):
    """Similarity to the original map after each cascade level, one panel per measure, every method.

    Points are means over the states, bars the bootstrap CIs; the dotted grey line is the
    mean similarity of the original maps with a uniform-random map (all methods pooled).
    A Note passes through.
    """
    from matplotlib.figure import Figure

    if isinstance(summary, Note):
        return summary
    if summary.empty:
        return Note("No sanity-check results to plot.", title="No results")
    methods = list(methods or ordered(summary["method"]))
    ticks = level_labels(summary)
    levels = [lv for lv, _ in ticks]
    xs = np.arange(len(levels), dtype=float)
    fig = Figure(figsize=(4.1 * len(measures), 4.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(measures), sharey=True))
    spread = 0.35 / max(len(methods) - 1, 1)
    for ax, meas in zip(axes, measures):
        sm = summary[summary["measure"] == meas]
        for k, m in enumerate(methods):
            d = sm[sm["method"] == m].set_index("level").reindex(levels)
            _errorbar(ax, xs, d, m, (k - (len(methods) - 1) / 2) * spread, method_label(m))
        if refs is not None and len(refs):
            r = refs[(refs["measure"] == meas) & (refs["layer"] == "random_uniform")]
            if len(r) and r["n"].sum() > 0:
                ax.axhline(float(np.average(r["mean"], weights=r["n"])), color="0.45", ls=(0, (1, 3)), lw=1.2,
                           label="uniform-random map")
        ax.set_xticks(xs, [lab for _, lab in ticks], rotation=35, ha="right", fontsize=8)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(MEASURE_LABELS.get(meas, meas), fontsize=10)
        ax.grid(alpha=0.3)
        ax.set_xlabel("layers randomised (cumulative, from the output)", fontsize=8)
    axes[0].set_ylabel(f"similarity to the original map\n(mean, {CONFIDENCE:.0%} bootstrap CI)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    return figure_image(fig, dpi=dpi)


def ns_figure(summaries: dict[str, pd.DataFrame], *, measures: Sequence[str] = MEASURES, dpi: int = 100):
    """NS original against NS chosen action: one row per agent (``{title: summary}``), one panel per measure.

    Lines are means, bands bootstrap CIs; the shaded column marks the level where only the
    output layer(s) are randomised. Returns a Note when no agent has NS results.
    """
    from matplotlib.figure import Figure

    rows = {k: s[s["method"].isin(NS_METHODS)] for k, s in summaries.items()
            if isinstance(s, pd.DataFrame) and s["method"].isin(NS_METHODS).any()}
    if not rows:
        return Note("No Noise Sensitivity results to plot.", title="No results")
    fig = Figure(figsize=(4.1 * len(measures), 3.3 * len(rows) + 0.6), layout="constrained")
    axes = fig.subplots(len(rows), len(measures), squeeze=False, sharey=True)
    for r, (title, s) in enumerate(rows.items()):
        ticks = level_labels(s)
        levels = [lv for lv, _ in ticks]
        xs = np.arange(len(levels), dtype=float)
        for c, meas in enumerate(measures):
            ax = axes[r][c]
            ax.axvspan(0.6, 1.4, color="gold", alpha=0.18, lw=0)
            for m in NS_METHODS:
                d = s[(s["method"] == m) & (s["measure"] == meas)].set_index("level").reindex(levels)
                st = _style(m)
                ax.plot(xs, d["mean"].to_numpy(dtype=float), marker="o", ms=4, lw=1.8, label=method_label(m), **st)
                ax.fill_between(xs, d["ci_low"].to_numpy(dtype=float), d["ci_high"].to_numpy(dtype=float),
                                color=st["color"], alpha=0.18, lw=0)
            ax.set_xticks(xs, [lab for _, lab in ticks], rotation=35, ha="right", fontsize=8)
            ax.set_ylim(-0.05, 1.05)
            ax.grid(alpha=0.3)
            ax.set_title(f"{title}: {MEASURE_LABELS.get(meas, meas)}", fontsize=9)
        axes[r][0].set_ylabel("similarity to the original map")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    return figure_image(fig, dpi=dpi)


def style_layer_groups(table: pd.DataFrame | Note, caption: str):
    """:func:`layer_groups_table` as a captioned Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    return table.style.format({"Parameters": "{:,}"}).hide(axis="index").set_caption(caption)


def ns_example_figure(ex: NSExample | Note, *, dpi: int = 100):
    """The example's maps overlaid on the raw frame: rows NS original / NS chosen, columns the three models."""
    from matplotlib import cm, colors
    from matplotlib.figure import Figure

    if isinstance(ex, Note):
        return ex
    fig = Figure(figsize=(2.3 * len(ex.levels) + 0.6, 6.4), layout="constrained")
    axes = fig.subplots(len(NS_METHODS), len(ex.levels), squeeze=False)
    heads = {0: "original model"}
    for r, m in enumerate(NS_METHODS):
        for c, (lv, name) in enumerate(ex.levels):
            ax = axes[r][c]
            ax.imshow(overlay_map(ex.frame, ex.maps[(m, lv)], preset=ex.preset, game=ex.agent.game), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            head = heads.get(lv, f"{name} randomised" if c == 1 else "all layers randomised")
            rho = ex.spearman[(m, lv)]
            ax.set_title(head + ("" if lv == 0 else f"\nρ = {rho:.2f}" if np.isfinite(rho) else "\nρ undefined"), fontsize=8)
            if c == 0:
                ax.set_ylabel(method_label(m), fontsize=9)
    fig.colorbar(cm.ScalarMappable(colors.Normalize(0, 1), "inferno"), ax=axes, orientation="horizontal",
                 fraction=0.04, shrink=0.6, label="saliency, min-max normalised per map")
    fig.suptitle(f"{ex.agent.label[0].upper() + ex.agent.label[1:]}, {ex.agent.game}: sweep state {ex.state} "
                 f"(step {ex.step})", fontsize=9)
    return figure_image(fig, dpi=dpi)
