"""Chapter 6 (run time): its figures and styled tables.

The numbers come from :mod:`saliency_book.ch6_runtime` and :mod:`saliency_book.ch6_scaleout`;
this module only draws them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from saliency_book.ch6_runtime import FAMILY_COLOURS, Benchmarks
from saliency_book.common import Note, figure_image, join_words

__all__ = ["plot_cost", "cost_figure", "style_table", "style_explainer_table", "style_machine", "style_comparisons", "style_bf16",
           "style_training", "style_envs", "style_spot_check", "style_before_after", "style_study_before_after", "style_mask_a3c_local",
           "plot_before_after", "before_after_figure", "style_executors", "style_overhead", "style_shipped",
           "style_projection", "plot_scaleout", "scaleout_figure"]


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
    return style_table(table, caption, {"kind": "Agents", "label": "Method", "agents": "n agents", "states": "States each",
                                        "min_spearman": "min ρ", "bf16_speedup": "bf16 speed-up", "precision": "Decision",
                                        "reason": "Why", "offered": "Offered"},
                       {"min_spearman": "{:.4f}", "bf16_speedup": "{:.2f}×"})


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


# -- the study's cost: before/after and scale-out (saliency_book.ch6_scaleout) ---------------------------

def style_before_after(table: pd.DataFrame | Note, caption: str, provenance: dict[str, str] | None = None):
    """:func:`~saliency_book.ch6_scaleout.before_after_table` as the chapter shows it; the caption gains the runs."""
    if isinstance(table, Note):
        return table
    if provenance:
        names = {"ours": "naive and fast", "captum": "Captum", "lime": "the lime package"}
        by_source: dict[str, list[str]] = {}
        for k, v in provenance.items():
            by_source.setdefault(v, []).append(names.get(k, k))
        caption += " " + " ".join(f"{join_words(ks)[0].upper()}{join_words(ks)[1:]}: {v}." for v, ks in by_source.items())
    return style_table(table, caption, {
        "label": "Method", "forward_passes": "Passes", "naive_floor_ms": "Naive floor (ms)", "naive_ms": "Naive path (ms)",
        "ms": "Fast (ms)", "speedup": "Floor ÷ fast", "target": "Target", "max_abs_map_diff": "Max map diff",
        "captum_ms": "Captum (ms)", "captum_x_floor": "Captum ÷ its floor", "captum_x_ours": "Captum ÷ fast",
        "lime_ms": "lime (ms)", "lime_x_floor": "lime ÷ its floor", "lime_x_ours": "lime ÷ fast"},
        {"forward_passes": "{:,.0f}", "naive_floor_ms": "{:,.1f}", "naive_ms": "{:,.1f}", "ms": "{:,.1f}",
         "speedup": "{:.2f}×", "target": "{:.1f}×", "max_abs_map_diff": "{:.1e}", "captum_ms": "{:,.0f}",
         "captum_x_floor": "{:.2f}×", "captum_x_ours": "{:.2f}×", "lime_ms": "{:,.0f}", "lime_x_floor": "{:.2f}×",
         "lime_x_ours": "{:.2f}×"})


def style_study_before_after(table: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_book.ch6_scaleout.study_before_after_table` as the chapter shows it."""
    return style_table(table, caption, {"what": "What", "unit": "Unit", "before": "Before", "after": "After",
                                        "speedup": "Speed-up", "run": "Run (date, commit)"},
                       {"before": "{:,.1f}", "after": "{:,.1f}", "speedup": "{:.2f}×"})


def style_mask_a3c_local(table: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_book.ch6_scaleout.mask_a3c_local_table` as the chapter shows it."""
    return style_table(table, caption, {
        "label": "Method", "forward_passes": "Passes", "naive_ms_per_pass": "Naive (ms/pass)", "ms_per_pass": "Incremental (ms/pass)",
        "speedup": "Speed-up", "cascade_ms_per_pass": "Cascade (ms/pass/net)", "cascade_speedup": "Cascade speed-up",
        "max_abs_map_diff": "Max map diff"},
        {"naive_ms_per_pass": "{:.2f}", "ms_per_pass": "{:.2f}", "speedup": "{:.1f}×", "cascade_ms_per_pass": "{:.2f}",
         "cascade_speedup": "{:.1f}×", "max_abs_map_diff": "{:.1e}"})


def plot_before_after(table: pd.DataFrame, *, title: str):
    """Per method: naive floor and fast time (left, ms, log scale) and every time as a multiple of the naive
    floor of its own run (right: bars from the floor to the fast path), with Captum's and the lime package's
    times where they exist."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    t = table.sort_values("naive_floor_ms").reset_index(drop=True)
    fig = Figure(figsize=(10, 0.42 * len(t) + 2.2), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True, width_ratios=(3, 2))
    y = np.arange(len(t))
    h = 0.38
    left.barh(y + h / 2, t["naive_floor_ms"], height=h, color="0.7")
    left.barh(y - h / 2, t["ms"], height=h, color="tab:blue")
    for yi, v in zip(y, t["ms"]):
        left.text(v * 1.05, yi - h / 2, f"{v:,.0f}", va="center", fontsize=7)
    ratio = t["ms"] / t["naive_floor_ms"]
    right.axvline(1.0, color="0.3", lw=1.2)
    right.barh(y, ratio - 1, left=1, height=0.6, color="tab:blue")  # from the floor to the fast path
    for yi, v in zip(y, ratio):
        right.text(v * (0.92 if v < 1 else 1.08), yi, f"{v:.2f}×", va="center", ha="right" if v < 1 else "left", fontsize=7)
    for ax, cap, lime in ((left, t["captum_ms"], t["lime_ms"]), (right, t["captum_x_floor"], t["lime_x_floor"])):
        ax.plot(cap, y, "^", color="tab:orange", markersize=8)
        ax.plot(lime, y, "s", color="tab:green", markersize=7)
        ax.set_xscale("log")
        ax.grid(axis="x", which="major", alpha=0.3)
    values = np.r_[ratio.to_numpy(), t["captum_x_floor"].dropna().to_numpy(), t["lime_x_floor"].dropna().to_numpy()]
    right.set_xlim(min(values.min(), 1) / 1.8, max(values.max(), 1) * 1.8)
    ticks = [v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if right.get_xlim()[0] <= v <= right.get_xlim()[1]]
    right.xaxis.set_major_locator(FixedLocator(ticks))
    right.xaxis.set_major_formatter(lambda v, _: f"{v:g}×")
    right.xaxis.set_minor_locator(NullLocator())
    right.xaxis.set_minor_formatter(NullFormatter())
    left.set_yticks(y, t["label"])
    left.set_xlabel("milliseconds per map (log scale)")
    right.set_xlabel("× the naive floor of the same run (log scale)")
    handles = [Patch(color="0.7", label="before: naive floor (ms)"), Patch(color="tab:blue", label="after: fast path"),
               Line2D([], [], marker="^", color="tab:orange", ls="", markersize=8, label="Captum (its own run)"),
               Line2D([], [], marker="s", color="tab:green", ls="", markersize=7, label="lime package (its own run)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig


def before_after_figure(table: pd.DataFrame | Note, b: Benchmarks):
    """:func:`plot_before_after` as an image (a Note passes through)."""
    if isinstance(table, Note):
        return table
    s = (b.study_cost or {}).get("setting", {})
    title = (f"Below the naive floor: {s.get('agent', 'the study agent')}, {s.get('states_per_call', '?')} states per call, "
             "1 thread")
    return figure_image(plot_before_after(table, title=title))


def style_executors(table: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_book.ch6_scaleout.executor_table` as the chapter shows it."""
    return style_table(table, caption, {"executor": "Executor", "workers": "Workers", "units": "Units", "wall_s": "Wall (s)",
                                        "units_per_min": "Units/min (whole sweep)",
                                        "steady_units_per_min": "Units/min (steady)", "startup_s": "Start-up (s)",
                                        "efficiency": "Efficiency", "same_table": "Same table as local"},
                       {"workers": "{:.0f}", "units": "{:.0f}", "wall_s": "{:.1f}", "units_per_min": "{:.1f}",
                        "steady_units_per_min": "{:.1f}", "startup_s": "{:.1f}", "efficiency": "{:.0%}"})


def style_overhead(table: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_book.ch6_scaleout.overhead_table` as the chapter shows it."""
    return style_table(table, caption, {"what": "What", "value": "Cost", "unit": "Unit"}, {"value": "{:,.3g}"})


def style_shipped(table: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_book.ch6_scaleout.shipped_table` as the chapter shows it, in readable units."""
    if isinstance(table, Note):
        return table
    t = table.assign(size=[_bytes(v) for v in table["bytes"]])
    return style_table(t, caption, {"what": "What", "size": "Pickled size"})


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def style_projection(table: pd.DataFrame | Note, caption: str):
    """:func:`~saliency_book.ch6_scaleout.projection_table` as the chapter shows it."""
    return style_table(table, caption, {"target": "Target", "cores": "Cores", "efficiency": "Efficiency",
                                        "compute_hours": "Compute (h)", "driver_hours": "Driver (h)",
                                        "startup_hours": "Start-ups (h)", "wall_hours": "Wall (h)",
                                        "wall_hours_upper": "Wall, upper bound (h)"},
                       {"cores": "{:.0f}", "efficiency": "{:.0%}", "compute_hours": "{:,.2f}", "driver_hours": "{:,.2f}",
                        "startup_hours": "{:,.2f}", "wall_hours": "{:,.1f}", "wall_hours_upper": "{:,.1f}"})


def plot_scaleout(executors: pd.DataFrame, proj: pd.DataFrame | None = None):
    """Steady units per minute per executor and workers (left; dashed: workers × the local rate) and the
    projected wall hours of the full study per target (right, bar to the upper bound)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10 if proj is not None else 6, 3.6), layout="constrained")
    axes = fig.subplots(1, 2 if proj is not None else 1, squeeze=False)[0]
    ax = axes[0]
    order = list(dict.fromkeys(executors["executor"]))
    local = executors.loc[executors["executor"] == "local", "steady_units_per_min"]
    base = float(local.iloc[0]) if not local.empty else math.nan
    colours = {1: "tab:blue", 2: "tab:orange"}
    w = 0.38
    for workers, g in executors.groupby("workers"):
        x = np.array([order.index(e) for e in g["executor"]]) + (workers - 1.5) * w * (len(colours) > 1)
        ax.bar(x, g["steady_units_per_min"], width=w, color=colours.get(workers, "0.4"),
               label=f"{workers} worker{'s' if workers > 1 else ''}")
        ax.plot(x, g["units_per_min"], "_", color="black", markersize=14, markeredgewidth=2)
        ax.hlines([workers * base] * len(x), x - w / 2, x + w / 2, colors="0.3", linestyles="dashed", lw=1)
    ax.set_xticks(range(len(order)), order)
    ax.set_ylabel("units per minute")
    ax.set_title("Measured sweep (bars: steady; black: whole sweep; dashed: ideal)", fontsize=9)
    ax.set_ylim(0, max(executors["steady_units_per_min"].max(), 2 * base if base == base else 0) * 1.25)
    ax.legend(fontsize=8, loc="upper left")
    if proj is not None:
        ax = axes[1]
        y = np.arange(len(proj))
        ax.barh(y, proj["wall_hours"], color="tab:purple", height=0.6)
        ax.errorbar(proj["wall_hours"], y, xerr=[np.zeros(len(proj)), proj["wall_hours_upper"] - proj["wall_hours"]],
                    fmt="none", ecolor="black", capsize=4)
        for yi, r in zip(y, proj.itertuples()):
            bound = " (driver-bound)" if r.driver_hours > r.compute_hours else ""
            ax.text(r.wall_hours_upper * 1.1, yi, f"{r.wall_hours:,.1f}–{r.wall_hours_upper:,.1f} h{bound}", va="center",
                    fontsize=8)
        ax.set_yticks(y, proj["target"])
        ax.set_xscale("log")
        ax.set_xlim(right=proj["wall_hours_upper"].max() * 12)
        ax.set_xlabel("projected wall-clock hours, full study (log scale)")
        ax.set_title("Projection from the measured costs", fontsize=9)
    return fig


def scaleout_figure(executors: pd.DataFrame | Note, proj: pd.DataFrame | Note):
    """:func:`plot_scaleout` as an image (a Note in ``executors`` passes through; one in ``proj`` drops the panel)."""
    if isinstance(executors, Note):
        return executors
    return figure_image(plot_scaleout(executors, None if isinstance(proj, Note) else proj))
