"""A table of agents' evaluation scores (the study keeps its own in ``scores.csv``).

One row per (agent, evaluation protocol), with the columns :data:`SCORES_COLUMNS`:

* ``protocol``: ``"greedy"`` (the papers' protocol on the deterministic emulator, 10 games)
  or ``"sticky"`` (sticky actions with ``repeat_action_probability=0.25``, 30 games); see
  :data:`saliency_lib.play.PROTOCOLS`;
* ``episodes``, ``mean``, ``std`` (population sd over the games), ``scores`` (JSON list of the
  games' scores);
* ``distinct_games``: how many of the ``episodes`` games differ (fingerprints of the played
  games, :mod:`saliency_lib.play`). A greedy agent on the deterministic emulator replays a few
  games: a mean over 10 games of which 3 are distinct is a mean over 3 games.

Readers that expect one row per agent take the greedy rows: ``read_scores(path, protocol="greedy")``.
A table written before the protocol column existed reads as greedy rows with unknown
``distinct_games``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_write

__all__ = ["SCORES_COLUMNS", "PROTOCOL_NAMES", "normalise_scores", "read_scores", "update_scores", "scores_row",
           "evaluate_protocols"]

SCORES_COLUMNS = ["agent", "algo", "game", "variant", "seed", "frames", "protocol", "episodes", "distinct_games", "mean", "std",
                  "scores", "random_score", "ratio_to_random", "published", "published_source"]

PROTOCOL_NAMES = ("greedy", "sticky")


def normalise_scores(df: pd.DataFrame) -> pd.DataFrame:
    """A scores table in the current schema: rows without a protocol are greedy (the only protocol before)."""
    df = df.copy()
    if "protocol" not in df.columns:
        df["protocol"] = "greedy"
    df["protocol"] = df["protocol"].fillna("greedy")
    if "distinct_games" not in df.columns:
        df["distinct_games"] = np.nan
    for c in SCORES_COLUMNS:
        if c not in df.columns:
            df[c] = np.nan
    extra = [c for c in df.columns if c not in SCORES_COLUMNS]
    return df[SCORES_COLUMNS + extra]


def read_scores(csv_path: str | os.PathLike, protocol: str | None = None) -> pd.DataFrame:
    """The scores table (current schema, see the module docstring); ``protocol``: only its rows (one per agent)."""
    df = normalise_scores(pd.read_csv(csv_path))
    if protocol is not None:
        df = df[df["protocol"] == protocol].reset_index(drop=True)
    return df


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path``'s directory; no lock file is left next to the table.

    A shipping run and a re-evaluation may write at once.
    """
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def update_scores(csv_path: str | os.PathLike, rows: dict | Iterable[dict]) -> pd.DataFrame:
    """Insert or replace the rows of (agent, protocol) pairs in the scores table (locked, atomic write).

    A row without ``protocol`` is a greedy row. Rows are sorted by agent, and an agent's greedy row
    comes last: a reader written for one row per agent that keeps an agent's last row (as
    readers did before the protocol column) reads the greedy one, the papers' protocol.
    """
    csv_path = Path(csv_path)
    rows = [rows] if isinstance(rows, dict) else list(rows)
    new = normalise_scores(pd.DataFrame(rows))[SCORES_COLUMNS]
    with _locked(csv_path):
        df = read_scores(csv_path) if csv_path.exists() else pd.DataFrame(columns=SCORES_COLUMNS)
        key = df["agent"].astype(str) + "\0" + df["protocol"].astype(str)
        df = df[~key.isin(set(new["agent"].astype(str) + "\0" + new["protocol"].astype(str)))]
        df = pd.concat([df[SCORES_COLUMNS].astype(object), new.astype(object)], ignore_index=True)
        order = {p: -i for i, p in enumerate(PROTOCOL_NAMES)}  # greedy last (see the docstring)
        df = df.sort_values(["agent", "protocol"],
                            key=lambda c: c.map(lambda p: order.get(p, -len(order))) if c.name == "protocol" else c,
                            kind="stable").reset_index(drop=True)
        for c in ("episodes", "distinct_games"):  # counts, written as integers (empty when unknown)
            df[c] = pd.to_numeric(df[c], errors="coerce").round().astype("Int64")
        atomic_write(csv_path, lambda tmp: df.to_csv(tmp, index=False))
    return df


def scores_row(name: str, meta: dict, game: str, result: dict, *, published: float | None = None,
               published_source: str = "") -> dict:
    """A scores-table row from an agent's metadata and a :func:`saliency_lib.play.evaluate` result."""
    from ..games import game_info

    rnd = game_info(game).random_score
    return {"agent": name, "algo": meta.get("algo", ""), "game": game, "variant": meta.get("variant", ""),
            "seed": meta.get("seed", ""), "frames": meta.get("frames", ""), "protocol": result["protocol"],
            "episodes": len(result["scores"]), "distinct_games": result["distinct_games"], "mean": result["mean"],
            "std": result["std"], "scores": json.dumps(result["scores"]), "random_score": rnd,
            "ratio_to_random": result["mean"] / rnd if rnd else np.nan, "published": published,
            "published_source": published_source}


def evaluate_protocols(agent, episodes: dict[str, int], *, seed: int = 0, progress: bool = True,
                       on_result=None) -> dict[str, dict]:
    """Evaluate ``agent`` under each protocol of ``episodes`` (``{"greedy": 10, "sticky": 30}``; 0 skips one).

    ``on_result(protocol, result)`` is called as soon as each evaluation ends (to write its row).
    """
    from ..play import evaluate, get_protocol

    out = {}
    for name, n in episodes.items():
        get_protocol(name)
        if not n:
            continue
        out[name] = r = evaluate(agent, n, seed, protocol=name, progress=progress)
        if on_result is not None:
            on_result(name, r)
    return out


# -- the seed-level comparison -------------------------------------------------------------------
