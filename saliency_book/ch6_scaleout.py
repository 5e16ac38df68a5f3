"""Chapter 6 (run time), the study's cost: below the naive floor, and spread over workers.

The chapter reads two more committed benchmark results (loaded with the others by
:func:`saliency_book.ch6_runtime.load_benchmarks`); nothing here times anything:

* ``study_cost.json``, written by ``benchmarks/study_cost.py``: per method the naive floor
  (the method's forward passes through the bare network) against the library's fast
  path; the sanity cascade and the insertion/deletion curves per state, naive and fast;
  the core hours of the paper-scale study before and after;
* ``scaleout.json``, written by ``benchmarks/scaleout.py``: units of the sweep per minute
  under each executor and number of workers, Ray's overhead per task, and what each task
  ships.

* :func:`before_after_table`: per method, naive floor → fast, with Captum and the ``lime``
  package beside it (and the run each number comes from, :func:`provenance`);
* :func:`study_before_after_table`: the cascade, the curves and the projected core hours;
* :func:`executor_table`, :func:`overhead_table`, :func:`shipped_table`: the scale-out
  measurements;
* :func:`projection`: the wall-clock projection of the full study on 2 cores and on a
  64-core Ray cluster, from the measured scaling and ``study_cost.json``'s core hours, so a
  re-run of either benchmark changes it; :func:`projection_table` and
  :func:`projection_assumptions` show it. ``benchmarks/scaleout.py`` records the same
  function's result at measurement time.

Functions whose input is missing return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from saliency_book.ch6_runtime import CAPTUM_EQUIVALENT, Benchmarks, missing_benchmark
from saliency_book.common import Note, join_words
from saliency_lib.explainers import METHOD_LABELS
from saliency_study.catalog import ABLATION_METHODS, STUDY_METHODS
from saliency_study.profiles import get_profile

__all__ = [
    "LIME_PACKAGE_EQUIVALENT", "CLUSTER_CORES", "MACHINE_CORES", "MASK_A3C_AGENTS", "TARGETS",
    "before_after_table", "provenance", "study_before_after_table", "executor_table", "overhead_table",
    "shipped_table", "study_tasks", "projection", "projection_table", "projection_assumptions",
    "before_after_summary", "scaleout_summary",
]

LIME_PACKAGE_EQUIVALENT = {"lime_slic": "lime.lime_image vs lime_slic"}
"""Method → key of the ``lime`` package's time in a benchmark's ``comparisons``."""

MACHINE_CORES = 2
"""Cores of the study's machine."""
CLUSTER_CORES = 64
"""Cores of the projected Ray cluster."""
MASK_A3C_AGENTS = 5
"""Mask-A3C agents of the paper-scale study (3 official, 2 ours): one sweep each."""
TARGETS = (("2 cores with processes", "processes", MACHINE_CORES), ("2 cores with Ray", "ray", MACHINE_CORES),
           (f"a {CLUSTER_CORES}-core Ray cluster", "ray", CLUSTER_CORES))
"""Projection targets: (label, executor, cores). Each takes the efficiency measured with 2 workers here."""


# -- before / after --------------------------------------------------------------------------------

def _run_of(doc: dict, part: str) -> dict:
    """The machine record of one part of a benchmark file (``runs.<part>``, else its ``machine``)."""
    return doc.get("runs", {}).get(part) or doc.get("machine", {})


def provenance(b: Benchmarks) -> dict[str, str]:
    """Which run each number of the before/after comparison comes from: ``{"ours", "captum", "lime"}``.

    Captum's and the ``lime`` package's times come from ``study_cost.json`` when it has a
    ``comparisons`` mapping (the same run as the naive and fast times), else from
    ``explainers.json``, whose run is described.
    """
    out = {}
    if b.study_cost is not None:
        r, s = _run_of(b.study_cost, "methods"), b.study_cost.get("setting", {})
        cpu = f" on {r['cpu']}" if r.get("cpu") else ""
        out["ours"] = (f"study_cost.json, methods run of {r.get('date', '?')[:10]} at commit {r.get('commit') or '?'}{cpu}: "
                       f"{s.get('agent', '?')}, {s.get('states_per_call', '?')} real states per call, CPU time of one thread")
    if b.study_cost is not None and b.study_cost.get("comparisons"):
        out["captum"] = out["lime"] = "study_cost.json, the same run as the naive and fast times"
    elif b.explainers is not None:
        m, s = b.explainers.get("machine", {}), b.explainers.get("setting", {})
        other = (f"explainers.json, run of {m.get('date', '?')[:10]} (another run, on another network and state: "
                 f"{s.get('agent', '?')}; {s.get('state', '?')}; wall time)")
        out["captum"] = out["lime"] = other
    return out


def _comparisons(b: Benchmarks) -> tuple[dict, dict, bool]:
    """The comparisons mapping and the methods mapping (for its floors) of the run that timed Captum and lime,
    and whether that run is the cost benchmark's own (so that their times divide by ours)."""
    if b.study_cost is not None and b.study_cost.get("comparisons"):
        return b.study_cost["comparisons"], b.study_cost.get("methods", {}), True
    if b.explainers is not None:
        return b.explainers.get("comparisons", {}), b.explainers.get("methods", {}), False
    return {}, {}, False


def before_after_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Per perturbation method of ``study_cost.json``: naive floor (before) and fast path (after).

    Returns
    -------
    pandas.DataFrame or Note
        Columns ``method, label, forward_passes, incremental, naive_floor_ms, naive_ms, ms,
        speedup, max_abs_map_diff, target, captum_ms, captum_x_floor, captum_x_ours, lime_ms, lime_x_floor,
        lime_x_ours``. ``speedup`` is naive floor ÷ ms. Captum's and the lime package's ms are
        those of their run (:func:`provenance`); their ``*_x_floor`` is that ms ÷ our method's
        naive floor in the same run, the ratio that can be set beside ``ms / naive_floor_ms``
        across runs. ``*_x_ours`` is the benchmark's own ``ratio_vs_ours`` (their time ÷ our
        default path's, median of paired rounds), only where they were timed in the cost
        benchmark's run. NaN where there is no equivalent.
    """
    if b.study_cost is None or not b.study_cost.get("methods"):
        return missing_benchmark("study_cost.json", b, "study_cost.py")
    comps, their_methods, same_run = _comparisons(b)
    rows = []
    for name, r in b.study_cost["methods"].items():
        floor_there = their_methods.get(name, {}).get("floor_ms", their_methods.get(name, {}).get("naive_floor_ms"))

        def other(key, floor_there=floor_there):
            c = comps.get(key or "")
            if not c:
                return np.nan, np.nan, np.nan
            ours = float(c["ratio_vs_ours"]) if same_run and "ratio_vs_ours" in c else np.nan
            return float(c["ms"]), float(c["ms"]) / floor_there if floor_there else np.nan, ours

        captum_ms, captum_x, captum_o = other(CAPTUM_EQUIVALENT.get(name))
        lime_ms, lime_x, lime_o = other(LIME_PACKAGE_EQUIVALENT.get(name))
        rows.append({"method": name, "label": METHOD_LABELS.get(name, name), "forward_passes": int(r["forward_passes"]),
                     "incremental": bool(r.get("incremental", False)), "naive_floor_ms": float(r["naive_floor_ms"]),
                     "naive_ms": float(r.get("naive_ms", r["ms"])), "ms": float(r["ms"]),
                     "speedup": float(r["naive_floor_ms"]) / float(r["ms"]),
                     "max_abs_map_diff": r.get("max_abs_map_diff", np.nan),
                     "target": r.get("target_speedup_vs_naive_floor", np.nan),
                     "captum_ms": captum_ms, "captum_x_floor": captum_x, "captum_x_ours": captum_o,
                     "lime_ms": lime_ms, "lime_x_floor": lime_x, "lime_x_ours": lime_o})
    return pd.DataFrame(rows)


def study_before_after_table(b: Benchmarks) -> pd.DataFrame | Note:
    """The study-level numbers of ``study_cost.json`` before and after: cascade, curves, projected core hours.

    Columns ``what, unit, before, after, speedup, run`` (``run``: date and commit of the part).
    """
    if b.study_cost is None:
        return missing_benchmark("study_cost.json", b, "study_cost.py")
    sc, rows = b.study_cost, []

    def run(part):
        r = _run_of(sc, part)
        return f"{r.get('date', '?')[:10]}, {r.get('commit') or '?'}"

    if "cascade" in sc:
        c = sc["cascade"]
        rows.append({"what": f"sanity cascade: original + {c.get('levels', 5)} randomised levels, {len(c.get('methods', []))} "
                             "methods (maps only)", "unit": "ms per state", "before": c["naive_ms_per_state"],
                     "after": c["ms_per_state"], "run": run("cascade")})
    if "degradation" in sc:
        d = sc["degradation"]
        rows.append({"what": f"insertion and deletion on {len(d.get('substrates', []))} substrates, "
                             f"{len(d.get('methods', []))} maps", "unit": "ms per state",
                     "before": d["naive_ms_per_state"], "after": d["ms_per_state"], "run": run("degradation")})
    if "projection" in sc:
        p = sc["projection"]
        rows.append({"what": "paper-scale study (DQN and Mask-A3C)", "unit": "core hours",
                     "before": p["core_hours_before"], "after": p["core_hours_after"], "run": run("projection")})
    if not rows:
        return Note("study_cost.json has no cascade, degradation or projection part.", title="No study-level numbers")
    t = pd.DataFrame(rows)
    t["speedup"] = t["before"] / t["after"]
    return t[["what", "unit", "before", "after", "speedup", "run"]]


def mask_a3c_local_table(b: Benchmarks) -> pd.DataFrame | Note:
    """The local methods on a Mask-A3C network (``projection.mask_a3c.local`` of ``study_cost.json``).

    Columns ``method, label, forward_passes, naive_ms_per_pass, ms_per_pass, speedup,
    cascade_ms_per_pass, cascade_speedup, max_abs_map_diff``: ms per forward pass of the
    naive path (full passes in the network's inference batch) and of incremental inference,
    alone and per network over the cascade's six networks at once (``cascade_speedup``
    against the naive cascade's full pass per network, ``cascade_naive_ms_per_pass``).
    """
    if b.study_cost is None:
        return missing_benchmark("study_cost.json", b, "study_cost.py")
    a3c = b.study_cost.get("projection", {}).get("mask_a3c", {})
    local = a3c.get("local")
    if not local:
        return Note("study_cost.json has no Mask-A3C local-method costs: run benchmarks/study_cost.py --only projection.",
                    title="No Mask-A3C incremental numbers")
    naive_casc = a3c.get("cascade_naive_ms_per_pass", np.nan)
    t = pd.DataFrame([{"method": k, "label": METHOD_LABELS.get(k, k), "forward_passes": int(v["forward_passes"]),
                       "naive_ms_per_pass": float(v["naive_ms_per_pass"]), "ms_per_pass": float(v["ms_per_pass"]),
                       "cascade_ms_per_pass": float(v["cascade_ms_per_pass"]),
                       "max_abs_map_diff": float(v.get("max_abs_map_diff", np.nan))} for k, v in local.items()])
    t["speedup"] = t["naive_ms_per_pass"] / t["ms_per_pass"]
    t["cascade_speedup"] = naive_casc / t["cascade_ms_per_pass"]
    return t[["method", "label", "forward_passes", "naive_ms_per_pass", "ms_per_pass", "speedup", "cascade_ms_per_pass",
              "cascade_speedup", "max_abs_map_diff"]]


def mask_a3c_local_summary(table: pd.DataFrame | Note, b: Benchmarks | None = None) -> str | Note:
    """Sentences on :func:`mask_a3c_local_table` (Markdown); with ``b``, first the cost of a Mask-A3C
    pass against a DQN pass (the DQN's from Occlusion's naive floor per pass, batches of 256)."""
    if isinstance(table, Note):
        return table
    first = ""
    sc = b.study_cost if b is not None and b.study_cost else {}
    a3c_row = sc.get("projection", {}).get("mask_a3c", {}).get("row_ms_inference_batch")
    occ = sc.get("methods", {}).get("occlusion", {})
    if a3c_row and occ.get("forward_passes"):
        dqn_row = float(occ["naive_floor_ms"]) / int(occ["forward_passes"])
        first = (f"A full Mask-A3C pass costs {a3c_row:.2f} ms per row here, {a3c_row / dqn_row:.0f} times a DQN pass "
                 f"({dqn_row:.2f} ms). ")
    return first + (f"On the Mask-A3C network, incremental inference makes a pass of {join_words(table['label'].tolist())} "
            f"{table['speedup'].min():.1f} to {table['speedup'].max():.1f} times as fast as a full pass, and "
            f"{table['cascade_speedup'].min():.1f} to {table['cascade_speedup'].max():.1f} times as fast per network in the "
            f"cascade; the maps differ from the naive ones by at most {table['max_abs_map_diff'].max():.1e} after min-max "
            "normalisation.")


# -- scale-out ---------------------------------------------------------------------------------------

def executor_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Units per minute per executor and number of workers (``scaleout.json``).

    Columns ``executor, workers, units, wall_s, units_per_min, steady_units_per_min, startup_s,
    efficiency, same_table``: ``units_per_min`` over the whole sweep (start-up included),
    ``steady_units_per_min`` between the first and the last finished unit, ``efficiency`` the
    steady rate ÷ (workers × the local executor's steady rate).
    """
    if b.scaleout is None:
        return missing_benchmark("scaleout.json", b, "scaleout.py")
    cols = ["executor", "workers", "units", "wall_s", "units_per_min", "steady_units_per_min", "startup_s",
            "efficiency", "same_table"]
    t = pd.DataFrame(b.scaleout.get("executors", []))
    if t.empty:
        return Note("scaleout.json recorded no executor.", title="No executors")
    t = t.rename(columns={"same_table_as_local": "same_table"})
    return t[[c for c in cols if c in t.columns]]


def overhead_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Ray's overhead per task, from ``scaleout.json``'s ``ray_overhead``: columns ``what, value, unit``."""
    if b.scaleout is None:
        return missing_benchmark("scaleout.json", b, "scaleout.py")
    o = b.scaleout.get("ray_overhead")
    if not o:
        return Note("scaleout.json has no Ray overhead measurement (run without --skip-ray?).", title="No Ray overhead")
    spec = [("direct_call_us", "a direct Python call of the empty function", "µs"),
            ("noop_ms_per_task", "an empty Ray task, many in flight (throughput)", "ms per task"),
            ("noop_round_trip_ms", "an empty Ray task, submitted and awaited one at a time (latency)", "ms per task"),
            ("unit_args_ms_per_task", "an empty Ray task given a unit and the context reference, as the sweep submits it",
             "ms per task"),
            ("frame_return_ms_per_task", "a Ray task returning the largest measured result frame", "ms per task"),
            ("init_s", "starting a local Ray (ray.init) and its first tasks", "s"),
            ("per_unit_difference_s", "ray − local, per unit of the measured sweep (1 worker, steady rate)", "s per unit")]
    rows = [{"what": w, "value": float(o[k]), "unit": u} for k, w, u in spec if o.get(k) is not None]
    return pd.DataFrame(rows)


def shipped_table(b: Benchmarks) -> pd.DataFrame | Note:
    """What each task ships (pickle sizes, ``scaleout.json``'s ``shipped``): columns ``what, bytes``."""
    if b.scaleout is None:
        return missing_benchmark("scaleout.json", b, "scaleout.py")
    s = b.scaleout.get("shipped", {})
    spec = [("unit_args_bytes", "task arguments: the unit and the context reference (largest)"),
            ("sanity_frame_bytes", "returned frame of a sanity unit (largest measured)"),
            ("degradation_frame_bytes", "returned frame of a degradation unit (largest measured)"),
            ("context_bytes", "agent and states, once per worker (measured sweep)"),
            ("full_study_frame_bytes", "returned frame of a full-study degradation unit (per-state size × chunk)"),
            ("full_study_context_bytes", "agent and 997 states, once per worker (full study, per-state size)")]
    rows = [{"what": w, "bytes": int(s[k])} for k, w in spec if s.get(k) is not None]
    if not rows:
        return Note("scaleout.json recorded no sizes.", title="No sizes")
    return pd.DataFrame(rows)


def study_tasks(study_cost: dict) -> dict:
    """Units (Ray tasks) and sweeps of the paper-scale study that ``study_cost.json`` projects.

    DQN: ``dqn.agents`` agents × ⌈``dqn.states`` ÷ the full profile's chunk⌉ chunks; Mask-A3C:
    ⌈``mask_a3c.states`` ÷ its chunk⌉ chunks. Per chunk, one sanity unit per method and one
    degradation unit per method and the random map, and for the DQN agents one degradation unit
    per method of the §6.2 ablation; every Mask-A3C agent is counted with both attention masks
    (an upper bound: an agent without masks has two methods fewer).
    """
    p, prof = study_cost["projection"], get_profile("full")
    dqn_methods = [m for m in STUDY_METHODS if not m.startswith("mask_")]
    dqn_chunk, a3c_chunk = prof.sweep_size("dqn").chunk, prof.sweep_size("mask_a3c").chunk
    dqn_chunks = p["dqn"]["agents"] * math.ceil(p["dqn"]["states"] / dqn_chunk)
    a3c_states = p.get("mask_a3c", {}).get("states", 0)
    a3c_chunks = math.ceil(a3c_states / a3c_chunk)
    return {"dqn_tasks": dqn_chunks * (2 * len(dqn_methods) + len(ABLATION_METHODS) + 1),
            "mask_a3c_tasks": a3c_chunks * (2 * len(STUDY_METHODS) + 1),
            "dqn_chunk": dqn_chunk, "mask_a3c_chunk": a3c_chunk, "dqn_methods": len(dqn_methods),
            "dqn_degradation_methods": len(dqn_methods) + len(ABLATION_METHODS),
            "mask_a3c_methods": len(STUDY_METHODS), "dqn_states": p["dqn"]["agents"] * p["dqn"]["states"],
            "mask_a3c_states": a3c_states, "sweeps": p["dqn"]["agents"] + (MASK_A3C_AGENTS if a3c_states else 0)}


def _largest_dqn_unit_s(study_cost: dict, chunk: int) -> float | None:
    """The costliest DQN unit after the speed-ups: per-method per-state cost × states per unit (s)."""
    c, d = study_cost.get("cascade"), study_cost.get("degradation")
    if not c or not d:
        return None
    sim = c.get("similarity_ms_per_state", 0.0) / max(1, len(c.get("per_method_ms_per_state", {})))
    sanity = [v["fast"] + sim for v in c.get("per_method_ms_per_state", {}).values()]
    curves = [v["fast"] for v in d.get("per_method_ms_per_state", {}).values()]
    return max(sanity + curves) * chunk / 1e3 if sanity or curves else None


def _measured(scaleout: dict, executor: str, workers: int) -> dict | None:
    return next((e for e in scaleout.get("executors", []) if e["executor"] == executor and e["workers"] == workers), None)


def projection(scaleout: dict, study_cost: dict) -> dict:
    """Wall-clock hours of the paper-scale study per target of :data:`TARGETS`.

    Model, per target (``executor`` on ``cores`` cores, ``e`` the efficiency that executor
    reached with 2 workers here, ``C`` = ``study_cost.json``'s ``projection.core_hours_after``)::

        compute = C / (cores × e)
        driver  = rows of the study × the driver's measured time per stored row
        lower   = max(compute, driver) + sweeps × start-up (measured, per sweep)
        upper   = lower + sweeps × the largest unit   (each sweep's last unit may run alone)

    Returns ``{"core_hours_after", "tasks", "largest_unit_s", "rows", "bytes_to_driver",
    "targets": [{"target", "executor", "cores", "efficiency", "compute_hours", "driver_hours",
    "startup_hours", "wall_hours", "wall_hours_upper", "dispatch_hours"} | {"target", "missing"}]}``.
    ``dispatch_hours`` is Ray's measured per-task overhead × tasks ÷ cores, for scale: it is part of
    ``e`` (the measured units paid it too), not added again.
    """
    core_h = float(study_cost["projection"]["core_hours_after"])
    tasks = study_tasks(study_cost)
    n_tasks = tasks["dqn_tasks"] + tasks["mask_a3c_tasks"]
    dqn_h = study_cost["projection"]["dqn"]["core_hours_after"]
    largest = _largest_dqn_unit_s(study_cost, tasks["dqn_chunk"])
    if largest is not None and tasks["mask_a3c_tasks"]:
        # Mask-A3C units are assumed as unequal as the DQN units: largest ÷ mean the same
        a3c_h = study_cost["projection"]["mask_a3c"]["core_hours_after"]
        dqn_mean, a3c_mean = 3600 * dqn_h / tasks["dqn_tasks"], 3600 * a3c_h / tasks["mask_a3c_tasks"]
        largest = max(largest, largest / dqn_mean * a3c_mean)
    s = scaleout.get("shipped") or {}
    per_state_rows = s.get("sanity_rows_per_state", 0) * tasks["dqn_methods"] + s.get("degradation_rows_per_state", 0) * (
        tasks["dqn_degradation_methods"] + 1)
    a3c_rows = s.get("sanity_rows_per_state", 0) * tasks["mask_a3c_methods"] + s.get("degradation_rows_per_state", 0) * (
        tasks["mask_a3c_methods"] + 1)
    rows = tasks["dqn_states"] * per_state_rows + tasks["mask_a3c_states"] * a3c_rows
    bytes_per_row = s.get("degradation_frame_bytes_per_state", 0) / max(1, s.get("degradation_rows_per_state", 1))
    driver_h = rows * (scaleout.get("driver") or {}).get("store_ms_per_row", 0.0) / 3.6e6
    noop = (scaleout.get("ray_overhead") or {}).get("noop_ms_per_task")
    out = []
    for label, executor, cores in TARGETS:
        m = _measured(scaleout, executor, min(cores, MACHINE_CORES))
        if m is None or not m.get("efficiency"):
            out.append({"target": label, "executor": executor, "cores": cores,
                        "missing": f"no {executor} measurement with {min(cores, MACHINE_CORES)} workers"})
            continue
        compute = core_h / (cores * m["efficiency"])
        startup = tasks["sweeps"] * m.get("startup_s", 0.0) / 3600
        wall = max(compute, driver_h) + startup
        out.append({"target": label, "executor": executor, "cores": cores, "efficiency": m["efficiency"],
                    "compute_hours": compute, "driver_hours": driver_h, "startup_hours": startup, "wall_hours": wall,
                    "wall_hours_upper": wall + (tasks["sweeps"] * largest / 3600 if largest is not None else math.nan),
                    "dispatch_hours": n_tasks * noop / 3.6e6 / cores if executor == "ray" and noop is not None else None})
    return {"core_hours_after": core_h, "tasks": {**tasks, "total": n_tasks}, "largest_unit_s": largest, "rows": rows,
            "bytes_to_driver": rows * bytes_per_row, "targets": out}


def _study_cost_run(b: Benchmarks) -> str:
    r = _run_of(b.study_cost, "projection")
    return f"{r.get('date', '?')[:10]}, commit {r.get('commit') or '?'}"


def projection_table(b: Benchmarks) -> pd.DataFrame | Note:
    """:func:`projection` of the committed files, one row per target.

    Columns ``target, cores, efficiency, compute_hours, driver_hours, startup_hours, wall_hours,
    wall_hours_upper``.
    """
    if b.scaleout is None:
        return missing_benchmark("scaleout.json", b, "scaleout.py")
    if b.study_cost is None or "projection" not in b.study_cost:
        return missing_benchmark("study_cost.json", b, "study_cost.py")
    p = projection(b.scaleout, b.study_cost)
    t = pd.DataFrame([r for r in p["targets"] if "missing" not in r])
    if t.empty:
        return Note("scaleout.json measured no executor with 2 workers, so nothing can be projected.", title="No projection")
    return t[["target", "cores", "efficiency", "compute_hours", "driver_hours", "startup_hours", "wall_hours",
              "wall_hours_upper"]]


def projection_assumptions(b: Benchmarks) -> str | Note:
    """The projection's inputs and assumptions as a Markdown list (the benchmark's recorded ones, then the inputs)."""
    if b.scaleout is None or b.study_cost is None or "projection" not in b.study_cost:
        return projection_table(b)  # the Note that says what is missing
    p = projection(b.scaleout, b.study_cost)
    t = p["tasks"]
    items = [f"Core hours after the speed-ups: {p['core_hours_after']:.1f}, read now from `study_cost.json` "
             f"(projection run of {_study_cost_run(b)}).",
             f"Tasks: {t['total']:,} units ({t['dqn_tasks']:,} DQN, {t['mask_a3c_tasks']:,} Mask-A3C) in {t['sweeps']} sweeps, one "
             f"per agent; {t['dqn_chunk']} states per DQN unit, {t['mask_a3c_chunk']} per Mask-A3C unit (the `full` profile).",
             f"Largest unit: about {p['largest_unit_s'] / 60:.1f} minutes." if p["largest_unit_s"] else "Largest unit: unknown.",
             f"Rows stored by the driver: {p['rows']:,.0f} (about {p['bytes_to_driver'] / 1e9:.1f} GB pickled)."]
    used = b.scaleout.get("projection", {}).get("core_hours_after")
    if used is not None and not math.isclose(used, p["core_hours_after"], rel_tol=1e-9):
        items.append(f"`scaleout.json` projected from {used:.1f} core hours when it was measured; the table uses the "
                     "current `study_cost.json`.")
    items += list(b.scaleout.get("assumptions", []))
    return "\n".join(f"* {x}" for x in items) + "\n"


# -- sentences ---------------------------------------------------------------------------------------

def before_after_summary(table: pd.DataFrame | Note, study: pd.DataFrame | Note) -> str | Note:
    """Sentences on the speed-ups below the naive floor, formatted from the tables (Markdown)."""
    if isinstance(table, Note):
        return table
    inc, full = table[table["incremental"]], table[~table["incremental"]]
    out = []
    if not inc.empty:
        one = len(inc) == 1
        span = f"{inc['speedup'].min():.1f}" if one else f"{inc['speedup'].min():.1f} to {inc['speedup'].max():.1f}"
        out.append(f"With incremental inference, {join_words(inc['label'].tolist())} {'runs' if one else 'run'} {span} "
                   f"times as fast as {'its' if one else 'their'} naive floor, with maps that differ from the naive "
                   f"ones by at most {inc['max_abs_map_diff'].max():.1e} after min-max normalisation.")
        miss = inc[inc["speedup"] < inc["target"]]
        if not miss.empty:
            out.append("Below the issue's target: " + join_words(
                [f"{r.label} ({r.speedup:.2f} against {r.target:.1f})" for r in miss.itertuples()]) + ".")
    if not full.empty:
        one = len(full) == 1
        ratio = full["ms"] / full["naive_floor_ms"]
        span = f"{ratio.min():.2f}" if one else f"{ratio.min():.2f} to {ratio.max():.2f}"
        out.append(f"{join_words(full['label'].tolist())} {'has' if one else 'have'} no incremental path: "
                   f"{'it takes' if one else 'they take'} {span} times {'its' if one else 'their'} floor, and "
                   f"{'gains' if one else 'gain'} only in the cascade.")
    for who, col in (("Captum", "captum"), ("the lime package", "lime")):
        rows = table.dropna(subset=[f"{col}_x_floor"])
        if rows.empty:
            continue
        same = rows[f"{col}_x_ours"].notna().all() if f"{col}_x_ours" in rows else False
        parts = [f"{getattr(r, col + '_x_floor'):.1f} times the floor for {r.label}"
                 + (f", {getattr(r, col + '_x_ours'):.1f} times as long as ours" if same else "")
                 for r in rows.itertuples()]
        out.append(f"{'In the same run' if same else 'In its own run'}, {who} took {join_words(parts)}.")
    if not isinstance(study, Note):
        out.append("For the whole study: " + join_words(
            [f"{r.what} {r.speedup:.2f} times as fast ({r.before:,.0f} → {r.after:,.0f} {r.unit})"
             for r in study.itertuples()]) + ".")
    return " ".join(out)


def scaleout_summary(executors: pd.DataFrame | Note, overhead: pd.DataFrame | Note,
                     proj: pd.DataFrame | Note) -> str | Note:
    """Sentences on the executors' throughput, Ray's overhead and the projection (Markdown)."""
    if isinstance(executors, Note):
        return executors
    out = []
    local = executors[executors["executor"] == "local"]
    two = executors[executors["workers"] == 2]
    if not local.empty:
        out.append(f"In one process, the sweep ran {local['steady_units_per_min'].iloc[0]:.1f} units per minute.")
    if not two.empty:
        out.append("With 2 workers, " + join_words(
            [f"{r.executor} reached {r.steady_units_per_min:.1f} ({r.efficiency:.0%} of twice the local rate)"
             for r in two.itertuples()]) + ".")
    if not isinstance(overhead, Note):
        o = overhead.set_index("what")["value"]
        noop = [v for k, v in o.items() if k.startswith("an empty Ray task, many")]
        if noop:
            out.append(f"An empty Ray task costs {noop[0]:.2f} ms, which is negligible next to a unit of the study.")
        diff = [v for k, v in o.items() if k.startswith("ray − local")]
        if diff:
            out.append(f"Per unit of the measured sweep, Ray took {abs(diff[0]):.2f} s {'more' if diff[0] > 0 else 'less'} "
                       "than the local executor" + (": the other jobs on the machine moved the times more than Ray's "
                                                    "overhead did." if diff[0] <= 0 else "."))
    if not isinstance(proj, Note):
        bound = proj[proj["driver_hours"] > proj["compute_hours"]]
        out.append("The full study would take " + join_words(
            [f"{r.wall_hours:,.1f} to {r.wall_hours_upper:,.1f} hours on {r.target}" for r in proj.itertuples()]) + ".")
        if not bound.empty:
            out.append("On " + join_words(bound["target"].tolist()) + ", the driver, which stores every unit's rows itself "
                       f"({bound['driver_hours'].iloc[0]:,.1f} hours), is slower than the workers "
                       f"({join_words([f'{h:,.1f} hours' for h in bound['compute_hours']])} of compute): it bounds the "
                       "wall time.")
    return " ".join(out)
