"""Argument checks of the command line, run while the arguments are parsed, before any work.

Each check is an ``argparse`` ``type=`` function (it raises ``argparse.ArgumentTypeError``,
which the parser turns into one line on stderr and exit code 2) or a function that raises
``ValueError`` naming the argument, the value and what is allowed. A misspelt name gets a
suggestion (:func:`did_you_mean`, from :mod:`difflib`).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["CommandParser", "UsageError", "did_you_mean", "game_name", "games_of", "positive_int", "non_negative_int",
           "positive_float", "json_object", "method_params", "directory", "output_file", "existing_path"]


class UsageError(Exception):
    """A command line that does not parse; ``main`` prints it as one line and exits with code 2."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog, self.message = prog, message


_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)")


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and whose invalid choices get a suggestion.

    Sub-parsers inherit the class (``add_subparsers`` uses the parser's own class), so a
    package that adds commands through the entry point gets the same behaviour.
    """

    def error(self, message: str):  # noqa: D102 - argparse's hook
        m = _CHOICE.search(message)
        if m:
            choices = re.findall(r"'([^']*)'", m["choices"])
            message += did_you_mean(m["value"], choices)
        raise UsageError(self.prog, message)


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the choice closest to ``value`` (case-insensitive), else ``""``."""
    choices = list(choices)
    lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(str(value).lower(), list(lower), n=1, cutoff=0.6)
    return f"; did you mean {lower[close[0]]!r}?" if close else ""


def _choose(kind: str, value: str, choices: Iterable[str]) -> str:
    """The choice equal to ``value`` ignoring case, or ``ArgumentTypeError`` with the choices and a suggestion."""
    choices = list(choices)
    for c in choices:
        if c.lower() == str(value).lower():
            return c
    raise argparse.ArgumentTypeError(f"unknown {kind} {value!r}{did_you_mean(value, choices)} "
                                     f"(valid: {', '.join(choices)})")


def game_name(text: str) -> str:
    """A game of the library (:func:`saliency_lib.games.valid_games`), case-insensitive: ``breakout`` → ``Breakout``."""
    from ..games import valid_games

    return _choose("game", text, valid_games())


def games_of(valid: Callable[[], Iterable[str]], kind: str = "game") -> Callable[[str], str]:
    """A ``type=`` that takes one of ``valid()`` (case-insensitive), e.g. the games with official checkpoints."""
    def check(text: str) -> str:
        return _choose(kind, text, valid())
    check.__name__ = kind.replace(" ", "_")
    return check


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (a count: states, chunks, workers, episodes …)."""
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v}")
    return v


def non_negative_int(text: str) -> int:
    """An integer >= 0 (a seed, or a count where 0 means none)."""
    v = _int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {v}")
    return v


def positive_float(text: str) -> float:
    """A finite real number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return v


def json_object(text: str) -> dict:
    """A JSON object, e.g. ``--params '{"rise": {"n_masks": 100}}'``."""
    try:
        v = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg} at character {e.pos}): {text!r}") from None
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object ({{...}}), got {text!r}")
    return v


def method_params(params: dict, methods: Iterable[str], *, flag: str = "--params") -> dict:
    """Check ``{method: {parameter: value}}`` against the explainers' registry; returns ``params``.

    Every method must be one of ``methods`` (the sweep's) and every parameter one that the
    method's constructor takes (:func:`saliency_lib.explainers.explainer_parameters`).
    """
    from ..explainers import check_explainer_params

    methods = list(methods)
    for m, p in params.items():
        if m not in methods:
            raise ValueError(f"{flag} names the method {m!r}, which the sweep does not run{did_you_mean(m, methods)} "
                             f"(its methods: {', '.join(methods)})")
        if not isinstance(p, dict):
            raise ValueError(f"{flag} must map each method to an object of its parameters, got {m!r}: {p!r}")
        check_explainer_params(m, p, what=f"{flag} of ")
    return params


def directory(text: str) -> Path:
    """A directory that exists or can be created: no part of it a file, its nearest existing parent writable."""
    p = Path(text).expanduser()
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe == p and p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory; pass a directory")
    if probe != p and not probe.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} cannot be created: {str(probe)!r} is a file")
    if probe != p and not os.access(probe, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} cannot be created: {str(probe)!r} is not writable")
    return p


def output_file(text: str) -> Path:
    """A file to write: not a directory, in a directory that exists or can be created."""
    p = Path(text).expanduser()
    if p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; pass a file name")
    directory(str(p.parent))
    return p


def existing_path(text: str) -> Path:
    """A file or directory that exists."""
    p = Path(text).expanduser()
    if not p.exists():
        raise argparse.ArgumentTypeError(f"{text!r} does not exist")
    return p
