"""Overlays of saliency maps and attention masks on raw Atari frames."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["colorize", "overlay", "mask_to_frame", "map84_to_frame", "side_by_side", "labelled_panels"]


def colorize(values: np.ndarray, cmap: str = "inferno") -> np.ndarray:
    """Map values in [0, 1] to RGB uint8 with a perceptually uniform matplotlib colormap."""
    import matplotlib

    rgba = matplotlib.colormaps[cmap](np.clip(values, 0.0, 1.0))
    return (rgba[..., :3] * 255).astype(np.uint8)


def overlay(rgb: np.ndarray, heat01: np.ndarray, *, alpha: float = 0.7, cmap: str = "inferno", where: np.ndarray | None = None) -> np.ndarray:
    """Blend a [0, 1] heat map (same H×W as ``rgb``) onto a frame.

    The blend weight is ``alpha · heat``, so unimportant regions keep the game's own
    pixels and important ones take the colormap's bright end.
    """
    heat = np.clip(heat01, 0.0, 1.0)
    w = (alpha * heat)[..., None]
    out = rgb.astype(np.float32) * (1 - w) + colorize(heat, cmap).astype(np.float32) * w
    if where is not None:
        out = np.where(where[..., None], out, rgb)
    return out.clip(0, 255).astype(np.uint8)


def mask_to_frame(mask10: np.ndarray, crop: tuple[int, int, int], frame_hw: tuple[int, int] = (210, 160)) -> tuple[np.ndarray, np.ndarray]:
    """Upsample a 10×10 Mask-A3C mask back through the crop, as the official visualiser.

    Bilinear resize to 80 × ``dimension2``, then to 160 × (160 − crop1 + crop2), pasted at
    rows ``[crop1, crop2 + 160)`` of a zero canvas. Returns the canvas and a boolean
    array that is True inside the crop.
    """
    c1, c2, dim2 = crop
    m = cv2.resize(mask10.astype(np.float32), (80, dim2), interpolation=cv2.INTER_LINEAR)
    m = cv2.resize(m, (160, 160 - c1 + c2), interpolation=cv2.INTER_LINEAR)
    canvas = np.zeros(frame_hw, np.float32)
    inside = np.zeros(frame_hw, bool)
    rows = slice(c1, min(c2 + 160, frame_hw[0]))
    canvas[rows] = m[: rows.stop - rows.start]
    inside[rows] = True
    return canvas, inside


def map84_to_frame(map84: np.ndarray, frame_hw: tuple[int, int] = (210, 160)) -> np.ndarray:
    """Resize an 84×84 saliency map (dqn preset) to the raw frame."""
    return cv2.resize(map84.astype(np.float32), (frame_hw[1], frame_hw[0]), interpolation=cv2.INTER_LINEAR)


def side_by_side(*frames: np.ndarray, gap: int = 4) -> np.ndarray:
    h = max(f.shape[0] for f in frames)
    parts = []
    for i, f in enumerate(frames):
        pad = np.zeros((h, f.shape[1], 3), np.uint8)
        pad[: f.shape[0]] = f
        parts.append(pad)
        if i < len(frames) - 1:
            parts.append(np.full((h, gap, 3), 255, np.uint8))
    return np.concatenate(parts, axis=1)


def _text(img: np.ndarray, text: str, x: int, y: int, *, scale: float = 0.4, color=(255, 255, 255)) -> None:
    cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, color, 1, cv2.LINE_AA)


def labelled_panels(panels: list[tuple[str, np.ndarray]], *, cmap: str | None = "inferno",
                    scale_labels: tuple[str, str] = ("low", "high"), gap: int = 4, title_height: int = 16,
                    bar_height: int = 10) -> np.ndarray:
    """Frames side by side, each under its title, with the colour scale of the overlays below them.

    Parameters
    ----------
    panels : list of (title, RGB uint8 image)
        E.g. ``[("frame", rgb), ("policy mask", ...), ("value mask", ...)]``.
    cmap : str or None
        Colormap of the overlays; ``None`` draws no colour scale.
    scale_labels : (str, str)
        Text at the low and the high end of the scale (e.g. the normalisation used).

    Returns
    -------
    numpy.ndarray
        One RGB uint8 image.
    """
    if not panels:
        raise ValueError("labelled_panels needs at least one panel")
    body = side_by_side(*[img for _, img in panels], gap=gap)
    width = body.shape[1]
    head = np.zeros((title_height, width, 3), np.uint8)
    x = 0
    for title, img in panels:
        _text(head, title, x + 3, title_height - 4)
        x += img.shape[1] + gap
    parts = [head, body]
    if cmap is not None:
        lo, hi = scale_labels
        # room for the longer end label, measured in the font it is drawn in
        text_w = 8 + max(cv2.getTextSize(t, cv2.FONT_HERSHEY_SIMPLEX, 0.35, 1)[0][0] for t in (lo, hi))
        bar = np.zeros((bar_height + 6, width, 3), np.uint8)
        _text(bar, lo, 3, bar_height + 2, scale=0.35)
        x0, x1 = text_w, max(text_w + 10, width - text_w)
        bar[3:3 + bar_height, x0:x1] = colorize(np.linspace(0.0, 1.0, x1 - x0))[None, :, :]
        _text(bar, hi, x1 + 4, bar_height + 2, scale=0.35)
        parts.append(bar)
    return np.concatenate(parts, axis=0)


# -- figures of the book (chapter 1: agents) ---------------------------------------------------
# Figures are built on ``matplotlib.figure.Figure`` (not pyplot), so they hold no global
# state and a notebook shows each exactly once.

_REF_STYLE = {"random": ("0.45", ":"), "Nature DQN": ("tab:red", "--"), "logged level": ("tab:red", "--")}


def _new_axes(ax, figsize):
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots()


def plot_learning_curves(train, evals=None, *, title: str, references: dict | None = None, planned_frames: int | None = None,
                         window: int = 50, ax=None):
    """Learning curve of a training run from its ``train_log.csv`` / ``eval_log.csv``.

    Parameters
    ----------
    train : DataFrame
        ``train_log.csv``: rows with ``episode_score`` are finished training games
        (ε-greedy, all lives), plotted as dots with a rolling mean over ``window`` games.
    evals : DataFrame, optional
        ``eval_log.csv``: greedy evaluations (``frames``, ``eval_mean``, ``eval_std``), plotted
        as points with ±1 sd bars.
    references : dict, optional
        Horizontal reference lines ``{label: score}`` (e.g. random play, Nature DQN). A line
        far above the data (more than twice its maximum) is named in the legend instead.
    planned_frames : int, optional
        Length of the run; the x-axis then spans the whole run and the title says how far it got.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    fig, ax = _new_axes(ax, (7.5, 4.0))
    ep = train[train["episode_score"].notna()] if "episode_score" in train.columns else train.iloc[:0]
    x = ep["frames"].to_numpy(float) / 1e6
    y = ep["episode_score"].to_numpy(float)
    top = float(np.nanmax(y)) if len(y) else 0.0
    if len(y):
        ax.scatter(x, y, s=4, alpha=0.25, color="tab:blue", linewidths=0, label="training games (ε-greedy)")
        roll = ep["episode_score"].rolling(window, min_periods=1).mean().to_numpy(float)
        ax.plot(x, roll, color="tab:blue", lw=2, label=f"rolling mean ({window} games)")
    if evals is not None and len(evals):
        ex = evals["frames"].to_numpy(float) / 1e6
        ey = evals["eval_mean"].to_numpy(float)
        ax.errorbar(ex, ey, yerr=evals["eval_std"].to_numpy(float), fmt="o", color="tab:orange", ms=4, capsize=2,
                    label="greedy evaluation (mean ± sd)")
        top = max(top, float(np.nanmax(ey)))
    off = []
    for label, value in (references or {}).items():
        if value is None or not np.isfinite(value):
            continue
        if top > 0 and value > 2 * top:
            off.append(f"{label}: {value:,.0f}")
            continue
        color, ls = _REF_STYLE.get(label, ("0.3", "-."))
        ax.axhline(value, color=color, ls=ls, lw=1.2, label=f"{label} ({value:,.1f})")
    done = float(train["frames"].max()) if len(train) else 0.0
    if planned_frames:
        ax.set_xlim(0, planned_frames / 1e6)
        title = f"{title}\n{done / 1e6:.2f} M of {planned_frames / 1e6:.3g} M frames"
    ax.set_xlabel("emulator frames (millions)")
    ax.set_ylabel("game score (raw, all lives)")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    if not len(y) and (evals is None or not len(evals)):
        ax.text(0.5, 0.5, "no finished game logged yet", ha="center", va="center", transform=ax.transAxes, color="0.4")
    handles, labels = ax.get_legend_handles_labels()
    if handles or off:
        ax.legend(loc="upper left", fontsize=8, title=("off scale: " + "; ".join(off)) if off else None, title_fontsize=8)
    return fig


def plot_official_curve(log, *, game: str, level: float | None = None, window: int = 100, ax=None):
    """The official Mask-A3C test log (:func:`saliency_lib.agents.official.official_test_log`).

    Each dot is one greedy test game (all lives, capped at 10 000 agent steps) played
    during training; the line is the rolling mean over ``window`` games; ``level`` (the
    mean of the last 100 games) is drawn as a dashed line.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = _new_axes(ax, (7.5, 3.6))
    x = log["global_step"].to_numpy(float) / 1e6
    ax.scatter(x, log["score"], s=4, alpha=0.3, color="tab:green", linewidths=0, label="test game")
    ax.plot(x, log["score"].rolling(window, min_periods=1).mean(), color="tab:green", lw=2, label=f"rolling mean ({window} games)")
    if level is not None:
        ax.axhline(level, color="tab:red", ls="--", lw=1.2, label=f"logged level, last 100 games ({level:,.0f})")
    ax.set_xlabel("training steps, all workers (millions)")
    ax.set_ylabel("game score (raw, all lives)")
    ax.set_title(f"Official Mask-A3C (double + ConvLSTM) on {game}: greedy test games", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return fig


__all__ += ["plot_learning_curves", "plot_official_curve"]
