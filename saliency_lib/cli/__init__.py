"""Command line: ``saliency-study <command> ...`` (also ``python -m saliency_lib``).

One module per command of the library (``evaluate``, ``fetch-official``, ``train``, ``explain``,
``sanity``, ``insertion``, ``video``); each adds its subparser with an ``add_*_parser(subparsers)``
function whose ``func`` default runs it. Packages on top of the library add commands
through the ``saliency_study.commands`` entry-point group (the study's ``run``, ``compact``,
``ship``, ``official-scores`` come from ``saliency_study``, ``book`` and ``report`` from ``saliency_book``),
so the library never imports them.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points

__all__ = ["main", "build_parser"]

PLUGIN_GROUP = "saliency_study.commands"
"""Entry-point group of commands added by packages on top of the library."""


def build_parser() -> argparse.ArgumentParser:
    from .evaluate import add_evaluate_parser
    from .explain import add_explain_parser
    from .metrics import add_metrics_parsers
    from .official import add_fetch_parser
    from .train import add_train_parser
    from .video import add_video_parser

    p = argparse.ArgumentParser(prog="saliency-study", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for add in (add_evaluate_parser, add_fetch_parser, add_metrics_parsers, add_explain_parser, add_train_parser,
                add_video_parser):
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
