"""Chapter 5 (Mask attention): the Mask-A3C agents' masks over play.

* :class:`MaskAttentionChapter`: the chapter's configuration (a :class:`~saliency_book.config.ChapterConfig`).
* :func:`official_play`, :func:`our_mask_plays`: the chapter's agents' plays
  (:func:`saliency_study.masks.play_masks`; the statistics are :mod:`saliency_study.masks`').
* ``show_*``: the figures and the table of the section.

:mod:`saliency_book.ch5_rankings` ranks the masks among the other methods; :mod:`saliency_book.ch5_scores`
compares the variants' scores. A missing input (the official checkpoints, our agents) gives a
:class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note, action_names, figure_image
from saliency_book.config import ChapterConfig, as_float, as_int, as_optional
from saliency_lib.agents.mask_a3c import VARIANT_NAMES, VARIANTS
from saliency_lib.games import mask_a3c_crop
from saliency_lib.validation import check_choice
from saliency_study.catalog import official_available, rel_path
from saliency_study.masks import (
    AC_ALGOS,
    BRANCHES,
    REFERENCE_MASK_STATS,
    MaskPlay,
    chance_iou,
    mask_agents,
    mask_series,
    play_masks,
)
from saliency_study.paths import AGENTS_DIR, RUNS_DIR, repo_path
from saliency_study.profiles import get_profile

__all__ = ["AC_ALGOS", "VARIANT_ORDER", "VARIANT_LABELS", "COLORS", "SUMMARY_COLUMNS", "MaskAttentionChapter",
           "not_trained_note", "official_missing", "shown_path", "agent_label", "official_play", "our_mask_plays",
           "show_filmstrip", "show_series", "show_our_plays", "show_mask_summary"]

VARIANT_ORDER = VARIANTS
VARIANT_LABELS = VARIANT_NAMES
COLORS = MappingProxyType({"policy": "#3b528b", "value": "#de7d2c", "iou": "#5ec962", "spearman": "#8c2981",
                           "official": "#b0b0b0"})
SUMMARY_COLUMNS = MappingProxyType({
    "policy_mass": "policy: mean M", "policy_open": "policy: cells > 0.5", "value_mass": "value: mean M",
    "value_open": "value: cells > 0.5", "policy_entropy": "policy: entropy", "value_entropy": "value: entropy",
    "iou": "top-cells IoU", "spearman": "Spearman ρ",
})
"""Names of the statistics of :func:`saliency_study.masks.series_summary` in the table."""


@dataclass(frozen=True)
class MaskAttentionChapter(ChapterConfig):
    """Configuration of chapter 5: the base's fields, then the chapter's own."""

    steps: int | None = None
    """Agent steps of the played game segment; None: :attr:`~saliency_study.profiles.Profile.play_steps`."""
    filmstrip: int = 6
    """Frames shown in a filmstrip, evenly spaced over the segment."""
    top: float = 0.1
    """Fraction of the mask cells whose overlap (IoU) between the policy and the value mask is measured."""
    substrate: str = "black"
    """Insertion/deletion substrate of the ranking table (``black``, ``random`` or ``blur``)."""
    agents_dir: str = AGENTS_DIR
    """Shipped agents (our actor-critic agents are found here)."""
    runs_dir: str = RUNS_DIR
    """Training runs in progress (learning curves of agents not shipped yet)."""

    def __post_init__(self):
        from saliency_lib.metrics import SUBSTRATES

        super().__post_init__()
        steps = as_optional(self.steps)
        object.__setattr__(self, "steps", None if steps is None else as_int("steps", steps, minimum=1))
        object.__setattr__(self, "filmstrip", as_int("filmstrip", self.filmstrip, minimum=1))
        object.__setattr__(self, "top", as_float("top", self.top, low=0, high=1, low_open=True))
        check_choice("substrate", self.substrate, SUBSTRATES)

    @property
    def play_steps(self) -> int:
        """Agent steps of the played segment."""
        return self.steps or get_profile(self.profile).play_steps

    @property
    def official(self) -> str:
        return f"official:{self.game}"


# -- agents ------------------------------------------------------------------------------------

def shown_path(path) -> str:
    """``path`` as the chapter shows it: relative to the repository when inside it."""
    return rel_path(repo_path(path))


def not_trained_note(game: str, agents_dir, what: str) -> Note:
    return Note(f"Our own A3C / Mask-A3C agents for {game} are not trained yet: `{shown_path(agents_dir)}` holds no "
                f"`a3c-{game}-<variant>-s<seed>` agent. {what} They are trained by `scripts/train_agents.sh` "
                "and shipped with `saliency-study ship`; this section fills in when they exist.",
                kind="warning", title="Our actor-critic agents are not trained yet")


def official_missing(game: str) -> Note:
    from saliency_lib.agents.official import OFFICIAL_GAMES

    why = (f"Itaya et al. released no Mask-A3C checkpoint for {game} (they did for {', '.join(OFFICIAL_GAMES)})"
           if game not in OFFICIAL_GAMES else "The official Mask-A3C checkpoints are not fetched; run `make fetch-official`")
    return Note(why + ".", kind="warning", title="Official agent not available")


def agent_label(row) -> str:
    return f"our {VARIANT_LABELS.get(row['variant'], row['variant'])} agent `{row['agent']}`"


# -- playing with masks ------------------------------------------------------------------------

def official_play(cfg: MaskAttentionChapter) -> MaskPlay | Note:
    """:func:`play_masks` of the official Mask-A3C agent of the chapter's game, or a Note if it is missing."""
    if not official_available(cfg.game):
        return official_missing(cfg.game)
    return play_masks(cfg.official, steps=cfg.play_steps, seed=cfg.seed, filmstrip=cfg.filmstrip,
                      label="official Mask-A3C agent", results_dir=cfg.results_dir, device=cfg.device)


def our_mask_plays(cfg: MaskAttentionChapter) -> dict[str, MaskPlay] | Note:
    """:func:`play_masks` for each of our shipped Mask-A3C agents of the game, or a Note if there are none."""
    agents = mask_agents(cfg.game, cfg.agents_dir)
    if agents.empty:
        return not_trained_note(cfg.game, cfg.agents_dir, "This chapter therefore shows the masks of the official agent only.")
    return {r["agent"]: play_masks(r["path"], steps=cfg.play_steps, seed=cfg.seed, filmstrip=cfg.filmstrip,
                                   label=agent_label(r), results_dir=cfg.results_dir, device=cfg.device)
            for _, r in agents.iterrows()}


# -- what the section shows --------------------------------------------------------------------

def show_mask_summary(summary: pd.DataFrame, game: str, caption: str):
    """:func:`~saliency_study.masks.series_summary` as a Styler.

    Mean ± sd per agent, with the reference notes' whole-game values.
    """
    if summary.empty:
        return Note(f"No Mask-A3C agent for {game} played, so there are no mask statistics.", title="No masks")
    wide = {}
    for (agent, stat), g in summary.groupby(["agent", "stat"], sort=False):
        m, sd = g["mean"].iloc[0], g["sd"].iloc[0]
        pct = stat.endswith("_open")
        cell = "–" if not np.isfinite(m) else f"{100 * m:.1f} % ± {100 * sd:.1f} %" if pct else f"{m:.2f} ± {sd:.2f}"
        wide.setdefault(agent, {"steps": str(int(g["steps"].iloc[0]))})[SUMMARY_COLUMNS[stat]] = cell
    ref = REFERENCE_MASK_STATS.get(game)
    if ref:
        wide["released checkpoint, whole games (reference notes)"] = {
            "steps": "–", **dict(zip(["policy: mean M", "policy: cells > 0.5", "value: mean M", "value: cells > 0.5"], ref))}
    t = pd.DataFrame.from_dict(wide, orient="index").reindex(columns=["steps", *SUMMARY_COLUMNS.values()])
    return t.fillna("–").rename_axis("agent").reset_index().style.hide(axis="index").set_caption(caption)


def _norm(m: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)


def show_filmstrip(play: MaskPlay | Note, *, cmap: str = "inferno", dpi: int = 90):
    """A few frames of ``play`` with the policy (top row) and value mask (bottom row) overlaid.

    As in the official visualiser, each branch's masks are min-max normalised over the whole segment
    and upsampled back through the crop (:func:`saliency_lib.viz.mask_to_frame`), drawn with the
    perceptually uniform ``cmap`` (a Note passes through).
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    from saliency_lib.viz import mask_to_frame, overlay

    if isinstance(play, Note):
        return play
    crop, idx = mask_a3c_crop(play.game), sorted(play.frames)
    names = action_names(play.game, play.preset, play.n_actions) if play.n_actions else ()
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
                act = names[play.actions[i]] if names else str(play.actions[i])
                ax.set_title(f"step {play.steps[i]}\n{act}, V = {play.value[i]:.2f}", fontsize=8)
            if c == 0:
                ax.set_ylabel(f"{b} mask", fontsize=9)
        fig.colorbar(ScalarMappable(Normalize(lo, hi), colormaps[cmap]), ax=axes[r, :].tolist(), shrink=0.85,
                     label=f"{b} mask M", pad=0.01)
    fig.suptitle(f"{play.label}, {play.game}: policy and value masks over play", fontsize=10)
    return figure_image(fig, dpi=dpi)


def show_series(play: MaskPlay | Note, *, top: float = 0.1, dpi: int = 90):
    """Mask statistics of ``play`` per step (:func:`mask_series`): mean M, normalised entropy, and the
    policy–value agreement; the filmstrip's frames are marked (a Note passes through)."""
    from matplotlib.figure import Figure

    if isinstance(play, Note):
        return play
    series = mask_series(play, top=top)
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
        for x in sorted(play.frames):
            ax.axvline(x, color="0.85", lw=3, zorder=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{play.label}: masks per step (dashed: ConvLSTM reset after a lost life or game; "
                 "grey bands: filmstrip frames)", fontsize=9)
    return figure_image(fig, dpi=dpi)


def show_our_plays(plays: dict[str, MaskPlay] | Note, *, top: float = 0.1, dpi: int = 72):
    """A Tab widget with the filmstrip and the per-step statistics of each of our agents (a Note passes
    through); the PNGs are stored in the widget state, so the tabs work in the static book."""
    import ipywidgets as w

    if isinstance(plays, Note):
        return plays
    children = [w.VBox([w.Image(value=i.data, format="png", layout=w.Layout(max_width="100%"))
                        for i in (show_filmstrip(p, dpi=dpi), show_series(p, top=top, dpi=dpi))]) for p in plays.values()]
    tabs = w.Tab(children=children)
    for i, name in enumerate(plays):
        tabs.set_title(i, name)
    return tabs
