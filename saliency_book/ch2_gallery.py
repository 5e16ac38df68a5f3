"""Chapter 2 (Explainer gallery): every saliency method on the same HIGHLIGHTS-DIV states.

:func:`compute_gallery` computes the maps of one agent (cached per state by
:func:`~saliency_book.maps.saliency_map`, which chapter 7 reuses); the ``show_*`` functions draw
them; :func:`agreement` and :func:`agreement_extremes` measure how similar the methods' maps are.
A missing agent gives a :class:`~saliency_book.common.Note` instead of an exception.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from saliency_book.common import ExplainedAgent, Note, action_names, chapter_agents, figure_image, png_tabs
from saliency_book.maps import ExampleMapsConfig, applicable_methods, highlight_states, overlay_map, saliency_map
from saliency_lib.explainers import METHOD_LABELS
from saliency_lib.games import HUBER_GAMES
from saliency_study.catalog import load_spec

__all__ = ["GalleryChapter", "Gallery", "compute_gallery", "state_figure", "show_states", "show_gallery",
           "show_gallery_tabs", "games_gallery", "show_games", "agreement", "show_agreement", "agreement_extremes",
           "show_extremes"]


@dataclass(frozen=True)
class GalleryChapter(ExampleMapsConfig):
    """Chapter 2's configuration (see :class:`~saliency_book.maps.ExampleMapsConfig`)."""


@dataclass
class Gallery:
    """Every method's map of every chosen state for one agent."""

    agent: ExplainedAgent
    preset: str
    states: object
    """The :class:`~saliency_lib.states.StateSet` of :func:`~saliency_book.maps.highlight_states`."""
    methods: tuple[str, ...]
    maps: dict[str, list[np.ndarray | None]]
    """Method → one map (or None) per state."""
    actions: tuple[str, ...]
    """Names of the agent's actions."""

    def __len__(self) -> int:
        return len(self.states)

    @property
    def title(self) -> str:
        return f"{self.agent.label[0].upper() + self.agent.label[1:]}, {self.agent.game}"


def compute_gallery(cfg: GalleryChapter, who: ExplainedAgent) -> Gallery | Note:
    """The maps of every applicable method (``cfg.methods``) on ``cfg.selection``'s states, for the agent's action."""
    import torch

    if not who:
        return who.note()
    torch.set_num_threads(1)
    agent = load_spec(who.spec, cfg.device)
    states = highlight_states(agent, who.spec, cfg.selection, results_dir=cfg.results_dir)
    methods = applicable_methods(agent, cfg.methods)
    maps = {m: [saliency_map(agent, who.spec, states, i, m, "action", params=cfg.explainer_params,
                             results_dir=cfg.results_dir) for i in range(len(states))] for m in methods}
    return Gallery(who, agent.preset, states, methods, maps, action_names(agent.game, agent.preset, agent.n_actions))


def state_figure(g: Gallery, i: int = 0, *, ncols: int = 7, alpha: float = 0.7, cmap: str = "inferno"):
    """The raw frame of state ``i`` and every method's map on it, one labelled panel each (a Figure)."""
    from matplotlib import cm, colors
    from matplotlib.figure import Figure

    s, frame = g.states, g.states.frames[i]
    panels = [("frame", frame)] + [(METHOD_LABELS.get(m, m), None if g.maps[m][i] is None else overlay_map(
        frame, g.maps[m][i], preset=g.preset, game=g.agent.game, alpha=alpha, cmap=cmap)) for m in g.methods]
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(1.45 * ncols, 2.05 * nrows + 0.55), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, (label, img) in zip(axes.flat, panels):
        if img is None:
            ax.text(0.5, 0.5, "not\napplicable", ha="center", va="center", transform=ax.transAxes, color="0.4")
        else:
            ax.imshow(img, interpolation="nearest")
        ax.set_title(label, fontsize=9)
    fig.colorbar(cm.ScalarMappable(colors.Normalize(0, 1), cmap), ax=axes, orientation="horizontal", fraction=0.04,
                 shrink=0.35, label="saliency, min-max normalised per map")
    fig.suptitle(f"{g.title}: state {i + 1} (step {int(s.steps[i])} of game {int(s.episode[i]) + 1}, "
                 f"action {g.actions[int(s.actions[i])]})", fontsize=10)
    return fig


def show_states(g: Gallery | Note, *, dpi: int = 90):
    """The chosen states' raw frames in a row, with step, action and HIGHLIGHTS importance (a Note passes through)."""
    from matplotlib.figure import Figure

    if isinstance(g, Note):
        return g
    fig = Figure(figsize=(1.6 * len(g), 2.6), layout="constrained")
    for i, ax in enumerate(np.atleast_1d(fig.subplots(1, len(g)))):
        ax.imshow(g.states.frames[i], interpolation="nearest")
        ax.set_axis_off()
        ax.set_title(f"state {i + 1}: step {int(g.states.steps[i])}\n{g.actions[int(g.states.actions[i])]}, "
                     f"importance {g.states.meta['importance'][i]:.3g}", fontsize=8)
    return figure_image(fig, dpi=dpi)


def show_gallery(g: Gallery | Note, i: int = 0, *, dpi: int = 90):
    """:func:`state_figure` as an image; None for a Note (:func:`show_states` has shown it)."""
    return None if isinstance(g, Note) else figure_image(state_figure(g, i), dpi=dpi)


def show_gallery_tabs(g: Gallery | Note, *, start: int = 1, dpi: int = 72):
    """A ``Tab`` with :func:`state_figure` of states ``start`` …; a Note when there are none, None for a Note."""
    if isinstance(g, Note):
        return None
    if len(g) <= start:
        return Note(f"Only {len(g)} state{'s' if len(g) != 1 else ''} chosen; no further states to show.")
    return png_tabs({f"state {i + 1}": state_figure(g, i) for i in range(start, len(g))}, dpi=dpi)


def games_gallery(cfg: GalleryChapter, games: tuple[str, ...] = HUBER_GAMES) -> dict[str, Gallery | Note]:
    """Every method on the most important HIGHLIGHTS-DIV state of the study's DQN agent of each game
    (the chapter's configuration with ``game`` replaced and a budget of one state)."""
    return {game: compute_gallery(replace(cfg, game=game, agent=None, n_states=1),
                                  chapter_agents(game, results_dir=cfg.results_dir)[0]) for game in games}


def show_games(galleries: dict[str, Gallery | Note], *, dpi: int = 72):
    """A ``Tab``, one per game: :func:`state_figure` of its state, or its Note."""
    return png_tabs({game: g if isinstance(g, Note) else state_figure(g, 0) for game, g in galleries.items()}, dpi=dpi)


def agreement(g: Gallery) -> pd.DataFrame:
    """Spearman rank correlation between the maps of every pair of methods, per state.

    Maps are compared at the agent's input resolution, without the sign-flip of the sanity
    checks (both maps say "higher = more important"). A constant map has no ranking; its
    pairs are NaN. Returns a long table ``state, method_a, method_b, spearman`` (each
    unordered pair once).
    """
    from saliency_lib.metrics.similarity import ConstantMapWarning, spearman

    rows = []
    for i in range(len(g)):
        for k, a in enumerate(g.methods):
            for b in g.methods[k + 1:]:
                if g.maps[a][i] is not None and g.maps[b][i] is not None:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", ConstantMapWarning)
                        rho = spearman(g.maps[a][i], g.maps[b][i], sign_invariant=False)
                    rows.append({"state": i, "method_a": a, "method_b": b, "spearman": rho})
    return pd.DataFrame(rows, columns=["state", "method_a", "method_b", "spearman"])


def show_agreement(g: Gallery | Note, *, dpi: int = 90):
    """Heat map of the mean Spearman correlation between methods over the chosen states (a Note passes through)."""
    from matplotlib.figure import Figure

    if isinstance(g, Note):
        return g
    mat = pd.DataFrame(np.eye(len(g.methods)), index=list(g.methods), columns=list(g.methods))
    for (a, b), v in agreement(g).groupby(["method_a", "method_b"])["spearman"].mean().items():
        mat.loc[a, b] = mat.loc[b, a] = v
    labels, n = [METHOD_LABELS.get(m, m) for m in g.methods], len(g.methods)
    fig = Figure(figsize=(0.55 * n + 2.2, 0.5 * n + 1.2), layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(mat.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n), labels, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    for r in range(n):
        for c in range(n):
            v = mat.iat[r, c]
            ax.text(c, r, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=6.5,
                    color="white" if abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, shrink=0.8, label="mean Spearman ρ")
    ax.set_title(f"{g.title}: agreement over {len(g)} state{'s' if len(g) != 1 else ''}", fontsize=10)
    return figure_image(fig, dpi=dpi)


def agreement_extremes(g: Gallery | Note) -> pd.DataFrame | Note:
    """The most and least similar pairs of methods, the random map's range and the methods that agree
    most and least with the others (mean Spearman ρ over :func:`agreement`); columns ``finding, methods, rho``."""
    if isinstance(g, Note):
        return g
    long = agreement(g)
    mean = long.groupby(["method_a", "method_b"])["spearman"].mean().dropna()
    pairs, rnd = mean[["random" not in k for k in mean.index]], mean[["random" in k for k in mean.index]]
    per = pd.Series({m: pairs[[m in k for k in pairs.index]].mean() for m in g.methods if m != "random"}).dropna()
    lab = METHOD_LABELS.get
    rows = [("most similar pair", pairs, pairs.idxmax), ("least similar pair", pairs, pairs.idxmin),
            ("random map vs another method, lowest", rnd, rnd.idxmin),
            ("random map vs another method, highest", rnd, rnd.idxmax)]
    rows = [(f, " and ".join(lab(m, m) for m in pick()), s[pick()]) for f, s, pick in rows if len(s)]
    if len(per) >= 2:
        rows += [("agrees most with the others", lab(per.idxmax()), per.max()),
                 ("agrees least with the others", lab(per.idxmin()), per.min())]
    rows.append(("comparisons with a constant map (no ρ)", f"{long['spearman'].isna().sum()} of {len(long)}", np.nan))
    return pd.DataFrame(rows, columns=["finding", "methods", "rho"])


def show_extremes(table: pd.DataFrame | Note, caption: str):
    """:func:`agreement_extremes` as a captioned Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    t = table.rename(columns={"finding": "Finding", "methods": "Methods", "rho": "Mean Spearman ρ"})
    rho = {"Mean Spearman ρ": lambda x: "–" if np.isnan(x) else f"{x:.2f}".replace("-0.00", "0.00")}
    return t.style.format(rho).hide(axis="index").set_caption(caption)
