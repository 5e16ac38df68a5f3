"""``saliency-study compact``: pack the study's finished units into one file per agent and experiment."""

from __future__ import annotations

import json

from saliency_lib.cli.checks import directory, game_name, non_negative_int
from saliency_lib.games import HUBER_GAMES

from ..paths import RESULTS_DIR, repo_path
from ..profiles import PROFILE_NAMES

__all__ = ["add_compact_parser", "default_games", "results_dir"]


def results_dir(text: str):
    """``--results-dir``: a directory that exists or can be created, relative paths under the repository root."""
    return directory(str(repo_path(text)))


def default_games(profile: str, games: list[str] | None) -> list[str]:
    """The games of a study command: those given, else Breakout (tiny, quick) or the four benchmark games (full)."""
    return list(games) if games else (["Breakout"] if profile != "full" else list(HUBER_GAMES))


def add_compact_parser(subparsers) -> None:
    """``saliency-study compact``: move a profile's loose unit files into packs (nothing is computed or lost)."""
    p = subparsers.add_parser(
        "compact", help="pack the finished units of a profile into one file per agent and experiment (computes nothing)",
        description="Each finished unit of `saliency-study run` is a loose file; this packs the units of each agent "
                    "and experiment into one file (per-state scalars and pooled mean curves), then removes the loose "
                    "files. Safe at any time, also while a run goes on: a run finds packed units done.")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="quick", help="the profile's units (default quick)")
    p.add_argument("--games", nargs="+", type=game_name, default=None,
                   help="games, any case (default: Breakout for tiny/quick, the four for full)")
    p.add_argument("--agents", nargs="+", default=None, help="agent specs (default: the study's agents of each game)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--results-dir", type=results_dir, default=str(RESULTS_DIR))
    p.set_defaults(func=_cmd_compact)


def _cmd_compact(args) -> int:
    from ..study import study_compact

    report = study_compact(args.profile, default_games(args.profile, args.games), agents=args.agents, seed=args.seed,
                           results_dir=args.results_dir)
    print(json.dumps({"profile": args.profile, **report}))
    return 0
