"""Vectorised Atari env throughput on this machine: which backend the trainers use.

Compares, for 8 Breakout envs with random actions (agent steps per second):

* gymnasium ``SyncVectorEnv`` and ``AsyncVectorEnv`` over our own ``make_env`` wrappers
  (exactly the presets, Python wrappers);
* ale-py's C++ ``AtariVectorEnv`` (frames equal to the ``dqn`` preset pixel for pixel,
  see tests/lib/test_envs.py; RGB mode for the ``mask_a3c`` preset);
* envpool (``pip install envpool``), if installed.

Usage: ``python benchmarks/envs.py --json data/benchmarks/envs.json``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import gymnasium as gym
import numpy as np


def _rate(step, n_envs, n_actions, steps=400, warm=20):
    rng = np.random.default_rng(0)
    for _ in range(warm):
        step(rng.integers(0, n_actions, n_envs))
    t = time.perf_counter()
    for _ in range(steps):
        step(rng.integers(0, n_actions, n_envs))
    return n_envs * steps / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--num-envs", type=int, default=8)
    a = ap.parse_args()
    from saliency_lib.envs import make_env

    n = a.num_envs
    res = {}
    for mode, cls in (("gymnasium_sync_ours", gym.vector.SyncVectorEnv), ("gymnasium_async_ours", gym.vector.AsyncVectorEnv)):
        env = cls([lambda: make_env("Breakout", "dqn", mode="train") for _ in range(n)])
        env.reset(seed=0)
        res[mode] = _rate(env.step, n, 4)
        env.close()
    from ale_py.vector_env import AtariVectorEnv

    env = AtariVectorEnv("breakout", n, episodic_life=False, reward_clipping=False)
    env.reset(seed=0)
    res["ale_vector_gray84"] = _rate(env.step, n, 4)
    env.close()
    env = AtariVectorEnv("breakout", n, grayscale=False, img_height=210, img_width=160, stack_num=1)
    env.reset(seed=0)
    res["ale_vector_rgb"] = _rate(env.step, n, 4)
    env.close()
    try:
        import envpool

        env = envpool.make_gymnasium("Breakout-v5", num_envs=n, episodic_life=False, reward_clip=False,
                                     repeat_action_probability=0.0)
        env.reset()
        res["envpool_gray84"] = _rate(env.step, n, 4)
        env.close()
    except Exception as e:  # envpool is optional and absent on many Pythons
        res["envpool_gray84"] = f"unavailable: {type(e).__name__}: {e}"
    out = {"num_envs": n, "agent_steps_per_s": res, "cpu_count": os.cpu_count(),
           "machine": platform.processor() or platform.machine(), "load_avg": os.getloadavg(),
           "note": "random actions, Breakout; measured while other processes may run (see load_avg)"}
    print(json.dumps(out, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
