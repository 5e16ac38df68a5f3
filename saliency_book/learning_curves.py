"""Chapter 1's figures of learning: our agents' learning curves and the official Mask-A3C run's."""

from __future__ import annotations

import numpy as np

__all__ = ["plot_learning_curves", "plot_official_curve"]

_REF_STYLE = {"random": ("0.45", ":")}


def _axes(figsize):
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots()


def plot_learning_curves(train, evals=None, *, title: str, references: dict | None = None, planned_frames: int | None = None,
                         window: int = 50):
    """Learning curve of a training run from its ``train_log.csv`` and ``eval_log.csv`` (a Figure).

    Rows of ``train`` with an ``episode_score`` are finished training games (ε-greedy, all lives),
    drawn as dots with a rolling mean over ``window`` games; ``evals`` (``frames, eval_mean,
    eval_std``) are greedy evaluations with ±1 sd bars. ``references`` are horizontal lines
    ``{label: score}``; a line more than twice above the data is named in the legend instead. With
    ``planned_frames`` the x-axis spans the whole run and the title says how far it got.
    """
    fig, ax = _axes((7.5, 4.0))
    ep = train[train["episode_score"].notna()] if "episode_score" in train.columns else train.iloc[:0]
    x, y = ep["frames"].to_numpy(float) / 1e6, ep["episode_score"].to_numpy(float)
    top = float(np.nanmax(y)) if len(y) else 0.0
    if len(y):
        ax.scatter(x, y, s=4, alpha=0.25, color="tab:blue", linewidths=0, label="training games (ε-greedy)")
        ax.plot(x, ep["episode_score"].rolling(window, min_periods=1).mean().to_numpy(float), color="tab:blue", lw=2,
                label=f"rolling mean ({window} games)")
    if evals is not None and len(evals):
        ey = evals["eval_mean"].to_numpy(float)
        ax.errorbar(evals["frames"].to_numpy(float) / 1e6, ey, yerr=evals["eval_std"].to_numpy(float), fmt="o",
                    color="tab:orange", ms=4, capsize=2, label="greedy evaluation (mean ± sd)")
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
    if planned_frames:
        done = float(train["frames"].max()) if len(train) else 0.0
        ax.set_xlim(0, planned_frames / 1e6)
        title = f"{title}\n{done / 1e6:.2f} M of {planned_frames / 1e6:.3g} M frames"
    ax.set(xlabel="emulator frames (millions)", ylabel="game score (raw, all lives)")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    if not len(y) and (evals is None or not len(evals)):
        ax.text(0.5, 0.5, "no finished game logged yet", ha="center", va="center", transform=ax.transAxes, color="0.4")
    if ax.get_legend_handles_labels()[0] or off:
        ax.legend(loc="upper left", fontsize=8, title=("off scale: " + "; ".join(off)) if off else None, title_fontsize=8)
    return fig


def plot_official_curve(log, *, game: str, level: float | None = None, window: int = 100):
    """The official Mask-A3C test log (:func:`saliency_lib.agents.official.official_test_log`) as a Figure.

    Each dot is one greedy test game (all lives, capped at 10 000 agent steps) played during
    training; the line is the rolling mean over ``window`` games; ``level`` (the mean of the last
    100 games) is drawn as a dashed line.
    """
    fig, ax = _axes((7.5, 3.6))
    x = log["global_step"].to_numpy(float) / 1e6
    ax.scatter(x, log["score"], s=4, alpha=0.3, color="tab:green", linewidths=0, label="test game")
    ax.plot(x, log["score"].rolling(window, min_periods=1).mean(), color="tab:green", lw=2,
            label=f"rolling mean ({window} games)")
    if level is not None:
        ax.axhline(level, color="tab:red", ls="--", lw=1.2, label=f"logged level, last 100 games ({level:,.0f})")
    ax.set(xlabel="training steps, all workers (millions)", ylabel="game score (raw, all lives)")
    ax.set_title(f"Official Mask-A3C (double + ConvLSTM) on {game}: greedy test games", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return fig
