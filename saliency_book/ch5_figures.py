"""Chapter 5 (mask attention): its figures and styled tables.

The numbers come from :mod:`saliency_book.ch5_mask_attention`; this module only draws them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import (
    BRANCHES,
    COLORS,
    REFERENCE_MASK_STATS,
    SUMMARY_COLUMNS,
    MaskPlay,
    chance_iou,
    mask_series,
    pct,
)
from saliency_book.ch5_rankings import ranking_display
from saliency_book.ch5_study import AgentStudy, mask_ranks_table, study_ranking_display
from saliency_book.common import Note, figure_image
from saliency_lib.games import mask_a3c_crop

__all__ = ["filmstrip_figure", "series_figure", "our_filmstrips", "style_summary", "style_our_rankings", "style_ranking",
           "style_mask_ranks", "style_study_ranking"]


def style_summary(summary: pd.DataFrame, game: str, caption: str):
    """:func:`series_summary` as a Styler: mean ± sd per agent, with the reference notes' whole-game values."""
    if summary.empty:
        return Note(f"No Mask-A3C agent for {game} played, so there are no mask statistics.", title="No masks")
    wide = {}
    for (agent, stat), g in summary.groupby(["agent", "stat"], sort=False):
        m, sd = g["mean"].iloc[0], g["sd"].iloc[0]
        if not np.isfinite(m):
            cell = "–"
        elif stat.endswith("_open"):
            cell = f"{pct(m)} ± {pct(sd)}"
        else:
            cell = f"{m:.2f} ± {sd:.2f}"
        wide.setdefault(agent, {"steps": str(int(g["steps"].iloc[0]))})[SUMMARY_COLUMNS[stat]] = cell
    ref = REFERENCE_MASK_STATS.get(game)
    if ref:
        wide["released checkpoint, whole games (reference notes)"] = {
            "steps": "–", "policy: mean M": ref[0], "policy: cells > 0.5": ref[1], "value: mean M": ref[2],
            "value: cells > 0.5": ref[3]}
    t = pd.DataFrame.from_dict(wide, orient="index").reindex(columns=["steps", *SUMMARY_COLUMNS.values()])
    t = t.fillna("–").rename_axis("agent").reset_index()
    return t.style.hide(axis="index").set_caption(caption)


def filmstrip_figure(play: MaskPlay | Note, *, cmap: str = "inferno", dpi: int = 90):
    """A few frames of ``play`` with the policy (top row) and value mask (bottom row) overlaid.

    As in the official visualiser, each branch's masks are min-max normalised over the
    whole segment and upsampled back through the crop (:func:`saliency_lib.viz.mask_to_frame`);
    they are drawn with the perceptually uniform ``cmap`` (:func:`saliency_lib.viz.overlay`).
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    from saliency_lib.viz import mask_to_frame, overlay

    if isinstance(play, Note):
        return play
    crop = mask_a3c_crop(play.game)
    idx = sorted(play.frames)
    branches = [b for b in BRANCHES if b in play.masks]
    fig = Figure(figsize=(1.75 * len(idx) + 1.2, 2.6 * len(branches) + 0.5), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(branches), len(idx), squeeze=False))
    for r, b in enumerate(branches):
        ms = play.masks[b]
        lo, hi = float(ms.min()), float(ms.max())
        for c, i in enumerate(idx):
            heat, inside = mask_to_frame(_norm(ms[i], lo, hi), crop)
            ax = axes[r, c]
            ax.imshow(overlay(play.frames[i], heat, cmap=cmap, where=inside))
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                act = play.action_names[play.actions[i]] if play.action_names else str(play.actions[i])
                ax.set_title(f"step {play.steps[i]}\n{act}, V = {play.value[i]:.2f}", fontsize=8)
            if c == 0:
                ax.set_ylabel(f"{b} mask", fontsize=9)
        fig.colorbar(ScalarMappable(Normalize(lo, hi), colormaps[cmap]), ax=axes[r, :].tolist(), shrink=0.85,
                     label=f"{b} mask M", pad=0.01)
    fig.suptitle(f"{play.label}, {play.game}: policy and value masks over play", fontsize=10)
    return figure_image(fig, dpi=dpi)


def series_figure(play: MaskPlay | Note, *, top: float = 0.1, dpi: int = 90):
    """Mask statistics of ``play`` per step (:func:`mask_series`): mean M, normalised entropy, and the
    policy–value agreement; the filmstrip's frames are marked (a Note passes through)."""
    from matplotlib.figure import Figure

    if isinstance(play, Note):
        return play
    series, label, frames = mask_series(play, top=top), play.label, sorted(play.frames)
    fig = Figure(figsize=(8.0, 6.2), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    t = series["t"].to_numpy()
    for b in BRANCHES:
        if series[f"{b}_mass"].notna().any():
            axes[0].plot(t, series[f"{b}_mass"], color=COLORS[b], lw=1.3, label=f"{b} mask")
            axes[1].plot(t, series[f"{b}_entropy"], color=COLORS[b], lw=1.3, label=f"{b} mask")
    axes[0].set_ylabel("mean M")
    axes[1].set_ylabel("entropy\n(1 = uniform)")
    if series["iou"].notna().any():
        axes[2].plot(t, series["iou"], color=COLORS["iou"], lw=1.3, label=f"IoU of the top {100 * top:.0f} % cells")
        axes[2].plot(t, series["spearman"], color=COLORS["spearman"], lw=1.3, label="Spearman ρ")
        axes[2].axhline(chance_iou(100, top), color=COLORS["iou"], ls=":", lw=1, label="IoU of random cells")
        axes[2].axhline(0, color="0.5", lw=0.6)
    else:
        axes[2].text(0.5, 0.5, "the agent has only one mask", ha="center", va="center", transform=axes[2].transAxes)
    axes[2].set_ylabel("policy vs value")
    axes[2].set_xlabel("agent step in the segment")
    resets = t[series["reset"].to_numpy(bool)]
    for ax in axes:
        for x in resets[resets > 0]:
            ax.axvline(x, color="0.6", ls="--", lw=0.8)
        for x in frames:
            ax.axvline(x, color="0.85", lw=3, zorder=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{label}: masks per step (dashed: ConvLSTM reset after a lost life or game; "
                 "grey bands: filmstrip frames)", fontsize=9)
    return figure_image(fig, dpi=dpi)


def our_filmstrips(plays: dict[str, MaskPlay] | Note, *, top: float = 0.1, dpi: int = 72):
    """A Tab widget with the filmstrip and the per-step statistics of each of our agents (a Note passes through).

    The PNGs are stored in the widget state, so the tabs work in the static book.
    """
    import ipywidgets as w

    if isinstance(plays, Note):
        return plays
    children = []
    for play in plays.values():
        imgs = [filmstrip_figure(play, dpi=dpi), series_figure(play, top=top, dpi=dpi)]
        children.append(w.VBox([w.Image(value=i.data, format="png", layout=w.Layout(max_width="100%")) for i in imgs]))
    tabs = w.Tab(children=children)
    for i, name in enumerate(plays):
        tabs.set_title(i, name)
    return tabs


def style_our_rankings(rankings: dict[str, pd.DataFrame] | Note, caption: str):
    """:func:`style_ranking` of each agent of :func:`our_rankings`, one captioned table each (HTML)."""
    from IPython.display import HTML

    if isinstance(rankings, Note):
        return rankings
    return HTML("".join(style_ranking(r, f"{caption} Agent: {label.replace('`', '')}.").to_html()
                        for label, r in rankings.items()))


def style_ranking(ranking: pd.DataFrame, caption: str):
    """:func:`ranking_display` as a Styler with the two masks in bold (a Note passes through)."""
    from saliency_lib.explainers import METHOD_LABELS

    if isinstance(ranking, Note):
        return ranking
    t = ranking_display(ranking)
    masks = {METHOD_LABELS["mask_policy"], METHOD_LABELS["mask_value"]}

    def bold(row):
        return ["font-weight: bold" if row["method"] in masks else "" for _ in row]

    return t.style.apply(bold, axis=1).hide(axis="index").set_caption(caption)


def _norm(m: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)


def _bold_masks(t: pd.DataFrame, column: str):
    from saliency_lib.explainers import METHOD_LABELS

    masks = {METHOD_LABELS["mask_policy"], METHOD_LABELS["mask_value"]}
    return t.style.apply(lambda row: ["font-weight: bold" if row[column] in masks else "" for _ in row], axis=1)


def style_mask_ranks(studies: dict, caption: str):
    """:func:`~saliency_book.ch5_study.mask_ranks_table` as a Styler, or a Note when no game's study is packed."""
    t = mask_ranks_table(studies)
    if t.empty:
        notes = [s.text for s in studies.values() if isinstance(s, Note)]
        return Note(" ".join(dict.fromkeys(notes)) or "No official agent's study is packed.", title="Study not finished")
    return t.style.hide(axis="index").set_caption(caption)


def style_study_ranking(study: AgentStudy | Note | None, caption: str):
    """:func:`~saliency_book.ch5_study.study_ranking_display` with the two masks in bold (a Note passes through)."""
    if study is None:
        return Note("Itaya et al. released no official Mask-A3C agent for this game.", title="No official agent")
    t = study_ranking_display(study)
    if isinstance(t, Note):
        return t
    return _bold_masks(t, "method").hide(axis="index").set_caption(caption)
