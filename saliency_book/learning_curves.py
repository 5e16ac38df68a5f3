"""Chapter 1's figures of learning: our agents' learning curves and the official Mask-A3C run's."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_learning_curves", "plot_official_curve"]

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
