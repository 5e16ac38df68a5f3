"""Training throughput on this machine: our trainers vs a single-file CleanRL-style DQN loop.

Reports agent steps per second (1 agent step = 4 frames) with 1 torch thread, all
measured in the same run:

* ``ours_dqn_default``: :func:`saliency_lib.train.train_dqn` with its defaults
  (8 envs, batch 64 every 16 steps);
* ``ours_dqn_matched``: the same trainer with CleanRL's replay ratio (batch 32 every 4 steps);
* ``cleanrl_style_dqn``: :mod:`benchmarks.cleanrl_style_dqn`, a straightforward loop
  (one env, full obs/next-obs stacks in replay, batch 32 every 4 steps);
* ``ours_dqn_fp32``: the DQN defaults with ``precision="fp32"`` (what bf16 autocast buys);
* ``ours_a2c_double``: :func:`saliency_lib.train.train_a2c` (16 envs, 20-step rollouts, bf16);
* ``ours_a2c_double_fp32``: the same with ``precision="fp32"``.

Each run collects ``--learning-starts`` steps first and is then timed for ``--steps``
more steps of learning. Usage: ``python benchmarks/training.py --json data/benchmarks/training.json``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--steps", type=int, default=8000, help="agent steps timed after learning starts")
    ap.add_argument("--learning-starts", type=int, default=2000)
    ap.add_argument("--game", default="Breakout")
    a = ap.parse_args()
    torch.set_num_threads(1)
    from cleanrl_style_dqn import run as cleanrl_run

    from saliency_lib.train import A2CArgs, DQNArgs, train_a2c, train_dqn

    ls, n = a.learning_starts, a.steps
    res, settings = {}, {}

    def ours(key, **kw):
        with tempfile.TemporaryDirectory() as d:
            args = DQNArgs(game=a.game, frames=4 * (ls + n), learning_starts=ls, eval_episodes=0, checkpoint_minutes=1e9, **kw)
            settings[key] = {k: getattr(args, k) for k in ("num_envs", "batch_size", "train_freq", "precision")}
            warm = DQNArgs(game=a.game, frames=4 * ls, learning_starts=ls, eval_episodes=0, checkpoint_minutes=1e9, **kw)
            t_all = _timed(lambda: train_dqn(args, d, progress=False))
            t_warm = _timed(lambda: train_dqn(warm, d + "/w", progress=False))
        return n / (t_all - t_warm)

    res["ours_dqn_default"] = ours("ours_dqn_default")
    res["ours_dqn_matched"] = ours("ours_dqn_matched", batch_size=32, train_freq=4)
    res["ours_dqn_fp32"] = ours("ours_dqn_fp32", precision="fp32")
    t_all = _timed(lambda: cleanrl_run(a.game, ls + n, ls))
    t_warm = _timed(lambda: cleanrl_run(a.game, ls, ls))
    res["cleanrl_style_dqn"] = n / (t_all - t_warm)
    for key, precision in (("ours_a2c_double", "bf16"), ("ours_a2c_double_fp32", "fp32")):
        with tempfile.TemporaryDirectory() as d:
            args = A2CArgs(game=a.game, frames=4 * n, eval_episodes=0, checkpoint_minutes=1e9, precision=precision)
            settings[key] = {k: getattr(args, k) for k in ("num_envs", "num_steps", "precision")}
            res[key] = n / _timed(lambda args=args, d=d: train_a2c(args, d, progress=False))
    out = {"agent_steps_per_s": res, "frames_per_s": {k: 4 * v for k, v in res.items()}, "settings": settings,
           "game": a.game, "timed_steps": n,
           "learning_starts": ls, "torch_threads": 1, "cpu_count": os.cpu_count(), "load_avg_at_end": os.getloadavg(),
           "ratio_ours_matched_vs_cleanrl": res["ours_dqn_matched"] / res["cleanrl_style_dqn"],
           "ratio_ours_default_vs_cleanrl": res["ours_dqn_default"] / res["cleanrl_style_dqn"],
           "bf16_speedup_dqn": res["ours_dqn_default"] / res["ours_dqn_fp32"],
           "bf16_speedup_a2c": res["ours_a2c_double"] / res["ours_a2c_double_fp32"]}
    print(json.dumps(out, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
