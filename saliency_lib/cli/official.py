"""``saliency-study fetch-official``: copy or download the official Mask-A3C checkpoints."""

from __future__ import annotations

__all__ = ["add_fetch_parser"]


def _cmd_fetch(args) -> int:
    from ..agents.official import fetch_official

    for p in fetch_official(args.dest, args.src):
        print(p)
    return 0


def add_fetch_parser(sub) -> None:
    f = sub.add_parser("fetch-official", help="copy or download the official Mask-A3C checkpoints")
    f.add_argument("--dest", default=None)
    f.add_argument("--src", default=None, help="local copy (default: $MASK_A3C_OFFICIAL_SRC, else download)")
    f.set_defaults(func=_cmd_fetch)
