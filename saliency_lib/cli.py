"""Command line: ``saliency-study <command> ...`` (also ``python -m saliency_lib``)."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def _cmd_evaluate(args) -> int:
    import torch

    from .agents import load_agent
    from .play import evaluate, write_gif

    torch.set_num_threads(args.threads)
    agent = load_agent(args.agent)
    result = evaluate(agent, args.episodes, args.seed, max_steps=args.max_steps, progress=not args.quiet)
    result = {"agent": args.agent, "game": agent.game, "preset": agent.preset, "episodes": args.episodes, "seed": args.seed, **result}
    if args.gif:
        ep = write_gif(agent, args.gif, seed=args.seed, max_steps=args.max_steps or 1500, display=args.mask_display)
        result["gif"] = args.gif
        result["gif_steps"] = ep.steps
    print(json.dumps(result))
    return 0


def _cmd_fetch(args) -> int:
    from .agents.official import fetch_official

    for p in fetch_official(args.dest, args.src):
        print(p)
    return 0


def _cmd_official_scores(args) -> int:
    import torch

    from .agents import load_official
    from .agents.official import OFFICIAL_GAMES, official_scores_table
    from .play import evaluate

    torch.set_num_threads(args.threads)
    games = args.games or list(OFFICIAL_GAMES)
    results = {g: evaluate(load_official(g), args.episodes, args.seed, progress=not args.quiet) for g in games}
    table = official_scores_table(results)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    return 0


def _cmd_ship(args) -> int:
    from .train.ship import ship_agent

    row = ship_agent(args.run, args.dest, episodes=args.episodes, seed=args.seed, published=args.published, published_source=args.published_source)
    print(json.dumps(row))
    return 0


def _cmd_train(args) -> int:
    from .train.cli import run_train

    return run_train(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saliency-study", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("evaluate", help="play greedy games and print one JSON line of scores")
    e.add_argument("agent", help="checkpoint directory, official:<Game>, sb3:[<Game>:]model.zip or cleanrl:[<Game>:]file")
    e.add_argument("--episodes", type=int, default=10)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--gif", help="write a GIF of one game (Mask-A3C: masks overlaid)")
    e.add_argument("--max-steps", type=int, default=None, help="cap on agent steps per game")
    e.add_argument("--mask-display", choices=("mask", "sig5"), default="mask", help="GIF: the real mask M or the official sigmoid(5·z) view")
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(func=_cmd_evaluate)

    f = sub.add_parser("fetch-official", help="copy or download the official Mask-A3C checkpoints")
    f.add_argument("--dest", default=None)
    f.add_argument("--src", default=None, help="local copy (default: $MASK_A3C_OFFICIAL_SRC, else download)")
    f.set_defaults(func=_cmd_fetch)

    o = sub.add_parser("official-scores", help="re-evaluate the official Mask-A3C checkpoints next to their logged levels")
    o.add_argument("--games", nargs="*", help="default: all six")
    o.add_argument("--episodes", type=int, default=5)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--out", default="data/official_scores.csv")
    o.add_argument("--threads", type=int, default=1)
    o.add_argument("--quiet", action="store_true")
    o.set_defaults(func=_cmd_official_scores)

    s = sub.add_parser("ship", help="copy a finished run's agent, logs and learning curve to data/agents and score it")
    s.add_argument("run", help="training run directory (with agent/)")
    s.add_argument("--dest", required=True, help="e.g. data/agents/dqn-Breakout-s0")
    s.add_argument("--episodes", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--published", type=float, default=None, help="a published score at a similar budget")
    s.add_argument("--published-source", default="")
    s.set_defaults(func=_cmd_ship)

    from .metrics.cli import add_metrics_parsers
    from .study.book import add_book_parser

    add_metrics_parsers(sub)
    add_book_parser(sub)
    from .study.sweep import add_run_parser

    add_run_parser(sub)
    try:
        from .explainers.cli import add_explain_parser
    except ImportError:  # pragma: no cover
        add_explain_parser = None
    if add_explain_parser is not None:
        add_explain_parser(sub)

    try:
        from .train.cli import add_train_parser
    except ImportError:  # pragma: no cover - the trainers ship with the package
        add_train_parser = None
    if add_train_parser is not None:
        add_train_parser(sub, _cmd_train)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"saliency-study: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
