"""Chapter 3 (sanity checks): one ``show_`` function per displayed figure or table.

The numbers come from :mod:`saliency_study.sanity` and :mod:`saliency_study.tied_blocks` through
:mod:`saliency_book.ch3_sanity`; this module only draws and styles them. :func:`show_table` styles any
of the chapter's tables, the comparisons with the paper included: whatever numeric and verdict columns
they have.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.ch3_sanity import SanityResults
from saliency_book.common import METHODS, Note, figure_image
from saliency_book.maps import overlay_map
from saliency_book.tables import show_table
from saliency_lib.explainers import method_label
from saliency_study.sanity import CONFIDENCE, MEASURES, NS_METHODS, NSExample

__all__ = ["show_table", "show_curves", "show_ns_curves", "show_ns_example", "show_verdicts", "show_comparison",
           "show_tied_blocks", "show_tied_block_test"]

MEASURE_LABELS = MappingProxyType({"spearman": "Spearman rank correlation", "ssim": "SSIM (1-D, as Huber et al.)",
                                   "hog_pearson": "Pearson correlation of HOG features"})
COLORS = MappingProxyType({
    "occlusion": "tab:blue", "ns_original": "tab:red", "ns_chosen": "tab:orange", "ns_black": "tab:gray",
    "sarfa": "tab:green", "rise": "tab:purple", "lime_slic": "tab:brown", "lime_quickshift": "#8c6d31",
    "lime_felzenszwalb": "#e7969c", "gradient": "tab:pink", "integrated_gradients": "tab:olive", "gradcam": "tab:cyan",
    "mask_policy": "black", "mask_value": "0.55"})
"""One colour per method, shared by every figure; the line style says the family."""


def level_labels(summary: pd.DataFrame) -> list[tuple[int, str]]:
    """``(level, tick label)`` of a cascade: ``none``, the output group, then ``+ <group>`` …"""
    pairs = sorted(set(zip(summary["level"].astype(int), summary["layer"])))
    return [(lv, "none" if lv == 0 else name if lv == 1 else f"+ {name}") for lv, name in pairs]


def show_verdicts(verdicts: pd.DataFrame | Note, caption: str):
    """The verdict table (:func:`~saliency_book.ch3_sanity.chapter_verdicts`): every measure after full
    randomisation, the random-map floor and the verdict (with why it is withheld, where it is), one row
    group per agent."""
    if isinstance(verdicts, Note):
        return verdicts
    reason = ["reason"] if verdicts.get("reason", pd.Series(dtype=str)).astype(bool).any() else []
    cols = ["title", "method", "n", "n_eff", *[f"{m}{s}" for m in MEASURES for s in ("", "_low", "_high")],
            "random_spearman", "verdict", *reason]
    return show_table(verdicts[[c for c in cols if c in verdicts.columns]], caption, index=["title", "method"],
                      names={"ssim": "SSIM", "hog_pearson": "HOG", "spearman": "Spearman",
                             "random_spearman": "Spearman, random map"})


def show_comparison(table: pd.DataFrame, caption: str, *, game: str | None = None, digits: int = 2):
    """A comparison with the paper (:func:`~saliency_study.sanity.per_game` rows of ``game``, or
    :func:`~saliency_study.sanity.pooled`), whatever its numeric and verdict columns."""
    t = table if game is None else table[table["game"] == game].drop(columns="game")
    return show_table(t, caption, digits=digits)


def show_tied_blocks(summary: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_study.tied_blocks.tied_block_summary` with shares in per cent."""
    if isinstance(summary, Note):
        return summary
    shares = ["tied_trained", "tied_random", "shared", "below_trained", "below_random"]
    return show_table(summary.drop(columns="input_zero"), caption, index=["method"], formats=dict.fromkeys(shares, "{:.0%}"),
                      names={"tied_trained": "Tied, trained", "tied_random": "Tied, random", "shared": "Tied in both",
                             "below_trained": "Below the tie, trained", "below_random": "Below the tie, random",
                             "spearman": "Spearman, all pixels", "spearman_outside": "Spearman, outside the block",
                             "tie_floor": "Spearman of the block alone"})


def show_tied_block_test(test: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_study.tied_blocks.tied_block_test` (one game, or several stacked) per method; the
    reason column only where a verdict is withheld."""
    if isinstance(test, Note):
        return test
    games = ["game"] if test["game"].nunique() > 1 else []
    drop = ["p", *([] if games else ["game"]), *([] if test["reason"].astype(bool).any() else ["reason"])]
    return show_table(test.drop(columns=drop), caption, index=games + ["method"],
                      names={"spearman": "Spearman, all pixels", "outside": "Spearman, outside the block"})


# -- figures ------------------------------------------------------------------------------------------

def _style(method: str) -> dict:
    ls = "--" if method in ("gradient", "integrated_gradients", "gradcam") else ":" if method.startswith("mask_") else "-"
    return {"color": COLORS.get(method, "0.3"), "ls": ls}


def _panel(ax, s: pd.DataFrame, methods, measure: str, *, bands: bool):
    """One measure's similarity after each level: points with CI bars (``bands=False``) or lines with CI bands."""
    ticks = level_labels(s)
    xs = np.arange(len(ticks), dtype=float)
    spread = 0.0 if bands else 0.35 / max(len(methods) - 1, 1)
    for k, m in enumerate(methods):
        d = s[(s["method"] == m) & (s["measure"] == measure)].set_index("level").reindex([lv for lv, _ in ticks])
        mean, lo, hi = (d[c].to_numpy(dtype=float) for c in ("mean", "ci_low", "ci_high"))
        if bands:
            ax.plot(xs, mean, marker="o", ms=4, lw=1.8, label=method_label(m), **_style(m))
            ax.fill_between(xs, lo, hi, color=_style(m)["color"], alpha=0.18, lw=0)
        else:  # clip: with equal values the interval equals the mean up to rounding
            err = np.clip(np.nan_to_num(np.vstack([mean - lo, hi - mean])), 0.0, None)
            ax.errorbar(xs + (k - (len(methods) - 1) / 2) * spread, mean, yerr=err, marker="o", ms=3.5, lw=1.3,
                        capsize=2, label=method_label(m), **_style(m))
    ax.set_xticks(xs, [lab for _, lab in ticks], rotation=35, ha="right", fontsize=8)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)


def show_curves(res: SanityResults, kind: str, *, dpi: int = 100):
    """Similarity to the original map after each cascade level of one agent, one panel per measure,
    every method; dotted grey: the mean similarity with a uniform-random map. A Note for a missing agent."""
    from matplotlib.figure import Figure

    s, refs, who = res.summaries[kind], res.refs[kind], res.agents[kind]
    if isinstance(s, Note) or s.empty:
        return s if isinstance(s, Note) else Note("No sanity-check results to plot.", title="No results")
    rank = {m: i for i, m in enumerate(METHODS)}
    methods = sorted(dict.fromkeys(s["method"]), key=lambda m: (rank.get(m, len(rank)), m))
    fig = Figure(figsize=(4.1 * len(MEASURES), 4.2), layout="constrained")
    axes = fig.subplots(1, len(MEASURES), sharey=True)
    for ax, meas in zip(axes, MEASURES):
        _panel(ax, s, methods, meas, bands=False)
        r = refs[(refs["measure"] == meas) & (refs["layer"] == "random_uniform")]
        if len(r) and r["n"].sum() > 0:
            ax.axhline(float(np.average(r["mean"], weights=r["n"])), color="0.45", ls=(0, (1, 3)), lw=1.2,
                       label="uniform-random map")
        ax.set_title(MEASURE_LABELS[meas], fontsize=10)
        ax.set_xlabel("layers randomised (cumulative, from the output)", fontsize=8)
    axes[0].set_ylabel(f"similarity to the original map\n(mean, {CONFIDENCE:.0%} CI)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), fontsize=8, frameon=False)
    n = int(s.loc[s["level"] == 0, "n"].max()) if (s["level"] == 0).any() else 0
    fig.suptitle(f"{who.label[0].upper() + who.label[1:]}, {who.game}: cascading randomisation ({n} states)", fontsize=11)
    return figure_image(fig, dpi=dpi)


def show_ns_curves(res: SanityResults, *, dpi: int = 100):
    """NS original against NS chosen action, one row per available agent, one panel per measure; shaded:
    the level where only the output layer (the heads) is random."""
    from matplotlib.figure import Figure

    rows = {res.agents[k].label: s[s["method"].isin(NS_METHODS)] for k, s in res.summaries.items()
            if isinstance(s, pd.DataFrame) and s["method"].isin(NS_METHODS).any()}
    if not rows:
        return Note("No Noise Sensitivity results to plot.", title="No results")
    fig = Figure(figsize=(4.1 * len(MEASURES), 3.3 * len(rows) + 0.6), layout="constrained")
    axes = fig.subplots(len(rows), len(MEASURES), squeeze=False, sharey=True)
    for r, (title, s) in enumerate(rows.items()):
        for ax, meas in zip(axes[r], MEASURES):
            ax.axvspan(0.6, 1.4, color="gold", alpha=0.18, lw=0)
            _panel(ax, s, NS_METHODS, meas, bands=True)
            ax.set_title(f"{title}: {MEASURE_LABELS[meas]}", fontsize=9)
        axes[r][0].set_ylabel("similarity to the original map")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    return figure_image(fig, dpi=dpi)


def show_ns_example(ex: NSExample | Note, label: str = "agent", *, dpi: int = 100):
    """The example's maps (:func:`~saliency_study.sanity.ns_example`) of the agent named ``label``, overlaid on
    the raw frame: rows NS original / NS chosen, columns the three models."""
    from matplotlib import cm, colors
    from matplotlib.figure import Figure

    if isinstance(ex, Note):
        return ex
    fig = Figure(figsize=(2.3 * len(ex.levels) + 0.6, 6.4), layout="constrained")
    axes = fig.subplots(len(NS_METHODS), len(ex.levels), squeeze=False)
    for r, m in enumerate(NS_METHODS):
        for c, (lv, name) in enumerate(ex.levels):
            ax = axes[r][c]
            ax.imshow(overlay_map(ex.frame, ex.maps[(m, lv)], preset=ex.preset, game=ex.game), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            rho = ex.spearman[(m, lv)]
            head = "original model" if lv == 0 else f"{name} randomised" if c == 1 else "all layers randomised"
            ax.set_title(head + ("" if lv == 0 else f"\nρ = {rho:.2f}" if np.isfinite(rho) else "\nρ undefined"), fontsize=8)
            if c == 0:
                ax.set_ylabel(method_label(m), fontsize=9)
    fig.colorbar(cm.ScalarMappable(colors.Normalize(0, 1), "inferno"), ax=axes, orientation="horizontal",
                 fraction=0.04, shrink=0.6, label="saliency, min-max normalised per map")
    fig.suptitle(f"{label[0].upper() + label[1:]}, {ex.game}: sweep state {ex.state} "
                 f"(step {ex.step})", fontsize=9)
    return figure_image(fig, dpi=dpi)
