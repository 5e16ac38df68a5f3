"""What each saliency map costs, how fast the trainers, environments and videos run: the committed benchmarks.

:func:`load_benchmarks` reads the benchmark results in ``data/benchmarks/`` (``explainers.json``,
``bf16_decision.json``, ``training.json``, ``envs.json``, ``video_speed.json``; ``study_cost.json`` and
``scaleout.json`` are :mod:`saliency_study.scaleout`'s); the ``*_table`` functions tabulate them, keeping
every field a JSON records, so a field a benchmark adds shows as a column; a missing file or part raises
:class:`MissingBenchmark`. :func:`spot_check` times one map per method on the study's own agents, on this
machine. ``*_numbers`` give the numbers chapter 6 quotes (NaN where a table is missing).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_lib.explainers import BF16_DEFAULTS, METHOD_LABELS

from .cache import cached_json
from .catalog import load_spec, official_available, rel_path, study_agent
from .paths import RESULTS_DIR, repo_path

__all__ = ["BENCHMARKS_DIR", "PAPER_SECONDS", "CAPTUM_EQUIVALENT", "LIME_PACKAGE_EQUIVALENT", "MissingBenchmark",
           "Benchmarks", "load_benchmarks", "method_family", "table_numbers", "explainer_table", "comparison_table",
           "bf16_table", "training_table", "envs_table", "video_table", "machine_table", "regenerate_commands",
           "spot_check", "cost_numbers", "bf16_summary", "spot_numbers"]


class MissingBenchmark(LookupError):
    """A benchmark file, or a part of one, that a table needs is not there.

    ``file`` is the JSON file, ``script`` the benchmark (in ``benchmarks/``) that writes it, ``part`` what the file
    lacks (None: the file itself is missing).
    """

    def __init__(self, file: str, script: str, part: str | None = None):
        self.file, self.script, self.part = file, script, part
        super().__init__(f"{file} records no {part}" if part else f"no {file}; benchmarks/{script} writes it")


BENCHMARKS_DIR = "data/benchmarks"
"""Committed benchmark results, relative to the repository root."""
PAPER_SECONDS = MappingProxyType({
    "occlusion": 2.80, "ns_original": 2.62, "sarfa": 3.00, "rise": 1.54,
    "lime_quickshift": 2.75, "lime_felzenszwalb": 1.71, "lime_slic": 2.08,
})
"""Seconds per map that Huber et al.'s parameter search recorded for the chosen parameters: the official result
file ``final_parameters_results.csv`` (Ms. Pac-Man agent, one state per call), as listed in the reference notes
(``reference-huber2021.md`` §4 and §6.3). The search timed Noise Sensitivity with blur and the original score,
hence ``ns_original``; the other variants and the non-perturbation methods were not timed."""
CAPTUM_EQUIVALENT = MappingProxyType({"occlusion": "captum.attr.Occlusion vs occlusion",
                                      "lime_slic": "captum.attr.Lime vs lime_slic"})
LIME_PACKAGE_EQUIVALENT = MappingProxyType({"lime_slic": "lime.lime_image vs lime_slic"})
"""Method → key of its Captum (``lime`` package) equivalent in a benchmark's ``comparisons``."""
_COMPARISONS = {  # key in comparisons -> (name for the prose, their implementation, short label)
    "captum.attr.Occlusion vs occlusion": ("captum_occlusion", "captum.attr.Occlusion", "Captum's Occlusion"),
    "captum.attr.Lime vs lime_slic": ("captum_lime", "captum.attr.Lime (ridge, LIME kernel, our SLIC segments)",
                                      "Captum's Lime"),
    "captum.attr.KernelShap vs lime_slic": ("captum_kernelshap", "captum.attr.KernelShap (our SLIC segments)",
                                            "Captum's KernelShap"),
    "lime.lime_image vs lime_slic": ("lime_package", "lime package: LimeImageExplainer (our SLIC segments)",
                                     "the lime package"),
}
_FAMILY = {"mask_policy": "attention mask", "mask_value": "attention mask", "gradient": "gradient",
           "integrated_gradients": "gradient", "gradcam": "gradient", "random": "chance reference"}
_SKIP_STATES = 50
"""The spot check times states from agent step ``_SKIP_STATES`` on, so the screen is in play."""


def method_family(name: str) -> str:
    """``perturbation``, ``gradient``, ``attention mask`` or ``chance reference``."""
    return _FAMILY.get(name, "perturbation")


@dataclass(frozen=True)
class Benchmarks:
    """The committed benchmark results; a missing file is ``None``."""

    directory: Path
    explainers: dict | None
    training: dict | None
    envs: dict | None
    study_cost: dict | None = None
    scaleout: dict | None = None
    bf16: dict | None = None
    video: dict | None = None


_FILES = ("explainers", "training", "envs", "study_cost", "scaleout", "bf16_decision", "video_speed")


def load_benchmarks(benchmarks_dir: str | os.PathLike = BENCHMARKS_DIR) -> Benchmarks:
    """Read the benchmark files (``<name>.json`` for each of :data:`_FILES`).

    Raises
    ------
    ValueError
        A file exists but is not valid JSON, or ``explainers.json`` lacks ``methods``.
    """
    d, docs = repo_path(benchmarks_dir), []
    for name in _FILES:
        try:
            docs.append(json.loads((d / f"{name}.json").read_text()) if (d / f"{name}.json").is_file() else None)
        except json.JSONDecodeError as e:
            raise ValueError(f"{d / name}.json is not valid JSON ({e}); regenerate it with the command in benchmarks/") from e
    b = Benchmarks(d, *docs)
    if b.explainers is not None and not isinstance(b.explainers.get("methods"), dict):
        raise ValueError(f"{d / 'explainers.json'} has no 'methods' mapping; regenerate it with benchmarks/explainers.py")
    return b


def table_numbers(table, prefix: str, key: str, columns, keys=()) -> dict:
    """``{f"{prefix}_{k}_{c}": value}`` for every row ``k`` (the value of column ``key``) and column ``c`` of
    ``table``, NaN for each of ``keys`` the table lacks (and for anything but a table): names the prose can always
    quote."""
    rows = table.set_index(key).to_dict("index") if isinstance(table, pd.DataFrame) else {}
    return {f"{prefix}_{k}_{c}": rows.get(k, {}).get(c, np.nan) for k in dict.fromkeys([*keys, *rows]) for c in columns}


# -- the explainer benchmark and its comparisons ---------------------------------------------------

def explainer_table(b: Benchmarks) -> pd.DataFrame:
    """One row per benchmarked method: every field ``explainers.json`` records for it, and ``label``, ``family``,
    ``overhead`` (ms ÷ ``floor_ms``, the same forward passes of the bare network at its best chunk size),
    ``ms_per_pass``, ``captum`` (its Captum equivalent), ``captum_ms``, ``captum_speedup`` (Captum's ms ÷
    ours), ``paper_s`` (Huber et al.'s seconds) and ``paper_over_ours``; NaN where there is none."""
    if b.explainers is None:
        raise MissingBenchmark("explainers.json", "explainers.py")
    comps, rows = b.explainers.get("comparisons", {}), []
    for name, r in b.explainers["methods"].items():
        cap, paper = comps.get(CAPTUM_EQUIVALENT.get(name, "")), PAPER_SECONDS.get(name, np.nan)
        rows.append({**r, "method": name, "label": METHOD_LABELS.get(name, name), "family": method_family(name),
                     "overhead": r.get("overhead_ratio", np.nan), "ms_per_pass": r["ms"] / r["forward_passes"],
                     "captum": CAPTUM_EQUIVALENT[name].split(" vs ")[0] if cap else None,
                     "captum_ms": cap["ms"] if cap else np.nan, "captum_speedup": cap["ms"] / r["ms"] if cap else np.nan,
                     "paper_s": paper, "paper_over_ours": 1e3 * paper / r["ms"]})
    return pd.DataFrame(rows)


def _setting(c: dict) -> str:
    for key in ("perturbations_per_eval", "batch_size"):
        if key in c:
            others = ", ".join(f"{k}: {v:,.0f} ms" for k, v in c.get("ms_per_setting", {}).items() if str(k) != str(c[key]))
            return f"{key}={c[key]}" + (f" ({others})" if others else "")
    return ""


def comparison_table(b: Benchmarks) -> pd.DataFrame:
    """Captum and the ``lime`` package against our method, measured in the same benchmark run: columns ``key,
    name, theirs, short, ours, their_ms, setting, our_ms, ratio`` (their ms ÷ ours) and ``floor_bound`` (their ms
    ÷ our method's floor: the largest speed-up any implementation of the same forward passes could reach)."""
    if b.explainers is None:
        raise MissingBenchmark("explainers.json", "explainers.py")
    rows = []
    for key, c in b.explainers.get("comparisons", {}).items():
        ours = key.split(" vs ")[-1]
        name, theirs, short = _COMPARISONS.get(key, (re.sub(r"\W+", "_", key), key.split(" vs ")[0], key.split(" vs ")[0]))
        r = b.explainers["methods"].get(ours)
        if r is not None:
            rows.append({"key": key, "name": name, "theirs": theirs, "short": short, "ours": METHOD_LABELS.get(ours, ours),
                         "their_ms": c["ms"], "setting": _setting(c), "our_ms": r["ms"], "ratio": c["ms"] / r["ms"],
                         "floor_bound": c["ms"] / r["floor_ms"] if r.get("floor_ms") else np.nan})
    if not rows:
        raise MissingBenchmark("explainers.json", "explainers.py", "comparison with Captum or the lime package")
    return pd.DataFrame(rows)


def _library_offers_bf16(name: str) -> bool | None:
    """Whether :func:`get_explainer` accepts ``precision="bf16"`` for ``name`` (None: not for a DQN agent)."""
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent
    from saliency_lib.explainers import get_explainer

    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    try:
        get_explainer(name, agent, precision="bf16")
    except ValueError as e:
        return False if "precision='bf16'" in str(e) else None
    return True


def bf16_table(b: Benchmarks) -> pd.DataFrame:
    """The bf16 decision (``bf16_decision.json``): per agent kind and method ``kind, method, label, agents,
    states, min_spearman`` (the lowest Spearman ρ of a bf16 map with its float32 map over every state of every
    agent of the kind), ``bf16_speedup`` (the smallest over those agents, against the library's float32
    default), ``precision``, ``reason`` and ``offered`` (whether the library accepts ``precision="bf16"``)."""
    if b.bf16 is None:
        raise MissingBenchmark("bf16_decision.json", "bf16_decision.py")
    rows = [{"kind": kind, "method": name, "label": METHOD_LABELS.get(name, name), "agents": len(d["agents"]),
             "states": d["states_per_agent"], "min_spearman": d["min_spearman"], "bf16_speedup": d["min_bf16_speedup"],
             "precision": d["precision"], "reason": d["reason"],
             "offered": {True: "yes", False: "no", None: None}[_library_offers_bf16(name)]}
            for kind, methods in b.bf16.get("decision", {}).items() for name, d in methods.items()]
    if not rows:
        raise MissingBenchmark("bf16_decision.json", "bf16_decision.py", "decision")
    return pd.DataFrame(rows)


# -- training, environments, video ----------------------------------------------------------------------

_RUNS = {  # training run -> label
    "ours_dqn_default": "Our DQN trainer, defaults", "ours_dqn_matched": "Our DQN trainer, CleanRL's replay ratio",
    "cleanrl_style_dqn": "CleanRL-style DQN loop (benchmarks/cleanrl_style_dqn.py)",
    "ours_dqn_fp32": "Our DQN trainer, defaults in float32", "ours_a2c_double": "Our Mask-A2C trainer (double masks)",
    "ours_a2c_double_fp32": "Our Mask-A2C trainer (double masks) in float32"}


def training_table(b: Benchmarks) -> pd.DataFrame:
    """Agent steps and frames per second of our trainers and of a CleanRL-style DQN loop: columns ``key, run,
    setting, steps_per_s, frames_per_s, vs_cleanrl`` (÷ the CleanRL-style loop). The settings are those the file
    records; a file without them gets the trainers' current defaults, marked "(defaults now)"."""
    if b.training is None:
        raise MissingBenchmark("training.json", "training.py")
    from saliency_lib.train import A2CArgs, DQNArgs

    d, a = vars(DQNArgs()), vars(A2CArgs())
    now = {"ours_dqn_default": d, "ours_dqn_matched": {**d, "batch_size": 32, "train_freq": 4},
           "ours_dqn_fp32": {**d, "precision": "fp32"}, "ours_a2c_double": a, "ours_a2c_double_fp32": {**a, "precision": "fp32"}}
    recorded = b.training.get("settings", {})

    def setting(key: str) -> str:
        if key == "cleanrl_style_dqn":
            return "1 env, full obs and next-obs in replay, batch 32 every 4 steps"
        if key not in now and key not in recorded:
            return ""
        s, mark = (recorded[key], "") if key in recorded else (now[key], " (defaults now)")
        if key.startswith("ours_a2c"):
            return f"{s['num_envs']} envs, {s['num_steps']}-step rollouts, precision={s['precision']!r}{mark}"
        return f"{s['num_envs']} envs, batch {s['batch_size']} every {s['train_freq']} steps, precision={s['precision']!r}{mark}"

    sps = b.training["agent_steps_per_s"]
    base = sps.get("cleanrl_style_dqn")
    return pd.DataFrame([{"key": k, "run": _RUNS.get(k, k), "setting": setting(k), "steps_per_s": v,
                          "frames_per_s": b.training.get("frames_per_s", {}).get(k, 4 * v),
                          "vs_cleanrl": v / base if base else np.nan} for k, v in sps.items()])


_ENVS = {  # backend -> (label, used by)
    "gymnasium_sync_ours": ("gymnasium SyncVectorEnv over our make_env wrappers", ""),
    "gymnasium_async_ours": ("gymnasium AsyncVectorEnv over our make_env wrappers", ""),
    "ale_vector_gray84": ("ale-py AtariVectorEnv, grayscale 84×84 (equal to the dqn preset)", "DQN trainer"),
    "ale_vector_rgb": ("ale-py AtariVectorEnv, RGB 210×160 (mask_a3c preset)", "Mask-A2C trainer"),
    "envpool_gray84": ("envpool, grayscale 84×84", ""),
}


def envs_table(b: Benchmarks) -> pd.DataFrame:
    """Agent steps per second of each vectorised-environment backend (random actions): columns ``key, backend,
    used_by, steps_per_s, vs_sync`` (÷ gymnasium's SyncVectorEnv) and ``note`` (why a backend did not run)."""
    if b.envs is None:
        raise MissingBenchmark("envs.json", "envs.py")
    sps = b.envs["agent_steps_per_s"]
    base = sps.get("gymnasium_sync_ours")
    rows = []
    for k, v in sps.items():
        ok = isinstance(v, (int, float))
        label, used = _ENVS.get(k, (k, ""))
        rows.append({"key": k, "backend": label, "used_by": used, "steps_per_s": v if ok else np.nan,
                     "vs_sync": v / base if ok and isinstance(base, (int, float)) else np.nan, "note": "" if ok else str(v)})
    return pd.DataFrame(rows)


def video_table(b: Benchmarks) -> pd.DataFrame:
    """The saliency video's speed (``video_speed.json``, ``benchmarks/video.py``): one row per run with every
    scalar field it records (``agent, method, maps_per_second, forward_passes_per_map, wall_seconds`` ...) and
    ``label``; a skipped run keeps its reason in ``skipped``."""
    if b.video is None:
        raise MissingBenchmark("video_speed.json", "video.py")
    rows = [{k: v for k, v in r.items() if not isinstance(v, (list, dict))} for r in b.video.get("runs", [])]
    if not rows:
        raise MissingBenchmark("video_speed.json", "video.py", "run")
    return pd.DataFrame(rows).assign(label=lambda t: [METHOD_LABELS.get(m, m) for m in t["method"]])


# -- provenance ------------------------------------------------------------------------------------------

def _load(*values) -> str:
    return " → ".join(f"{x:.1f}" for x in values if x is not None)


def machine_table(b: Benchmarks) -> pd.DataFrame:
    """Where and how each benchmark ran, as recorded in its JSON: ``benchmark, date, cpu, cpus, threads, load,
    versions`` (empty without any benchmark file)."""
    rows = []
    if b.explainers is not None:
        m = b.explainers.get("machine", {})
        rows.append({"benchmark": "explainers.json", "date": m.get("date", "")[:10], "cpu": m.get("cpu"),
                     "cpus": m.get("logical_cpus"), "threads": m.get("torch_threads"),
                     "load": _load(m.get("load_average_at_start", [None])[0], m.get("load_average_at_end", [None])[0]),
                     "versions": ", ".join(f"{k} {m[k]}" for k in ("python", "torch", "captum", "lime", "scikit_image",
                                                                  "numpy") if k in m)})
    if b.training is not None:
        la = b.training.get("load_avg_at_end")
        rows.append({"benchmark": "training.json", "date": "", "cpu": None, "cpus": b.training.get("cpu_count"),
                     "threads": b.training.get("torch_threads"), "load": f"{la[0]:.1f} (end)" if la else "",
                     "versions": f"game {b.training.get('game')}, {b.training.get('timed_steps'):,} timed steps"})
    if b.envs is not None:
        la = b.envs.get("load_avg")
        rows.append({"benchmark": "envs.json", "date": "", "cpu": b.envs.get("machine"), "cpus": b.envs.get("cpu_count"),
                     "threads": None, "load": f"{la[0]:.1f}" if la else "", "versions": f"{b.envs.get('num_envs')} envs"})
    for name, doc in (("study_cost.json", b.study_cost), ("scaleout.json", b.scaleout)):
        if doc is not None:
            m = doc.get("machine", {})
            rows.append({"benchmark": name, "date": m.get("date", "")[:10], "cpu": m.get("cpu"), "cpus": m.get("logical_cpus"),
                         "threads": m.get("torch_threads"),
                         "load": _load(m.get("load_average", [None])[0], m.get("load_average_at_end", [None])[0]),
                         "versions": ", ".join(f"{k} {m[k]}" for k in ("python", "torch", "ray", "numpy", "commit") if m.get(k))})
    if b.video is not None:
        runs = [r for r in b.video.get("runs", []) if "load_avg_before" in r]
        rows.append({"benchmark": "video_speed.json", "date": "", "cpu": b.video.get("cpu_model"),
                     "cpus": b.video.get("cpu_count"), "threads": b.video.get("torch_threads"),
                     "load": _load(runs[0]["load_avg_before"][0], runs[-1]["load_avg_after"][0]) if runs else "",
                     "versions": f"torch {b.video.get('torch')}"})
    if not rows:
        return pd.DataFrame(columns=["benchmark", "date", "cpu", "cpus", "threads", "load", "versions"])
    return pd.DataFrame(rows)


def regenerate_commands(b: Benchmarks) -> list[str]:
    """Shell commands that rewrite the benchmark JSON files with the settings recorded in them, one per benchmark
    (long ones continued on indented lines)."""
    d = rel_path(b.directory)
    ex, tr, en = ([f"python benchmarks/{s}.py --json {d}/{s}.json"] for s in ("explainers", "training", "envs"))
    if b.explainers is not None:
        m = re.search(r"median of (\d+) rounds", b.explainers.get("setting", {}).get("statistic", ""))
        states = b.explainers.get("bf16_agreement", {}).get("states")
        ex += ([f"--repeats {m.group(1)}"] if m else []) + ([f"--bf16-states {states}"] if states else [])
    if b.training is not None:
        tr += [f"--steps {b.training['timed_steps']}", f"--learning-starts {b.training['learning_starts']}",
               f"--game {b.training['game']}"]
    if b.envs is not None:
        en.append(f"--num-envs {b.envs['num_envs']}")
    cost = [f"python benchmarks/study_cost.py --json {d}/study_cost.json"]
    s = (b.study_cost or {}).get("setting", {})
    cost += [f"--{flag} {s[key]}" for flag, key in (("states", "states_per_call"), ("map-states", "map_states"),
                                                     ("repeats", "repeats"), ("cascade-states", "cascade_states"))
             if isinstance(s.get(key), int)]
    video = [f"python benchmarks/video.py --json {d}/video_speed.json"]
    steps = {r.get("max_steps") for r in (b.video or {}).get("runs", []) if r.get("max_steps")}
    video += [f"--max-steps {steps.pop()}"] if len(steps) == 1 else []
    lines = [c[0] + (" \\\n    " + " ".join(c[1:]) if len(c) > 1 else "")
             for c in (ex, tr, en, cost, [f"python benchmarks/scaleout.py --json {d}/scaleout.json"], video)]
    return lines


# -- the spot check on the study's agents ------------------------------------------------------------------

def _time_methods(spec: str, methods: list[str], n_states: int, seed: int) -> dict:
    """One timed map per state and method, one state per call, 1 thread (see :func:`spot_check`)."""
    import torch
    from threadpoolctl import threadpool_limits

    from saliency_lib.explainers import get_explainer
    from saliency_lib.states import collect_states

    agent = load_spec(spec)
    states = collect_states(agent, _SKIP_STATES + n_states, seed=seed).subset(slice(_SKIP_STATES, None))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows, load0 = [], os.getloadavg()[0]
    try:
        with threadpool_limits(1):
            for name in methods:
                try:
                    exp = get_explainer(name, agent)
                except (ValueError, TypeError):  # e.g. attention masks of an agent without masks
                    continue
                times, passes = [], 0
                for i in range(n_states):
                    s = states.subset([i])
                    t = time.perf_counter()
                    passes = exp.attribute(s.states, target=s.actions, hidden=s.hidden).forward_passes
                    times.append(time.perf_counter() - t)
                rows.append({"method": name, "ms": 1e3 * statistics.median(times), "forward_passes": int(passes)})
    finally:
        torch.set_num_threads(threads)
    return {"agent": spec, "input_shape": list(states.states.shape[1:]), "rows": rows,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "load_average": [load0, os.getloadavg()[0]]}


def spot_check(game: str, *, states: int, methods=None, seed: int = 0, results_dir: str | os.PathLike = RESULTS_DIR,
               benchmarks: Benchmarks | None = None) -> pd.DataFrame | None:
    """Time one map per method on the study's own agents for ``game``, on this machine.

    The agents are the study's DQN agent when it exists and the official Mask-A3C agent when it is fetched.
    Each method explains ``states`` states of a greedy game (from agent step 50 on), one state per call with its
    default parameters, on one thread; the median per state is kept. There is no warm-up and no repetition: the
    numbers show the order of magnitude, the benchmark the precise ratios. ``methods`` None: every method of
    ``explainers.json`` and the masks. Cached under ``results_dir`` by agent, weights, methods, states, seed and
    machine.

    Returns
    -------
    DataFrame or None
        Columns ``agent, method, label, input_shape, forward_passes, ms, ms_per_pass, benchmark_ms,
        benchmark_passes, date, load_average`` (``benchmark_*``: the method in ``explainers.json``, NaN if absent);
        None when there is no agent to time.
    """
    import torch

    from saliency_lib.versions import cpu_model

    specs = ([s] if (s := study_agent(game, results_dir=results_dir)) is not None else []) + (
        [f"official:{game}"] if official_available(game) else [])
    if not specs:
        return None
    bench = benchmarks.explainers["methods"] if benchmarks is not None and benchmarks.explainers is not None else {}
    methods = list(methods) if methods is not None else [*bench, *[m for m in ("mask_policy", "mask_value") if m not in bench]]
    machine = {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "torch": torch.__version__}
    parts = []
    for spec in specs:
        config = {"what": "runtime_spot_check", "agent": spec, "sha256": load_spec(spec).meta.get("sha256"),
                  "methods": methods, "states": states, "skip": _SKIP_STATES, "seed": seed, "machine": machine}
        v = cached_json("runtime_spot", config, lambda spec=spec: _time_methods(spec, methods, states, seed),
                        results_dir=results_dir)
        parts += [{"agent": spec, "method": r["method"], "label": METHOD_LABELS.get(r["method"], r["method"]),
                   "input_shape": "×".join(map(str, v["input_shape"])), "forward_passes": r["forward_passes"], "ms": r["ms"],
                   "ms_per_pass": r["ms"] / r["forward_passes"], "benchmark_ms": bench.get(r["method"], {}).get("ms", np.nan),
                   "benchmark_passes": bench.get(r["method"], {}).get("forward_passes", np.nan), "date": v["date"][:10],
                   "load_average": v["load_average"][0]} for r in v["rows"]]
    return pd.DataFrame(parts)


# -- the numbers the prose quotes ----------------------------------------------------------------------------

def _span(s) -> tuple[float, float]:
    s = pd.Series(s, dtype=float).dropna()
    return (float(s.min()), float(s.max())) if len(s) else (np.nan, np.nan)


def cost_numbers(table) -> dict:
    """What costs what (:func:`explainer_table`; NaN and "NA" for anything but a table): the perturbation methods'
    forward passes, ms and overhead over their floor (``pert_*_min``/``_max``), ms per pass, the other methods' most
    passes (``cheap_passes``), the dearest and the cheapest real explanation (``dear_*``, ``cheap_*``,
    ``dear_over_cheap``), and the range of Huber et al.'s time ÷ ours (``paper_min``/``_max`` with their methods,
    ``paper_none``: the list of methods without)."""
    t = table if isinstance(table, pd.DataFrame) else pd.DataFrame(
        columns=["family", "ms", "label", "paper_over_ours", "paper_s", "forward_passes", "overhead", "ms_per_pass"])
    pert, real = t[t["family"] == "perturbation"], t[t["family"] != "chance reference"].sort_values("ms")
    paper = t.dropna(subset=["paper_over_ours"]).sort_values("paper_over_ours")
    out = {}
    for name, col in (("passes", "forward_passes"), ("ms", "ms"), ("overhead", "overhead"), ("ms_per_pass", "ms_per_pass")):
        out[f"pert_{name}_min"], out[f"pert_{name}_max"] = _span(pert[col])
    out["cheap_passes"] = float(t.loc[t["family"] != "perturbation", "forward_passes"].max()) if len(t) else np.nan
    for name, row in (("dear", real.iloc[-1] if len(real) else None), ("cheap", real.iloc[0] if len(real) else None)):
        out[f"{name}_label"], out[f"{name}_ms"] = (row["label"], float(row["ms"])) if row is not None else ("NA", np.nan)
    out["dear_over_cheap"] = out["dear_ms"] / out["cheap_ms"]
    for name, row in (("paper_min", paper.iloc[0] if len(paper) else None),
                      ("paper_max", paper.iloc[-1] if len(paper) else None)):
        out[name], out[f"{name}_label"] = (float(row["paper_over_ours"]), row["label"]) if row is not None else (np.nan, "NA")
    out["paper_none"] = t.loc[t["paper_s"].isna(), "label"].tolist()
    return out


def bf16_summary(table) -> dict | None:
    """The bf16 decision (:func:`bf16_table`) in numbers and method names, None for anything but a table:
    ``agents``, ``states``, the methods whose maps kept ρ ≥ 0.99 on every agent (``kept``) and not (``not_kept``),
    the ``(kind, method, speed-up)`` where bf16 was faster than the float32 default (``faster``), the library's bf16
    defaults (``defaults``, ``(kind, method)``) and whether they are exactly the methods that kept their maps and were
    faster (``defaults_match``)."""
    if not isinstance(table, pd.DataFrame):
        return None
    keeps = table.groupby("method")["min_spearman"].min() >= 0.99
    faster = table[table["bf16_speedup"] > 1]
    both = {(r.kind, r.method) for r in faster.itertuples() if keeps.get(r.method, False)}
    return {"agents": int(table["agents"].sum() / table["method"].nunique()), "states": int(table["states"].iloc[0]),
            "kept": list(keeps[keeps].index), "not_kept": list(keeps[~keeps].index),
            "faster": [(r.kind, r.method, float(r.bf16_speedup)) for r in faster.itertuples()],
            "defaults": sorted(BF16_DEFAULTS), "defaults_match": both == set(BF16_DEFAULTS)}


def spot_numbers(table, kinds=("dqn", "mask_a3c")) -> dict:
    """Per agent kind of the spot check: the median ms per forward pass of the methods with at least 100 passes
    (``spot_<kind>_ms_per_pass``), the benchmark network's (``spot_<kind>_bench_ms_per_pass``) and their ratio
    (``spot_<kind>_ratio``); NaN where the kind was not timed or the profile timed only cheap methods."""
    out = {}
    for kind in kinds:
        g = (table[table["agent"].str.startswith("official:") == (kind != "dqn")] if isinstance(table, pd.DataFrame)
             else pd.DataFrame())
        many = g[g["forward_passes"] >= 100] if len(g) else g
        mine = float(many["ms_per_pass"].median()) if len(many) else np.nan
        bench = float((many["benchmark_ms"] / many["benchmark_passes"]).median()) if len(many) else np.nan
        out.update({f"spot_{kind}_ms_per_pass": mine, f"spot_{kind}_bench_ms_per_pass": bench,
                    f"spot_{kind}_ratio": mine / bench})
    return out
