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


def _official_games():
    from saliency_lib.agents.official import OFFICIAL_GAMES

    return OFFICIAL_GAMES


def add_official_scores_parser(sub) -> None:
    from saliency_lib.cli.checks import games_of, non_negative_int, output_file, positive_int

    o = sub.add_parser("official-scores", help="re-evaluate the official Mask-A3C checkpoints next to their logged levels")
    o.add_argument("--games", nargs="*", type=games_of(_official_games, "game with an official checkpoint"),
                   help="default: all six (any case)")
    o.add_argument("--episodes", type=positive_int, default=5)
    o.add_argument("--seed", type=non_negative_int, default=0)
    o.add_argument("--out", type=output_file, default=str(repo_path(OFFICIAL_SCORES_CSV)))
    o.add_argument("--threads", type=positive_int, default=1)
    o.add_argument("--quiet", action="store_true")
    o.set_defaults(func=_cmd_official_scores)
