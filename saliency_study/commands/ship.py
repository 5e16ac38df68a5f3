"""``saliency-study ship``: turn a finished training run into a shipped agent under ``data/agents/``."""

from __future__ import annotations

import json

__all__ = ["add_ship_parser"]


def _cmd_ship(args) -> int:
    from ..shipping import ship_agent

    row = ship_agent(args.run, args.dest, episodes=args.episodes, seed=args.seed, sticky_episodes=args.sticky_episodes,
                     published=args.published, published_source=args.published_source)
    print(json.dumps(row))
    return 0


def _run_dir(text: str):
    """A finished training run: a directory holding the final agent (``agent/meta.json``)."""
    import argparse
    from pathlib import Path

    p = Path(text).expanduser()
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory" + ("" if p.exists() else " (it does not exist)"))
    if not (p / "agent" / "meta.json").is_file():
        raise argparse.ArgumentTypeError(f"{text!r} holds no finished agent (agent/meta.json); is the run finished?")
    return str(p)


def add_ship_parser(sub) -> None:
    from saliency_lib.cli.checks import directory, non_negative_int, positive_int

    s = sub.add_parser("ship", help="copy a finished run's agent, logs and learning curve to data/agents and score it")
    s.add_argument("run", type=_run_dir, help="training run directory (with agent/)")
    s.add_argument("--dest", required=True, type=directory, help="e.g. data/agents/dqn-Breakout-s0")
    s.add_argument("--episodes", type=positive_int, default=10, help="greedy games (the papers' protocol)")
    s.add_argument("--sticky-episodes", type=non_negative_int, default=30,
                   help="games with sticky actions (repeat_action_probability 0.25); 0: none")
    s.add_argument("--seed", type=non_negative_int, default=0)
    s.add_argument("--published", type=float, default=None, help="a published score at a similar budget")
    s.add_argument("--published-source", default="")
    s.set_defaults(func=_cmd_ship)
