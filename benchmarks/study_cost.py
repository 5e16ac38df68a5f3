"""Cost of the study below the naive forward-pass floor: incremental inference and activation reuse.

Run ``python benchmarks/study_cost.py --json data/benchmarks/study_cost.json``.

Setting: the shipped ``data/agents/dqn-Breakout-s0`` agent and real Breakout states
of its fixed-start greedy game (:func:`saliency_lib.states.collect_states`; every
``--spacing``-th step, so the states differ), one CPU thread
(``torch.set_num_threads(1)`` and BLAS pools limited to 1), every explainer at the
paper's parameters, states explained ``--states`` at a time as the study's units
do. Every time is the CPU time of this single-threaded process (core seconds, the
unit of the projection; the machine's 2 cores are shared with other jobs), the
median over ``--repeats`` rounds after a warm-up; within a round the fast path,
the naive path and the floor run back to back, so they see the same background load.

Measured:

* ``methods.<name>``: ``ms`` per map of the library's default path,
  ``naive_ms`` of full forward passes (``naive=True``; for RISE and LIME, which
  have no incremental path, the same path), ``naive_floor_ms`` (the method's
  forward passes through the bare network in one batch, best of several chunk
  sizes), ``speedup_vs_naive_floor`` = floor ÷ ms (the median over rounds of each
  round's own ratio, ``speedup_rounds``; ``speedup_of_medians`` is the ratio of the
  medians), ``max_abs_map_diff`` between
  fast and naive maps (min-max normalised) and ``min_spearman`` between their
  scores (see the notes) over the ``--map-states`` states.
* ``cascade``: explaining the original network and its 5 randomised levels for
  all the study's DQN methods, per state: ``naive_ms_per_state`` (model by model,
  full passes) and ``ms_per_state`` (``RandomisationTest(reuse=True)`` with
  incremental inference), ``speedup``; the similarity table, the same in both, is
  ``similarity_ms_per_state``.
* ``degradation``: per state, every method's maps plus insertion and deletion on
  the three substrates (and the random-map baseline): naive (full passes, no
  shared endpoints) and default, ``speedup``.
* ``projection``: core hours of the paper-scale study (4 DQN agents × 997 states;
  the actor-critic part as the paper-scale issue sizes it, 400 Mask-A3C states)
  before and after, from the measured per-state costs (see ``notes`` in the JSON
  for the Mask-A3C model).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

import baselines  # benchmarks/baselines.py: Captum and the lime package
import numpy as np
import torch

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, load_agent
from saliency_lib.explainers import get_explainer
from saliency_lib.inference import staged_forward
from saliency_lib.metrics import Deletion, Insertion, RandomisationTest
from saliency_lib.metrics import insertion_deletion as degradation_module
from saliency_lib.metrics.insertion_deletion import random_saliency
from saliency_lib.states import collect_states
from saliency_lib.sweep import SANITY_SIMILARITIES
from saliency_lib.versions import cpu_model
from saliency_study.catalog import ABLATION_METHODS, STUDY_METHODS

LOCAL = ("occlusion", "ns_original", "ns_chosen", "ns_black", "sarfa")
PERTURBATION = (*LOCAL, "rise", "lime_slic", "lime_quickshift", "lime_felzenszwalb")
# the study's methods on a DQN agent (the masks need a Mask-A3C network); its §6.2 ablation runs in degradation only
STUDY_DQN = tuple(m for m in STUDY_METHODS if not m.startswith("mask_"))
STUDY_DQN_DEGRADATION = (*STUDY_DQN, *ABLATION_METHODS)
SIMILARITIES = SANITY_SIMILARITIES  # the sweep's measures, so the projection is the study's
SUBSTRATES = ("black", "random", "blur")
CHUNKS = (128, 256, 512)
TARGETS = {"occlusion": 2.5, "sarfa": 2.5, "ns_original": 1.8, "ns_chosen": 1.8, "ns_black": 1.8}
DQN_STATES, DQN_AGENTS, A3C_STATES = 997, 4, 400


def explainer(name, agent, naive=False, **kw):
    if naive and name in LOCAL:
        kw["naive"] = True
    return get_explainer(name, agent, **kw)


def norm(m: torch.Tensor) -> np.ndarray:
    m = m.flatten(1).double()
    lo, hi = m.min(1, keepdim=True).values, m.max(1, keepdim=True).values
    return ((m - lo) / torch.where(hi > lo, hi - lo, torch.ones_like(hi))).numpy()


def spearman(a: np.ndarray, b: np.ndarray, tol: float = 0.0) -> float:
    """Spearman of two normalised maps, both quantised to a grid of step ``tol`` first (``0``: plain).

    Scores that float32 cannot tell apart (a plateau of perturbations that change nothing
    or change the output below float resolution; ``1 − softmax`` saturating near 1) come
    out of two evaluation orders as ties in one map and as ~1e-7 noise in the other, which
    the plain Spearman ranks; on a grid at the float32 resolution of the scores both maps
    keep them tied.
    """
    from scipy.stats import spearmanr

    if tol > 0:
        a, b = np.floor(a / tol), np.floor(b / tol)
    if a.max() == a.min() or b.max() == b.min():
        return float("nan")
    return float(spearmanr(a, b).statistic)


def float_tolerance(raw: torch.Tensor) -> float:
    """The grid of :func:`spearman` in normalised units: 16 float32 ulps of the scores' scale (at
    least 1, the scale of the softmax and Q-values they come from), and at least 1e-5."""
    raw = raw.double()
    span = float(raw.max() - raw.min())
    return max(1e-5, 16 * float(np.finfo(np.float32).eps) * max(1.0, float(raw.abs().max())) / span) if span > 0 else 0.0


def clock(fn, *args, **kwargs) -> float:
    """CPU time of ``fn(*args, **kwargs)`` in seconds (this process, one thread: core seconds)."""
    t = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - t


def floor_seconds(net, passes: int, chunk: int, inputs: torch.Tensor) -> float:
    """CPU time of ``passes`` forward passes of the bare network, ``chunk`` rows per call."""
    def run():
        with torch.no_grad():
            for s in range(0, passes, chunk):
                net(inputs[: min(chunk, passes - s)])
    return clock(run)


def methods(agent, x, repeats: int, map_states: torch.Tensor) -> dict:
    out = {}
    inputs = torch.rand(max(CHUNKS), *x.shape[1:], generator=torch.Generator().manual_seed(0))
    n = x.shape[0]
    for name in PERTURBATION:
        fast, slow = explainer(name, agent), explainer(name, agent, naive=True)
        fm, sm = fast.attribute(map_states), slow.attribute(map_states)
        a, b = norm(fm.maps), norm(sm.maps)
        # the method's scores: the coarse grid of a grid method (its map upsamples them), else the map
        fs, ss = (fm.coarse, sm.coarse) if sm.coarse is not None else (fm.maps, sm.maps)
        ca, cb = norm(fs), norm(ss)
        passes = fm.forward_passes
        times = {"ms": [], "naive_ms": [], **{f"floor_{c}": [] for c in CHUNKS}}
        fast.attribute(x[:1])
        for _ in range(repeats):
            times["ms"].append(clock(fast.attribute, x) / n)
            if name in LOCAL:
                times["naive_ms"].append(clock(slow.attribute, x) / n)
            for c in CHUNKS:
                times[f"floor_{c}"].append(floor_seconds(agent.net, passes, c, inputs))
        med = {k: 1e3 * statistics.median(v) for k, v in times.items() if v}
        floor = min(med[f"floor_{c}"] for c in CHUNKS)
        # the speedup is the median of the rounds' own ratios: fast path and floor ran back to back in a
        # round, so a slow spell of the shared machine moves both (the ratio of the medians mixes rounds)
        per_round = [min(times[f"floor_{c}"][i] for c in CHUNKS) / times["ms"][i] for i in range(repeats)]
        row = {
            "ms": med["ms"], "naive_ms": med.get("naive_ms", med["ms"]), "naive_floor_ms": floor,
            "floor_chunk": min(CHUNKS, key=lambda c: med[f"floor_{c}"]), "forward_passes": passes,
            "speedup_vs_naive_floor": statistics.median(per_round),
            "speedup_rounds": [round(r, 3) for r in per_round],
            "speedup_of_medians": floor / med["ms"],
            "speedup_vs_naive_path": med.get("naive_ms", med["ms"]) / med["ms"],
            "max_abs_map_diff": float(np.abs(a - b).max()),
            "min_spearman": float(np.nanmin([spearman(u, v, float_tolerance(r)) for u, v, r in zip(ca, cb, ss)])),
            "min_spearman_map": float(np.nanmin([spearman(u, v, float_tolerance(r)) for u, v, r in zip(a, b, sm.maps)])),
            "min_spearman_plain": float(np.nanmin([spearman(u, v) for u, v in zip(a, b)])),
            "incremental": name in LOCAL, "map_states": int(map_states.shape[0]),
        }
        if name in TARGETS:
            row["target_speedup_vs_naive_floor"] = TARGETS[name]
        out[name] = row
        print(f"{name:18s} {row['ms']:8.1f} ms  naive {row['naive_ms']:8.1f}  floor {floor:8.1f}  x{row['speedup_vs_naive_floor']:.2f} vs floor"
              f"  max diff {row['max_abs_map_diff']:.1e}  rho {row['min_spearman']:.6f} (map {row['min_spearman_map']:.6f})", flush=True)
    return out


def comparisons(agent, x, tgt, repeats: int) -> dict:
    """Captum's and the ``lime`` package's times beside ours: same agent, states, targets, clock and rounds.

    Each baseline's best setting (``perturbations_per_eval`` or ``batch_size``) is chosen on the first
    state (one timing per setting after a warm-up); then every round times our method and the baseline
    at that setting on all states back to back, and ``ratio_vs_ours`` is the median of the rounds' ratios.
    """
    occ, slic = explainer("occlusion", agent), explainer("lime_slic", agent)
    seg = slic.segment(x)
    n = x.shape[0]
    t = [int(a) for a in tgt]
    pairs = {  # name: (our method, setting key, settings, make(setting, states, targets, segments))
        "captum.attr.Occlusion vs occlusion": (
            occ, "perturbations_per_eval", baselines.CAPTUM_CHUNKS, lambda k, xx, tt, sg: baselines.captum_occlusion(agent, xx, tt, k)),
        "captum.attr.Lime vs lime_slic": (
            slic, "perturbations_per_eval", baselines.CAPTUM_CHUNKS,
            lambda k, xx, tt, sg: baselines.captum_surrogate("Lime", agent, xx, tt, sg, slic.n_samples, k)),
        "captum.attr.KernelShap vs lime_slic": (
            slic, "perturbations_per_eval", baselines.CAPTUM_CHUNKS,
            lambda k, xx, tt, sg: baselines.captum_surrogate("KernelShap", agent, xx, tt, sg, slic.n_samples, k)),
        "lime.lime_image vs lime_slic": (
            slic, "batch_size", baselines.LIME_BATCHES,
            lambda k, xx, tt, sg: baselines.lime_package(agent, xx, tt, sg.numpy(), slic.n_samples, k)),
    }
    out = {}
    for name, (ours, key, settings, make) in pairs.items():
        one = {}
        for k in settings:
            run = make(k, x[:1], t[:1], seg[:1])
            run()  # warm-up
            one[k] = 1e3 * clock(run)
        best = min(one, key=one.get)
        run = make(best, x, t, seg)
        theirs, mine = [], []
        for _ in range(repeats):
            mine.append(clock(ours.attribute, x, target=torch.as_tensor(t)) / n)
            theirs.append(clock(run) / n)
        out[name] = {
            "ms": 1e3 * statistics.median(theirs), "ours_ms": 1e3 * statistics.median(mine), key: best,
            "ms_per_setting_first_state": one, "ratio_vs_ours": statistics.median(a / b for a, b in zip(theirs, mine)),
            "ratio_rounds": [round(a / b, 3) for a, b in zip(theirs, mine)], "states": n,
            **({"n_samples": slic.n_samples} if ours is slic else {}),
        }
        print(f"{name:38s} {out[name]['ms']:9.1f} ms  ours {out[name]['ours_ms']:8.1f} ms  x{out[name]['ratio_vs_ours']:.2f}", flush=True)
    return out


def cascade(agent, x, tgt, repeats: int, names=STUDY_DQN) -> dict:
    """Explaining cost of the sanity check (original + 5 levels) per state, and the cost of its similarity table."""
    per = {m: {"naive": [], "fast": []} for m in names}
    sim = {m: [] for m in names}
    sim_naive = {m: [] for m in names}
    for _ in range(repeats):
        for m in names:
            for mode in ("naive", "fast"):
                test = RandomisationTest(similarities=SIMILARITIES, reuse=mode == "fast")
                exp = explainer(m, agent, naive=mode == "naive")
                t = time.process_time()
                original, randomised = test.maps(agent, x, explainer=exp, target=tgt)
                per[m][mode].append((time.process_time() - t) / x.shape[0])
            sim[m].append(clock(test.compare, original, randomised, target=tgt.numpy()) / x.shape[0])
            sim_naive[m].append(clock(pairwise_similarities, test, original, randomised) / x.shape[0])
    med = {m: {k: 1e3 * statistics.median(v) for k, v in d.items()} for m, d in per.items()}
    naive, fast = sum(d["naive"] for d in med.values()), sum(d["fast"] for d in med.values())
    similarity = sum(1e3 * statistics.median(v) for v in sim.values())
    similarity_naive = sum(1e3 * statistics.median(v) for v in sim_naive.values())
    print(f"cascade: {naive:.0f} ms -> {fast:.0f} ms per state (x{naive / fast:.2f}); similarity table "
          f"{similarity_naive:.0f} ms -> {similarity:.0f} ms", flush=True)
    return {"naive_ms_per_state": naive, "ms_per_state": fast, "speedup": naive / fast, "methods": list(names),
            "levels": 5, "per_method_ms_per_state": med, "similarity_ms_per_state": similarity,
            "similarity_naive_ms_per_state": similarity_naive, "similarity_speedup": similarity_naive / similarity,
            "similarities": list(SIMILARITIES),
            "what": "explaining the original network and 5 cascading levels (RandomisationTest.maps); the similarity table "
                    "(RandomisationTest.compare, one shared-work call per state) is similarity_ms_per_state, and the same "
                    "values pair by pair with the pairwise functions (the code before) similarity_naive_ms_per_state"}


def pairwise_similarities(test, original, randomised) -> list:
    """The similarity table's values computed pair by pair with the pairwise functions (the code before
    ``similarities_to``): the original map against itself, each level and the two random references."""
    import warnings

    from saliency_lib.metrics.similarity import SIMILARITIES as FUNCS

    rng = np.random.default_rng(0)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(original.shape[0]):
            others = [original[i], *(maps[i] for _, _, maps in randomised), rng.random(original.shape[1:]),
                      rng.standard_normal(original.shape[1:])]
            out += [FUNCS[s](original[i], b) for b in others for s in test.similarities]
    return out


def degradation(agent, x, tgt, repeats: int, names=STUDY_DQN) -> dict:
    ids = list(range(x.shape[0]))

    def run(mode: str):
        fast = mode == "fast"
        if fast:
            degradation_module._ENDPOINTS.clear()  # each round starts cold: endpoints are shared within it only
        timing = {}
        for m in [*names, "random"]:
            t = time.perf_counter()
            maps = (random_saliency(len(ids), tuple(x.shape[2:]), seed=0, state_ids=ids) if m == "random"
                    else explainer(m, agent, naive=not fast).attribute(x, target=tgt).maps)
            for metric in (Insertion, Deletion):
                for sub in SUBSTRATES:
                    metric(substrate=sub, reuse_endpoints=fast).evaluate(agent, x, saliency=maps, target=tgt, state_ids=ids, method=m)
            timing[m] = (time.perf_counter() - t) / x.shape[0]
        return timing

    rounds = {"naive": [], "fast": []}
    for _ in range(repeats):
        for mode in ("naive", "fast"):
            rounds[mode].append(run(mode))
    med = {mode: {m: 1e3 * statistics.median(r[m] for r in rs) for m in rs[0]} for mode, rs in rounds.items()}
    naive, fast = sum(med["naive"].values()), sum(med["fast"].values())
    print(f"degradation: {naive:.0f} ms -> {fast:.0f} ms per state (x{naive / fast:.2f})", flush=True)
    return {"naive_ms_per_state": naive, "ms_per_state": fast, "speedup": naive / fast, "methods": [*names, "random"],
            "substrates": list(SUBSTRATES), "experiments": ["insertion", "deletion"],
            "per_method_ms_per_state": {m: {"naive": med["naive"][m], "fast": med["fast"][m]} for m in med["naive"]}}


def mask_a3c_model(repeats: int) -> dict:
    """Per-pass costs of a Mask-A3C network (official 'double' layout, random weights) for the projection.

    "Before" is the code before the performance work: full passes in batches of 256, on the network in
    the standard memory layout (``MaskA3CNet`` now builds channels-last weights, about 1.9x faster
    per pass). Full passes: one row in batches of 256 (before) and of the network's inference batch
    (after). The cascade of a global method (RISE, 100 masks; LIME's samples behave alike): original
    + 5 levels, model by model in batches of 256 (before) vs with the staged reuse of the trunk
    (after). The local methods at the paper's parameters on one state: per pass with incremental
    inference, alone (their maps in degradation) and over the cascade's 6 networks at once, against
    naive passes on the same network; and the largest difference between the incremental and the
    naive map (min-max normalised).
    """
    torch.manual_seed(0)
    agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    with torch.no_grad():
        agent.net.actor_linear.weight.mul_(300.0)  # its official init (norm 0.01) leaves the maps flat at float rounding
    old = agent.clone()  # the network as it ran before: standard layout
    old.net.to(memory_format=torch.contiguous_format)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 1, 80, 80, generator=g)
    hidden = tuple(0.1 * torch.randn(1, 64, 10, 10, generator=g) for _ in range(2))
    rows = torch.randn(256, 1, 80, 80, generator=g)
    hrows = tuple(h.expand(256, -1, -1, -1).contiguous() for h in hidden)
    small = agent.inference_batch
    row_ms, row_ms_small = [], []
    out = {"naive": [], "fast": []}
    passes = 0

    staged = staged_forward([agent])  # the library's single-network path: the recurrent half of the gates once per state

    def in_small_batches():
        for s0 in range(0, 256, small):
            staged(rows[s0:s0 + small], tuple(h[s0:s0 + small] for h in hrows))

    for _ in range(repeats):
        with torch.no_grad():
            row_ms.append(1e3 * clock(old, rows, hrows) / 256)
            row_ms_small.append(1e3 * clock(in_small_batches) / 256)
        for mode in ("naive", "fast"):
            who = old if mode == "naive" else agent
            test = RandomisationTest(similarities=("spearman",), reuse=mode == "fast", reference_rows=False)
            # before: full passes in batches of 256 (the old default); after: the network's own inference batch
            exp = get_explainer("rise", who, n_masks=100, **({"batch_size": 256} if mode == "naive" else {}))
            exp.naive = mode == "naive"
            passes = 6 * exp.attribute(x, hidden=hidden).forward_passes
            out[mode].append(clock(test.maps, who, x, explainer=exp, hidden=hidden))
    naive, fast = statistics.median(out["naive"]), statistics.median(out["fast"])
    local = {}
    for name in LOCAL:
        exp, slow = get_explainer(name, agent), get_explainer(name, agent, naive=True)
        n = exp.attribute(x, hidden=hidden).forward_passes
        test = RandomisationTest(similarities=("spearman",), reuse=True, reference_rows=False)
        alone = statistics.median(clock(exp.attribute, x, hidden=hidden) for _ in range(repeats))
        joint = statistics.median(clock(test.maps, agent, x, explainer=exp, hidden=hidden) for _ in range(repeats))
        naive_alone = clock(slow.attribute, x, hidden=hidden)  # the same network: what incremental inference saves
        a, b = (m.maps.flatten(1).double() for m in (exp.attribute(x, hidden=hidden), slow.attribute(x, hidden=hidden)))
        a, b = ((m - m.min()) / (m.max() - m.min()) for m in (a, b))
        local[name] = {"forward_passes": n, "ms_per_pass": 1e3 * alone / n, "naive_ms_per_pass": 1e3 * naive_alone / n,
                       "cascade_ms_per_pass": 1e3 * joint / (6 * n), "max_abs_map_diff": float((a - b).abs().max())}
        print(f"mask-a3c {name}: {local[name]['naive_ms_per_pass']:.2f} -> {local[name]['ms_per_pass']:.2f} ms per pass alone, "
              f"{local[name]['cascade_ms_per_pass']:.2f} per pass and network in the cascade", flush=True)
    return {"row_ms": statistics.median(row_ms), "row_ms_inference_batch": statistics.median(row_ms_small),
            "inference_batch": small, "row_batch": 256, "cascade_naive_ms_per_pass": 1e3 * naive / passes,
            "cascade_fast_ms_per_pass": 1e3 * fast / passes, "cascade_speedup": naive / fast, "local": local}


def study_passes(agent_preset_hw: tuple[int, int], names=STUDY_DQN) -> dict:
    """Forward passes per state of the study's methods at the paper's parameters (for the Mask-A3C projection)."""
    from saliency_lib.agents import MaskA3CConfig as Cfg

    torch.manual_seed(0)
    agent = ActorCriticAgent(MaskA3CNet(Cfg(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    x = torch.randn(1, 1, *agent_preset_hw)
    hidden = agent.initial_hidden(1)
    maps = {}
    for m in [*names, "mask_policy", "mask_value"]:
        exp = get_explainer(m, agent)
        maps[m] = exp.attribute(x, hidden=hidden).forward_passes if m in PERTURBATION else 1
    return maps


def projection(cascade_res: dict, degradation_res: dict, a3c: dict) -> dict:
    sim = cascade_res["similarity_ms_per_state"]
    sim_before = cascade_res.get("similarity_naive_ms_per_state", sim)
    dqn_before = DQN_AGENTS * DQN_STATES * (cascade_res["naive_ms_per_state"] + sim_before + degradation_res["naive_ms_per_state"]) / 3.6e6
    dqn_after = DQN_AGENTS * DQN_STATES * (cascade_res["ms_per_state"] + sim + degradation_res["ms_per_state"]) / 3.6e6
    passes = study_passes((80, 80))
    maps_passes = sum(passes.values())
    curve_passes = (len(passes) + 1) * 2 * len(SUBSTRATES) * 86  # + the random map; 85 steps and a clean pass per curve
    cascade_passes = 6 * sum(v for k, v in passes.items() if not k.startswith("mask_"))
    row, row_after = a3c["row_ms"], a3c.get("row_ms_inference_batch", a3c["row_ms"])
    before = A3C_STATES * (cascade_passes * a3c["cascade_naive_ms_per_pass"] + (maps_passes + curve_passes) * row + sim_before) / 3.6e6
    endpoint_saving = (86 - 83) / 86  # inner steps only; endpoints shared (a small term, as measured on the DQN)
    local = a3c.get("local", {})
    # after: local methods at their incremental per-pass costs (alone for the maps of degradation,
    # per network in the cascade), every other pass at the staged / inference-batch cost
    casc = {k: v["cascade_ms_per_pass"] for k, v in local.items()}
    alone = {k: v["ms_per_pass"] for k, v in local.items()}
    casc_ms = sum(6 * v * casc.get(k, a3c["cascade_fast_ms_per_pass"]) for k, v in passes.items() if not k.startswith("mask_"))
    maps_ms = sum(v * alone.get(k, row_after) for k, v in passes.items())
    after = A3C_STATES * (casc_ms + maps_ms + curve_passes * (1 - endpoint_saving) * row_after + sim) / 3.6e6
    return {
        "core_hours_before": dqn_before + before, "core_hours_after": dqn_after + after,
        "ratio": (dqn_before + before) / (dqn_after + after),
        "dqn": {"agents": DQN_AGENTS, "states": DQN_STATES, "core_hours_before": dqn_before, "core_hours_after": dqn_after},
        "mask_a3c": {"states": A3C_STATES, "core_hours_before": before, "core_hours_after": after, "passes_per_state": passes,
                     "cascade_passes_per_state": cascade_passes, "degradation_passes_per_state": maps_passes + curve_passes, **a3c},
    }


def machine() -> dict:
    cpu = cpu_model()
    import subprocess

    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = ""
    return {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "commit": rev, "cpu": cpu, "logical_cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()), "python": sys.version.split()[0], "torch": torch.__version__,
            "numpy": np.__version__, "torch_threads": torch.get_num_threads()}


#: What a reader of study_cost.json needs to know about its numbers (written into the file).
NOTES = [
    "RISE and LIME have no incremental path: their ms is the full-pass path (naive_ms = ms); below the floor only through "
    "the cascade's activation reuse.",
    "The DQN part of the projection is 4 agents x 997 states x (cascade + degradation) per-state cost measured here on the "
    "Breakout agent (the four DQN agents share the architecture).",
    "Mask-A3C part: 400 states (3 x 100 official, 2 x 50 ours, as sized in the issue); cost = forward passes per state of the "
    "study's methods at the paper's parameters (80x80 input) x measured per-pass costs (mask_a3c_model). Before: every pass "
    "a full pass in batches of 256 on the network in the standard memory layout (row_ms; both the old defaults), the cascade "
    "model by model (cascade_naive_ms_per_pass). After: the network's channels-last weights (MaskA3CNet builds them), "
    "the local methods (Occlusion, SARFA, the three NS) with incremental inference at their measured per-pass cost "
    "(mask_a3c.local: alone for the maps of degradation, per network for the cascade's 6 networks at once); RISE and "
    "LIME with the staged reuse of the trunk in the cascade (cascade_fast_ms_per_pass, timed on RISE); every other pass in batches of the network's "
    "inference_batch through the single-network staged path, whose ConvLSTM computes the recurrent half of its gates "
    "once per state (row_ms_inference_batch; Mask-A3C's 80x80 activations spill out of the CPU caches in large batches).",
    "The similarity table costs similarity_naive_ms_per_state before (each pair with the pairwise functions) and "
    "similarity_ms_per_state after (similarities_to: one HOG per map with the vectorised hog_descriptor, equal to "
    "scikit-image's bit for bit; Spearman's sign inversion by identity); both "
    "enter the projection per state, for the DQN and the Mask-A3C part.",
    "The machine has 2 cores shared with other jobs (load average in machine): times are CPU times of this process, "
    "which contention still inflates (shared caches, memory bandwidth); the interleaved ratios are steadier.",
    "min_spearman is the Spearman between the fast and the naive scores of the method (the coarse grid of a grid "
    "method, whose map upsamples it bilinearly; the map otherwise), both min-max normalised and quantised to a grid of "
    "max(1e-5, 16 float32 ulps of the scores' scale) first (spearman() and float_tolerance() here): scores float32 "
    "cannot tell apart (perturbations that change the output below float resolution, 1 - softmax saturating near 1) "
    "come out of two evaluation orders as ties in one map and ~1e-7 noise in the other, which the plain Spearman ranks. "
    "min_spearman_map is the same on the upsampled maps, where interpolation spreads that noise over whole plateaus and "
    "values a rounding apart can fall into neighbouring grid cells; min_spearman_plain is the plain Spearman of the maps.",
    "runs: the machine, load and commit of each part; parts can be rerun alone with --only and are merged into the file.",
    "The similarity table of the sanity check is the same with and without reuse; it is in the "
    "projection but not in cascade.speedup.",
]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--agent", default="data/agents/dqn-Breakout-s0")
    p.add_argument("--states", type=int, default=10, help="states per explainer call (the study's units pass 25)")
    p.add_argument("--map-states", type=int, default=10, help="states on which fast and naive maps are compared (>= 10)")
    p.add_argument("--spacing", type=int, default=7, help="keep every spacing-th step of the game")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cascade-states", type=int, default=10,
                   help="states per call of the cascade and degradation parts (the study's DQN units pass 25; per-call "
                        "costs are amortised over this many)")
    p.add_argument("--only", nargs="*", help="parts to run (methods comparisons cascade degradation projection)")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    start = machine()
    agent = load_agent(args.agent)
    n_total = max(args.states, args.map_states, args.cascade_states)
    ss = collect_states(agent, n_total * args.spacing, seed=0)
    states = ss.states[:: args.spacing][:n_total]
    actions = ss.actions[:: args.spacing][:n_total]
    parts = set(args.only or ("methods", "comparisons", "cascade", "degradation", "projection"))
    res: dict = {"machine": start, "setting": {
        "agent": args.agent, "states": f"{n_total} Breakout states: every {args.spacing}th step of the fixed-start greedy game "
                                       "(saliency_lib.states.collect_states, seed 0)",
        "states_per_call": args.states, "map_states": args.map_states, "cascade_states": args.cascade_states, "repeats": args.repeats,
        "threads": "torch.set_num_threads(1); BLAS pools limited to 1 (threadpoolctl)",
        "statistic": "median over repeats after a warm-up; fast, naive and floor interleaved within each round; "
                     "a method's speedup_vs_naive_floor is the median of the rounds' own floor/fast ratios",
        "clock": "CPU time of this single-threaded process (time.process_time): core seconds, robust to the other jobs "
                 "sharing the 2 cores; the projection is in core hours",
        "parameters": "the paper's (library defaults) for every method"}}
    path = Path(args.json)
    if path.exists():
        old = json.loads(path.read_text())
        res = {**{k: v for k, v in old.items() if k not in parts and k not in ("machine", "setting", "notes")}, **res}
        res["runs"] = {**{k: v for k, v in old.get("runs", {}).items() if k not in parts}}
    res["runs"] = {**res.get("runs", {}), **{part: start for part in parts}}
    if "methods" in parts:
        res["methods"] = methods(agent, states[: args.states], args.repeats, states[: args.map_states])
    if "comparisons" in parts:
        res["comparisons"] = comparisons(agent, states[: args.states], actions[: args.states], args.repeats)
    tgt = actions[: args.cascade_states]
    if "cascade" in parts:
        res["cascade"] = cascade(agent, states[: args.cascade_states], tgt, max(1, args.repeats - 1))
    if "degradation" in parts:
        res["degradation"] = degradation(agent, states[: args.cascade_states], tgt, max(1, args.repeats - 1),
                                         names=STUDY_DQN_DEGRADATION)
    if "projection" in parts and "cascade" in res and "degradation" in res:
        res["projection"] = projection(res["cascade"], res["degradation"], mask_a3c_model(max(1, args.repeats - 1)))
        pr = res["projection"]
        print(f"projection: {pr['core_hours_before']:.1f} -> {pr['core_hours_after']:.1f} core hours (x{pr['ratio']:.2f})", flush=True)
    res["machine"]["load_average_at_end"] = list(os.getloadavg())
    res["notes"] = NOTES
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
