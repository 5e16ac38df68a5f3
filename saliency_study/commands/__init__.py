"""The study's commands, added to ``saliency-study`` through the ``saliency_study.commands`` entry point.

``run`` (the study's sweep, or a custom one), ``compact`` (pack finished units), ``ship`` (a finished
training run into ``data/agents/``), ``official-scores`` (the official Mask-A3C checkpoints
re-evaluated) and ``claims`` (the claims table). Each module adds its subparser with an ``add_*_parser(subparsers)`` function.
"""

from __future__ import annotations

__all__ = ["add_study_parsers"]


def add_study_parsers(subparsers) -> None:
    """Add the study's commands to the ``saliency-study`` parser's subparsers."""
    from .claims import add_claims_parser
    from .compact import add_compact_parser
    from .official import add_official_scores_parser
    from .run import add_run_parser
    from .ship import add_ship_parser

    for add in (add_run_parser, add_compact_parser, add_ship_parser, add_official_scores_parser, add_claims_parser):
        add(subparsers)
