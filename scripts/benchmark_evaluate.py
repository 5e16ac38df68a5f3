r"""Time batched against sequential evaluation (saliency_lib.play.evaluate) on shipped agents.

Both play the same games (the script checks it); the times are CPU seconds of this process
(``time.process_time``), which the other processes on a shared machine disturb less than wall time.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python scripts/benchmark_evaluate.py \
        data/agents/a3c-Breakout-double-s0 --episodes 10 --max-steps 1000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("agents", nargs="+")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--protocol", default="greedy")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.play import evaluate

    torch.set_num_threads(1)
    for spec in args.agents:
        agent = load_agent(spec)
        res = {}
        for mode in ("sequential", "batched"):
            c0, w0 = time.process_time(), time.time()
            r = evaluate(agent, args.episodes, args.seed, protocol=args.protocol, max_steps=args.max_steps, progress=False,
                         batched=mode == "batched")
            res[mode] = {"cpu_s": round(time.process_time() - c0, 1), "wall_s": round(time.time() - w0, 1), "steps": r["steps"],
                         "fingerprints": r["fingerprints"], "scores": r["scores"]}
        same = res["sequential"]["fingerprints"] == res["batched"]["fingerprints"]
        print(json.dumps({"agent": spec, "preset": agent.preset, "protocol": args.protocol, "episodes": args.episodes,
                          "max_steps": args.max_steps, "steps": res["batched"]["steps"], "same_games": same,
                          "sequential_cpu_s": res["sequential"]["cpu_s"], "batched_cpu_s": res["batched"]["cpu_s"],
                          "speedup_cpu": round(res["sequential"]["cpu_s"] / res["batched"]["cpu_s"], 2),
                          "sequential_ms_per_step": round(1e3 * res["sequential"]["cpu_s"] / res["sequential"]["steps"], 2),
                          "batched_ms_per_step": round(1e3 * res["batched"]["cpu_s"] / res["batched"]["steps"], 2),
                          "sequential_wall_s": res["sequential"]["wall_s"], "batched_wall_s": res["batched"]["wall_s"]}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
