"""Command line: ``saliency-study <command> ...`` (also ``python -m saliency_lib``).

One module per command (``evaluate``, ``official``, ``ship``, ``train``, ``explain``,
``metrics``, ``run``, ``compact``, ``video``); each adds its subparser with an ``add_*_parser(subparsers)``
function whose ``func`` default runs it. Packages on top of the library add commands
through the ``saliency_study.commands`` entry-point group (the book's ``book`` command
comes from ``saliency_book``), so the library never imports them.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points

__all__ = ["main", "build_parser"]

PLUGIN_GROUP = "saliency_study.commands"
"""Entry-point group of commands added by packages on top of the library."""


def build_parser() -> argparse.ArgumentParser:
    from .compact import add_compact_parser
    from .evaluate import add_evaluate_parser
    from .explain import add_explain_parser
    from .metrics import add_metrics_parsers
    from .official import add_official_parsers
    from .run import add_run_parser
    from .ship import add_ship_parser
    from .train import add_train_parser
    from .video import add_video_parser

    p = argparse.ArgumentParser(prog="saliency-study", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for add in (add_evaluate_parser, add_official_parsers, add_ship_parser, add_metrics_parsers, add_run_parser,
                add_explain_parser, add_train_parser, add_compact_parser, add_video_parser):
        add(sub)
    for ep in entry_points(group=PLUGIN_GROUP):
        ep.load()(sub)
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
