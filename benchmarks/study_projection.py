"""The study's cost projection, as the sweep runs, and its check against real units.

Used by ``benchmarks/study_cost.py``. The sweep (:mod:`saliency_lib.sweep`) runs, per agent
and chunk of states, one sanity unit per method (the original network and its five randomised
levels explained together, then the similarity table) and one degradation unit per method
(insertion and deletion on three substrates). The degradation unit of a study method takes the
maps its sanity unit computed (``maps_cache``), so each map is computed once per state and method;
only the §6.2 ablation methods (degradation only) and the random map explain for themselves. The
projection adds the measured per-state costs of exactly that work:

``sanity = Σ_m cascade(m) + similarity(m)``, ``degradation = Σ_m curves(m) + Σ_ablation (maps + curves)
+ curves(random)``

for the DQN agents (the mean over the four games' states: what a state costs depends on its
game, e.g. through the share of no-op patches), and the per-pass model of
:func:`mask_a3c_model` for the actor-critic agents. :func:`unit_check` times real units
(``compute_unit``) of the same states and compares them with what the projection says they cost.
"""

from __future__ import annotations

import json
import statistics
import time
from types import SimpleNamespace

import torch

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
from saliency_lib.explainers import get_explainer
from saliency_lib.inference import staged_forward
from saliency_lib.metrics import RandomisationTest
from saliency_lib.sweep import Unit, compute_unit
from saliency_study.catalog import STUDY_METHODS

LOCAL = ("occlusion", "ns_original", "ns_chosen", "ns_black", "sarfa")
PERTURBATION = (*LOCAL, "rise", "lime_slic", "lime_quickshift", "lime_felzenszwalb")
STUDY_DQN = tuple(m for m in STUDY_METHODS if not m.startswith("mask_"))
SUBSTRATES = ("black", "random", "blur")
DQN_STATES = 997
#: What the open issues ask: 3 DQN agents per game (seeds 0-2) of the four games.
DQN_AGENTS = 12
#: The paper's scale, as before: one DQN agent per game, 400 Mask-A3C states.
PAPER_DQN_AGENTS, PAPER_A3C_STATES = 4, 400
#: Actor-critic states the open issues ask: the official Mask-A3C agents of the three games shared with Huber et al.
#: (100 states each), and our Breakout agents at 50 states each: A3C and Mask-A3C at 8 seeds each, the policy-
#: and the value-mask variant at one seed.
A3C_PARTS = {"official_mask_a3c": 3 * 100, "actor_critic_seeds": (8 + 8 + 1 + 1) * 50}


def clock(fn, *args, **kwargs) -> float:
    """CPU time of ``fn(*args, **kwargs)`` in seconds (this process, one thread: core seconds)."""
    t = time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - t


def mask_a3c_model(repeats: int) -> dict:
    """Per-pass costs of a Mask-A3C network (official 'double' layout, random weights) for the projection.

    "Before" is the code before the performance work: full passes in batches of 256, on the network in
    the standard memory layout. Full passes: one row in batches of 256 (before) and of the network's
    inference batch (after). The cascade of a global method (RISE, 100 masks; LIME's samples behave
    alike): original + 5 levels, model by model in batches of 256 (before) vs with the staged reuse of
    the trunk (after). The local methods at the paper's parameters on one state: per pass with
    incremental inference, alone and over the cascade's 6 networks at once, against naive passes on
    the same network; and the largest difference between the incremental and the naive map
    (min-max normalised).
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


def study_passes(hw: tuple[int, int] = (80, 80)) -> dict:
    """Forward passes per state of the study's methods at the paper's parameters on a Mask-A3C network."""
    torch.manual_seed(0)
    agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    x = torch.randn(1, 1, *hw)
    hidden = agent.initial_hidden(1)
    return {m: get_explainer(m, agent).attribute(x, hidden=hidden).forward_passes if m in PERTURBATION else 1
            for m in [*STUDY_DQN, "mask_policy", "mask_value"]}


def dqn_per_state(cascade_game: dict, degradation_game: dict) -> dict:
    """The sweep's per-state cost (ms) on one game's states: sanity units (cascade + similarity table) and
    degradation units (curves on the sanity units' maps; the ablation's and the random map's own maps)."""
    sanity = sum(cascade_game["per_method_ms_per_state"][m]["fast"] for m in STUDY_DQN) + cascade_game["similarity_ms_per_state"]
    per = degradation_game["per_method_ms_per_state"]
    degradation = sum(per[m]["fast"] for m in per)
    return {"sanity_ms": sanity, "degradation_ms": degradation, "total_ms": sanity + degradation}


def _a3c_hours(a3c: dict, states: int, sim: float, sim_before: float, passes: dict) -> tuple[float, float]:
    """Core hours before and after of ``states`` Mask-A3C states (per-pass model; every map counted once after)."""
    maps_passes = sum(passes.values())
    curve_passes = (len(passes) + 1) * 2 * len(SUBSTRATES) * 86  # + the random map; 85 steps and a clean pass per curve
    cascade_passes = 6 * sum(v for k, v in passes.items() if not k.startswith("mask_"))
    row, row_after = a3c["row_ms"], a3c.get("row_ms_inference_batch", a3c["row_ms"])
    # before: every map explained in the sanity unit and again in the degradation unit, full passes throughout
    before = (states * (cascade_passes * a3c["cascade_naive_ms_per_pass"] + (maps_passes + curve_passes) * row + sim_before)
              / 3.6e6)
    endpoint_saving = (86 - 83) / 86  # inner steps only; endpoints shared
    casc = {k: v["cascade_ms_per_pass"] for k, v in a3c.get("local", {}).items()}
    casc_ms = sum(6 * v * casc.get(k, a3c["cascade_fast_ms_per_pass"]) for k, v in passes.items() if not k.startswith("mask_"))
    masks_ms = sum(6 * v * row_after for k, v in passes.items() if k.startswith("mask_"))  # their cascade: full passes
    # after: the degradation units take the sanity units' maps, so no map is explained twice
    after = states * (casc_ms + masks_ms + curve_passes * (1 - endpoint_saving) * row_after + sim) / 3.6e6
    return before, after


def projection(cascade: dict, degradation: dict, a3c: dict) -> dict:
    """Core hours of the study the open issues ask (:data:`DQN_AGENTS` DQN agents × 997 states, the
    actor-critic states of :data:`A3C_PARTS`), before (naive: full passes, every map twice) and after (as
    the sweep runs), and the paper-scale study (4 DQN agents, 400 Mask-A3C states) for comparison."""
    games = list(cascade["per_game"])
    per_game = {g: dqn_per_state(cascade["per_game"][g], degradation["per_game"][g]) for g in games}
    after_ms = statistics.mean(v["total_ms"] for v in per_game.values())
    ref = cascade["naive_game"]
    sim = statistics.mean(cascade["per_game"][g]["similarity_ms_per_state"] for g in games)
    sim_before = cascade["per_game"][ref].get("similarity_naive_ms_per_state", sim)
    before_ms = cascade["naive_ms_per_state"] + sim_before + degradation["naive_ms_per_state"]
    passes = study_passes()
    a3c_states = sum(A3C_PARTS.values())
    a3c_before, a3c_after = _a3c_hours(a3c, a3c_states, sim, sim_before, passes)
    dqn_before = DQN_AGENTS * DQN_STATES * before_ms / 3.6e6
    dqn_after = DQN_AGENTS * DQN_STATES * after_ms / 3.6e6
    paper_before = PAPER_DQN_AGENTS * DQN_STATES * before_ms / 3.6e6
    paper_after = PAPER_DQN_AGENTS * DQN_STATES * after_ms / 3.6e6
    pa_before, pa_after = _a3c_hours(a3c, PAPER_A3C_STATES, sim, sim_before, passes)
    return {
        "core_hours_before": dqn_before + a3c_before, "core_hours_after": dqn_after + a3c_after,
        "ratio": (dqn_before + a3c_before) / (dqn_after + a3c_after),
        "dqn_12_agents_core_hours": dqn_after,
        "dqn": {"agents": DQN_AGENTS, "states": DQN_STATES, "core_hours_before": dqn_before, "core_hours_after": dqn_after,
                "ms_per_state_after": after_ms, "ms_per_state_before": before_ms, "per_game_ms_per_state": per_game,
                "before_measured_on": ref},
        "mask_a3c": {"states": a3c_states, "parts": dict(A3C_PARTS), "core_hours_before": a3c_before,
                     "core_hours_after": a3c_after, "passes_per_state": passes, **a3c},
        "paper_scale": {"dqn_agents": PAPER_DQN_AGENTS, "mask_a3c_states": PAPER_A3C_STATES,
                        "core_hours_before": paper_before + pa_before, "core_hours_after": paper_after + pa_after},
    }


def unit_check(agent_dir: str, agent, x: torch.Tensor, actions: torch.Tensor, cascade_game: dict, degradation_game: dict,
               methods=("occlusion", "lime_slic")) -> dict:
    """CPU time of real units (:func:`~saliency_lib.sweep.compute_unit`) on states ``x``: per method
    one sanity unit (which hands its maps on) and the degradation unit that takes them, against what the
    projection's per-state costs of these states say (``ratio`` = measured ÷ projected)."""
    n = x.shape[0]
    states = SimpleNamespace(states=x, actions=actions, hidden=None)
    scfg = json.dumps({"agent": agent_dir, "benchmark": "study_cost", "n": n})
    pairs = tuple((mode, s) for mode in ("insertion", "deletion") for s in SUBSTRATES)
    sims = cascade_game.get("similarity_per_method_ms_per_state", {})
    out = {}
    for m in methods:
        cache: dict = {}
        sanity = Unit("sanity", agent_dir, agent.game, m, (), tuple(range(n)), scfg, "{}", 0)
        degr = Unit("degradation", agent_dir, agent.game, m, pairs, tuple(range(n)), scfg, "{}", 0)
        t_s = clock(compute_unit, sanity, agent, states, maps_cache=cache)
        t_d = clock(compute_unit, degr, agent, states, maps_cache=cache)
        proj_s = n * (cascade_game["per_method_ms_per_state"][m]["fast"] + sims.get(m, 0.0)) / 1e3
        proj_d = n * degradation_game["per_method_ms_per_state"][m]["fast"] / 1e3
        out[m] = {"states": n, "sanity_s": t_s, "sanity_projected_s": proj_s, "sanity_ratio": t_s / proj_s,
                  "degradation_s": t_d, "degradation_projected_s": proj_d, "degradation_ratio": t_d / proj_d}
        print(f"unit check {m}: sanity {t_s:.1f} s (projected {proj_s:.1f}), degradation {t_d:.1f} s (projected {proj_d:.1f})",
              flush=True)
    tot_m = sum(v["sanity_s"] + v["degradation_s"] for v in out.values())
    tot_p = sum(v["sanity_projected_s"] + v["degradation_projected_s"] for v in out.values())
    return {"units": out, "measured_s": tot_m, "projected_s": tot_p, "ratio": tot_m / tot_p,
            "what": "real sanity and degradation units (compute_unit, maps handed over) on the benchmark's states of one game, "
                    "CPU time, against the projection's per-state costs of the same states"}


#: What a reader of study_cost.json needs to know about its numbers (written into the file).
NOTES = [
    "methods: the local methods are timed on the states of the four shipped DQN agents (data/agents/dqn-<Game>-s0), "
    "per_game; a method's top-level ms and naive_floor_ms are the means over the games (equal numbers of states), so "
    "naive_floor_ms / ms and speedup_vs_naive_floor are the speed-up over the four games' states pooled "
    "(speedup_mean_of_games: the mean of the per-game speed-ups). RISE and LIME have no incremental path: timed on "
    "Breakout only, their ms is the full-pass path (naive_ms = ms).",
    "flop_limit_speedup (benchmarks/flop_limit.py): (1 + P) x F_full / (F_full + sum_p F_p), the multiply-adds of full "
    "passes against an exact incremental pass that computes only the outputs each perturbation's pixels reach (geometry "
    "only, every pixel counted as changed); fraction_of_limit = speedup_vs_naive_floor / flop_limit_speedup. A method can "
    "pass its limit through rows that change nothing (noop_share: the share of (state, perturbation) rows the engine "
    "skipped, per game); flop_limit_speedup_with_noops counts only the other rows.",
    "engine: per game, window_positions / changed_positions per conv layer (the rows' windows and, of those, the "
    "positions whose change is not zero), and fc_positions_used / fc_positions (the conv3 window positions left in the "
    "fc product after dropping the ReLU-dead ones), over the map_states calls; mean_changed_positions of the FLOP "
    "limit are the geometric counts per perturbation.",
    "projection (benchmarks/study_projection.py): as the sweep runs. Per DQN state: every study method's sanity unit "
    "(cascade.per_game.<game>.per_method_ms_per_state.<m>.fast, the original and 5 levels explained together, plus its "
    "similarity table) and its degradation unit on the sanity unit's maps (degradation.per_game.<game>."
    "per_method_ms_per_state.<m>.fast: the 6 curves only), plus the ablation methods' maps and curves and the random "
    "map's curves; the mean over the four games' states, x 997 states x 12 agents (dqn_12_agents_core_hours). Before: "
    "the naive path (full passes, every map computed for the sanity and again for the degradation unit, no shared curve "
    "endpoints), measured on Breakout (naive_game).",
    "Mask-A3C part: A3C_PARTS states (300 official, 900 of our Breakout actor-critic agents: 8 + 8 seeds, the policy- "
    "and value-mask variants), each counted with the double network and both masks (an upper bound for the agents "
    "without masks); cost = forward passes per state at the paper's parameters (80x80) x measured per-pass costs "
    "(mask_a3c). After: the degradation units reuse the sanity units' maps. paper_scale: 4 DQN agents, 400 Mask-A3C states.",
    "unit_check: real units (compute_unit; sanity, then degradation with the sanity unit's maps) on the cascade states "
    "of one game, CPU time, against the projection's per-state costs for the same states and methods.",
    "The machine has 2 cores shared with other jobs (load average in machine and runs): times are CPU times of this "
    "process, which contention still inflates (shared caches, memory bandwidth), full passes more than windows; the "
    "interleaved ratios are steadier than the times.",
    "min_spearman: Spearman between the fast and the naive scores of the method (the coarse grid of a grid method), "
    "both min-max normalised and quantised to a grid of max(1e-5, 16 float32 ulps of the scores' scale) first: scores "
    "float32 cannot tell apart (rows that change nothing, exactly clean on the fast path and ~1e-7 off in full passes; "
    "1 - softmax saturating near 1) would otherwise be ranked. min_spearman_map: the same on the upsampled maps; "
    "min_spearman_plain: the plain Spearman of the maps.",
    "runs: the machine, load and commit of each part; parts can be rerun alone with --only and are merged into the file.",
]
