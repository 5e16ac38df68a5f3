"""Executors: who computes the units of a sweep.

* ``local``: in this process, one unit after the other (the default);
* ``processes``: local worker processes (``concurrent.futures``-style pool, spawn);
* ``ray``: Ray tasks on a local Ray started for the run, or on an existing cluster
  (``ray_address`` or ``RAY_ADDRESS``). The agent and the states go into Ray's
  object store once; each worker deserialises them once and keeps them.

The driver writes each finished unit's rows atomically through the store
(:func:`saliency_study.cache.store_unit`). A stored unit, loose or packed,
is never computed again, so a re-run of a finished sweep computes nothing and an
interrupted sweep resumes where it stopped. A worker that dies mid-unit leaves
nothing behind; the unit is retried (Ray's ``max_retries``; a new process for
``processes``).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import torch

from ._store import load_units, mean_curves, store_unit, stored_keys
from ._units import SweepSpec, Unit, compute_unit, maps_key, plan_units

__all__ = ["EXECUTORS", "RAY_INSTALL", "SweepReport", "run_sweep"]


EXECUTORS = ("local", "processes", "ray")


RAY_INSTALL = "pip install 'saliency-lib[ray]'  (or: pip install 'ray>=2.9')"


@dataclass
class SweepReport:
    """What a sweep did: the table and how many units it computed."""

    table: pd.DataFrame
    """The tidy rows of every unit (:func:`~.store.load_units`): no curves, see :meth:`curves`."""
    total: int
    computed: int
    skipped: int
    seconds: float
    executor: str
    units: list[Unit] = field(default_factory=list)
    results_dir: object = None

    def curves(self, *, confidence: float = 0.95) -> pd.DataFrame:
        """The sweep's mean insertion/deletion curves with their bands (:func:`~.store.mean_curves`)."""
        return mean_curves(self.units, results_dir=self.results_dir, confidence=confidence)


class _Progress:
    """Units done / total with an ETA, as a tqdm bar and optional callback."""

    def __init__(self, total: int, done: int, show: bool, callback: Callable[[int, int, float], None] | None):
        from tqdm.auto import tqdm

        self.total, self.done, self.callback, self.t0, self.start = total, done, callback, time.monotonic(), done
        self.bar = tqdm(total=total, initial=done, unit="unit", desc="sweep", disable=not show)

    def step(self) -> None:
        self.done += 1
        self.bar.update(1)
        if self.callback is not None:
            rate = (self.done - self.start) / max(time.monotonic() - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else math.inf
            self.callback(self.done, self.total, eta)

    def close(self) -> None:
        self.bar.close()


def run_sweep(spec: SweepSpec, *, executor: str = "local", results_dir, workers: int | None = None,
              ray_address: str | None = None, progress: bool = True,
              on_unit: Callable[[int, int, float], None] | None = None) -> SweepReport:
    """Compute the units of ``spec`` that are not stored yet and return the whole table.

    Parameters
    ----------
    spec : SweepSpec
    executor : {"local", "processes", "ray"}
    results_dir : path
        Root of the stored units (``<results_dir>/sweep/``).
    workers : int, optional
        Worker processes (``processes``) or CPUs of a Ray started for the run
        (``ray``; default: all). Ignored by ``local``.
    ray_address : str, optional
        An existing Ray cluster (default: ``$RAY_ADDRESS``, else start a local one).
    progress : bool
        A tqdm bar of units (done, total, ETA).
    on_unit : callable, optional
        ``on_unit(done, total, eta_seconds)`` after each stored unit.

    Returns
    -------
    SweepReport
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid executors are: {', '.join(EXECUTORS)}")
    if executor == "ray":
        _require_ray()
    t0 = time.monotonic()
    units, context = plan_units(spec, results_dir=results_dir, progress=progress)
    done = stored_keys(units, results_dir=results_dir)
    todo = [u for u in units if u.key not in done]
    bar = _Progress(len(units), len(units) - len(todo), progress, on_unit)
    try:
        if todo:
            run = {"local": _run_local, "processes": _run_processes, "ray": _run_ray}[executor]
            run(todo, context, results_dir, bar, workers=workers, ray_address=ray_address)
    finally:
        bar.close()
    table = load_units(units, results_dir=results_dir)
    return SweepReport(table, len(units), len(todo), len(units) - len(todo), time.monotonic() - t0, executor, units,
                       results_dir)


def _run_local(todo, context, results_dir, bar, **_):
    # Each sanity unit is followed by the degradation unit of the same maps (maps_key), which
    # takes the original model's maps from the cache instead of explaining the states again
    # (about a fifth of a DQN state's cost). The maps are the same bit for bit, so the rows
    # equal those of the other executors, which compute each unit on its own.
    order = {k: i for i, k in enumerate(dict.fromkeys(maps_key(u) for u in todo))}
    todo = sorted(todo, key=lambda u: (order[maps_key(u)], u.experiment != "sanity"))
    cache: dict = {}
    for u in todo:
        _, agent, states = context[u.state_config]
        if u.experiment == "sanity":
            cache.clear()  # the maps of an earlier sanity unit whose degradation unit was stored already
        store_unit(u, compute_unit(u, agent, states, maps_cache=cache), results_dir)
        bar.step()


def _proc_worker(tasks, results, blob: bytes) -> None:
    import pickle

    torch.set_num_threads(1)
    context = pickle.loads(blob)
    for unit in iter(tasks.get, None):
        results.put(("start", os.getpid(), unit.key, None))
        _, agent, states = context[unit.state_config]
        try:
            rows = compute_unit(unit, agent, states)
        except Exception as e:  # noqa: BLE001 - reported to the driver, which raises it
            results.put(("error", os.getpid(), unit.key, f"{type(e).__name__}: {e}"))
            continue
        results.put(("done", os.getpid(), unit.key, rows))


def _run_processes(todo, context, results_dir, bar, *, workers=None, max_retries: int = 3, **_):
    import multiprocessing as mp
    import pickle

    ctx = mp.get_context("spawn")
    workers = workers or max(1, min(os.cpu_count() or 1, len(todo)))
    blob = pickle.dumps(context)
    by_key = {u.key: u for u in todo}
    attempts = dict.fromkeys(by_key, 0)
    # SimpleQueue writes synchronously: a "start" put is in the pipe before the worker can die
    tasks, results = ctx.Queue(), ctx.SimpleQueue()
    for u in todo:
        tasks.put(u)

    def spawn():
        proc = ctx.Process(target=_proc_worker, args=(tasks, results, blob), daemon=True)
        proc.start()
        return proc

    procs = {}
    for _ in range(workers):
        proc = spawn()
        procs[proc.pid] = proc
    running: dict[int, str] = {}  # worker pid -> unit key it announced
    left = set(by_key)
    try:
        while left:
            if not results._reader.poll(1.0):  # nothing for a second: look for dead workers
                for pid, proc in list(procs.items()):
                    if proc.exitcode is None:
                        continue
                    del procs[pid]  # a dead worker: hand its unit out again, start a replacement
                    key = running.pop(pid, None)
                    if key is not None and key in left:
                        attempts[key] += 1
                        if attempts[key] > max_retries:
                            raise RuntimeError(f"unit {key} failed {attempts[key]} times: its worker process died")
                        tasks.put(by_key[key])
                    proc = spawn()
                    procs[proc.pid] = proc
                continue
            kind, pid, key, payload = results.get()
            if kind == "start":
                running[pid] = key
            elif kind == "error":
                raise RuntimeError(f"unit {key} failed in a worker: {payload}")
            else:
                running.pop(pid, None)
                if key in left:
                    store_unit(by_key[key], payload, results_dir)
                    left.discard(key)
                    bar.step()
    finally:
        for _ in procs:
            tasks.put(None)
        for proc in procs.values():
            proc.join(timeout=5)
            if proc.exitcode is None:
                proc.kill()


def _require_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ImportError(f"--executor ray needs Ray, which is not installed: {RAY_INSTALL}") from None


_RAY_CONTEXT: dict = {}


def _ray_unit(unit: Unit, refs: list) -> pd.DataFrame:
    """Ray task body: fetch the (agent, states) context from the object store once per worker."""
    import ray

    if unit.state_config not in _RAY_CONTEXT:
        torch.set_num_threads(1)
        _RAY_CONTEXT[unit.state_config] = ray.get(refs[0])
    _, agent, states = _RAY_CONTEXT[unit.state_config]
    return compute_unit(unit, agent, states)


def _run_ray(todo, context, results_dir, bar, *, workers=None, ray_address=None, **_):
    import ray

    started = False
    if not ray.is_initialized():
        address = ray_address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, log_to_driver=False)
        started = True
    try:
        # one put per (agent, states); tasks get the ref inside a list so Ray does not resolve it
        # per task, and each worker keeps the deserialised context.
        refs = {k: ray.put(v) for k, v in context.items()}
        task = ray.remote(num_cpus=1, max_retries=3, retry_exceptions=False)(_ray_unit)
        futures = {task.remote(u, [refs[u.state_config]]): u for u in todo}
        remaining = list(futures)
        while remaining:
            done, remaining = ray.wait(remaining, num_returns=1)
            for ref in done:
                u = futures[ref]
                store_unit(u, ray.get(ref), results_dir)
                bar.step()
    finally:
        if started:
            ray.shutdown()
