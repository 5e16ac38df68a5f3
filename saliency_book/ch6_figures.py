"""Chapter 6 (Run-time): what the chapter shows, one ``show_*`` per table or figure.

The tables come from :mod:`saliency_study.runtime` and :mod:`saliency_study.scaleout` (through
:func:`saliency_book.ch6_runtime.tabulate`). Each table shows its
named columns; the tables of per-method records (the study's cost, the Mask-A3C local methods, the video) also show
every further field the benchmark records, under its own name. A Note passes through.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from saliency_book.ch6_runtime import FAMILY_COLOURS
from saliency_book.common import Note, figure_image, join_words
from saliency_study.runtime import Benchmarks

__all__ = ["show_machine", "show_explainers", "show_comparisons", "show_bf16", "show_training", "show_envs",
           "show_video", "show_spot_check", "show_before_after", "show_study_before_after", "show_mask_a3c_local",
           "show_executors", "show_overhead", "show_shipped", "show_projection", "show_projection_inputs", "show_cost",
           "show_before_after_figure", "show_scaleout"]


def _show(table: pd.DataFrame | Note, caption: str, spec: dict, *, hide=None):
    """``table``'s columns of ``spec`` (column → (label, format)), renamed and formatted (NA for a missing value);
    with ``hide``, every further column but those in ``hide`` follows under its own name."""
    if isinstance(table, Note):
        return table
    extra = [c for c in table.columns if c not in spec and c not in hide] if hide is not None else []
    t = table[[c for c in spec if c in table.columns] + extra].rename(columns={k: v[0] for k, v in spec.items()})
    fmt = {v[0]: v[1] for k, v in spec.items() if v[1] and k in table.columns}
    fmt.update({c: "{:,.3g}" for c in extra if pd.api.types.is_float_dtype(t[c])})
    return t.style.format(fmt, na_rep="NA").hide(axis="index").set_caption(caption)


def show_machine(table, caption: str):
    """:func:`~saliency_study.runtime.machine_table`."""
    return _show(table, caption, {"benchmark": ("File", None), "date": ("Date", None), "cpu": ("CPU", None),
                                  "cpus": ("Logical CPUs", "{:.0f}"), "threads": ("Torch threads", "{:.0f}"),
                                  "load": ("Load average", None), "versions": ("Versions / setting", None)})


def show_explainers(table, caption: str):
    """:func:`~saliency_study.runtime.explainer_table`; the caption gains the names of the Captum equivalents."""
    if not isinstance(table, Note) and table["captum"].notna().any():
        caption += " Captum equivalents: " + join_words([f"{r.captum} for {r.label}" for r in table.dropna(
            subset=["captum"]).itertuples()]) + "."
    return _show(table, caption, {
        "label": ("Method", None), "forward_passes": ("Passes", "{:,.0f}"), "ms": ("Ours (ms)", "{:,.1f}"),
        "floor_ms": ("Floor (ms)", "{:,.1f}"), "overhead": ("Overhead (× floor)", "{:.2f}"),
        "captum_ms": ("Captum (ms)", "{:,.0f}"), "captum_speedup": ("Speed-up vs Captum", "{:.2f}×"),
        "paper_s": ("Huber et al. (s)", "{:.2f}"), "paper_over_ours": ("Huber et al. ÷ ours", "{:.1f}×")})


def show_comparisons(table, caption: str):
    """:func:`~saliency_study.runtime.comparison_table`."""
    return _show(table, caption, {
        "theirs": ("Their implementation", None), "setting": ("Their best setting (others)", None),
        "their_ms": ("Their ms/map", "{:,.0f}"), "ours": ("Our method", None), "our_ms": ("Our ms/map", "{:,.0f}"),
        "ratio": ("Ratio", "{:.2f}×"), "floor_bound": ("Floor bound", "{:.2f}×")})


def show_bf16(table, caption: str):
    """:func:`~saliency_study.runtime.bf16_table`."""
    return _show(table, caption, {
        "kind": ("Agents", None), "label": ("Method", None), "agents": ("n agents", None), "states": ("States each", None),
        "min_spearman": ("min ρ", "{:.4f}"), "bf16_speedup": ("bf16 speed-up", "{:.2f}×"), "precision": ("Decision", None),
        "reason": ("Why", None), "offered": ("Offered", None)})


def show_training(table, caption: str):
    """:func:`~saliency_study.runtime.training_table`."""
    return _show(table, caption, {"run": ("Run", None), "setting": ("Setting", None),
                                  "steps_per_s": ("Agent steps/s", "{:,.0f}"), "frames_per_s": ("Frames/s", "{:,.0f}"),
                                  "vs_cleanrl": ("× CleanRL-style", "{:.2f}×")})


def show_envs(table, caption: str):
    """:func:`~saliency_study.runtime.envs_table`."""
    return _show(table, caption, {"backend": ("Backend", None), "used_by": ("Used by", None),
                                  "steps_per_s": ("Agent steps/s", "{:,.0f}"), "vs_sync": ("× SyncVectorEnv", "{:.2f}×")})


def show_video(table, caption: str):
    """:func:`~saliency_study.runtime.video_table`, with every further field the benchmark records."""
    return _show(table, caption, {
        "agent": ("Agent", None), "label": ("Method", None), "forward_passes_per_map": ("Passes per map", "{:,.0f}"),
        "maps_per_second": ("Maps/s", "{:,.1f}"), "frames": ("Frames", "{:,.0f}"),
        "explain_seconds": ("Explaining (s)", "{:,.1f}"), "wall_seconds": ("Video (s)", "{:,.1f}"),
        "total_seconds": ("With loading (s)", "{:,.1f}"),
        "mp4_bytes": ("MP4 (bytes)", "{:,.0f}")}, hide={"method", "max_steps", "frames_read_back"})


def show_spot_check(table, caption: str):
    """The spot check, one column pair per agent, next to the benchmark's time."""
    if isinstance(table, Note):
        return table
    wide = table.pivot_table(index=["method", "label"], columns="agent", values=["ms", "forward_passes"], sort=False)
    out, fmt = pd.DataFrame({"Method": [lbl for _, lbl in wide.index]}), {}
    for spec in table["agent"].unique():
        name = f"{spec} ({table.loc[table['agent'] == spec, 'input_shape'].iloc[0]})"
        out[f"{name}: passes"], out[f"{name}: ms/map"] = wide[("forward_passes", spec)].to_numpy(), wide[("ms", spec)].to_numpy()
        fmt[f"{name}: passes"], fmt[f"{name}: ms/map"] = "{:,.0f}", "{:,.1f}"
    bench = table.drop_duplicates("method").set_index("method")["benchmark_ms"]
    out["Benchmark, random-weight DQN (ms/map)"] = [bench.get(m, math.nan) for m, _ in wide.index]
    fmt["Benchmark, random-weight DQN (ms/map)"] = "{:,.1f}"
    return out.style.format(fmt, na_rep="NA").hide(axis="index").set_caption(caption)


_RECORD_FIELDS_NOT_SHOWN = {"method", "incremental", "floor_chunk", "map_states", "min_spearman", "min_spearman_map",
                            "min_spearman_plain", "speedup_of_medians", "speedup_vs_naive_floor", "speedup_vs_naive_path",
                            "target_speedup_vs_naive_floor"}
"""Fields of ``study_cost.json``'s per-method records that the before/after table leaves out (repeats of a shown
number, the benchmark's own checks); any other field it records shows as a column."""


def show_before_after(table, caption: str, provenance: dict[str, str] | None = None):
    """:func:`~saliency_study.scaleout.before_after_table`; the caption gains the runs the numbers come from."""
    if not isinstance(table, Note) and provenance:
        names, by_source = {"ours": "naive and fast", "captum": "Captum", "lime": "the lime package"}, {}
        for k, v in provenance.items():
            by_source.setdefault(v, []).append(names.get(k, k))
        caption += "".join(f" {join_words(ks)[0].upper()}{join_words(ks)[1:]}: {v}." for v, ks in by_source.items())
    return _show(table, caption, {
        "label": ("Method", None), "forward_passes": ("Passes", "{:,.0f}"), "naive_floor_ms": ("Naive floor (ms)", "{:,.1f}"),
        "naive_ms": ("Naive path (ms)", "{:,.1f}"), "ms": ("Fast (ms)", "{:,.1f}"), "speedup": ("Floor ÷ fast", "{:.2f}×"),
        "target": ("Target", "{:.1f}×"), "max_abs_map_diff": ("Max map diff", "{:.1e}"), "captum_ms": ("Captum (ms)", "{:,.0f}"),
        "captum_x_floor": ("Captum ÷ its floor", "{:.2f}×"), "captum_x_ours": ("Captum ÷ fast", "{:.2f}×"),
        "lime_ms": ("lime (ms)", "{:,.0f}"), "lime_x_floor": ("lime ÷ its floor", "{:.2f}×"),
        "lime_x_ours": ("lime ÷ fast", "{:.2f}×")}, hide=_RECORD_FIELDS_NOT_SHOWN)


def show_study_before_after(table, caption: str):
    """:func:`~saliency_study.scaleout.study_before_after_table`."""
    return _show(table, caption, {"what": ("What", None), "unit": ("Unit", None), "before": ("Before", "{:,.1f}"),
                                  "after": ("After", "{:,.1f}"), "speedup": ("Speed-up", "{:.2f}×"),
                                  "run": ("Run (date, commit)", None)})


def show_mask_a3c_local(table, caption: str):
    """:func:`~saliency_study.scaleout.mask_a3c_local_table`, with every further field the benchmark records."""
    return _show(table, caption, {
        "label": ("Method", None), "forward_passes": ("Passes", "{:,.0f}"), "naive_ms_per_pass": ("Naive (ms/pass)", "{:.2f}"),
        "ms_per_pass": ("Incremental (ms/pass)", "{:.2f}"), "speedup": ("Speed-up", "{:.1f}×"),
        "cascade_ms_per_pass": ("Cascade (ms/pass/net)", "{:.2f}"), "cascade_speedup": ("Cascade speed-up", "{:.1f}×"),
        "max_abs_map_diff": ("Max map diff", "{:.1e}")}, hide={"method"})


def show_executors(table, caption: str):
    """:func:`~saliency_study.scaleout.executor_table`."""
    return _show(table, caption, {
        "executor": ("Executor", None), "workers": ("Workers", "{:.0f}"), "units": ("Units", "{:.0f}"),
        "wall_s": ("Wall (s)", "{:.1f}"), "units_per_min": ("Units/min (whole sweep)", "{:.1f}"),
        "steady_units_per_min": ("Units/min (steady)", "{:.1f}"), "startup_s": ("Start-up (s)", "{:.1f}"),
        "efficiency": ("Efficiency", "{:.0%}"), "same_table": ("Same table as local", None)})


def show_overhead(table, caption: str):
    """:func:`~saliency_study.scaleout.overhead_table`."""
    return _show(table, caption, {"what": ("What", None), "value": ("Cost", "{:,.3g}"), "unit": ("Unit", None)})


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def show_shipped(table, caption: str):
    """:func:`~saliency_study.scaleout.shipped_table` in readable units."""
    t = table if isinstance(table, Note) else table.assign(size=[_bytes(v) for v in table["bytes"]])
    return _show(t, caption, {"what": ("What", None), "size": ("Pickled size", None)})


def show_projection(table, caption: str):
    """:func:`~saliency_study.scaleout.projection_table`."""
    return _show(table, caption, {
        "target": ("Target", None), "cores": ("Cores", "{:.0f}"), "efficiency": ("Efficiency", "{:.0%}"),
        "compute_hours": ("Compute (h)", "{:,.2f}"), "driver_hours": ("Driver (h)", "{:,.2f}"),
        "startup_hours": ("Start-ups (h)", "{:,.2f}"), "wall_hours": ("Wall (h)", "{:,.1f}"),
        "wall_hours_upper": ("Wall, upper bound (h)", "{:,.1f}")})


def show_projection_inputs(table, caption: str):
    """:func:`~saliency_book.ch6_scaleout.projection_inputs`."""
    return _show(table, caption, {"input": ("Input or assumption", None), "value": ("Value", None)})


# -- figures ---------------------------------------------------------------------------------------

def _plot_cost(table: pd.DataFrame, *, title: str):
    """Horizontal log-scale bars of ms per map, labelled, with the floor and Huber et al.'s times as markers."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    t = table.sort_values("ms").reset_index(drop=True)
    fig = Figure(figsize=(8, 0.38 * len(t) + 1.4), layout="constrained")
    ax, y = fig.subplots(), np.arange(len(t))
    ax.barh(y, t["ms"], color=[FAMILY_COLOURS.get(f, "0.3") for f in t["family"]], height=0.7)
    for yi, v in zip(y, t["ms"]):
        ax.text(v * 1.08, yi, f"{v:,.1f} ms" if v < 10 else f"{v:,.0f} ms", va="center", fontsize=8)
    ax.plot(t["floor_ms"], y, "|", color="black", markersize=14, markeredgewidth=2)
    paper = t["paper_s"] * 1e3
    ax.plot(paper, y, "D", color="tab:red", markersize=6)
    ax.set_yticks(y, t["label"])
    ax.set_xscale("log")
    ax.set_xlim(min(t["ms"].min(), np.nanmin(t["floor_ms"])) / 2, np.nanmax(np.r_[t["ms"].to_numpy(), paper.to_numpy()]) * 4)
    ax.set_xlabel("milliseconds per map (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", which="major", alpha=0.3)
    handles = [Patch(color=c, label=f) for f, c in FAMILY_COLOURS.items() if f in set(t["family"])]
    handles += [Line2D([], [], marker="|", color="black", ls="", markersize=10, markeredgewidth=2,
                       label="floor: same forward passes, bare network"),
                Line2D([], [], marker="D", color="tab:red", ls="", label="Huber et al. (their hardware)")]
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
    return fig


def show_cost(table: pd.DataFrame | Note, b: Benchmarks):
    """Milliseconds per map of every benchmarked method, with its floor and Huber et al.'s time (an image)."""
    if isinstance(table, Note):
        return table
    cpu = b.explainers.get("machine", {}).get("cpu", "an unrecorded CPU")
    return figure_image(_plot_cost(table, title=f"Cost of one saliency map: random-weight DQN, one Ms. Pac-Man state, "
                                                f"1 thread of {cpu}"))


def show_before_after_figure(table: pd.DataFrame | Note, b: Benchmarks):
    """Per method: naive floor and fast time (left, ms, log scale) and every time as a multiple of the naive floor of
    its own run (right: bars from the floor to the fast path), with Captum's and the lime package's times."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    if isinstance(table, Note):
        return table
    t = table.sort_values("naive_floor_ms").reset_index(drop=True)
    fig = Figure(figsize=(10, 0.42 * len(t) + 2.2), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True, width_ratios=(3, 2))
    y, h = np.arange(len(t)), 0.38
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
    right.xaxis.set_major_locator(FixedLocator([v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20)
                                                if right.get_xlim()[0] <= v <= right.get_xlim()[1]]))
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
    s = (b.study_cost or {}).get("setting", {})
    fig.suptitle(f"Below the naive floor: {s.get('agent', 'the study agent')}, {s.get('states_per_call', '?')} states "
                 "per call, 1 thread", fontsize=10)
    return figure_image(fig)


def show_scaleout(executors: pd.DataFrame | Note, proj: pd.DataFrame | Note):
    """Steady units per minute per executor and workers (left; dashed: workers × the local rate) and the projected
    wall hours of the full study per target (right, bar to the upper bound; left out when ``proj`` is a Note)."""
    from matplotlib.figure import Figure

    if isinstance(executors, Note):
        return executors
    proj = None if isinstance(proj, Note) else proj
    fig = Figure(figsize=(10 if proj is not None else 6, 3.6), layout="constrained")
    axes = fig.subplots(1, 2 if proj is not None else 1, squeeze=False)[0]
    ax, order = axes[0], list(dict.fromkeys(executors["executor"]))
    local = executors.loc[executors["executor"] == "local", "steady_units_per_min"]
    base, colours, w = float(local.iloc[0]) if not local.empty else math.nan, {1: "tab:blue", 2: "tab:orange"}, 0.38
    for workers, g in executors.groupby("workers"):
        x = np.array([order.index(e) for e in g["executor"]]) + (workers - 1.5) * w
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
        ax, y = axes[1], np.arange(len(proj))
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
    return figure_image(fig)
