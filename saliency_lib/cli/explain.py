"""``saliency-study explain AGENT --method M --states N --out DIR``: saliency maps of an agent's own states.

:func:`add_explain_parser` adds the subcommand to the main parser; the
subcommand runs :func:`run_explain`. The states are the agent's greedy game
(:func:`saliency_lib.states.collect_states`).
"""

from __future__ import annotations

import argparse
import inspect
import json
from pathlib import Path

import numpy as np
import torch

from ..agents.base import Agent

__all__ = ["add_explain_parser", "run_explain"]


def _overlay_png(map_: np.ndarray, frame: np.ndarray, agent: Agent) -> np.ndarray:
    """One map over its raw frame: min-max scaled to [0, 1], resized back to the raw frame."""
    from ..games import mask_a3c_crop
    from ..viz import map84_to_frame, mask_to_frame, overlay

    lo, hi = float(map_.min()), float(map_.max())
    heat = (map_ - lo) / (hi - lo) if hi > lo else np.zeros_like(map_)
    if agent.preset == "mask_a3c":
        heat_frame, inside = mask_to_frame(heat, mask_a3c_crop(agent.game), frame.shape[:2])
        return overlay(frame, heat_frame, where=inside)
    return overlay(frame, np.clip(map84_to_frame(heat, frame.shape[:2]), 0.0, 1.0))


def run_explain(args: argparse.Namespace) -> int:
    """Run the ``explain`` subcommand: collect states, explain them, write ``maps.npz`` and PNG overlays.

    Writes to ``args.out``: ``maps.npz`` with ``maps`` (N, H, W), ``states``
    (N, C, H, W), ``actions`` (N,), ``target`` (N,) and ``forward_passes``;
    ``state_XXXX.png`` overlays; and ``explain.json`` with the method's config.
    Returns 0.
    """
    import imageio.v2 as imageio

    from ..agents import load_agent
    from ..explainers import EXPLAINERS, get_explainer
    from .checks import did_you_mean, directory

    if args.method not in EXPLAINERS:
        raise ValueError(f"unknown explainer {args.method!r}{did_you_mean(args.method, EXPLAINERS)} "
                         f"(valid names: {', '.join(EXPLAINERS)})")
    for name in ("states", "threads", "batch_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    try:
        directory(args.out)
    except argparse.ArgumentTypeError as e:
        raise ValueError(f"--out: {e}") from None
    torch.set_num_threads(args.threads)
    agent = load_agent(args.agent, device=args.device)
    params = {"batch_size": args.batch_size}
    ctor = EXPLAINERS[args.method]
    if "seed" in inspect.signature(ctor.func).parameters:
        params["seed"] = args.seed
    explainer = get_explainer(args.method, agent, **params)

    from ..states import collect_states

    ss = collect_states(agent, args.states, seed=args.seed, frames=True)
    states, hidden, frames, actions = ss.states, ss.hidden, list(ss.frames), ss.actions
    result = explainer.attribute(states, target=actions, hidden=hidden).cpu()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    maps = result.maps.numpy()
    np.savez_compressed(
        out / "maps.npz", maps=maps, states=states.cpu().numpy(), actions=actions.cpu().numpy(),
        target=result.target.numpy(), forward_passes=result.forward_passes,
    )
    for i, (m, frame) in enumerate(zip(maps, frames)):
        imageio.imwrite(out / f"state_{i:04d}.png", _overlay_png(m, frame, agent))
    info = {"agent": str(args.agent), "game": agent.game, "preset": agent.preset, "states": args.states, "seed": args.seed,
            "config": {k: v for k, v in explainer.config.items() if not callable(v)}, "forward_passes": result.forward_passes}
    (out / "explain.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    print(json.dumps({"out": str(out), "method": explainer.method_name, "states": args.states,
                      "forward_passes": result.forward_passes}))
    return 0


def add_explain_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``explain AGENT --method M --states N --out DIR [--seed S] [--batch-size B]`` to ``subparsers``.

    The subcommand's ``func`` is :func:`run_explain`.
    """
    from ..explainers import EXPLAINERS

    p = subparsers.add_parser("explain", help="saliency maps of the states an agent visits (maps.npz + PNG overlays)")
    p.add_argument("agent", help="checkpoint directory, or official:<Game>")
    p.add_argument("--method", required=True, help=f"explainer: {', '.join(EXPLAINERS)}")
    p.add_argument("--states", type=int, required=True, help="number of consecutive states of the evaluation protocol")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=0, help="environment seed and seed of stochastic explainers")
    p.add_argument("--batch-size", type=int, default=None,
                   help="network rows per forward call (default: the agent's inference batch, 256 for the DQN, 16 for Mask-A3C)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=run_explain)
    return p
