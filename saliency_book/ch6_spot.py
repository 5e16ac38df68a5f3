"""Chapter 6: one timed map per method on the study's own agents, on the machine that builds the chapter.

The benchmarks of :mod:`saliency_book.ch6_runtime` time a random-weight network on the
benchmark machine; this spot check shows what the study's agents cost where the reader runs it.

* :func:`spot_check`: the timed maps (cached under ``results_dir`` per agent, weights,
  methods, states, seed and CPU model).
* :func:`spot_summary`: the cost per forward pass against the benchmark network, in words.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import statistics
import time

import numpy as np
import pandas as pd

from saliency_book.ch6_runtime import Benchmarks, RuntimeChapter
from saliency_book.common import Note
from saliency_lib.explainers import METHOD_LABELS
from saliency_lib.versions import cpu_model
from saliency_study.cache import cached_json
from saliency_study.catalog import official_available, study_agent
from saliency_study.paths import repo_path

__all__ = ["spot_check", "spot_summary"]

_SKIP_STATES = 50
"""The spot check times states from agent step ``_SKIP_STATES`` on, so the screen is in play."""


def _machine() -> dict:
    import torch

    return {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "torch": torch.__version__}


def _spot_agents(cfg: RuntimeChapter) -> list[str]:
    specs = []
    dqn = study_agent(cfg.game, results_dir=cfg.results_dir)
    if dqn is not None:
        specs.append(dqn)
    if official_available(cfg.game):
        specs.append(f"official:{cfg.game}")
    return specs


def _spot_methods(cfg: RuntimeChapter, b: Benchmarks) -> list[str]:
    if cfg.spot["methods"] is not None:
        return list(cfg.spot["methods"])
    bench = list(b.explainers["methods"]) if b.explainers is not None else []
    return bench + [m for m in ("mask_policy", "mask_value") if m not in bench]


def _time_methods(spec: str, methods: list[str], n_states: int, seed: int) -> dict:
    """One timed map per state and method, one state per call, 1 thread (see :func:`spot_check`)."""
    import torch
    from threadpoolctl import threadpool_limits

    from saliency_lib.agents import load_agent
    from saliency_lib.explainers import get_explainer
    from saliency_lib.states import collect_states

    agent = load_agent(repo_path(spec) if (repo_path(spec) / "meta.json").is_file() else spec)
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


def spot_check(cfg: RuntimeChapter, b: Benchmarks) -> pd.DataFrame | Note:
    """Time one map per method on the study's own agents for ``cfg.game``, on this machine.

    The agents are the study's DQN agent (:func:`~saliency_book.ch1_agents.study_agent`)
    when it exists and the official Mask-A3C agent when it is fetched. Each method
    explains ``cfg.spot["states"]`` states of a greedy game (from agent step 50 on),
    one state per call with its default parameters, on one thread; the median per
    state is kept. There is no warm-up and no repetition: the numbers show the order
    of magnitude, the benchmark the precise ratios. Results are cached under
    ``results_dir`` by agent, weights, methods, states, seed and machine.

    Returns
    -------
    pandas.DataFrame or Note
        Columns ``agent, method, label, input_shape, forward_passes, ms, ms_per_pass,
        benchmark_ms, benchmark_passes, date, load_average``; ``benchmark_ms`` and
        ``benchmark_passes`` are the method's time and forward passes in ``explainers.json``
        (random-weight DQN), NaN when not benchmarked.
    """
    specs = _spot_agents(cfg)
    if not specs:
        return Note(f"No agent to time for {cfg.game}: no study DQN agent exists yet and the official Mask-A3C "
                    "checkpoints are not fetched (`make fetch-official`).", title="No agent")
    from saliency_lib.agents import load_agent

    methods = _spot_methods(cfg, b)
    bench = b.explainers["methods"] if b.explainers is not None else {}
    parts = []
    for spec in specs:
        sha = load_agent(repo_path(spec) if (repo_path(spec) / "meta.json").is_file() else spec).meta.get("sha256")
        config = {"what": "runtime_spot_check", "agent": spec, "sha256": sha, "methods": methods,
                  "states": cfg.spot["states"], "skip": _SKIP_STATES, "seed": cfg.seed, "machine": _machine()}
        v = cached_json("runtime_spot", config, lambda spec=spec: _time_methods(spec, methods, cfg.spot["states"], cfg.seed),
                        results_dir=cfg.results_dir)
        for r in v["rows"]:
            parts.append({"agent": spec, "method": r["method"], "label": METHOD_LABELS.get(r["method"], r["method"]),
                          "input_shape": "×".join(map(str, v["input_shape"])), "forward_passes": r["forward_passes"],
                          "ms": r["ms"], "ms_per_pass": r["ms"] / r["forward_passes"],
                          "benchmark_ms": bench.get(r["method"], {}).get("ms", np.nan),
                          "benchmark_passes": bench.get(r["method"], {}).get("forward_passes", np.nan), "date": v["date"][:10],
                          "load_average": v["load_average"][0]})
    return pd.DataFrame(parts)


def spot_summary(table: pd.DataFrame | Note):
    """Cost per forward pass of each timed agent against the benchmark network (Markdown, or a Note)."""
    from IPython.display import Markdown

    if isinstance(table, Note):
        return table
    parts = []
    for spec, g in table.groupby("agent", sort=False):
        many = g[g["forward_passes"] >= 100]
        if many.empty:
            parts.append(f"On `{spec}` only methods with few forward passes were timed (profile setting).")
            continue
        per_pass = many["ms_per_pass"].median()
        bench = (many["benchmark_ms"] / many["benchmark_passes"]).median()
        text = f"On `{spec}` (input {g['input_shape'].iloc[0]}), a map costs a median {per_pass:.2f} ms per forward pass"
        if not math.isnan(bench):
            text += f", {per_pass / bench:.1f} times the benchmark network's {bench:.2f} ms"
        parts.append(text + ".")
    return Markdown(" ".join(parts))
