"""Cost of the study below the naive forward-pass floor: incremental inference and activation reuse.

Run ``python benchmarks/study_cost.py --json data/benchmarks/study_cost.json``.

Setting: the four shipped DQN agents (``data/agents/dqn-<Game>-s0``) and real states of each
one's fixed-start greedy game (:func:`saliency_lib.states.collect_states`; every ``--spacing``-th
step, so the states differ), one CPU thread (``torch.set_num_threads(1)`` and BLAS pools limited
to 1), every explainer at the paper's parameters, states explained ``--states`` at a time as the
study's units do. Every time is the CPU time of this single-threaded process (core seconds, the
unit of the projection; the machine's 2 cores are shared with other jobs), the median over
``--repeats`` rounds; within a round the fast path and the floor run back to back, so they see
the same background load.

Measured:

* ``methods.<name>``: for the local methods, per game (``per_game``) and over the four games'
  states: ``ms`` per map of the library's default path, ``naive_ms`` of full forward passes
  (``naive=True``), ``naive_floor_ms`` (the method's forward passes through the bare network,
  best of ``CHUNKS`` rows per call), ``speedup_vs_naive_floor`` = floor ÷ ms (median over rounds
  of each round's own ratio), ``flop_limit_speedup`` (``benchmarks/flop_limit.py``: the exact
  multiply-add reduction of the method's geometry), ``fraction_of_limit`` = speed-up ÷ limit,
  ``noop_share`` (rows that change no pixel, skipped), the engine's window statistics, and
  ``max_abs_map_diff`` / ``min_spearman`` between fast and naive maps. RISE and LIME (no
  incremental path) on Breakout only.
* ``comparisons``: Captum's and the ``lime`` package's times beside ours (Breakout).
* ``cascade``: explaining the original network and its 5 randomised levels for all the study's
  DQN methods, per state and game (``per_game``; the top level: mean over games), with the
  similarity table; naive (model by model, full passes) on ``--naive-game``.
* ``degradation``: per state and game, per method, the degradation unit as the sweep runs it
  (the 6 curves on the sanity unit's maps; the ablation's and the random map's own maps),
  and naive on ``--naive-game`` (every map again, full-pass curves, no shared endpoints).
* ``projection`` (``benchmarks/study_projection.py``): core hours of the study the open issues
  ask, as the sweep runs, and ``unit_check``: real units against it.
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
import study_projection as sp  # benchmarks/study_projection.py
import torch
from flop_limit import flop_limit, layer_geometry, perturbation_macs  # benchmarks/flop_limit.py

from saliency_lib.agents import load_agent
from saliency_lib.explainers import get_explainer
from saliency_lib.metrics import Deletion, Insertion, RandomisationTest
from saliency_lib.metrics import insertion_deletion as degradation_module
from saliency_lib.metrics.insertion_deletion import random_saliency
from saliency_lib.states import collect_states
from saliency_lib.sweep import SANITY_SIMILARITIES
from saliency_lib.versions import cpu_model
from saliency_study.catalog import ABLATION_METHODS

LOCAL, GLOBAL = sp.LOCAL, ("rise", "lime_slic", "lime_quickshift", "lime_felzenszwalb")
PERTURBATION = sp.PERTURBATION
STUDY_DQN = sp.STUDY_DQN
SIMILARITIES = SANITY_SIMILARITIES  # the sweep's measures, so the projection is the study's
SUBSTRATES = sp.SUBSTRATES
GAMES = ("Breakout", "SpaceInvaders", "MsPacman", "Frostbite")
CHUNKS = (256, 512)
#: The issue's targets (speed-up against the naive floor over the four games' states; Occlusion also per game).
TARGETS = {"occlusion": 10.0, "sarfa": 8.0, "ns_black": 8.0, "ns_original": 3.5, "ns_chosen": 3.5}
GAME_TARGETS = {"occlusion": {"Breakout": 15.0, "SpaceInvaders": 15.0}}
clock = sp.clock


def explainer(name, agent, naive=False, **kw):
    if naive and name in (*LOCAL, *ABLATION_METHODS):
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


def floor_seconds(net, passes: int, chunk: int, inputs: torch.Tensor) -> float:
    """CPU time of ``passes`` forward passes of the bare network, ``chunk`` rows per call."""
    def run():
        with torch.no_grad():
            for s in range(0, passes, chunk):
                net(inputs[: min(chunk, passes - s)])
    return clock(run)


def map_agreement(fm, sm) -> dict:
    """Largest difference of the min-max normalised fast and naive maps, and their Spearman (see NOTES)."""
    a, b = norm(fm.maps), norm(sm.maps)
    fs, ss = (fm.coarse, sm.coarse) if sm.coarse is not None else (fm.maps, sm.maps)
    ca, cb = norm(fs), norm(ss)
    return {"max_abs_map_diff": float(np.abs(a - b).max()),
            "min_spearman": float(np.nanmin([spearman(u, v, float_tolerance(r)) for u, v, r in zip(ca, cb, ss)])),
            "min_spearman_map": float(np.nanmin([spearman(u, v, float_tolerance(r)) for u, v, r in zip(a, b, sm.maps)])),
            "min_spearman_plain": float(np.nanmin([spearman(u, v) for u, v in zip(a, b)]))}


def method_index(exp) -> torch.Tensor:
    """The pixel index ``(P, K)`` of a local explainer's perturbations."""
    return exp._index(torch.device("cpu")) if hasattr(exp, "_index") else exp._masks(torch.device("cpu"))[0]


def changeable(exp, x: torch.Tensor) -> torch.Tensor:
    """``(N, H, W)``: the pixels a perturbation of ``exp`` can change (those it writes a new value to)."""
    if getattr(exp, "perturbation", "black") == "blur":
        return (exp.blurred(x) != x).any(1)
    return (x != getattr(exp, "colour", 0.0)).any(1)


def engine_stats(exp, x: torch.Tensor) -> dict:
    """The engine's counters of one call on ``x`` (see NOTES), per evaluated row."""
    exp.attribute(x[:1])
    (engine,) = exp._engines.values()
    engine.collect_stats = True
    engine.reset_stats()
    exp.attribute(x)
    engine.collect_stats = False
    st = dict(engine.stats)
    rows = max(1, st["rows"] - st["noop_rows"])
    out = {"noop_share": st["noop_rows"] / st["rows"], "rows": st["rows"]}
    for i in (1, 2, 3):
        out[f"window_positions_conv{i}"] = st[f"window_positions_conv{i}"] / rows
        out[f"changed_positions_conv{i}"] = st[f"changed_positions_conv{i}"] / rows
    out["fc_positions_used_share"] = st["fc_positions_used"] / max(1, st["fc_positions"])
    return out


def local_methods(data: dict, repeats: int, map_states: int) -> dict:
    """The local methods on every game's states: fast path, naive floor, FLOP limit, no-op share, agreement."""
    from saliency_lib.inference import _window_plan

    inputs = torch.rand(max(CHUNKS), 4, 84, 84, generator=torch.Generator().manual_seed(0))
    out = {}
    for name in LOCAL:
        exps = {g: explainer(name, d["agent"]) for g, d in data.items()}
        per_game, limit, per_macs = {}, None, None
        for g, d in data.items():
            x, exp = d["x"], exps[g]
            if limit is None:
                index = method_index(exp)
                limit = flop_limit(d["agent"].net, index, tuple(x.shape[2:]))
                per_macs = perturbation_macs(layer_geometry(d["agent"].net), index, tuple(x.shape[2:]))
            slow = explainer(name, d["agent"], naive=True)
            t = time.process_time()
            sm = slow.attribute(x[:map_states])
            naive_ms = 1e3 * (time.process_time() - t) / map_states
            fm = exp.attribute(x[:map_states])
            alive = changeable(exp, x).flatten(1)[:, method_index(exp)].any(2).double()  # (N, P): rows that change a pixel
            full, p = limit["full_pass_macs"], limit["perturbations"]
            with_noops = (1 + p) * full / (full + float((alive * per_macs[None]).sum(1).mean()))
            per_game[g] = {**map_agreement(fm, sm), "naive_ms": naive_ms, "forward_passes": fm.forward_passes,
                           "flop_limit_speedup_with_noops": with_noops, "engine": engine_stats(exp, x)}
            per_game[g]["noop_share"] = per_game[g]["engine"]["noop_share"]
        passes = per_game[next(iter(per_game))]["forward_passes"]
        rounds = []
        for _ in range(repeats):
            r = {}
            for g, d in data.items():
                _window_plan._PLANS.clear()  # as in the sweep, every call plans its own states
                fast = clock(exps[g].attribute, d["x"]) / d["x"].shape[0]
                r[g] = (fast, min(floor_seconds(d["agent"].net, passes, c, inputs) for c in CHUNKS))
            rounds.append(r)
        for g, row in per_game.items():
            row["ms"] = 1e3 * statistics.median(r[g][0] for r in rounds)
            row["naive_floor_ms"] = 1e3 * statistics.median(r[g][1] for r in rounds)
            row["speedup_vs_naive_floor"] = statistics.median(r[g][1] / r[g][0] for r in rounds)
            row["speedup_rounds"] = [round(r[g][1] / r[g][0], 3) for r in rounds]
            row["fraction_of_limit"] = row["speedup_vs_naive_floor"] / limit["flop_limit_speedup"]
            if name in GAME_TARGETS and g in GAME_TARGETS[name]:
                row["target_speedup_vs_naive_floor"] = GAME_TARGETS[name][g]
        pooled = [sum(r[g][1] for g in r) / sum(r[g][0] for g in r) for r in rounds]
        speedup = statistics.median(pooled)
        row = {
            "ms": statistics.mean(v["ms"] for v in per_game.values()),
            "naive_ms": statistics.mean(v["naive_ms"] for v in per_game.values()),
            "naive_floor_ms": statistics.mean(v["naive_floor_ms"] for v in per_game.values()),
            "floor_chunks": list(CHUNKS), "forward_passes": passes,
            "speedup_vs_naive_floor": speedup, "speedup_rounds": [round(v, 3) for v in pooled],
            "speedup_mean_of_games": statistics.mean(v["speedup_vs_naive_floor"] for v in per_game.values()),
            "speedup_vs_naive_path": (statistics.mean(v["naive_ms"] for v in per_game.values())
                                      / statistics.mean(v["ms"] for v in per_game.values())),
            "flop_limit_speedup": limit["flop_limit_speedup"], "fraction_of_limit": speedup / limit["flop_limit_speedup"],
            "flop_limit": limit, "noop_share": {g: v["noop_share"] for g, v in per_game.items()},
            "max_abs_map_diff": max(v["max_abs_map_diff"] for v in per_game.values()),
            "min_spearman": min(v["min_spearman"] for v in per_game.values()),
            "min_spearman_map": min(v["min_spearman_map"] for v in per_game.values()),
            "min_spearman_plain": min(v["min_spearman_plain"] for v in per_game.values()),
            "incremental": True, "map_states": map_states, "games": list(per_game), "per_game": per_game,
        }
        if name in TARGETS:
            row["target_speedup_vs_naive_floor"] = TARGETS[name]
        out[name] = row
        games = "  ".join(f"{g[:5]} x{v['speedup_vs_naive_floor']:.1f} ({100 * v['noop_share']:.0f}% no-op)"
                          for g, v in per_game.items())
        print(f"{name:12s} {row['ms']:7.1f} ms  floor {row['naive_floor_ms']:7.1f}  x{speedup:.2f} of limit "
              f"x{limit['flop_limit_speedup']:.2f} ({100 * row['fraction_of_limit']:.0f}%)  max diff "
              f"{row['max_abs_map_diff']:.1e}  rho {row['min_spearman']:.6f} | {games}", flush=True)
    return out


def global_methods(agent, x, repeats: int) -> dict:
    """RISE and LIME (no incremental path: the default path is the full-pass path) against their floor, on one game."""
    inputs = torch.rand(max(CHUNKS), *x.shape[1:], generator=torch.Generator().manual_seed(0))
    out = {}
    for name in GLOBAL:
        exp = explainer(name, agent)
        passes = exp.attribute(x[:1]).forward_passes
        rounds = []
        for _ in range(repeats):
            fast = clock(exp.attribute, x) / x.shape[0]
            rounds.append((fast, min(floor_seconds(agent.net, passes, c, inputs) for c in CHUNKS)))
        ms, floor = (1e3 * statistics.median(r[i] for r in rounds) for i in (0, 1))
        out[name] = {"ms": ms, "naive_ms": ms, "naive_floor_ms": floor, "floor_chunks": list(CHUNKS), "forward_passes": passes,
                     "speedup_vs_naive_floor": statistics.median(r[1] / r[0] for r in rounds),
                     "speedup_rounds": [round(r[1] / r[0], 3) for r in rounds], "speedup_vs_naive_path": 1.0,
                     "max_abs_map_diff": 0.0, "incremental": False, "games": [agent.game]}
        print(f"{name:18s} {ms:8.1f} ms  floor {floor:8.1f}  x{out[name]['speedup_vs_naive_floor']:.2f} vs floor", flush=True)
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
            occ, "perturbations_per_eval", baselines.CAPTUM_CHUNKS,
            lambda k, xx, tt, sg: baselines.captum_occlusion(agent, xx, tt, k)),
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
        print(f"{name:38s} {out[name]['ms']:9.1f} ms  ours {out[name]['ours_ms']:8.1f} ms  x{out[name]['ratio_vs_ours']:.2f}",
              flush=True)
    return out


def cascade_game(agent, x, tgt, repeats: int, naive: bool, names=STUDY_DQN) -> dict:
    """Explaining cost of the sanity check (original + 5 levels) per state on one game's states, and of its
    similarity table; the naive path (model by model, full passes; pairwise similarities) if ``naive``."""
    from saliency_lib.inference import _window_plan

    modes = ("naive", "fast") if naive else ("fast",)
    per = {m: {mode: [] for mode in modes} for m in names}
    sim = {m: [] for m in names}
    sim_naive = {m: [] for m in names}
    n = x.shape[0]
    for _ in range(repeats):
        for m in names:
            for mode in modes:
                test = RandomisationTest(similarities=SIMILARITIES, reuse=mode == "fast")
                exp = explainer(m, agent, naive=mode == "naive")
                _window_plan._PLANS.clear()
                t = time.process_time()
                original, randomised = test.maps(agent, x, explainer=exp, target=tgt)
                per[m][mode].append((time.process_time() - t) / n)
            sim[m].append(clock(test.compare, original, randomised, target=tgt.numpy()) / n)
            if naive:
                sim_naive[m].append(clock(pairwise_similarities, test, original, randomised) / n)
    med = {m: {k: 1e3 * statistics.median(v) for k, v in d.items()} for m, d in per.items()}
    out = {"ms_per_state": sum(d["fast"] for d in med.values()), "per_method_ms_per_state": med,
           "similarity_per_method_ms_per_state": {m: 1e3 * statistics.median(v) for m, v in sim.items()},
           "similarity_ms_per_state": sum(1e3 * statistics.median(v) for v in sim.values()), "states": n}
    if naive:
        out["naive_ms_per_state"] = sum(d["naive"] for d in med.values())
        out["similarity_naive_ms_per_state"] = sum(1e3 * statistics.median(v) for v in sim_naive.values())
    print(f"cascade {agent.game}: {out['ms_per_state']:.0f} ms per state" +
          (f" (naive {out['naive_ms_per_state']:.0f})" if naive else "") +
          f"; similarity table {out['similarity_ms_per_state']:.0f} ms", flush=True)
    return out


def cascade(data: dict, repeats: int, naive_game: str) -> dict:
    per_game = {g: cascade_game(d["agent"], d["xc"], d["tc"], repeats, g == naive_game) for g, d in data.items()}
    ref = per_game[naive_game]
    fast = statistics.mean(v["ms_per_state"] for v in per_game.values())
    per_method = {m: {"naive": ref["per_method_ms_per_state"][m]["naive"],
                      "fast": statistics.mean(v["per_method_ms_per_state"][m]["fast"] for v in per_game.values())}
                  for m in STUDY_DQN}
    sim = statistics.mean(v["similarity_ms_per_state"] for v in per_game.values())
    return {"naive_ms_per_state": ref["naive_ms_per_state"], "ms_per_state": fast, "speedup": ref["naive_ms_per_state"] / fast,
            "methods": list(STUDY_DQN), "levels": 5, "per_method_ms_per_state": per_method, "similarity_ms_per_state": sim,
            "similarity_naive_ms_per_state": ref["similarity_naive_ms_per_state"],
            "similarity_speedup": ref["similarity_naive_ms_per_state"] / sim, "similarities": list(SIMILARITIES),
            "naive_game": naive_game, "per_game": per_game,
            "what": "explaining the original network and 5 cascading levels (RandomisationTest.maps) per state: fast, the mean "
                    "over the games' states; naive (model by model, full passes) on naive_game. The similarity table "
                    "(RandomisationTest.compare) is similarity_ms_per_state, and pair by pair with the pairwise functions "
                    "similarity_naive_ms_per_state"}


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


def degradation_game(agent, x, tgt, repeats: int, naive: bool, names=STUDY_DQN) -> dict:
    """Per state and method, the degradation unit as the sweep runs it: the 6 curves on the sanity unit's maps
    (study methods), maps and curves (the §6.2 ablation), curves of the random map; naive if ``naive``:
    every map explained again with full passes, every curve step a full pass (no shared endpoints)."""
    from saliency_lib.inference import _window_plan

    ids = list(range(x.shape[0]))
    n = len(ids)
    given = {m: explainer(m, agent).attribute(x, target=tgt).maps for m in names}  # the sanity units' maps

    def curves(maps, m, reuse):
        for metric in (Insertion, Deletion):
            for sub in SUBSTRATES:
                metric(substrate=sub, reuse_endpoints=reuse).evaluate(agent, x, saliency=maps, target=tgt, state_ids=ids,
                                                                      method=m)

    methods = [*names, *ABLATION_METHODS, "random"]
    rounds = {"fast": [], "maps": [], "naive": []}
    for _ in range(repeats):
        degradation_module._ENDPOINTS.clear()  # each round starts cold: endpoints are shared within it only
        fast, maps_t, slow = {}, {}, {}
        for m in methods:
            _window_plan._PLANS.clear()
            t = time.process_time()
            if m == "random":
                maps = random_saliency(n, tuple(x.shape[2:]), seed=0, state_ids=ids)
            elif m in ABLATION_METHODS:
                maps = explainer(m, agent).attribute(x, target=tgt).maps
            else:
                maps = given[m]
            maps_t[m] = (time.process_time() - t) / n
            curves(maps, m, True)
            fast[m] = (time.process_time() - t) / n
            if naive:
                t = time.process_time()
                maps = (random_saliency(n, tuple(x.shape[2:]), seed=0, state_ids=ids) if m == "random"
                        else explainer(m, agent, naive=True).attribute(x, target=tgt).maps)
                curves(maps, m, False)
                slow[m] = (time.process_time() - t) / n
        rounds["fast"].append(fast)
        rounds["maps"].append(maps_t)
        rounds["naive"].append(slow)
    med = {k: {m: 1e3 * statistics.median(r[m] for r in rs) for m in methods} for k, rs in rounds.items() if rs[0]}
    out = {"ms_per_state": sum(med["fast"].values()), "states": n,
           "per_method_ms_per_state": {m: {"fast": med["fast"][m], "maps": med["maps"][m],
                                           **({"naive": med["naive"][m]} if naive else {})} for m in methods}}
    if naive:
        out["naive_ms_per_state"] = sum(med["naive"].values())
    print(f"degradation {agent.game}: {out['ms_per_state']:.0f} ms per state" +
          (f" (naive {out['naive_ms_per_state']:.0f})" if naive else ""), flush=True)
    return out


def degradation(data: dict, repeats: int, naive_game: str) -> dict:
    per_game = {g: degradation_game(d["agent"], d["xc"], d["tc"], repeats, g == naive_game) for g, d in data.items()}
    ref = per_game[naive_game]
    methods = list(ref["per_method_ms_per_state"])
    fast = statistics.mean(v["ms_per_state"] for v in per_game.values())
    return {"naive_ms_per_state": ref["naive_ms_per_state"], "ms_per_state": fast, "speedup": ref["naive_ms_per_state"] / fast,
            "methods": methods, "substrates": list(SUBSTRATES), "experiments": ["insertion", "deletion"],
            "per_method_ms_per_state": {m: {"naive": ref["per_method_ms_per_state"][m]["naive"],
                                            "fast": statistics.mean(v["per_method_ms_per_state"][m]["fast"]
                                                                    for v in per_game.values())}
                                        for m in methods},
            "naive_game": naive_game, "per_game": per_game,
            "what": "per state, the degradation units as the sweep runs them: fast = the 6 curves on the sanity units' maps "
                    "for the study's methods, maps + curves for the ablation, curves for the random map (mean over the games' "
                    "states); naive on naive_game: every map explained again with full passes and full-pass curves"}


def machine() -> dict:
    cpu = cpu_model()
    import subprocess

    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = ""
    return {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "commit": rev, "cpu": cpu,
            "logical_cpus": os.cpu_count(), "load_average": list(os.getloadavg()), "python": sys.version.split()[0],
            "torch": torch.__version__, "numpy": np.__version__, "torch_threads": torch.get_num_threads()}


def game_data(args) -> dict:
    """Per game: the agent and its benchmark states (every ``--spacing``-th step of its greedy game)."""
    n_total = max(args.states, args.map_states, args.cascade_states)
    data = {}
    for g in args.games:
        agent_dir = f"{args.agents_dir}/dqn-{g}-s0"
        agent = load_agent(agent_dir)
        ss = collect_states(agent, n_total * args.spacing, seed=0)
        x, a = ss.states[:: args.spacing][:n_total], ss.actions[:: args.spacing][:n_total]
        data[g] = {"dir": agent_dir, "agent": agent, "x": x[: args.states], "actions": a[: args.states],
                   "xc": x[: args.cascade_states], "tc": a[: args.cascade_states]}
    return data


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", required=True)
    p.add_argument("--agents-dir", default="data/agents")
    p.add_argument("--games", nargs="*", default=list(GAMES))
    p.add_argument("--states", type=int, default=25, help="states per explainer call in the methods part (as the study's units)")
    p.add_argument("--map-states", type=int, default=4, help="states per game on which fast and naive maps are compared")
    p.add_argument("--spacing", type=int, default=7, help="keep every spacing-th step of the game")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cascade-states", type=int, default=3, help="states per call of the cascade, degradation and unit parts")
    p.add_argument("--comparison-states", type=int, default=3, help="states of the Captum / lime comparison")
    p.add_argument("--naive-game", default="Breakout", help="the game whose states the naive cascade and degradation run on")
    p.add_argument("--only", nargs="*", help="parts to run (methods comparisons cascade degradation projection)")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    start = machine()
    data = game_data(args)
    ref = data[args.naive_game]
    parts = set(args.only or ("methods", "comparisons", "cascade", "degradation", "projection"))
    res: dict = {"machine": start, "setting": {
        "agent": f"{args.agents_dir}/dqn-<Game>-s0 for {', '.join(args.games)}",
        "states": f"per game, every {args.spacing}th step of the fixed-start greedy game "
                  "(saliency_lib.states.collect_states, seed 0)",
        "games": list(args.games), "states_per_call": args.states, "map_states": args.map_states,
        "cascade_states": args.cascade_states, "comparison_states": args.comparison_states, "repeats": args.repeats,
        "naive_game": args.naive_game,
        "threads": "torch.set_num_threads(1); BLAS pools limited to 1 (threadpoolctl)",
        "statistic": "median over repeats after a warm-up; fast and floor interleaved within each round; a method's "
                     "speedup_vs_naive_floor is the median of the rounds' own floor/fast ratios",
        "clock": "CPU time of this single-threaded process (time.process_time): core seconds; the projection is in core hours",
        "parameters": "the paper's (library defaults) for every method"}}
    path = Path(args.json)
    if path.exists():
        old = json.loads(path.read_text())
        res = {**{k: v for k, v in old.items() if k not in parts and k not in ("machine", "setting", "notes")}, **res}
        res["runs"] = {**{k: v for k, v in old.get("runs", {}).items() if k not in parts}}
    res["runs"] = {**res.get("runs", {}), **{part: machine() for part in parts}}
    if "methods" in parts:
        res["methods"] = {**local_methods(data, args.repeats, args.map_states),
                          **global_methods(ref["agent"], ref["x"], max(1, args.repeats - 1))}
        res["runs"]["methods"]["load_average_at_end"] = list(os.getloadavg())
    if "comparisons" in parts:
        k = args.comparison_states
        res["comparisons"] = comparisons(ref["agent"], ref["x"][:k], ref["actions"][:k], 1)
        res["runs"]["comparisons"]["load_average_at_end"] = list(os.getloadavg())
    reps = max(1, args.repeats - 2)
    if "cascade" in parts:
        res["cascade"] = cascade(data, reps, args.naive_game)
        res["runs"]["cascade"]["load_average_at_end"] = list(os.getloadavg())
    if "degradation" in parts:
        res["degradation"] = degradation(data, reps, args.naive_game)
        res["runs"]["degradation"]["load_average_at_end"] = list(os.getloadavg())
    if "projection" in parts and "cascade" in res and "degradation" in res:
        res["projection"] = sp.projection(res["cascade"], res["degradation"], sp.mask_a3c_model(reps))
        pr = res["projection"]
        print(f"projection: {pr['core_hours_before']:.1f} -> {pr['core_hours_after']:.1f} core hours (x{pr['ratio']:.2f}); "
              f"DQN, 12 agents: {pr['dqn_12_agents_core_hours']:.1f}", flush=True)
        g = args.naive_game
        pr["unit_check"] = sp.unit_check(ref["dir"], ref["agent"], ref["xc"], ref["tc"], res["cascade"]["per_game"][g],
                                         res["degradation"]["per_game"][g])
        res["runs"]["projection"]["load_average_at_end"] = list(os.getloadavg())
    res["machine"]["load_average_at_end"] = list(os.getloadavg())
    res["notes"] = sp.NOTES
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
