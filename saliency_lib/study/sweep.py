"""The study as units of work, run by an interchangeable executor.

A **unit** is (agent, game, method, experiment, substrate, chunk of states): it
explains those states with the method and scores the maps with the experiment's
metric, giving rows of the tidy results table (:mod:`saliency_lib.results`).
Everything a unit computes is determined by the unit itself: its state ids, the
metric's seed (per-state random streams are keyed by the state id) and a torch
seed derived from the unit's key. No result depends on which worker runs a unit
or in which order, so the executors give bit-identical tables:

* ``local``: in this process, one unit after the other (the default);
* ``processes``: local worker processes (``concurrent.futures``, spawn);
* ``ray``: Ray tasks on a local Ray started for the run, or on an existing cluster
  (``ray_address`` or ``RAY_ADDRESS``). The agent and the states go into Ray's
  object store once; each worker deserialises them once and keeps them.

Results: the driver writes each finished unit's rows atomically to
``<results_dir>/sweep/<experiment>/<unit key>.parquet``. A unit whose file exists
is never computed again, so a re-run of a finished sweep computes nothing and an
interrupted sweep resumes where it stopped. A worker that dies mid-unit leaves
nothing behind; the unit is retried (Ray's ``max_retries``; a new pool for
``processes``).

Every unit runs with one torch thread: the same reductions in every executor.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..games import HUBER_GAMES
from ..results import KEY, canonical_json, config_hash, read_table, write_table
from .paths import RESULTS_DIR, repo_path

__all__ = [
    "EXECUTORS", "EXPERIMENTS", "SUBSTRATES", "Unit", "SweepSpec", "SweepReport", "plan_units", "compute_unit",
    "run_sweep", "load_units", "study_states", "STUDY_METHODS", "SWEEP_PROFILES", "sweep_sizes", "describe_params",
    "study_agents", "profile_specs", "study_results", "add_run_parser",
]

EXECUTORS = ("local", "processes", "ray")
EXPERIMENTS = ("sanity", "insertion", "deletion")
SUBSTRATES = ("black", "random", "blur")
RANDOM_BASELINE = "random"
"""Method name of the uniform-random map baseline (insertion/deletion only)."""
SANITY_SIMILARITIES = ("spearman", "ssim", "ssim_2d", "hog_pearson")
RAY_INSTALL = "pip install 'saliency-lib[ray]'  (or: pip install 'ray>=2.9')"


@dataclass(frozen=True)
class Unit:
    """One unit of work; its :attr:`key` names its result file."""

    experiment: str
    """``"sanity"`` or ``"degradation"`` (insertion and/or deletion on each substrate, one map per state)."""
    agent: str
    game: str
    method: str
    degradation: tuple[tuple[str, str], ...]
    """(mode, substrate) pairs of a degradation unit, e.g. ``(("insertion", "black"),)``; empty for sanity."""
    states: tuple[int, ...]
    state_config: str
    """Canonical JSON of the state set: agent, weights hash, n, seed."""
    params: str
    """Canonical JSON of the explainer's parameters (defaults: ``{}``)."""
    seed: int
    batch_size: int = 256

    @property
    def key(self) -> str:
        d = asdict(self)
        d.pop("batch_size")  # changes speed, not numbers
        return config_hash(d)

    @property
    def torch_seed(self) -> int:
        return int(self.key, 16) % (2**31 - 1)


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep covers: every (agent, method, experiment, substrate) on ``n_states`` states."""

    agents: tuple[str, ...]
    methods: tuple[str, ...]
    experiments: tuple[str, ...] = EXPERIMENTS
    substrates: tuple[str, ...] = SUBSTRATES
    n_states: int = 20
    chunk: int = 10
    seed: int = 0
    state_seed: int = 0
    params: dict = field(default_factory=dict)
    """Explainer parameters per method, e.g. ``{"rise": {"n_masks": 1000}}``."""
    batch_size: int = 256

    def __post_init__(self):
        bad = sorted(set(self.experiments) - set(EXPERIMENTS))
        if bad:
            raise ValueError(f"unknown experiments {bad}; valid experiments are: {', '.join(EXPERIMENTS)}")
        bad = sorted(set(self.substrates) - set(SUBSTRATES))
        if bad:
            raise ValueError(f"unknown substrates {bad}; valid substrates are: {', '.join(SUBSTRATES)}")
        from ..explainers import EXPLAINERS

        bad = sorted(set(self.methods) - set(EXPLAINERS))
        if bad:
            raise ValueError(f"unknown methods {bad}; valid methods are: {', '.join(EXPLAINERS)}")
        for name in ("n_states", "chunk", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not self.agents:
            raise ValueError("a sweep needs at least one agent")


def applicable(method: str, agent) -> bool:
    """Whether ``method`` can explain ``agent`` (mask attention needs a Mask-A3C agent with masks)."""
    if method.startswith("mask_"):
        return getattr(agent.net, "config", None) is not None and getattr(agent.net.config, "variant", "none") in (
            ("policy", "double") if method == "mask_policy" else ("value", "double"))
    return True


# -- states and agents -----------------------------------------------------------------------

def _states_dir(results_dir) -> Path:
    return repo_path(results_dir) / "sweep" / "states"


def state_config(agent_spec: str, agent, n: int, seed: int) -> dict:
    return {"agent": str(agent_spec), "weights": agent.meta.get("sha256"), "n": int(n), "seed": int(seed)}


def study_states(agent_spec: str, n: int, *, seed: int = 0, results_dir=RESULTS_DIR, agent=None, progress: bool = False):
    """The first ``n`` states of the agent's greedy game from the fixed start (cached).

    Returns ``(StateSet, state_config)``. The set holds the raw frames too, for figures.
    """
    from ..agents import load_agent
    from ..states import StateSet, collect_states

    agent = agent if agent is not None else load_agent(agent_spec)
    cfg = state_config(agent_spec, agent, n, seed)
    path = _states_dir(results_dir) / f"states-{config_hash(cfg)}.pt"
    if path.exists():
        return StateSet.load(path), cfg
    with _one_thread():
        states = collect_states(agent, n, seed=seed, frames=True, progress=progress)
    states.save(path)
    return states, cfg


class _one_thread:
    """Run a block with one torch thread and one BLAS/OpenMP thread: the same floating-point
    reductions in every executor (Ray workers default to one BLAS thread, a local process not)."""

    def __enter__(self):
        from threadpoolctl import threadpool_limits

        self.n = torch.get_num_threads()
        torch.set_num_threads(1)
        self.limits = threadpool_limits(1)

    def __exit__(self, *exc):
        self.limits.restore_original_limits()
        torch.set_num_threads(self.n)


# -- planning ----------------------------------------------------------------------------------

def plan_units(spec: SweepSpec, *, results_dir=RESULTS_DIR, progress: bool = False) -> tuple[list[Unit], dict]:
    """The units of ``spec`` and a context ``{state_config_json: (agent_spec, agent, states)}``."""
    from ..agents import load_agent

    units, context = [], {}
    for spec_agent in spec.agents:
        agent = load_agent(spec_agent)
        states, scfg = study_states(spec_agent, spec.n_states, seed=spec.state_seed, results_dir=results_dir,
                                    agent=agent, progress=progress)
        skey = canonical_json(scfg)
        context[skey] = (spec_agent, agent, states)
        chunks = [tuple(range(i, min(i + spec.chunk, spec.n_states))) for i in range(0, spec.n_states, spec.chunk)]
        methods = [m for m in spec.methods if applicable(m, agent)]
        # one degradation unit per method and chunk: its maps are computed once for every (mode, substrate)
        degradation = tuple((m, s) for m in ("insertion", "deletion") if m in spec.experiments for s in spec.substrates)
        kinds = [("sanity", (), [m for m in methods if m != RANDOM_BASELINE])] if "sanity" in spec.experiments else []
        if degradation:
            kinds.append(("degradation", degradation, list(dict.fromkeys([*methods, RANDOM_BASELINE]))))
        for experiment, pairs, names in kinds:
            for method in names:
                params = canonical_json(spec.params.get(method, {}))
                for ch in chunks:
                    units.append(Unit(experiment, spec_agent, agent.game, method, pairs, ch, skey, params,
                                      spec.seed, spec.batch_size))
    return units, context


# -- computing one unit ------------------------------------------------------------------------

def _hidden(states, ids):
    if states.hidden is None:
        return None
    idx = torch.as_tensor(ids)
    return tuple(h[idx] for h in states.hidden)


def compute_unit(unit: Unit, agent, states, *, _fault: str | None = None) -> pd.DataFrame:
    """The rows of ``unit`` for the loaded ``agent`` and its full ``states`` set."""
    from ..explainers import get_explainer
    from ..metrics import Deletion, Insertion, RandomisationTest
    from ..metrics.insertion_deletion import random_saliency

    ids = list(unit.states)
    x, hid, tgt = states.states[ids], _hidden(states, ids), states.actions[ids]
    params = dict(json.loads(unit.params))
    with _one_thread():
        torch.manual_seed(unit.torch_seed)
        if unit.experiment == "sanity":
            params.setdefault("batch_size", unit.batch_size)
            explainer = get_explainer(unit.method, agent, **params)
            test = RandomisationTest(order="cascading", init="glorot", similarities=SANITY_SIMILARITIES, seed=unit.seed)
            _maybe_fault(unit, _fault)
            rows = test.evaluate(agent, x, explainer=explainer, hidden=hid, target=tgt, state_ids=ids,
                                 method=unit.method, agent_name=unit.agent)
        else:
            if unit.method == RANDOM_BASELINE:
                maps = random_saliency(len(ids), tuple(x.shape[2:]), seed=unit.seed, state_ids=ids)
            else:
                params.setdefault("batch_size", unit.batch_size)
                maps = get_explainer(unit.method, agent, **params).attribute(x, target=tgt, hidden=hid).maps
            _maybe_fault(unit, _fault)  # test hook: a worker dies between the maps and the metric
            parts = []
            for mode, substrate in unit.degradation:
                metric = (Insertion if mode == "insertion" else Deletion)(substrate=substrate, batch_size=unit.batch_size, seed=unit.seed)
                parts.append(metric.evaluate(agent, x, saliency=maps, hidden=hid, target=tgt, state_ids=ids,
                                             method=unit.method, agent_name=unit.agent))
            rows = pd.concat(parts, ignore_index=True)
    return rows.assign(config_hash=unit.key)


# -- storage -----------------------------------------------------------------------------------

def unit_path(unit: Unit, results_dir=RESULTS_DIR) -> Path:
    return repo_path(results_dir) / "sweep" / unit.experiment / f"{unit.key}.parquet"


def _store(unit: Unit, rows: pd.DataFrame, results_dir) -> None:
    got = set(rows["state"].astype(int)) if len(rows) else set()
    if got != set(unit.states):
        raise RuntimeError(f"unit {unit.key} returned rows for states {sorted(got)}, expected {list(unit.states)}")
    write_table(rows, unit_path(unit, results_dir))  # atomic: temporary file, fsync, rename


def load_units(units: Iterable[Unit], *, results_dir=RESULTS_DIR) -> pd.DataFrame:
    """All stored rows of ``units``, sorted by the results key."""
    from ..results import empty_table

    parts = [read_table(unit_path(u, results_dir)) for u in units]
    if not parts:
        return empty_table()
    df = pd.concat(parts, ignore_index=True)
    return df.sort_values(list(KEY), kind="stable").reset_index(drop=True)


# -- executors ---------------------------------------------------------------------------------

@dataclass
class SweepReport:
    """What a sweep did: the table and how many units it computed."""

    table: pd.DataFrame
    total: int
    computed: int
    skipped: int
    seconds: float
    executor: str


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


def run_sweep(spec: SweepSpec, *, executor: str = "local", results_dir=RESULTS_DIR, workers: int | None = None,
              ray_address: str | None = None, progress: bool = True,
              on_unit: Callable[[int, int, float], None] | None = None,
              _fault: str | None = None) -> SweepReport:
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
    todo = [u for u in units if not unit_path(u, results_dir).exists()]
    bar = _Progress(len(units), len(units) - len(todo), progress, on_unit)
    try:
        if todo:
            run = {"local": _run_local, "processes": _run_processes, "ray": _run_ray}[executor]
            run(todo, context, results_dir, bar, workers=workers, ray_address=ray_address, fault=_fault)
    finally:
        bar.close()
    table = load_units(units, results_dir=results_dir)
    return SweepReport(table, len(units), len(todo), len(units) - len(todo), time.monotonic() - t0, executor)


def _maybe_fault(unit: Unit, fault: str | None) -> None:
    """Test hook: the first unit to get here kills its own worker process (once per ``fault`` directory)."""
    if fault is None:
        return
    Path(fault).mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(Path(fault) / "killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, f"{unit.key} {os.getpid()}".encode())
    os.close(fd)
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def _run_local(todo, context, results_dir, bar, **_):
    for u in todo:
        _, agent, states = context[u.state_config]
        _store(u, compute_unit(u, agent, states), results_dir)
        bar.step()


# processes: spawned workers, each given the pickled contexts once. A worker announces each
# unit before computing it, so when one dies the driver knows which unit to hand out again.

def _proc_worker(tasks, results, blob: bytes, fault: str | None) -> None:
    import pickle

    torch.set_num_threads(1)
    context = pickle.loads(blob)
    for unit in iter(tasks.get, None):
        results.put(("start", os.getpid(), unit.key, None))
        _, agent, states = context[unit.state_config]
        try:
            rows = compute_unit(unit, agent, states, _fault=fault)
        except Exception as e:  # noqa: BLE001 - reported to the driver, which raises it
            results.put(("error", os.getpid(), unit.key, f"{type(e).__name__}: {e}"))
            continue
        results.put(("done", os.getpid(), unit.key, rows))


def _run_processes(todo, context, results_dir, bar, *, workers=None, fault=None, max_retries: int = 3, **_):
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
        proc = ctx.Process(target=_proc_worker, args=(tasks, results, blob, fault), daemon=True)
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
                    _store(by_key[key], payload, results_dir)
                    left.discard(key)
                    bar.step()
    finally:
        for _ in procs:
            tasks.put(None)
        for proc in procs.values():
            proc.join(timeout=5)
            if proc.exitcode is None:
                proc.kill()


# ray ------------------------------------------------------------------------------------------

def _require_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ImportError(f"--executor ray needs Ray, which is not installed: {RAY_INSTALL}") from None


_RAY_CONTEXT: dict = {}


def _ray_unit(unit: Unit, refs: list, fault: str | None) -> pd.DataFrame:
    """Ray task body: fetch the (agent, states) context from the object store once per worker."""
    import ray

    if unit.state_config not in _RAY_CONTEXT:
        torch.set_num_threads(1)
        _RAY_CONTEXT[unit.state_config] = ray.get(refs[0])
    _, agent, states = _RAY_CONTEXT[unit.state_config]
    return compute_unit(unit, agent, states, _fault=fault)


def _run_ray(todo, context, results_dir, bar, *, workers=None, ray_address=None, fault=None, **_):
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
        futures = {task.remote(u, [refs[u.state_config]], fault): u for u in todo}
        remaining = list(futures)
        while remaining:
            done, remaining = ray.wait(remaining, num_returns=1)
            for ref in done:
                u = futures[ref]
                _store(u, ray.get(ref), results_dir)
                bar.step()
    finally:
        if started:
            ray.shutdown()


# -- the study's sweeps per profile -------------------------------------------------------------

#: The explainers of the study: Huber et al.'s five with their three LIME segmentations and
#: both NS variants, the gradient baselines, and the Mask-A3C masks where the agent has them.
#: The random baseline joins the degradation units by itself.
STUDY_METHODS = ("occlusion", "ns_original", "ns_chosen", "sarfa", "rise", "lime_slic", "lime_quickshift",
                 "lime_felzenszwalb", "gradient", "integrated_gradients", "gradcam", "mask_policy", "mask_value")

_CHEAP = {"occlusion": {"patch": 12}, "ns_original": {"stride": 12}, "ns_chosen": {"stride": 12},
          "sarfa": {"stride": 12}, "rise": {"n_masks": 64}, "lime_slic": {"n_samples": 64},
          "lime_quickshift": {"n_samples": 64}, "lime_felzenszwalb": {"n_samples": 64},
          "integrated_gradients": {"n_steps": 8}}
# The Mask-A3C network costs ~35 DQN forward passes per row here (80x80 convolutions and a
# ConvLSTM), so below the full profile its perturbation methods run on a coarser grid.
_COARSE = {"occlusion": {"patch": 4}, "ns_original": {"stride": 4}, "ns_chosen": {"stride": 4},
           "sarfa": {"stride": 4}, "rise": {"n_masks": 500}, "lime_slic": {"n_samples": 500},
           "lime_quickshift": {"n_samples": 500}, "lime_felzenszwalb": {"n_samples": 500}}

SWEEP_PROFILES = {
    # profile: {agent kind: (n_states, chunk, explainer parameters)}
    "tiny": {"dqn": (2, 2, _CHEAP), "mask_a3c": (2, 2, _CHEAP)},
    "quick": {"dqn": (20, 5, {}), "mask_a3c": (5, 5, _COARSE)},
    "full": {"dqn": (1000, 25, {}), "mask_a3c": (1000, 25, {})},
}
"""States, chunk size and explainer parameters (``{}``: the paper's) per profile and agent kind."""


def sweep_sizes(profile: str, kind: str) -> tuple[int, int, dict]:
    """(states, states per unit, explainer parameters) of an agent kind (preset) in ``profile``;
    kinds other than ``mask_a3c`` get the DQN sizes."""
    if profile not in SWEEP_PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles are: {', '.join(SWEEP_PROFILES)}")
    sizes = SWEEP_PROFILES[profile]
    return sizes.get(kind, sizes["dqn"])


def describe_params(params: dict, *, label: Callable[[str], str] = str, sep: str = " = ") -> str:
    """Explainer parameters as text for the chapters, e.g. ``"Occlusion patch = 4, RISE n_masks = 500"``."""
    return ", ".join(f"{label(m)} {', '.join(f'{k}{sep}{v}' for k, v in kw.items())}" for m, kw in params.items())


def study_agents(game: str, *, results_dir=RESULTS_DIR) -> list[str]:
    """The agents the study explains for ``game``: our DQN agent (if any) and the official Mask-A3C one."""
    from ..agents.official import OFFICIAL_GAMES
    from .agents import official_available, study_agent

    agents = [a for a in [study_agent(game, results_dir=results_dir)] if a]
    if game in OFFICIAL_GAMES and official_available(game):
        agents.append(f"official:{game}")
    return agents


def profile_specs(profile: str, game: str, *, agents: Sequence[str] | None = None, seed: int = 0,
                  results_dir=RESULTS_DIR) -> list[SweepSpec]:
    """The sweeps of one game in ``profile``: one spec per agent (sizes differ by agent kind)."""
    from ..agents import load_agent

    if profile not in SWEEP_PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles are: {', '.join(SWEEP_PROFILES)}")
    specs = []
    for a in (study_agents(game, results_dir=results_dir) if agents is None else agents):
        n, chunk, params = sweep_sizes(profile, load_agent(a).preset)
        specs.append(SweepSpec(agents=(a,), methods=STUDY_METHODS, n_states=n, chunk=chunk, seed=seed, params=params))
    return specs


def study_results(profile: str, games: str | Sequence[str], *, executor: str = "local", results_dir=RESULTS_DIR,
                  agents: Sequence[str] | None = None, seed: int = 0, progress: bool = False, **kw) -> pd.DataFrame:
    """The study's result table for ``games`` in ``profile``: computes only what is not stored.

    This is what ``saliency-study run`` and the book's build run, and what the chapters read;
    all three plan the same units, so a chapter after a run finds everything stored.
    """
    games = [games] if isinstance(games, str) else list(games)
    tables = [run_sweep(spec, executor=executor, results_dir=results_dir, progress=progress, **kw).table
              for g in games for spec in profile_specs(profile, g, agents=agents, seed=seed, results_dir=results_dir)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


# -- command line --------------------------------------------------------------------------------

def add_run_parser(subparsers) -> None:
    """``saliency-study run``: the study's sweep (profile) or a custom one, under any executor."""
    p = subparsers.add_parser("run", help="run the study's sweep (sanity checks, insertion, deletion) under an executor")
    p.add_argument("--profile", choices=tuple(SWEEP_PROFILES), default="quick", help="sizes of the study (default quick)")
    p.add_argument("--games", nargs="+", default=None, help="games (default: Breakout for tiny/quick, the four for full)")
    p.add_argument("--agents", nargs="+", default=None, help="agent specs (default: the study's agents of each game)")
    p.add_argument("--methods", nargs="+", default=None, help="with --agents: explainers (default: the study's)")
    p.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, default=list(EXPERIMENTS))
    p.add_argument("--substrates", nargs="+", choices=SUBSTRATES, default=list(SUBSTRATES))
    p.add_argument("--n-states", type=int, default=None, help="with --agents: states per agent")
    p.add_argument("--chunk", type=int, default=None, help="with --agents: states per unit")
    p.add_argument("--params", default="{}", help="with --agents: JSON of explainer parameters per method")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--ray-address", default=None, help="existing Ray cluster (default: $RAY_ADDRESS, else a local Ray)")
    p.add_argument("--workers", type=int, default=None, help="worker processes / CPUs of a local Ray")
    p.add_argument("--results-dir", default=str(RESULTS_DIR))
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args) -> int:
    progress = not args.no_progress

    def report(done, total, eta):
        if progress:
            print(f"units {done}/{total}, ETA {eta:.0f} s", file=sys.stderr, flush=True)

    custom = args.methods is not None or args.n_states is not None or args.chunk is not None
    if custom and args.agents is None:
        raise SystemExit("--methods, --n-states and --chunk describe a custom sweep and need --agents")
    if custom:
        dqn = SWEEP_PROFILES[args.profile]["dqn"]
        specs = [SweepSpec(agents=tuple(args.agents), methods=tuple(args.methods or STUDY_METHODS),
                           experiments=tuple(args.experiments), substrates=tuple(args.substrates),
                           n_states=args.n_states or dqn[0], chunk=args.chunk or dqn[1], seed=args.seed,
                           params=json.loads(args.params))]
    else:
        games = args.games or (["Breakout"] if args.profile != "full" else list(HUBER_GAMES))
        specs = [dataclasses.replace(s, experiments=tuple(args.experiments), substrates=tuple(args.substrates))
                 for g in games for s in profile_specs(args.profile, g, agents=args.agents, seed=args.seed,
                                                       results_dir=args.results_dir)]
    total = computed = 0
    for spec in specs:
        rep = run_sweep(spec, executor=args.executor, results_dir=args.results_dir, workers=args.workers,
                        ray_address=args.ray_address, progress=progress, on_unit=report)
        total, computed = total + rep.total, computed + rep.computed
        print(json.dumps({"agents": list(spec.agents), "units": rep.total, "computed": rep.computed,
                          "rows": len(rep.table), "seconds": round(rep.seconds, 1)}), flush=True)
    print(f"units: {computed} computed, {total - computed} skipped of {total}", flush=True)
    return 0
