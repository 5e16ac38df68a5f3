"""Where is bf16 safe? Per method, bf16 maps against float32 maps on our trained agents.

Issue "Beyond the forward-pass floor", part 3: bf16 may be the default only for a method whose
bf16 maps keep a Spearman rank correlation of at least 0.99 with its float32 maps on the
trained agents of the study, on at least 20 states of each: the four shipped DQN agents
(``data/agents/dqn-<game>-s0``) and the official Mask-A3C Breakout agent.

For each agent the script plays the greedy game from the study's fixed start for
``--steps`` steps and takes ``--states`` states evenly spaced over it (consecutive states are
nearly identical; spacing them makes the 20 states say more). Each perturbation method runs
at the paper's parameters (the registry defaults) on those states twice:

* ``fp32``: the library's default path and batch size (for the local methods, on the DQN and
  the Mask-A3C agents, that is the exact incremental engine, which runs in float32 only);
* ``bf16``: the perturbed forward passes under ``torch.autocast(bfloat16)``, forced here even
  for methods the library does not offer it for, so that the decision can be measured.

Per state the Spearman correlation of the two maps is recorded (two constant maps count as
1.0, one constant map as 0.0), with the CPU time per map of each precision (one thread,
``time.process_time``; the machine was shared with training runs, so times are indicative).

The decision per method and agent kind: **bf16** when the minimum Spearman over every state
of every agent of that kind is ≥ 0.99 *and* bf16 is faster than the float32 default on every
agent of the kind; otherwise **fp32**, with the reason.

    OMP_NUM_THREADS=1 python benchmarks/bf16_decision.py --json data/benchmarks/bf16_decision.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from study_cost import machine  # noqa: E402  (benchmarks are scripts; they share the machine record)

from saliency_lib.agents import load_agent  # noqa: E402
from saliency_lib.explainers import get_explainer  # noqa: E402
from saliency_lib.states import collect_states  # noqa: E402

METHODS = ("occlusion", "ns_original", "ns_chosen", "ns_black", "sarfa", "rise", "lime_slic", "lime_quickshift",
           "lime_felzenszwalb")
AGENTS = ("data/agents/dqn-Breakout-s0", "data/agents/dqn-MsPacman-s0", "data/agents/dqn-SpaceInvaders-s0",
          "data/agents/dqn-Frostbite-s0", "official:Breakout")
THRESHOLD = 0.99
# Mask-A3C rows are ~20x a DQN row and run fastest in small chunks (cache); the DQN in large ones.


def rank_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman of two maps; 1.0 if both are constant, 0.0 if only one is."""
    ca, cb = np.ptp(a) == 0, np.ptp(b) == 0
    if ca or cb:
        return 1.0 if ca and cb else 0.0
    return float(spearmanr(a.ravel(), b.ravel())[0])


def explainer(name: str, agent, precision: str):
    exp = get_explainer(name, agent, precision="fp32")  # the library's default batch and path
    exp.precision = precision  # benchmark only: bypasses the library's bf16 allow-list
    return exp


def agent_rows(spec: str, n_states: int, steps: int) -> dict:
    agent = load_agent(spec)
    played = collect_states(agent, steps, seed=0)
    idx = np.linspace(0, steps - 1, n_states).round().astype(int)
    x = played.states[idx]
    hidden = None if played.hidden is None else tuple(h[idx] for h in played.hidden)
    actions = played.actions[idx]
    out = {"agent": spec, "kind": agent.preset, "states": idx.tolist(), "methods": {}}
    for name in tqdm(METHODS, desc=spec, leave=False):
        maps, ms = {}, {}
        for prec in ("fp32", "bf16"):
            exp = explainer(name, agent, prec)
            h1 = None if hidden is None else tuple(h[:1] for h in hidden)
            exp.attribute(x[:1], target=actions[:1], hidden=h1)  # warm-up: oneDNN builds its kernels on first use
            t0 = time.process_time()
            maps[prec] = exp.attribute(x, target=actions, hidden=hidden).maps.float().cpu().numpy()
            ms[prec] = 1e3 * (time.process_time() - t0) / len(idx)
        rho = [rank_agreement(maps["fp32"][i], maps["bf16"][i]) for i in range(len(idx))]
        out["methods"][name] = {"spearman_per_state": rho, "min_spearman": min(rho), "median_spearman": float(np.median(rho)),
                                "fp32_ms_per_map": ms["fp32"], "bf16_ms_per_map": ms["bf16"],
                                "bf16_speedup": ms["fp32"] / ms["bf16"]}
    return out


def decide(rows: list[dict]) -> dict:
    """The decision table: per agent kind and method, bf16 or fp32 and why."""
    table: dict = {}
    for kind in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]
        for name in METHODS:
            res = [r["methods"][name] for r in mine]
            rho = min(m["min_spearman"] for m in res)
            speed = min(m["bf16_speedup"] for m in res)
            keeps, faster = rho >= THRESHOLD, speed > 1.0
            why = ("keeps Spearman ≥ 0.99 and is faster" if keeps and faster
                   else f"min Spearman {rho:.4f} < {THRESHOLD}" if not keeps
                   else f"no faster than the float32 default (×{speed:.2f})")
            table.setdefault(kind, {})[name] = {"precision": "bf16" if keeps and faster else "fp32", "min_spearman": rho,
                                                "min_bf16_speedup": speed, "agents": [r["agent"] for r in mine],
                                                "states_per_agent": len(mine[0]["states"]), "reason": why}
    return table


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=Path("data/benchmarks/bf16_decision.json"))
    p.add_argument("--states", type=int, default=20)
    p.add_argument("--steps", type=int, default=1000, help="greedy steps from the fixed start to spread the states over")
    p.add_argument("--agents", nargs="*", default=list(AGENTS))
    args = p.parse_args(argv)
    if args.states < 20:
        print("note: the issue asks for at least 20 states per agent", file=sys.stderr)
    torch.set_num_threads(1)
    res = {"machine": machine(), "threshold": THRESHOLD, "agents": []}
    done = {}
    if args.json.exists():  # resume: agents already measured with the same settings are kept
        old = json.loads(args.json.read_text())
        done = {r["agent"]: r for r in old.get("agents", []) if len(r["states"]) == args.states}
    for spec in args.agents:
        row = done.get(spec) or agent_rows(spec, args.states, args.steps)
        res["agents"].append(row)
        res["decision"] = decide(res["agents"])
        res["machine"]["load_average_at_end"] = list(__import__("os").getloadavg())
        args.json.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, indent=1))
        tmp.replace(args.json)
    for kind, methods in res["decision"].items():
        print(f"\n{kind}")
        for name, d in methods.items():
            print(f"  {name:18s} {d['precision']}  min rho {d['min_spearman']:.4f}  bf16 "
                  f"x{d['min_bf16_speedup']:.2f}  {d['reason']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
