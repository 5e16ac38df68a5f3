"""Command line: ``saliency-study <command> ...`` (also ``python -m saliency_lib``).

One module per command of the library (``evaluate``, ``fetch-official``, ``train``, ``explain``,
``sanity``, ``insertion``, ``video``, ``objects``); each adds its subparser with an ``add_*_parser(subparsers)``
function whose ``func`` default runs it. Packages on top of the library add commands
through the ``saliency_study.commands`` entry-point group (the study's ``run``, ``compact``,
``ship``, ``official-scores`` come from ``saliency_study``, ``book`` and ``report`` from ``saliency_book``),
so the library never imports them.

Errors
------
Every argument is checked while the command line is parsed or before the command does any
work (:mod:`saliency_lib.cli.checks`). :func:`main` turns every anticipated error (a bad
argument, a missing or damaged file, a refused operation: :data:`ANTICIPATED`) into one line
on stderr, ``saliency-study: error: ...`` (a usage error names the command, as ``argparse``
does: ``saliency-study run: error: ...``), and exit code 2; a warning is one line too,
``saliency-study: warning: ...``. ``--debug`` (anywhere on the command line) shows the traceback instead. Any other
exception is a bug: one line naming it and exit code 1 (the traceback with ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import pickle
import sys
import warnings
from importlib.metadata import entry_points

from .checks import CommandParser, UsageError

__all__ = ["main", "build_parser", "ANTICIPATED"]

PLUGIN_GROUP = "saliency_study.commands"
"""Entry-point group of commands added by packages on top of the library."""

ANTICIPATED: tuple[type[BaseException], ...] = (ValueError, TypeError, LookupError, OSError, ImportError, RuntimeError,
                                                EOFError, pickle.UnpicklingError)
"""What a command raises for a bad argument, a missing or damaged input, or a refused operation
(``FileNotFoundError`` and ``NotADirectoryError`` are ``OSError``; ``json.JSONDecodeError`` is a
``ValueError``; a missing optional dependency an ``ImportError``)."""


def _add_debug(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``--debug`` on ``parser`` and every sub-parser below it (sub-parsers must not reset the top's value)."""
    parser.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="show the traceback of an error instead of one line")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _add_debug(sub, top=False)


def build_parser() -> argparse.ArgumentParser:
    """The ``saliency-study`` argument parser with the library's commands and those of installed plug-ins."""
    from .evaluate import add_evaluate_parser
    from .explain import add_explain_parser
    from .metrics import add_metrics_parsers
    from .objects import add_objects_parser
    from .official import add_fetch_parser
    from .train import add_train_parser
    from .video import add_video_parser

    p = CommandParser(prog="saliency-study", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for add in (add_evaluate_parser, add_fetch_parser, add_metrics_parsers, add_explain_parser, add_train_parser,
                add_video_parser, add_objects_parser):
        add(sub)
    for ep in entry_points(group=PLUGIN_GROUP):
        ep.load()(sub)
    _add_debug(p, top=True)
    return p


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if isinstance(e, KeyError) and len(e.args) == 1:
        text = f"missing key {e.args[0]!r}"
    return text or type(e).__name__


@contextlib.contextmanager
def _warnings_as_lines(prog: str):
    """Each warning as one line on stderr, ``<prog>: warning: <message>``."""
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{prog}: warning: {_one_line(message if isinstance(message, Warning) else Warning(message))}",
              file=file or sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    0 on success; 2 for a usage error or an anticipated error (:data:`ANTICIPATED`), printed
    as one line; 1 for an unexpected error (a bug), printed as one line; 130 when interrupted.
    With ``--debug`` an error raises with its traceback.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    prog = "saliency-study"
    with _warnings_as_lines(prog):
        try:
            args = build_parser().parse_args(argv)
            return int(args.func(args) or 0)
        except UsageError as e:
            print(f"{e.prog}: error: {_one_line(e)}", file=sys.stderr)
            return 2
        except SystemExit as e:  # a command that exits with a message (argparse's --help exits 0 and passes)
            if isinstance(e.code, str) and not debug:
                print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
                return 2
            raise
        except KeyboardInterrupt:
            if debug:
                raise
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130
        except ANTICIPATED as e:
            if debug:
                raise
            print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
            return 2
        except Exception as e:
            if debug:
                raise
            print(f"{prog}: internal error: {type(e).__name__}: {_one_line(e)} (run again with --debug for the "
                  "traceback)", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
