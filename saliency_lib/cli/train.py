"""``saliency-study train dqn|a3c ...``: the command line is generated from the trainers' args dataclasses."""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing

__all__ = ["add_train_parser", "run_train"]


def _algos():
    from ..train.a2c import A2CArgs, train_a2c
    from ..train.dqn import DQNArgs, train_dqn

    return {"dqn": (DQNArgs, train_dqn), "a3c": (A2CArgs, train_a2c)}


_COUNTS = ("frames", "num_envs", "buffer_size", "batch_size", "train_freq", "n_step", "target_update", "eval_every",
           "eval_max_steps", "threads", "num_steps")
"""Integer fields that count something and must be >= 1 (every other integer field must be >= 0)."""


def _boolean(text: str) -> bool:
    t = text.lower()
    if t not in ("1", "true", "yes", "0", "false", "no"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return t in ("1", "true", "yes")


def _finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return v


def _add_fields(p: argparse.ArgumentParser, cls) -> None:
    from .checks import game_name, non_negative_int, positive_int

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        typ = hints[f.name]
        flag = "--" + f.name.replace("_", "-")
        if typ is bool:
            p.add_argument(flag, dest=f.name, type=_boolean, default=f.default, metavar="BOOL")
        elif f.name == "game":
            p.add_argument(flag, dest=f.name, type=game_name, default=f.default, help="Atari game (any case)")
        elif typ is int:
            p.add_argument(flag, dest=f.name, type=positive_int if f.name in _COUNTS else non_negative_int, default=f.default)
        elif typ is float:
            p.add_argument(flag, dest=f.name, type=_finite, default=f.default)
        else:
            p.add_argument(flag, dest=f.name, type=typ, default=f.default)


def add_train_parser(sub) -> None:
    """Add the ``train dqn`` and ``train a3c`` commands, with one option per field of the args dataclasses."""
    from .checks import directory

    t = sub.add_parser("train", help="train an agent (dqn: Huber's DQN; a3c: Mask-A3C actor-critic)")
    algos = t.add_subparsers(dest="algo", required=True)
    for name, (cls, _) in _algos().items():
        p = algos.add_parser(name, help=(cls.__doc__ or "").strip().splitlines()[0])
        _add_fields(p, cls)
        p.add_argument("--out", required=True, type=directory, help="run directory (checkpoints, logs, final agent)")
        p.add_argument("--resume", action="store_true", help="continue from OUT/state.pt")
        p.add_argument("--no-progress", action="store_true")
        p.set_defaults(func=run_train)


def run_train(ns) -> int:
    """Run the ``train`` command of the parsed arguments ``ns``; returns the exit code 0."""
    cls, train = _algos()[ns.algo]
    args = cls(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(cls)})
    train(args, ns.out, resume=ns.resume, progress=not ns.no_progress)
    return 0
