"""``saliency-study fetch-official``: copy or download the official Mask-A3C checkpoints."""

from __future__ import annotations

__all__ = ["add_fetch_parser"]


def _cmd_fetch(args) -> int:
    from ..agents.official import fetch_official

    for p in fetch_official(args.dest, args.src):
        print(p)
    return 0


def _source(text: str):
    """A local copy of the official checkpoints: an existing directory."""
    import argparse
    from pathlib import Path

    p = Path(text).expanduser()
    if not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory" + (" (it does not exist)" if not p.exists() else ""))
    return p


def add_fetch_parser(sub) -> None:
    """Add the ``fetch-official`` command to the sub-parsers ``sub``."""
    from .checks import directory

    f = sub.add_parser("fetch-official", help="copy or download the official Mask-A3C checkpoints")
    f.add_argument("--dest", type=directory, default=None, help="directory (default: $MASK_A3C_OFFICIAL_DIR)")
    f.add_argument("--src", type=_source, default=None, help="local copy (default: $MASK_A3C_OFFICIAL_SRC, else download)")
    f.set_defaults(func=_cmd_fetch)
