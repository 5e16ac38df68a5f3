"""The study's cost: below the naive floor, and spread over workers.

Reads two committed benchmark results (loaded with the others by :func:`~saliency_study.runtime.load_benchmarks`):

* ``study_cost.json`` (``benchmarks/study_cost.py``): per method the naive floor against the library's fast path,
  the sanity cascade and the insertion/deletion curves per state, the core hours of the paper-scale study;
* ``scaleout.json`` (``benchmarks/scaleout.py``): units per minute per executor and workers, Ray's overhead per
  task, what each task ships.

:func:`projection` turns both into wall-clock hours of the full study on 2 cores and on a 64-core Ray cluster
(``benchmarks/scaleout.py`` records the same function's result when it measures). The tables keep every scalar
field of the files' per-method records, so a field the benchmark adds shows as a column; a missing file or part
raises :class:`~saliency_study.runtime.MissingBenchmark`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from saliency_lib.explainers import METHOD_LABELS

from .catalog import ABLATION_METHODS, STUDY_METHODS
from .profiles import get_profile
from .runtime import CAPTUM_EQUIVALENT, LIME_PACKAGE_EQUIVALENT, Benchmarks, MissingBenchmark

__all__ = ["CLUSTER_CORES", "MACHINE_CORES", "MASK_A3C_AGENTS", "TARGETS", "run_of", "before_after_table",
           "study_before_after_table", "mask_a3c_local_table", "executor_table", "overhead_table", "shipped_table",
           "study_tasks", "projection", "check_projection", "projection_table", "before_after_numbers", "scaleout_numbers",
           "row_costs"]

MACHINE_CORES = 2
"""Cores of the study's machine."""
CLUSTER_CORES = 64
"""Cores of the projected Ray cluster."""
MASK_A3C_AGENTS = 5
"""Mask-A3C agents of the paper-scale study (3 official, 2 ours): one sweep each."""
TARGETS = (("2 cores with processes", "processes", MACHINE_CORES), ("2 cores with Ray", "ray", MACHINE_CORES),
           (f"a {CLUSTER_CORES}-core Ray cluster", "ray", CLUSTER_CORES))
"""Projection targets: (label, executor, cores). Each takes the efficiency measured with 2 workers here."""


def run_of(doc: dict, part: str) -> dict:
    """The machine record of one part of a benchmark file (``runs.<part>``, else its ``machine``)."""
    return doc.get("runs", {}).get(part) or doc.get("machine", {})


def _flat(record: dict, prefix: str = "") -> dict:
    """The scalar fields of a record, nested mappings flattened to ``a.b`` (lists are left out)."""
    out = {}
    for k, v in record.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif not isinstance(v, list):
            out[f"{prefix}{k}"] = v
    return out


def before_after_table(b: Benchmarks) -> pd.DataFrame:
    """Per perturbation method of ``study_cost.json``: every scalar field of its record, and

    ``method, label``, ``speedup`` (naive floor ÷ fast ms), ``naive_ms`` (the naive path; ``ms`` without one),
    ``target`` (the issue's target speed-up), ``captum_ms``, ``lime_ms`` (their time in the run that timed them,
    :func:`provenance`), ``*_x_floor`` (that time ÷ our method's naive floor in the same run, the ratio that can
    be set beside ``ms / naive_floor_ms`` across runs) and ``*_x_ours`` (the benchmark's paired ratio to our
    fast path, only where they were timed in the cost benchmark's own run); NaN where there is no equivalent.
    """
    if b.study_cost is None or not b.study_cost.get("methods"):
        raise MissingBenchmark("study_cost.json", "study_cost.py")
    same_run = bool(b.study_cost.get("comparisons"))
    src = b.study_cost if same_run else (b.explainers or {})
    comps, their_methods = src.get("comparisons", {}), src.get("methods", {})
    rows = []
    for name, r in b.study_cost["methods"].items():
        there = their_methods.get(name, {})
        floor = there.get("floor_ms", there.get("naive_floor_ms"))
        row = {"method": name, "label": METHOD_LABELS.get(name, name), **_flat(r), "naive_ms": float(r.get("naive_ms", r["ms"])),
               "incremental": bool(r.get("incremental", False)), "speedup": float(r["naive_floor_ms"]) / float(r["ms"]),
               "target": r.get("target_speedup_vs_naive_floor", np.nan)}
        for who, key in (("captum", CAPTUM_EQUIVALENT.get(name)), ("lime", LIME_PACKAGE_EQUIVALENT.get(name))):
            c = comps.get(key or "")
            row.update({f"{who}_ms": float(c["ms"]) if c else np.nan,
                        f"{who}_x_floor": float(c["ms"]) / floor if c and floor else np.nan,
                        f"{who}_x_ours": float(c["ratio_vs_ours"]) if c and same_run and "ratio_vs_ours" in c else np.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def study_before_after_table(b: Benchmarks) -> pd.DataFrame:
    """The study-level numbers of ``study_cost.json`` before and after: the cascade, the curves, the projected core
    hours, and every further ``projection.*core_hours*`` number (after only). Columns ``what, unit, before, after,
    speedup, run`` (``run``: date and commit of the part)."""
    if b.study_cost is None:
        raise MissingBenchmark("study_cost.json", "study_cost.py")
    sc, rows = b.study_cost, []

    def run(part):
        r = run_of(sc, part)
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
        rows += [{"what": k.replace("_core_hours", "").replace("_", " "), "unit": "core hours", "before": np.nan,
                  "after": float(v), "run": run("projection")} for k, v in p.items()
                 if "core_hours" in k and k not in ("core_hours_before", "core_hours_after") and isinstance(v, (int, float))]
    if not rows:
        raise MissingBenchmark("study_cost.json", "study_cost.py", "cascade, degradation or projection part")
    t = pd.DataFrame(rows)
    return t.assign(speedup=t["before"] / t["after"])[["what", "unit", "before", "after", "speedup", "run"]]


def mask_a3c_local_table(b: Benchmarks) -> pd.DataFrame:
    """The local methods on a Mask-A3C network (``projection.mask_a3c.local`` of ``study_cost.json``): every field
    of each method's record, ``speedup`` (naive ÷ incremental ms per pass) and ``cascade_speedup`` (the naive
    cascade's full pass per network ÷ the incremental one over the cascade's six networks at once)."""
    if b.study_cost is None:
        raise MissingBenchmark("study_cost.json", "study_cost.py")
    a3c = b.study_cost.get("projection", {}).get("mask_a3c", {})
    if not a3c.get("local"):
        raise MissingBenchmark("study_cost.json", "study_cost.py --only projection", "Mask-A3C local-method costs")
    t = pd.DataFrame([{"method": k, "label": METHOD_LABELS.get(k, k), **_flat(v)} for k, v in a3c["local"].items()])
    return t.assign(speedup=t["naive_ms_per_pass"] / t["ms_per_pass"],
                    cascade_speedup=a3c.get("cascade_naive_ms_per_pass", np.nan) / t["cascade_ms_per_pass"])


# -- scale-out ---------------------------------------------------------------------------------------

def executor_table(b: Benchmarks) -> pd.DataFrame:
    """Units per minute per executor and number of workers (``scaleout.json``'s ``executors``, every field):
    ``units_per_min`` over the whole sweep (start-up included), ``steady_units_per_min`` between the first and the
    last finished unit, ``efficiency`` the steady rate ÷ (workers × the local rate), ``same_table``."""
    if b.scaleout is None:
        raise MissingBenchmark("scaleout.json", "scaleout.py")
    t = pd.DataFrame(b.scaleout.get("executors", []))
    if t.empty:
        raise MissingBenchmark("scaleout.json", "scaleout.py", "executor")
    return t.rename(columns={"same_table_as_local": "same_table"})


_OVERHEAD = (("direct_call_us", "a direct Python call of the empty function", "µs"),
             ("noop_ms_per_task", "an empty Ray task, many in flight (throughput)", "ms per task"),
             ("noop_round_trip_ms", "an empty Ray task, submitted and awaited one at a time (latency)", "ms per task"),
             ("unit_args_ms_per_task", "an empty Ray task given a unit and the context reference, as the sweep submits it",
              "ms per task"),
             ("frame_return_ms_per_task", "a Ray task returning the largest measured result frame", "ms per task"),
             ("init_s", "starting a local Ray (ray.init) and its first tasks", "s"),
             ("per_unit_difference_s", "ray − local, per unit of the measured sweep (1 worker, steady rate)", "s per unit"))
_SHIPPED = (("unit_args_bytes", "task arguments: the unit and the context reference (largest)"),
            ("sanity_frame_bytes", "returned frame of a sanity unit (largest measured)"),
            ("degradation_frame_bytes", "returned frame of a degradation unit (largest measured)"),
            ("context_bytes", "agent and states, once per worker (measured sweep)"),
            ("full_study_frame_bytes", "returned frame of a full-study degradation unit (per-state size × chunk)"),
            ("full_study_context_bytes", "agent and 997 states, once per worker (full study, per-state size)"))


def overhead_table(b: Benchmarks) -> pd.DataFrame:
    """Ray's overhead per task (``scaleout.json``'s ``ray_overhead``): columns ``key, what, value, unit``."""
    if b.scaleout is None:
        raise MissingBenchmark("scaleout.json", "scaleout.py")
    o = b.scaleout.get("ray_overhead")
    if not o:
        raise MissingBenchmark("scaleout.json", "scaleout.py", "Ray overhead (run without --skip-ray)")
    return pd.DataFrame([{"key": k, "what": w, "value": float(o[k]), "unit": u} for k, w, u in _OVERHEAD if o.get(k) is not None])


def shipped_table(b: Benchmarks) -> pd.DataFrame:
    """What each task ships (pickle sizes, ``scaleout.json``'s ``shipped``): columns ``what, bytes``."""
    if b.scaleout is None:
        raise MissingBenchmark("scaleout.json", "scaleout.py")
    s = b.scaleout.get("shipped", {})
    rows = [{"what": w, "bytes": int(s[k])} for k, w in _SHIPPED if s.get(k) is not None]
    if not rows:
        raise MissingBenchmark("scaleout.json", "scaleout.py", "sizes")
    return pd.DataFrame(rows)


def study_tasks(study_cost: dict) -> dict:
    """Units (Ray tasks) and sweeps of the paper-scale study that ``study_cost.json`` projects.

    DQN: ``dqn.agents`` agents × ⌈``dqn.states`` ÷ the full profile's chunk⌉ chunks; Mask-A3C:
    ⌈``mask_a3c.states`` ÷ its chunk⌉ chunks. Per chunk, one sanity unit per method and one degradation unit
    per method and the random map, and for the DQN agents one degradation unit per method of the §6.2
    ablation; every Mask-A3C agent is counted with both attention masks (an upper bound).
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


def projection(scaleout: dict, study_cost: dict) -> dict:
    """Wall-clock hours of the paper-scale study per target of :data:`TARGETS`.

    Model, per target (``executor`` on ``cores`` cores, ``e`` the efficiency that executor reached with 2 workers
    here, ``C`` = ``study_cost.json``'s ``projection.core_hours_after``)::

        compute = C / (cores × e)
        driver  = rows of the study × the driver's measured time per stored row
        lower   = max(compute, driver) + sweeps × start-up (measured, per sweep)
        upper   = lower + sweeps × the largest unit   (each sweep's last unit may run alone)

    Returns ``{"core_hours_after", "tasks", "largest_unit_s", "rows", "bytes_to_driver", "targets": [{"target",
    "executor", "cores", "efficiency", "compute_hours", "driver_hours", "startup_hours", "wall_hours",
    "wall_hours_upper", "dispatch_hours"} | {"target", "missing"}]}``. ``dispatch_hours`` is Ray's measured
    per-task overhead × tasks ÷ cores, for scale: it is part of ``e`` (the measured units paid it too).
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
        m = next((e for e in scaleout.get("executors", []) if e["executor"] == executor
                  and e["workers"] == min(cores, MACHINE_CORES)), None)
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


def check_projection(b: Benchmarks) -> None:
    if b.scaleout is None:
        raise MissingBenchmark("scaleout.json", "scaleout.py")
    if b.study_cost is None or "projection" not in b.study_cost:
        raise MissingBenchmark("study_cost.json", "study_cost.py")


def projection_table(b: Benchmarks) -> pd.DataFrame:
    """:func:`projection` of the committed files, one row per measured target: ``target, executor, cores, efficiency,
    compute_hours, driver_hours, startup_hours, wall_hours, wall_hours_upper, dispatch_hours``."""
    check_projection(b)
    t = pd.DataFrame([r for r in projection(b.scaleout, b.study_cost)["targets"] if "missing" not in r])
    if t.empty:
        raise MissingBenchmark("scaleout.json", "scaleout.py", f"executor with {MACHINE_CORES} workers to project from")
    return t


# -- the numbers the prose quotes -------------------------------------------------------------------------

def _span(s) -> tuple[float, float]:
    s = pd.Series(s, dtype=float).dropna()
    return (float(s.min()), float(s.max())) if len(s) else (np.nan, np.nan)


def before_after_numbers(table, study) -> dict:
    """The speed-ups below the floor: the incremental methods' range of speed-ups (``inc_speedup_min``/``_max``)
    and largest map difference (``inc_max_diff``), the others' time ÷ floor (``full_ratio_min``/``_max``), their
    names (``inc_methods``, ``full_methods``), and the study-level speed-ups with before → after
    (``study_<i>_speedup``, ``_before``, ``_after`` for the cascade, the curves and the core hours); NaN for
    anything but tables."""
    t = table if isinstance(table, pd.DataFrame) else pd.DataFrame(columns=["incremental", "speedup", "max_abs_map_diff",
                                                                        "ms", "naive_floor_ms", "label"])
    mask = t["incremental"].astype(bool)
    inc, full = t[mask], t[~mask]
    out = dict(zip(("inc_speedup_min", "inc_speedup_max"), _span(inc["speedup"])))
    out["inc_max_diff"] = _span(inc["max_abs_map_diff"])[1]
    out.update(zip(("full_ratio_min", "full_ratio_max"), _span(full["ms"] / full["naive_floor_ms"])))
    out.update(inc_methods=inc["label"].tolist(), full_methods=full["label"].tolist())
    s = study if isinstance(study, pd.DataFrame) else pd.DataFrame()
    for i in range(3):
        r = s.iloc[i] if i < len(s) else {}
        out.update({f"study_{i}_{k}": float(r.get(k, np.nan)) for k in ("speedup", "before", "after")})
    return out


def scaleout_numbers(executors, overhead, proj) -> dict:
    """The scale-out in numbers: ``local_rate`` (steady units per minute in one process), per executor with 2
    workers ``<executor>_rate`` and ``<executor>_efficiency``, ``noop_ms`` and ``per_unit_diff_s`` (Ray's
    overhead), and per projection target ``<executor>_<cores>_wall``, ``_upper``, ``_compute``, ``_driver``."""
    e = executors if isinstance(executors, pd.DataFrame) else pd.DataFrame(columns=["executor", "workers",
                                                                                "steady_units_per_min", "efficiency"])
    local = e.loc[e["executor"] == "local", "steady_units_per_min"]
    out = {"local_rate": float(local.iloc[0]) if len(local) else np.nan}
    for ex in ("processes", "ray"):
        two = e[(e["executor"] == ex) & (e["workers"] == 2)]
        out[f"{ex}_rate"], out[f"{ex}_efficiency"] = ((float(two["steady_units_per_min"].iloc[0]),
                                                       float(two["efficiency"].iloc[0]))
                                                      if len(two) else (np.nan, np.nan))
    o = overhead.set_index("key")["value"].to_dict() if isinstance(overhead, pd.DataFrame) else {}
    out.update(noop_ms=o.get("noop_ms_per_task", np.nan), per_unit_diff_s=o.get("per_unit_difference_s", np.nan))
    rows = {(r["executor"], r["cores"]): r for r in proj.to_dict("records")} if isinstance(proj, pd.DataFrame) else {}
    for _, ex, cores in TARGETS:
        r = rows.get((ex, cores), {})
        out.update({f"{ex}_{cores}_{k}": float(r.get(f"{k}_hours", np.nan))
                    for k in ("wall", "compute", "driver")} | {f"{ex}_{cores}_upper": float(r.get("wall_hours_upper", np.nan))})
    return out


def row_costs(b: Benchmarks) -> dict:
    """Milliseconds per forward pass of one row of an inference batch: ``a3c_row_ms`` (the Mask-A3C network,
    ``study_cost.json``'s projection), ``dqn_row_ms`` (Occlusion's naive floor ÷ its passes on the DQN network) and
    ``a3c_over_dqn``; NaN where the file lacks them."""
    sc = b.study_cost or {}
    a3c = float(sc.get("projection", {}).get("mask_a3c", {}).get("row_ms_inference_batch", np.nan))
    occlusion = sc.get("methods", {}).get("occlusion", {})
    dqn = occlusion["naive_floor_ms"] / occlusion["forward_passes"] if occlusion else np.nan
    return {"a3c_row_ms": a3c, "dqn_row_ms": dqn, "a3c_over_dqn": a3c / dqn}
