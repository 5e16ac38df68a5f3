"""Scale-out of the study's sweep: units per minute per executor, Ray's overhead, what tasks ship.

Run ``python benchmarks/scaleout.py --json data/benchmarks/scaleout.json`` (about 5 minutes
on the study's 2-core machine). Run it at normal priority: the sweep's workers must get the
cores, not share them evenly with niced background jobs (the load average is recorded).

Setting: a small real sweep (:class:`saliency_lib.sweep._units.SweepSpec`) of the shipped
``data/agents/dqn-Breakout-s0`` agent: ``--states`` states of its fixed-start greedy game in
units of ``--chunk`` states, both experiments (the sanity cascade; insertion and deletion on
three substrates), ``--methods`` at the ``tiny`` profile's cheap parameters, so each unit takes
about a second. Every configuration computes the same units in a fresh temporary results
directory (only the state set is copied in, so nothing else is cached) through
:func:`saliency_lib.sweep._executors.run_sweep`, and must give the local executor's table.

Measured:

* ``executors``: per executor (``local``; ``processes`` and ``ray`` with 1 and 2 workers)
  the wall time of the whole sweep, ``units_per_min`` (start-up included) and
  ``steady_units_per_min`` (between the first and the last finished unit), ``startup_s`` (wall
  time not explained by the steady rate: planning, spawning workers, starting Ray) and
  ``efficiency`` = steady rate ÷ (workers × the local steady rate).
* ``ray_overhead``: empty Ray tasks (many in flight, and one at a time) against a direct call;
  an empty task given a unit and the context reference, as the sweep submits it; a task that
  returns the largest result frame; Ray's start; the steady per-unit difference ray − local.
* ``shipped``: pickle sizes of the task arguments, the returned frames and the per-worker
  context (agent and states), per state and scaled to the full study's units.
* ``driver``: the driver's time per stored row (unpickle the frame, write the unit's file).
* ``projection``: :func:`saliency_study.scaleout.projection` of these measurements and of
  ``--study-cost`` (its ``projection.core_hours_after``, read now; the chapter recomputes it from
  the committed files, so a re-run of ``study_cost.py`` updates it), with ``assumptions``.
  ``--reproject`` recomputes only this block from the file's measurements and ``--study-cost``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
from study_cost import machine  # the environment record of the cost benchmark (benchmarks/ is the script's path)

from saliency_lib.sweep import SweepSpec, compute_unit, plan_units, run_sweep, states_dir, store_unit
from saliency_study.profiles import get_profile
from saliency_study.scaleout import projection

AGENT = "data/agents/dqn-Breakout-s0"
METHODS = ("occlusion", "ns_black", "sarfa", "rise", "lime_slic", "gradient", "gradcam", "integrated_gradients")
CONFIGS = (("local", 1), ("processes", 1), ("processes", 2), ("ray", 1), ("ray", 2))


def _proc_table() -> dict[int, tuple[int, int, float]]:
    """``pid → (parent pid, nice, CPU seconds so far)`` of every process, from ``/proc``."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended
            continue
        # f[i] is field i + 3 of proc(5)'s stat: ppid 4, utime 14, stime 15, nice 19
        out[int(d.name)] = (int(f[1]), int(f[16]), (int(f[11]) + int(f[12])) / tick)
    return out


class Background(threading.Thread):
    """Samples, every ``period`` s, the CPU time of the processes that are not this benchmark or its descendants
    (its worker processes, Ray's processes): what the other jobs on the machine used while it ran."""

    def __init__(self, period: float = 1.0):
        super().__init__(daemon=True)
        self.period, self.stop, self.me = period, threading.Event(), os.getpid()
        self.first = {pid: cpu for pid, (_, _, cpu) in _proc_table().items()}
        self.last: dict[int, tuple[int, float]] = {}
        self.t0 = time.monotonic()

    def sample(self) -> None:
        table = _proc_table()
        for pid, (_, nice, cpu) in table.items():
            p, seen = pid, set()
            while p in table and p not in seen and p != self.me:  # walk up to this process, or to the root
                seen.add(p)
                p = table[p][0]
            if p != self.me:
                self.last[pid] = (nice, cpu)

    def run(self) -> None:
        while not self.stop.wait(self.period):
            self.sample()

    def result(self) -> dict:
        self.stop.set()
        self.join()
        self.sample()
        wall, cores = time.monotonic() - self.t0, os.cpu_count() or 1
        used = {pid: (nice, cpu - self.first.get(pid, 0.0)) for pid, (nice, cpu) in self.last.items()}
        busy = {pid: v for pid, v in used.items() if v[1] > 0.01 * wall}
        total = sum(c for _, c in used.values())
        niced = sum(c for n, c in used.values() if n > 0)
        return {"wall_s": wall, "cpu_s": total, "share_of_machine": total / (wall * cores), "niced_cpu_s": niced,
                "busy_processes": len(busy), "busy_niced_processes": sum(1 for n, _ in busy.values() if n > 0),
                "what": "CPU time of every process that is not this benchmark or its descendants, sampled from /proc "
                        f"every second while it ran; busy: more than 1 % of the run's wall time; the machine has {cores} cores"}


def _spec(args) -> SweepSpec:
    cheap = get_profile("tiny").sweep_size("dqn").params
    return SweepSpec(agents=(args.agent,), methods=tuple(args.methods), n_states=args.states, chunk=args.chunk,
                     params={m: dict(p) for m, p in cheap.items() if m in args.methods})


def measure_executor(spec: SweepSpec, executor: str, workers: int, states_src: Path) -> tuple[dict, pd.DataFrame]:
    """One sweep of ``spec`` under ``executor`` in a fresh results directory holding only the state set."""
    with tempfile.TemporaryDirectory(prefix=f"scaleout-{executor}{workers}-") as d:
        shutil.copytree(states_src, states_dir(d), dirs_exist_ok=True)
        done: list[float] = []
        t0 = time.monotonic()
        report = run_sweep(spec, executor=executor, results_dir=d, workers=workers, progress=False,
                           on_unit=lambda *_: done.append(time.monotonic()))
        wall = time.monotonic() - t0
    n = report.computed
    steady = 60 * (n - 1) / (done[-1] - done[0]) if n > 1 and done[-1] > done[0] else float("nan")
    row = {"executor": executor, "workers": workers, "units": n, "wall_s": wall, "units_per_min": 60 * n / wall,
           "steady_units_per_min": steady, "first_unit_s": done[0] - t0 if done else None,
           "startup_s": max(0.0, wall - 60 * n / steady) if steady == steady else None}
    print(f"{executor:9s} x{workers}: {n} units in {wall:5.1f} s  {row['units_per_min']:5.1f}/min  "
          f"steady {steady:5.1f}/min  start-up {row['startup_s'] or 0:4.1f} s", flush=True)
    return row, report.table


def sizes_and_driver(spec: SweepSpec, states_src: Path) -> tuple[dict, dict]:
    """Pickle sizes of what tasks ship, and the driver's time per stored row (one unit of each experiment ×
    method is computed here, in-process)."""
    with tempfile.TemporaryDirectory(prefix="scaleout-sizes-") as d:
        shutil.copytree(states_src, states_dir(d), dirs_exist_ok=True)
        units, context = plan_units(spec, results_dir=d)
        frames = {}
        for u in units:  # one unit per (experiment, method): the sizes do not depend on the chunk's states
            frames.setdefault((u.experiment, u.method), (u, None))
        store_s, rows = 0.0, 0
        for key, (u, _) in frames.items():
            _, agent, states = context[u.state_config]
            blob = pickle.dumps(compute_unit(u, agent, states))
            t = time.perf_counter()
            frame = pickle.loads(blob)
            store_unit(u, frame, d)
            store_s += time.perf_counter() - t
            rows += len(frame)
            frames[key] = (u, (len(blob), len(frame)))
        _, agent, sset = next(iter(context.values()))
        agent_bytes, states_bytes = len(pickle.dumps(agent)), len(pickle.dumps(sset))
    by = {e: [v for (x, _), (_, v) in frames.items() if x == e] for e in ("sanity", "degradation")}
    chunk = spec.chunk
    full = get_profile("full").sweep_size("dqn")
    per_state = {e: max(b for b, _ in v) / chunk for e, v in by.items() if v}
    rows_per_state = {e: max(r for _, r in v) / chunk for e, v in by.items() if v}
    shipped = {
        "unit_args_bytes": max(len(pickle.dumps((u, [None], None))) for u, _ in frames.values()),
        "sanity_frame_bytes": max((b for b, _ in by["sanity"]), default=None),
        "degradation_frame_bytes": max((b for b, _ in by["degradation"]), default=None),
        "context_bytes": len(pickle.dumps(context)), "agent_bytes": agent_bytes,
        "states_bytes_per_state": states_bytes / sset.states.shape[0],
        "sanity_frame_bytes_per_state": per_state.get("sanity"),
        "degradation_frame_bytes_per_state": per_state.get("degradation"), "sanity_rows_per_state": rows_per_state.get("sanity"),
        "degradation_rows_per_state": rows_per_state.get("degradation"),
        "full_study_frame_bytes": max(per_state.values()) * full.chunk,
        "full_study_context_bytes": agent_bytes + states_bytes / sset.states.shape[0] * full.n_states,
        "what": "pickle.dumps sizes: a task ships its arguments (the Unit and a list holding the context's object "
                "reference) and returns its frame; the context (agent and state set) goes to each worker once "
                "(processes: a pickled blob per worker; ray: one object-store put, fetched once per worker)",
    }
    driver = {"store_ms_per_row": 1e3 * store_s / rows, "rows": rows,
              "what": "unpickling a returned frame and writing its unit file (store_unit), per row"}
    return shipped, driver


def _noop(*_args):
    return None


def _echo(frame):
    return frame


def ray_overhead(spec: SweepSpec, states_src: Path, workers: int, n_tasks: int) -> dict:
    """Per-task cost of Ray against a direct call: empty tasks, tasks with the sweep's arguments, a returned frame."""
    import ray

    n = 100_000
    t = time.perf_counter()
    for _ in range(n):
        _noop()
    direct_us = 1e6 * (time.perf_counter() - t) / n
    with tempfile.TemporaryDirectory(prefix="scaleout-ray-") as d:
        shutil.copytree(states_src, states_dir(d), dirs_exist_ok=True)
        units, context = plan_units(spec, results_dir=d)
        u = next(x for x in units if x.experiment == "degradation")
        _, agent, states = context[u.state_config]
        frame = compute_unit(u, agent, states)
    t = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        noop = ray.remote(num_cpus=1)(_noop)
        echo = ray.remote(num_cpus=1)(_echo)
        ray.get([noop.remote() for _ in range(2 * workers)])  # workers up
        init_s = time.perf_counter() - t

        def per_task(make, k):
            t = time.perf_counter()
            ray.get([make() for _ in range(k)])
            return 1e3 * (time.perf_counter() - t) / k

        ref = ray.put(context)
        pipelined = statistics.median(per_task(noop.remote, n_tasks) for _ in range(3))
        t = time.perf_counter()
        for _ in range(n_tasks // 4):
            ray.get(noop.remote())
        round_trip = 1e3 * (time.perf_counter() - t) / (n_tasks // 4)
        with_args = statistics.median(per_task(lambda: noop.remote(u, [ref], None), n_tasks) for _ in range(3))
        frame_ref = ray.put(frame)
        returned = statistics.median(per_task(lambda: echo.remote(frame_ref), max(4, n_tasks // 20)) for _ in range(3))
    finally:
        ray.shutdown()
    return {"workers": workers, "tasks": n_tasks, "direct_call_us": direct_us, "noop_ms_per_task": pipelined,
            "noop_round_trip_ms": round_trip, "unit_args_ms_per_task": with_args, "frame_return_ms_per_task": returned,
            "frame_rows": len(frame), "init_s": init_s}


def _project(res: dict, study_cost: Path) -> None:
    """``res["projection"]`` from the measurements in ``res`` and ``study_cost`` (if it has a projection)."""
    if not study_cost.is_file():
        return
    sc = json.loads(study_cost.read_text())
    if "projection" not in sc:
        return
    res["projection"] = projection(res, sc)
    res["projection"]["study_cost"] = {"path": str(study_cost), **{k: sc.get("runs", {}).get("projection", {}).get(k)
                                                                     for k in ("date", "commit")}}
    for t in res["projection"]["targets"]:
        if "wall_hours" in t:
            print(f"{t['target']:22s} {t['wall_hours']:7.1f} to {t['wall_hours_upper']:7.1f} h", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--agent", default=AGENT)
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--states", type=int, default=6, help="states of the sweep")
    p.add_argument("--chunk", type=int, default=2, help="states per unit")
    p.add_argument("--configs", nargs="+", default=[f"{e}:{w}" for e, w in CONFIGS],
                   help="executor:workers to measure (local is one process whatever the workers)")
    p.add_argument("--ray-tasks", type=int, default=400, help="empty tasks per overhead measurement")
    p.add_argument("--skip-ray-overhead", action="store_true")
    p.add_argument("--study-cost", default="data/benchmarks/study_cost.json",
                   help="study_cost.json whose projection.core_hours_after the projection starts from")
    p.add_argument("--reproject", action="store_true",
                   help="measure nothing: recompute the projection of the existing --json from --study-cost")
    args = p.parse_args(argv)
    if args.reproject:
        path = Path(args.json)
        res = json.loads(path.read_text())
        _project(res, Path(args.study_cost))
        path.write_text(json.dumps(res, indent=2) + "\n")
        print(f"wrote {path}")
        return 0
    configs = [(c.split(":")[0], int(c.split(":")[1])) for c in args.configs]
    if ("local", 1) not in configs:
        p.error("--configs needs local:1, the reference of the efficiencies")
    start, nice = machine(), os.nice(0)
    others = Background()
    others.start()
    spec = _spec(args)
    work = Path(tempfile.mkdtemp(prefix="scaleout-states-"))
    try:
        units, _ = plan_units(spec, results_dir=work)  # collects the state set once; every configuration copies it
        states_src = states_dir(work)
        rows, tables = [], {}
        for executor, workers in configs:
            row, tables[(executor, workers)] = measure_executor(spec, executor, workers, states_src)
            rows.append(row)
        ref = next(r for r in rows if r["executor"] == "local")
        ref_table = tables[("local", 1)]
        for r in rows:
            r["efficiency"] = r["steady_units_per_min"] / (r["workers"] * ref["steady_units_per_min"])
            r["same_table_as_local"] = bool(tables[(r["executor"], r["workers"])].reset_index(drop=True).equals(
                ref_table.reset_index(drop=True)))
        shipped, driver = sizes_and_driver(spec, states_src)
        overhead = None
        if not args.skip_ray_overhead:
            overhead = ray_overhead(spec, states_src, 2, args.ray_tasks)
            ray1 = next((r for r in rows if r["executor"] == "ray" and r["workers"] == 1), None)
            overhead["per_unit_difference_s"] = (60 / ray1["steady_units_per_min"] - 60 / ref["steady_units_per_min"]
                                                 if ray1 else None)
            print(f"ray: empty task {overhead['noop_ms_per_task']:.2f} ms (direct call {overhead['direct_call_us']:.2f} µs), "
                  f"round trip {overhead['noop_round_trip_ms']:.2f} ms, start {overhead['init_s']:.1f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    try:
        import ray

        ray_version = ray.__version__
    except ImportError:
        ray_version = None
    bg, end = others.result(), os.getloadavg()
    res = {
        "machine": {**start, "ray": ray_version, "load_average_at_end": list(end), "nice": nice},
        "background": bg,
        "shared_machine": (f"The machine was {'shared' if bg['share_of_machine'] > 0.05 else 'idle but for this benchmark'}: "
                           f"while this benchmark ran at nice {nice}, other processes used {bg['cpu_s']:,.0f} CPU seconds "
                           f"({bg['share_of_machine']:.0%} of its {os.cpu_count()} cores; {bg['busy_processes']} busy, "
                           f"{bg['busy_niced_processes']} of them niced, {bg['niced_cpu_s']:,.0f} CPU seconds at a nice "
                           f"value above 0). The one-minute load average was {start['load_average'][0]:.1f} at the start "
                           f"and {end[0]:.1f} at the end."),
        "setting": {"agent": args.agent, "methods": list(args.methods), "states": args.states, "chunk": args.chunk,
                    "units": len(units), "experiments": list(spec.experiments), "substrates": list(spec.substrates),
                    "params": "the tiny profile's cheap explainer parameters (about a second per unit)",
                    "configs": [f"{e}:{w}" for e, w in configs], "ray_tasks": args.ray_tasks,
                    "clock": "wall time (time.monotonic); one measurement per configuration, configurations in the order listed"},
        "executors": rows, "ray_overhead": overhead, "shipped": shipped, "driver": driver,
    }
    res["assumptions"] = [
        "The machine was shared (see shared_machine): the 2-worker efficiencies include the competition with the "
        "background jobs and with the driver, so the projection is pessimistic for an idle machine.",
        "The measured units take about a second; the study's units take minutes. Per-unit costs that do not grow with a "
        "unit's compute (dispatch, pickling and storing the frame) weigh more here, which again makes the efficiency "
        "pessimistic.",
        "The 64-core cluster: 64 Ray workers on cores as fast as this machine's, each at the efficiency measured with 2 "
        "Ray workers here; the agent and the state set reach each worker once through the object store.",
        "The driver stores every unit itself (unpickle and write): its total time, rows × the measured time per row, "
        "bounds the wall time from below when the workers are faster than it.",
        "The study runs one sweep per agent (saliency_study.study.study_results), each paying the measured "
        "start-up; within a sweep list scheduling leaves at most the largest unit running alone at the end (the upper "
        "bound adds it once per sweep).",
        "Core hours are study_cost.json's projection.core_hours_after: its CPU-time measurements on one thread, the "
        "Mask-A3C part modelled there (see its notes).",
    ]
    _project(res, Path(args.study_cost))
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
