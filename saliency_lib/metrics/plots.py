"""Figures of the metric tables (matplotlib, no seaborn)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_write
from .randomisation import ORIGINAL, REFERENCE_LAYERS
from .similarity import SIMILARITIES
from .statistics import summarise

__all__ = ["plot_randomisation", "plot_curves"]


def _save(fig, path: str | os.PathLike) -> Path:
    return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, bbox_inches="tight"), fsync=False)


def plot_randomisation(
    table: pd.DataFrame,
    path: str | os.PathLike,
    *,
    measures: Sequence[str] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    title: str | None = None,
) -> Path:
    """Per-layer similarity of a sanity-check table: mean and bootstrap CI per method.

    One panel per measure; x = ``original`` then the cascade levels in order,
    then the random-map references (dotted lines at their mean). Written
    atomically as PNG (or any matplotlib format, by suffix).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = table[table["experiment"] == "sanity"]
    if t.empty:
        raise ValueError("the table has no sanity-check rows (experiment == 'sanity')")
    if not measures:
        present = list(dict.fromkeys(t["measure"]))
        measures = [m for m in SIMILARITIES if m in present] + [m for m in present if m not in SIMILARITIES]
    s = summarise(t, by=["method", "level", "layer", "measure"], confidence=confidence, seed=seed)
    fig, axes = plt.subplots(1, len(measures), figsize=(4.2 * len(measures), 3.6), squeeze=False)
    methods = list(dict.fromkeys(t["method"]))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, meas in zip(axes[0], measures):
        sm = s[s["measure"] == meas]
        lev = sm[sm["level"].notna()].sort_values("level")
        order = list(dict.fromkeys(zip(lev["level"].astype(int), lev["layer"])))
        labels = [ORIGINAL if lv == 0 else name for lv, name in order]
        xs = np.arange(len(order))
        for k, m in enumerate(methods):
            c = colors[k % len(colors)]
            d = lev[lev["method"] == m].set_index("level").reindex([lv for lv, _ in order])
            lo = (d["mean"] - d["ci_low"]).to_numpy(dtype=float)
            hi = (d["ci_high"] - d["mean"]).to_numpy(dtype=float)
            ax.errorbar(xs + (k - (len(methods) - 1) / 2) * 0.06, d["mean"].to_numpy(dtype=float),
                        yerr=np.vstack([np.nan_to_num(lo), np.nan_to_num(hi)]), marker="o", capsize=3, color=c, label=m)
            for ref, ls in zip(REFERENCE_LAYERS, (":", "-.")):
                r = sm[(sm["method"] == m) & (sm["layer"] == ref)]
                if len(r):
                    ax.axhline(float(r["mean"].iloc[0]), color=c, ls=ls, lw=0.8, alpha=0.7)
        ax.set_xticks(xs, labels, rotation=30, ha="right")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(meas)
        ax.set_xlabel("randomised down to")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"similarity (mean, {int(confidence * 100)} % bootstrap CI)")
    axes[0][-1].legend(fontsize=8, title="dotted: uniform-random map\ndash-dot: Gaussian-random map", title_fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_curves(table: pd.DataFrame, path: str | os.PathLike, *, measure: str, title: str | None = None) -> Path:
    """Mean insertion/deletion curve of ``measure`` per method (x = step)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = table[(table["measure"] == measure) & table["step"].notna()]
    if t.empty:
        raise ValueError(f"no curve rows for measure {measure!r}")
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for m, g in t.groupby("method", sort=False):
        mean = g.groupby("step")["value"].mean()
        ax.plot(mean.index.to_numpy(dtype=int), mean.to_numpy(dtype=float), label=str(m))
    ax.set_xlabel("step")
    ax.set_ylabel(measure)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)
