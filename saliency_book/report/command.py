"""``saliency-study report AGENT --out DIR``: one agent explained, in a small offline book of its own.

Added to ``saliency-study`` through the ``saliency_study.commands`` entry point (``pyproject.toml``).
Every bad input ends the command with one line on stderr and exit status 2, before anything is
computed (:mod:`saliency_book.report.plan`); a page that fails to execute ends it with one line and
status 1, naming the kept notebook.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from saliency_study.paths import RESULTS_DIR
from saliency_study.profiles import PROFILE_NAMES

from .plan import EXECUTORS

__all__ = ["add_report_parser", "run_report"]

PROG = "saliency-study report"


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr, flush=True)
    return status


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_report(args: argparse.Namespace) -> int:
    """Entry point of ``saliency-study report``: plan (checks), estimate, sweep, book; prints the entry page."""
    from saliency_book.builder.builder import ChapterError

    from .build import build_report, report_specs
    from .plan import plan_report

    try:
        plan = plan_report(args.agent, out=args.out, game=args.game, states=args.states, methods=args.methods,
                           profile=args.profile, executor=args.executor, seed=args.seed, results_dir=args.results_dir)
    except (ValueError, FileNotFoundError) as e:
        return _fail(e, 2)
    if args.estimate_only:
        from saliency_study.cost import estimate_sweep

        est = estimate_sweep(report_specs(plan), results_dir=plan.results_dir)
        print(f"{plan.spec}: {est.line()}")
        for agent, why in est.full_passes.items():
            print(f"notice: {agent}: incremental inference does not support this network ({why}); "
                  "the explainers and metrics use full forward passes", file=sys.stderr)
        return 0
    try:
        rep = build_report(plan, log=_log, force=args.force, progress=not args.quiet)
    except ChapterError as e:
        return _fail(e, 1)
    except RuntimeError as e:  # the HTML build or the offline check; its first line says which
        return _fail(str(e).splitlines()[0] if str(e) else type(e).__name__, 1)
    if rep.index is None:
        return 0
    if args.check:
        from saliency_book.builder.browser import check_book

        problems = [f"{r.page}: {p}" for r in check_book(rep.book.html_dir) for p in r.problems]
        for p in problems:
            print(f"{PROG}: {p}", file=sys.stderr)
        _log(f"[report] browser check: {'OK' if not problems else f'{len(problems)} problems'}")
        if problems:
            return 1
    print(rep.index)
    return 0


def add_report_parser(subparsers, func: Callable | None = None) -> argparse.ArgumentParser:
    """Add ``report`` to the ``saliency-study`` sub-commands (``func`` defaults to :func:`run_report`)."""
    p = subparsers.add_parser(
        "report", help="explain one agent: its sweep and the book's chapters for it, as a small offline HTML book",
        description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("agent", help="checkpoint directory, official:<Game>, sb3:[<Game>:]model.zip, cleanrl:[<Game>:]file, "
                                 "keras:[<Game>:]file.h5 or advstream:<spec>")
    p.add_argument("--out", required=True, metavar="DIR", help="folder of the report (DIR/index.html opens it)")
    p.add_argument("--game", default=None, help="the game, where the spec does not say it")
    p.add_argument("--states", type=int, default=None, metavar="N", help="states per agent (default: the profile's)")
    p.add_argument("--methods", nargs="+", default=None, metavar="M",
                   help="the study's methods to run, e.g. occlusion rise (or occlusion,rise; default: every applicable)")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="quick", help="execution profile (default: quick)")
    p.add_argument("--executor", choices=EXECUTORS, default="local", help="where the sweep runs (default: local)")
    p.add_argument("--seed", type=int, default=0, help="seed of the states, the randomisation and the bootstrap")
    p.add_argument("--results-dir", default=RESULTS_DIR, help=f"result store, shared with the study (default {RESULTS_DIR})")
    p.add_argument("--force", action="store_true", help="execute every page even if its inputs are unchanged")
    p.add_argument("--check", action="store_true", help="then load every page in headless Chromium")
    p.add_argument("--estimate-only", action="store_true",
                   help="print what the sweep would compute, and for how long; run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=func or run_report)
    return p
