"""``saliency-study fetch-official`` and ``official-scores``: the official Mask-A3C checkpoints."""

from __future__ import annotations

__all__ = ["add_official_parsers"]


def _cmd_fetch(args) -> int:
    from ..agents.official import fetch_official

    for p in fetch_official(args.dest, args.src):
        print(p)
    return 0


def _cmd_official_scores(args) -> int:
    import torch

    from ..agents import load_official
    from ..agents.official import OFFICIAL_GAMES, official_scores_table
    from ..play import evaluate

    torch.set_num_threads(args.threads)
    games = args.games or list(OFFICIAL_GAMES)
    results = {g: evaluate(load_official(g), args.episodes, args.seed, progress=not args.quiet) for g in games}
    table = official_scores_table(results)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    return 0


def add_official_parsers(sub) -> None:
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
