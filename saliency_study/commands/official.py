"""``saliency-study official-scores``: re-evaluate the official Mask-A3C checkpoints for the study."""

from __future__ import annotations

from ..paths import OFFICIAL_SCORES_CSV, repo_path

__all__ = ["add_official_scores_parser"]


def _cmd_official_scores(args) -> int:
    import torch

    from saliency_lib.agents import load_official
    from saliency_lib.agents.official import OFFICIAL_GAMES, official_scores_table
    from saliency_lib.play import evaluate

    torch.set_num_threads(args.threads)
    games = args.games or list(OFFICIAL_GAMES)
    results = {g: evaluate(load_official(g), args.episodes, args.seed, progress=not args.quiet) for g in games}
    table = official_scores_table(results)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    return 0


def add_official_scores_parser(sub) -> None:
    o = sub.add_parser("official-scores", help="re-evaluate the official Mask-A3C checkpoints next to their logged levels")
    o.add_argument("--games", nargs="*", help="default: all six")
    o.add_argument("--episodes", type=int, default=5)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--out", default=str(repo_path(OFFICIAL_SCORES_CSV)))
    o.add_argument("--threads", type=int, default=1)
    o.add_argument("--quiet", action="store_true")
    o.set_defaults(func=_cmd_official_scores)
