"""``saliency-study train dqn|a3c ...``: the command line is generated from the trainers' args dataclasses."""

from __future__ import annotations

import argparse
import dataclasses
import typing

__all__ = ["add_train_parser", "run_train"]


def _algos():
    from ..train.a2c import A2CArgs, train_a2c
    from ..train.dqn import DQNArgs, train_dqn

    return {"dqn": (DQNArgs, train_dqn), "a3c": (A2CArgs, train_a2c)}


def _add_fields(p: argparse.ArgumentParser, cls) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        typ = hints[f.name]
        flag = "--" + f.name.replace("_", "-")
        if typ is bool:
            p.add_argument(flag, dest=f.name, type=lambda s: s.lower() in ("1", "true", "yes"), default=f.default, metavar="BOOL")
        else:
            p.add_argument(flag, dest=f.name, type=typ, default=f.default)


def add_train_parser(sub) -> None:
    t = sub.add_parser("train", help="train an agent (dqn: Huber's DQN; a3c: Mask-A3C actor-critic)")
    algos = t.add_subparsers(dest="algo", required=True)
    for name, (cls, _) in _algos().items():
        p = algos.add_parser(name, help=(cls.__doc__ or "").strip().splitlines()[0])
        _add_fields(p, cls)
        p.add_argument("--out", required=True, help="run directory (checkpoints, logs, final agent)")
        p.add_argument("--resume", action="store_true", help="continue from OUT/state.pt")
        p.add_argument("--no-progress", action="store_true")
        p.set_defaults(func=run_train)


def run_train(ns) -> int:
    cls, train = _algos()[ns.algo]
    args = cls(**{f.name: getattr(ns, f.name) for f in dataclasses.fields(cls)})
    train(args, ns.out, resume=ns.resume, progress=not ns.no_progress)
    return 0
