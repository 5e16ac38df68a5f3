"""Chapter 2 (Explainer gallery): every saliency method on the same HIGHLIGHTS-DIV states.

The chapter's notebook (``notebooks/02_gallery.py``) only calls these functions;
chapter 7 (:mod:`saliency_book.ch7_explorer`) reuses them, and their caches.

* :class:`GalleryChapter`: the chapter's frozen configuration.
* :func:`chapter_agents`: the agents a chapter explains for its game, the study's
  DQN agent and the official Mask-A3C agent, each possibly missing.
* :func:`highlight_states`: HIGHLIGHTS-DIV states of one greedy trajectory
  (:func:`saliency_lib.states.select_highlights`), most important first, cached.
* :func:`saliency_map`: one map of one state by one method for one target
  (the agent's action, the runner-up action, an action index or the state value),
  cached per state under ``<results_dir>/_local/media``.
* :func:`compute_gallery`, :func:`gallery_figure`, :func:`gallery_tabs`,
  :func:`states_figure`: every method on the same states, overlaid on the raw frame.
* :func:`games_gallery`, :func:`games_tabs`: the DQN agents of Huber et al.'s four
  games, each on its most important state, one tab per game.
* :func:`agreement`, :func:`agreement_figure`, :func:`agreement_summary`: how similar
  the methods' maps are (Spearman rank correlation), and a summary generated from it.

A missing input (no DQN agent yet, official checkpoints not fetched) gives a
:class:`~saliency_book.common.Note` instead of an exception.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from saliency_book.common import (
    ExplainedAgent,
    Note,
    action_names,
    chapter_agents,
    figure_image,
    load,
)
from saliency_book.maps import (
    ExampleMapsConfig,
    applicable_methods,
    highlight_states,
    overlay_map,
    saliency_map,
)
from saliency_lib.explainers import METHOD_LABELS
from saliency_lib.games import HUBER_GAMES

__all__ = [ "GalleryChapter", "Gallery", "compute_gallery", "state_figure", "gallery_figure", "gallery_tabs",
    "states_figure", "games_gallery", "games_tabs", "agreement", "agreement_figure", "agreement_summary",
]


@dataclass(frozen=True)
class GalleryChapter(ExampleMapsConfig):
    """Chapter 2's frozen configuration: the parameters cell, checked (see :class:`~saliency_book.maps.ExampleMapsConfig`)."""


# -- configuration ---------------------------------------------------------------------------


# -- agents ------------------------------------------------------------------------------------


# -- states -----------------------------------------------------------------------------------


# -- maps -------------------------------------------------------------------------------------


# -- display ----------------------------------------------------------------------------------


@dataclass
class Gallery:
    """Every method's map of every chosen state for one agent."""

    agent: ExplainedAgent
    preset: str
    states: object
    """The :class:`~saliency_lib.states.StateSet` of :func:`highlight_states`."""
    methods: tuple[str, ...]
    maps: dict[str, list[np.ndarray | None]]
    """Method → one map (or None) per state."""
    actions: tuple[str, ...]
    """Names of the agent's actions."""

    def __len__(self) -> int:
        return len(self.states)

    def state_label(self, i: int) -> str:
        """E.g. "state 1 (step 412 of game 1, action FIRE)"."""
        s = self.states
        return (f"state {i + 1} (step {int(s.steps[i])} of game {int(s.episode[i]) + 1}, "
                f"action {self.actions[int(s.actions[i])]})")


def compute_gallery(cfg: GalleryChapter, who: ExplainedAgent) -> Gallery | Note:
    """The maps of every applicable method (``cfg.methods``) on ``cfg.selection``'s states, for the agent's action."""
    import torch

    if not who:
        return who.note()
    torch.set_num_threads(1)
    agent = load(who.spec, cfg.device)
    states = highlight_states(agent, who.spec, cfg.selection, results_dir=cfg.results_dir)
    methods = applicable_methods(agent, cfg.methods)
    maps = {m: [saliency_map(agent, who.spec, states, i, m, "action", params=cfg.explainer_params,
                             results_dir=cfg.results_dir) for i in range(len(states))] for m in methods}
    return Gallery(who, agent.preset, states, methods, maps, action_names(agent.game, agent.preset, agent.n_actions))


def state_figure(g: Gallery, i: int = 0, *, ncols: int = 7, alpha: float = 0.7, cmap: str = "inferno"):
    """The raw frame of state ``i`` and every method's map on it, one labelled panel each.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import cm, colors
    from matplotlib.figure import Figure

    frame = g.states.frames[i]
    panels = [("frame", frame)] + [(METHOD_LABELS.get(m, m), None if g.maps[m][i] is None else
                                    overlay_map(frame, g.maps[m][i], preset=g.preset, game=g.agent.game, alpha=alpha,
                                                cmap=cmap)) for m in g.methods]
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
    fig.suptitle(f"{g.agent.label[0].upper() + g.agent.label[1:]}, {g.agent.game}: {g.state_label(i)}", fontsize=10)
    return fig


def gallery_figure(g: Gallery | Note, i: int = 0, *, dpi: int = 90):
    """:func:`state_figure` as an image; None for a Note (:func:`states_figure` has shown it)."""
    if isinstance(g, Note):
        return None
    return figure_image(state_figure(g, i), dpi=dpi)


def _png_widget(fig, dpi: int):
    """A matplotlib figure as an ipywidgets ``Image`` (PNG, saved with the notebook)."""
    import ipywidgets as w

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return w.Image(value=buf.getvalue(), format="png", layout=w.Layout(max_width="100%"))


def gallery_tabs(g: Gallery | Note, *, start: int = 1, dpi: int = 72):
    """An ipywidgets ``Tab`` with :func:`state_figure` of states ``start`` … (PNG, saved with the notebook).

    Returns a Note when there is no such state, None for a Note (:func:`states_figure` has shown it).
    """
    import ipywidgets as w

    if isinstance(g, Note):
        return None
    if len(g) <= start:
        return Note(f"Only {len(g)} state{'s' if len(g) != 1 else ''} chosen; no further states to show.")
    children = [_png_widget(state_figure(g, i), dpi) for i in range(start, len(g))]
    tabs = w.Tab(children=children)
    for k in range(len(children)):
        tabs.set_title(k, f"state {start + k + 1}")
    return tabs


def games_gallery(cfg: GalleryChapter, games: tuple[str, ...] = HUBER_GAMES) -> dict[str, Gallery | Note]:
    """Every method on the most important HIGHLIGHTS-DIV state of the study's DQN agent of each game.

    The chapter's configuration is reused with ``game`` replaced and a budget of one
    state; a game without a DQN agent maps to the Note that says how to get one.
    """
    out: dict[str, Gallery | Note] = {}
    for game in games:
        gcfg = replace(cfg, game=game, agent=None, n_states=1)
        out[game] = compute_gallery(gcfg, chapter_agents(game, results_dir=cfg.results_dir)[0])
    return out


def games_tabs(galleries: dict[str, Gallery | Note], *, dpi: int = 72):
    """An ipywidgets ``Tab``, one per game: :func:`state_figure` of its state (PNG), or its Note as HTML."""
    import html

    import ipywidgets as w

    children = []
    for g in galleries.values():
        if isinstance(g, Note):
            text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(g.text))  # the Note's Markdown code spans
            children.append(w.HTML(f"<p><b>{html.escape(g.title)}.</b> {text}</p>"))
        else:
            children.append(_png_widget(state_figure(g, 0), dpi))
    tabs = w.Tab(children=children)
    for k, game in enumerate(galleries):
        tabs.set_title(k, game)
    return tabs


def states_figure(g: Gallery | Note, *, dpi: int = 90):
    """The chosen states' raw frames in a row, with step, action and HIGHLIGHTS importance."""
    from matplotlib.figure import Figure

    if isinstance(g, Note):
        return g
    n = len(g)
    fig = Figure(figsize=(1.6 * n, 2.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, n))
    for i, ax in enumerate(axes):
        ax.imshow(g.states.frames[i], interpolation="nearest")
        ax.set_axis_off()
        ax.set_title(f"state {i + 1}: step {int(g.states.steps[i])}\n{g.actions[int(g.states.actions[i])]}, "
                     f"importance {g.states.meta['importance'][i]:.3g}", fontsize=8)
    return figure_image(fig, dpi=dpi)


# -- agreement between methods ------------------------------------------------------------------

def agreement(g: Gallery) -> pd.DataFrame:
    """Spearman rank correlation between the maps of every pair of methods, per state.

    Maps are compared at the agent's input resolution, without the sign-flip of the
    sanity checks (both maps say "higher = more important"). A constant map has no
    ranking; its pairs are NaN.

    Returns
    -------
    pandas.DataFrame
        Long table: ``state, method_a, method_b, spearman`` (each unordered pair once).
    """
    from saliency_lib.metrics.similarity import ConstantMapWarning, spearman

    rows = []
    for i in range(len(g)):
        for a_i, a in enumerate(g.methods):
            for b in g.methods[a_i + 1:]:
                ma, mb = g.maps[a][i], g.maps[b][i]
                if ma is None or mb is None:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConstantMapWarning)
                    rho = spearman(ma, mb, sign_invariant=False)
                rows.append({"state": i, "method_a": a, "method_b": b, "spearman": rho})
    return pd.DataFrame(rows, columns=["state", "method_a", "method_b", "spearman"])


def _matrix(long: pd.DataFrame, methods) -> pd.DataFrame:
    mean = long.groupby(["method_a", "method_b"])["spearman"].mean()
    mat = pd.DataFrame(np.eye(len(methods)), index=list(methods), columns=list(methods))
    for (a, b), v in mean.items():
        mat.loc[a, b] = mat.loc[b, a] = v
    return mat


def agreement_figure(g: Gallery | Note, *, dpi: int = 90):
    """Heat map of the mean Spearman correlation between methods over the chosen states."""
    from matplotlib.figure import Figure

    if isinstance(g, Note):
        return g
    mat = _matrix(agreement(g), g.methods)
    labels = [METHOD_LABELS.get(m, m) for m in g.methods]
    n = len(labels)
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
    ax.set_title(f"{g.agent.label[0].upper() + g.agent.label[1:]}, {g.agent.game}: agreement over {len(g)} "
                 f"state{'s' if len(g) != 1 else ''}", fontsize=10)
    return figure_image(fig, dpi=dpi)


def _rho(x: float) -> str:
    """A correlation with two decimals, without a negative zero."""
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text


def agreement_summary(g: Gallery | Note):
    """Markdown sentences on the agreement between methods, generated from :func:`agreement` (None for a Note)."""
    from IPython.display import Markdown

    if isinstance(g, Note):
        return None
    long = agreement(g)
    mean = long.groupby(["method_a", "method_b"])["spearman"].mean().dropna()
    lab = METHOD_LABELS.get
    n = len(g)
    pairs = mean[[("random" not in k) for k in mean.index]]
    if pairs.empty:
        return Markdown(f"Too few methods with a ranking on these {n} states to compare.")
    hi, lo = pairs.idxmax(), pairs.idxmin()
    text = [f"Over the {n} state{'s' if n != 1 else ''} of the {g.agent.label}, the most similar methods are "
            f"**{lab(hi[0])}** and **{lab(hi[1])}** (mean Spearman ρ = {_rho(pairs[hi])}), the least similar "
            f"**{lab(lo[0])}** and **{lab(lo[1])}** (ρ = {_rho(pairs[lo])})."]
    rnd = mean[[("random" in k) for k in mean.index]]
    if not rnd.empty:
        text.append(f"The random map's correlation with the other methods lies between {_rho(rnd.min())} "
                    f"and {_rho(rnd.max())}.")
    per = pd.Series({m: pairs[[m in k for k in pairs.index]].mean() for m in g.methods if m != "random"}).dropna()
    if len(per) >= 2:
        text.append(f"Averaged over its partners, **{lab(per.idxmax())}** agrees most with the other methods "
                    f"(ρ = {_rho(per.max())}) and **{lab(per.idxmin())}** least (ρ = {_rho(per.min())}).")
    nan = long["spearman"].isna().sum()
    if nan:
        text.append(f"{nan} of {len(long)} comparisons involve a constant map and have no rank correlation.")
    return Markdown(" ".join(text))
