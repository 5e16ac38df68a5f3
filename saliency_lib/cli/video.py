"""``saliency-study video AGENT --method M --out FILE``: one greedy game with a method's map over every frame.

The video (MP4 or GIF, by the suffix of ``--out``) shows each game frame with the map
overlaid, the chosen action, and the agent's Q-values or policy π as a bar chart beside
it (:func:`saliency_lib.video.write_saliency_video`). At the end one line gives the
measured maps per second; ``--json`` prints a JSON summary instead (that line goes to
stderr then).
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_video_parser", "run_video"]


def run_video(args: argparse.Namespace) -> int:
    """Run the ``video`` subcommand; returns 0.

    Every argument is checked before the agent is loaded or a game played, and each
    misuse raises ``ValueError`` or ``FileNotFoundError`` (one line, exit code 2 through
    :func:`saliency_lib.cli.main`).
    """
    from ..validation import check_float, check_int
    from ..video import check_method, check_video_path, video_explainer

    check_int("--max-steps", args.max_steps, minimum=1, hint="; pass the number of agent steps of the game")
    check_float("--fps", args.fps, low=0.0, low_open=True, hint="; pass frames per second, e.g. 15")
    check_int("--episodes", args.episodes, minimum=1)
    check_int("--chunk", args.chunk, minimum=1)
    check_int("--scale", args.scale, minimum=1)
    check_int("--threads", args.threads, minimum=1)
    if args.batch_size is not None:
        check_int("--batch-size", args.batch_size, minimum=1)
    check_method(args.method)  # before loading the agent: these errors need no agent
    check_video_path(args.out)

    import torch

    from ..agents import load_agent
    from ..video import write_saliency_video

    torch.set_num_threads(args.threads)
    agent = load_agent(args.agent, device=args.device)
    explainer = video_explainer(agent, args.method, seed=args.seed, batch_size=args.batch_size)
    summary = write_saliency_video(agent, explainer, args.out, max_steps=args.max_steps, seed=args.seed, fps=args.fps,
                                   episodes=args.episodes, chunk=args.chunk, scale=args.scale, progress=not args.quiet)
    if args.json:
        print(summary.line(), file=sys.stderr)
        print(json.dumps({"agent": str(args.agent), "threads": args.threads, **summary.to_dict()}))
    else:
        print(summary.line())
    return 0


def add_video_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``video AGENT --method M --out FILE [--max-steps N] [--seed S] [--fps F] [--episodes K] ...`` to ``subparsers``."""
    p = subparsers.add_parser("video", help="a video of one greedy game with a saliency map over every frame (MP4 or GIF)")
    p.add_argument("agent", help="checkpoint directory, official:<Game>, sb3:[<Game>:]model.zip or cleanrl:[<Game>:]file")
    p.add_argument("--method", required=True, help="explainer of the registry (e.g. occlusion, gradient, mask_policy)")
    p.add_argument("--out", required=True, help="the video: *.mp4 (H.264) or *.gif, chosen by the suffix")
    p.add_argument("--max-steps", type=int, default=1000, help="cap on agent steps per game (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="environment seed (game i: seed + i) and seed of stochastic methods")
    p.add_argument("--fps", type=float, default=15.0, help="frames per second of the video (default 15)")
    p.add_argument("--episodes", type=int, default=1, help="games, one after the other (default 1)")
    p.add_argument("--chunk", type=int, default=32, help="states explained per call (default 32)")
    p.add_argument("--scale", type=int, default=2, help="enlargement of the game frame (default 2)")
    p.add_argument("--batch-size", type=int, default=None, help="network rows per forward call (default: the agent's)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print a JSON summary (with maps_per_second) on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_video)
    return p
