"""Executors: who computes the units of a sweep.

* ``local``: in this process, one unit after the other (the default);
* ``processes``: local worker processes (``concurrent.futures``-style pool, spawn);
* ``ray``: Ray tasks on a local Ray started for the run, or on an existing cluster
  (``ray_address`` or ``RAY_ADDRESS``). The agent and the states go into Ray's
  object store once; each worker deserialises them once and keeps them.

The driver writes each finished unit's rows atomically through the store
(:func:`~._store.store_unit`). A stored unit, loose or packed, that reads back sound
(:mod:`._verify`) is never computed again, so a re-run of a finished sweep computes
nothing and an interrupted sweep resumes where it stopped; a damaged one is quarantined and
computed again. A worker that dies mid-unit leaves nothing behind; the unit is retried
(Ray's ``max_retries``; a new process for ``processes``).

Several sweeps on one results directory (processes, machines on a shared disk) share the
work: the driver **claims** each unit just before it hands it to a worker (:mod:`._claims`)
and leaves a unit that a live sweep claims to that sweep, then waits for it to be stored
(or for the claim to expire, when its owner died) before it reads the table. Each unit is
computed once in all; a driver hands out at most as many units as it has workers at a time,
so concurrent sweeps split the units between them.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from ._claims import CLAIM_TIMEOUT, Claims
from ._store import Reader, load_rows, mean_curves, store_unit, stored_packs, unit_path, verified_keys
from ._units import SweepSpec, Unit, compute_unit, maps_key, plan_units
from ._verify import remove_stale_temporaries

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


class _Queue:
    """The units a sweep still needs, handed out one claim at a time (:class:`~._claims.Claims`)."""

    def __init__(self, todo: list[Unit], claims: Claims, results_dir, reader: Reader, bar: _Progress, poll: float):
        self.pending = {u.key: u for u in todo}
        self.claims, self.results_dir, self.reader, self.bar, self.poll = claims, results_dir, reader, bar, poll
        self.mine: set[str] = set()
        self.computed = 0
        self._packed: tuple | None = None

    def _packed_keys(self) -> set[str]:
        """Keys of every packed unit (the footers are read again only when a pack directory changed)."""
        root = Path(self.results_dir) / "sweep" / "packs"
        dirs = sorted(root.iterdir()) if root.is_dir() else []
        sig = tuple((d.name, d.stat().st_mtime_ns) for d in dirs if d.is_dir())
        if self._packed is None or self._packed[0] != sig:
            self._packed = (sig, {k for p in stored_packs(self.results_dir).values() for k in p.units})
        return self._packed[1]

    def _stored_elsewhere(self, u: Unit) -> bool:
        """Whether another sweep stored ``u`` meanwhile (and it reads back sound)."""
        if not unit_path(u, self.results_dir).exists() and u.key not in self._packed_keys():
            return False
        if u.key not in verified_keys([u], results_dir=self.results_dir, reader=self.reader):
            return False  # damaged, and now quarantined: computed here
        del self.pending[u.key]
        self.bar.step()
        return True

    def take(self) -> Unit | None:
        """Claim the next unit that no live sweep claims and no sweep has stored; None if there is none now."""
        for key, u in list(self.pending.items()):
            if key in self.mine or not self.claims.take(key):
                continue
            if self._stored_elsewhere(u):  # stored by a sweep that released its claim since we planned
                self.claims.release(key)
                continue
            self.mine.add(key)
            return u
        return None

    def store(self, u: Unit, rows) -> None:
        """Store a unit computed here, then give up its claim."""
        store_unit(u, rows, self.results_dir)
        self.claims.release(u.key)
        self.mine.discard(u.key)
        del self.pending[u.key]
        self.computed += 1
        self.bar.step()

    def wait(self) -> bool:
        """Wait while every pending unit is claimed by a live sweep; False when nothing is left for this one."""
        while True:
            others = [u for k, u in list(self.pending.items()) if k not in self.mine]
            others = [u for u in others if not self._stored_elsewhere(u)]
            if not others:
                return False
            if any(not self.claims.held_elsewhere(u.key) for u in others):
                return True  # released without being stored, or its owner died: ours to take
            time.sleep(self.poll)

    def next(self) -> Unit | None:
        """The next unit to compute here, waiting for other sweeps when they hold every one; None when done."""
        while True:
            u = self.take()
            if u is not None or not self.wait():
                return u


def run_sweep(spec: SweepSpec, *, executor: str = "local", results_dir, workers: int | None = None,
              ray_address: str | None = None, progress: bool = True,
              on_unit: Callable[[int, int, float], None] | None = None, claim_timeout: float = CLAIM_TIMEOUT,
              poll: float = 1.0) -> SweepReport:
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
    claim_timeout : float
        Seconds after which the claim of a sweep on another host that stopped refreshing it
        expires (:mod:`._claims`); a claim of a dead process on this host expires at once.
    poll : float
        Seconds between two looks at the units that other sweeps claim.

    Returns
    -------
    SweepReport
        ``computed``: the units this call computed; ``skipped``: the others (stored before,
        or by a concurrent sweep).
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid executors are: {', '.join(EXECUTORS)}")
    if executor == "ray":
        _require_ray()
    if Path(results_dir).exists() and not Path(results_dir).is_dir():
        raise NotADirectoryError(f"results directory {results_dir} is a file; pass a directory")
    t0 = time.monotonic()
    remove_stale_temporaries(results_dir)
    units, context = plan_units(spec, results_dir=results_dir, progress=progress)
    reader = Reader(results_dir)
    done = verified_keys(units, results_dir=results_dir, reader=reader)
    todo = [u for u in units if u.key not in done]
    if executor == "local":
        # Each sanity unit is followed by the degradation unit of the same maps (maps_key), which
        # takes the original model's maps from the cache instead of explaining the states again
        # (about a fifth of a DQN state's cost). The maps are the same bit for bit, so the rows
        # equal those of the other executors, which compute each unit on its own.
        order = {k: i for i, k in enumerate(dict.fromkeys(maps_key(u) for u in todo))}
        todo = sorted(todo, key=lambda u: (order[maps_key(u)], u.experiment != "sanity"))
    bar = _Progress(len(units), len(units) - len(todo), progress, on_unit)
    queue = None
    try:
        with Claims(results_dir, timeout=claim_timeout) as claims:
            queue = _Queue(todo, claims, results_dir, reader, bar, poll)
            if todo:
                run = {"local": _run_local, "processes": _run_processes, "ray": _run_ray}[executor]
                run(queue, context, results_dir, workers=workers, ray_address=ray_address)
    finally:
        bar.close()
    table = load_rows(units, results_dir, reader)
    computed = queue.computed if queue is not None else 0
    return SweepReport(table, len(units), computed, len(units) - computed, time.monotonic() - t0, executor, units,
                       results_dir)


def _run_local(queue: _Queue, context, results_dir, **_):
    cache: dict = {}
    while (u := queue.next()) is not None:
        _, agent, states = context[u.state_config]
        if u.experiment == "sanity":
            cache.clear()  # the maps of an earlier sanity unit whose degradation unit was stored already
        queue.store(u, compute_unit(u, agent, states, maps_cache=cache))


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


def _run_processes(queue: _Queue, context, results_dir, *, workers=None, max_retries: int = 3, **_):
    import multiprocessing as mp
    import pickle

    ctx = mp.get_context("spawn")
    workers = workers or max(1, min(os.cpu_count() or 1, len(queue.pending)))
    blob = pickle.dumps(context)
    in_flight: dict[str, Unit] = {}  # claimed and handed out, not stored yet
    attempts: dict[str, int] = {}
    # SimpleQueue writes synchronously: a "start" put is in the pipe before the worker can die
    tasks, results = ctx.Queue(), ctx.SimpleQueue()

    def fill() -> None:  # one claimed unit per worker at a time: concurrent sweeps take the rest
        while len(in_flight) < workers and (u := queue.take()) is not None:
            in_flight[u.key] = u
            tasks.put(u)

    def spawn():
        proc = ctx.Process(target=_proc_worker, args=(tasks, results, blob), daemon=True)
        proc.start()
        return proc

    fill()
    procs = {}
    for _ in range(workers):
        proc = spawn()
        procs[proc.pid] = proc
    running: dict[int, str] = {}  # worker pid -> unit key it announced
    try:
        while True:
            if not in_flight:
                if not queue.wait():
                    break
                fill()
                continue
            if not results._reader.poll(1.0):  # nothing for a second: look for dead workers
                for pid, proc in list(procs.items()):
                    if proc.exitcode is None:
                        continue
                    del procs[pid]  # a dead worker: hand its unit out again, start a replacement
                    key = running.pop(pid, None)
                    if key is not None and key in in_flight:
                        attempts[key] = attempts.get(key, 0) + 1
                        if attempts[key] > max_retries:
                            raise RuntimeError(f"unit {key} failed {attempts[key]} times: its worker process died")
                        tasks.put(in_flight[key])
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
                if key in in_flight:
                    queue.store(in_flight.pop(key), payload)
                    fill()
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


def _run_ray(queue: _Queue, context, results_dir, *, workers=None, ray_address=None, **_):
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
        # claimed units in flight: two per CPU of the cluster keep it busy and leave the rest to concurrent sweeps
        cap = max(1, 2 * int(ray.cluster_resources().get("CPU", 1)))
        futures: dict = {}

        def fill() -> None:
            while len(futures) < cap and (u := queue.take()) is not None:
                futures[task.remote(u, [refs[u.state_config]])] = u

        fill()
        while True:
            if not futures:
                if not queue.wait():
                    break
                fill()
                continue
            done, _ = ray.wait(list(futures), num_returns=1)
            for ref in done:
                queue.store(futures.pop(ref), ray.get(ref))
            fill()
    finally:
        if started:
            ray.shutdown()
