"""Chapter 6 (run time): its figures and styled tables.

The numbers come from :mod:`saliency_book.ch6_runtime`; this module only draws them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from saliency_book.ch6_runtime import FAMILY_COLOURS, Benchmarks
from saliency_book.common import Note, figure_image, join_words

__all__ = ["plot_cost", "cost_figure", "style_table", "style_explainer_table", "style_machine", "style_comparisons", "style_bf16", "style_training", "style_envs", "style_spot_check"]


def style_table(table: pd.DataFrame | Note, caption: str, columns: dict[str, str], formats: dict[str, str] | None = None):
    """``table[columns]`` renamed, formatted (``NA`` for missing values) and captioned (a Note passes through)."""
    if isinstance(table, Note):
        return table
    t = table[list(columns)].rename(columns=columns)
    return t.style.format({columns[k]: v for k, v in (formats or {}).items() if k in columns}, na_rep="NA") \
        .hide(axis="index").set_caption(caption)


def style_explainer_table(table: pd.DataFrame | Note, caption: str):
    """The benchmark table as the chapter shows it; the caption gains the names of the Captum equivalents."""
    if isinstance(table, Note):
        return table
    cols = {"label": "Method", "forward_passes": "Passes", "ms": "Ours (ms)", "floor_ms": "Floor (ms)",
            "overhead": "Overhead (× floor)", "captum_ms": "Captum (ms)", "captum_speedup": "Speed-up vs Captum",
            "paper_s": "Huber et al. (s)", "paper_over_ours": "Huber et al. ÷ ours"}
    fmt = {"forward_passes": "{:,.0f}", "ms": "{:,.1f}", "floor_ms": "{:,.1f}", "overhead": "{:.2f}", "captum_ms": "{:,.0f}",
           "captum_speedup": "{:.2f}×", "paper_s": "{:.2f}", "paper_over_ours": "{:.1f}×"}
    eq = table.dropna(subset=["captum"])
    if not eq.empty:
        caption += " Captum equivalents: " + join_words([f"{r.captum} for {r.label}" for r in eq.itertuples()]) + "."
    return style_table(table, caption, cols, fmt)


def plot_cost(table: pd.DataFrame, *, title: str, ax=None):
    """Horizontal log-scale bars of ms per map, labelled, with the floor and Huber et al.'s times as markers."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    t = table.sort_values("ms").reset_index(drop=True)
    if ax is None:
        fig = Figure(figsize=(8, 0.38 * len(t) + 1.4), layout="constrained")
        ax = fig.subplots()
    fig = ax.figure
    y = np.arange(len(t))
    ax.barh(y, t["ms"], color=[FAMILY_COLOURS.get(f, "0.3") for f in t["family"]], height=0.7)
    for yi, v in zip(y, t["ms"]):
        ax.text(v * 1.08, yi, f"{v:,.1f} ms" if v < 10 else f"{v:,.0f} ms", va="center", fontsize=8)
    ax.plot(t["floor_ms"], y, "|", color="black", markersize=14, markeredgewidth=2)
    paper = t["paper_s"] * 1e3
    ax.plot(paper, y, "D", color="tab:red", markersize=6)
    ax.set_yticks(y, t["label"])
    ax.set_xscale("log")
    right = np.nanmax(np.r_[t["ms"].to_numpy(), paper.to_numpy()])
    ax.set_xlim(min(t["ms"].min(), np.nanmin(t["floor_ms"])) / 2, right * 4)
    ax.set_xlabel("milliseconds per map (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", which="major", alpha=0.3)
    handles = [Patch(color=c, label=f) for f, c in FAMILY_COLOURS.items() if f in set(t["family"])]
    handles += [Line2D([], [], marker="|", color="black", ls="", markersize=10, markeredgewidth=2,
                       label="floor: same forward passes, bare network"),
                Line2D([], [], marker="D", color="tab:red", ls="", label="Huber et al. (their hardware)")]
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
    return fig


def cost_figure(table: pd.DataFrame | Note, b: Benchmarks):
    """:func:`plot_cost` of the benchmark table as an image (a Note passes through)."""
    if isinstance(table, Note):
        return table
    m = b.explainers.get("machine", {})
    title = (f"Cost of one saliency map: random-weight DQN, one Ms. Pac-Man state, 1 thread of "
             f"{m.get('cpu', 'an unrecorded CPU')}")
    return figure_image(plot_cost(table, title=title))


def style_machine(table: pd.DataFrame | Note, caption: str):
    """:func:`machine_table` as the chapter shows it."""
    return style_table(table, caption, {"benchmark": "File", "date": "Date", "cpu": "CPU", "cpus": "Logical CPUs",
                                        "threads": "Torch threads", "load": "Load average", "versions": "Versions / setting"},
                       {"cpus": "{:.0f}", "threads": "{:.0f}"})


def style_comparisons(table: pd.DataFrame | Note, caption: str):
    """:func:`comparison_table` as the chapter shows it."""
    return style_table(table, caption, {"theirs": "Their implementation", "setting": "Their best setting (others)",
                                        "their_ms": "Their ms/map", "ours": "Our method", "our_ms": "Our ms/map",
                                        "ratio": "Ratio", "floor_bound": "Floor bound"},
                       {"their_ms": "{:,.0f}", "our_ms": "{:,.0f}", "ratio": "{:.2f}×", "floor_bound": "{:.2f}×"})


def style_bf16(table: pd.DataFrame | Note, caption: str):
    """:func:`bf16_table` as the chapter shows it."""
    return style_table(table, caption, {"label": "Method", "bf16_speedup": "bf16 speed-up", "spearman_random": "ρ, random DQN",
                                        "min_spearman_trained": "min ρ, trained agent", "keeps": "ρ ≥ 0.99",
                                        "offered": "Offered"},
                       {"bf16_speedup": "{:.2f}×", "spearman_random": "{:.3f}", "min_spearman_trained": "{:.4f}"})


def style_training(table: pd.DataFrame | Note, caption: str):
    """:func:`training_table` as the chapter shows it."""
    return style_table(table, caption, {"run": "Run", "setting": "Setting", "steps_per_s": "Agent steps/s",
                                        "frames_per_s": "Frames/s", "vs_cleanrl": "× CleanRL-style"},
                       {"steps_per_s": "{:,.0f}", "frames_per_s": "{:,.0f}", "vs_cleanrl": "{:.2f}×"})


def style_envs(table: pd.DataFrame | Note, caption: str):
    """:func:`envs_table` as the chapter shows it."""
    return style_table(table, caption, {"backend": "Backend", "used_by": "Used by", "steps_per_s": "Agent steps/s",
                                        "vs_sync": "× SyncVectorEnv"},
                       {"steps_per_s": "{:,.0f}", "vs_sync": "{:.2f}×"})


def style_spot_check(table: pd.DataFrame | Note, caption: str):
    """The spot check, one column pair per agent, next to the benchmark's time."""
    if isinstance(table, Note):
        return table
    wide = table.pivot_table(index=["method", "label"], columns="agent", values=["ms", "forward_passes"], sort=False)
    out = pd.DataFrame({"Method": [lbl for _, lbl in wide.index]})
    fmt = {}
    for spec in table["agent"].unique():
        shape = table.loc[table["agent"] == spec, "input_shape"].iloc[0]
        out[f"{spec} ({shape}): passes"] = wide[("forward_passes", spec)].to_numpy()
        out[f"{spec} ({shape}): ms/map"] = wide[("ms", spec)].to_numpy()
        fmt[f"{spec} ({shape}): passes"], fmt[f"{spec} ({shape}): ms/map"] = "{:,.0f}", "{:,.1f}"
    bench = table.drop_duplicates("method").set_index("method")["benchmark_ms"]
    out["Benchmark, random-weight DQN (ms/map)"] = [bench.get(m, math.nan) for m, _ in wide.index]
    fmt["Benchmark, random-weight DQN (ms/map)"] = "{:,.1f}"
    return out.style.format(fmt, na_rep="NA").hide(axis="index").set_caption(caption)
