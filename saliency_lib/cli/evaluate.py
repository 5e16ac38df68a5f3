"""``saliency-study evaluate``: play greedy games and print one JSON line of scores."""

from __future__ import annotations

import json

__all__ = ["add_evaluate_parser"]


def _cmd_evaluate(args) -> int:
    import torch

    from ..agents import load_agent
    from ..game_video import write_gif
    from ..play import evaluate

    for name in ("episodes", "max_steps", "threads"):  # before the agent is loaded or a game played
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.gif:
        from ..video import check_video_path

        check_video_path(args.gif)  # a bad path fails before the games are played
    torch.set_num_threads(args.threads)
    agent = load_agent(args.agent)
    result = evaluate(agent, args.episodes, args.seed, protocol=args.protocol, max_steps=args.max_steps, progress=not args.quiet)
    result = {"agent": args.agent, "game": agent.game, "preset": agent.preset, "episodes": args.episodes, "seed": args.seed,
              **result}
    if args.gif:
        ep = write_gif(agent, args.gif, seed=args.seed, max_steps=args.max_steps or 1500, display=args.mask_display)
        result["gif"] = args.gif
        result["gif_steps"] = ep.steps
    print(json.dumps(result))
    return 0


def add_evaluate_parser(sub) -> None:
    """Add the ``evaluate`` command to the sub-parsers ``sub``."""
    e = sub.add_parser("evaluate", help="play greedy games and print one JSON line of scores")
    e.add_argument("agent",
                   help="checkpoint directory, official:<Game>, sb3:[<Game>:]model.zip, "
                        "cleanrl:[<Game>:]file or keras:[<Game>:]file.h5")
    e.add_argument("--episodes", type=int, default=None, help="games (default: the protocol's, 10 greedy or 30 sticky)")
    e.add_argument("--protocol", choices=("greedy", "sticky"), default="greedy",
                   help="greedy: the papers' deterministic emulator; sticky: sticky actions, repeat_action_probability 0.25")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--gif", help="write a GIF (or an MP4, by the suffix) of one game (Mask-A3C: masks overlaid)")
    e.add_argument("--max-steps", type=int, default=None, help="cap on agent steps per game")
    e.add_argument("--mask-display", choices=("mask", "sig5"), default="mask",
                   help="GIF: the real mask M or the official sigmoid(5·z) view")
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(func=_cmd_evaluate)
