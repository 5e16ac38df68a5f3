"""The study's result cache: what a chapter computes besides the sweep's units, under ``data/results/``.

The sweep's units have their own store (:mod:`saliency_lib.sweep`, under ``<results_dir>/sweep/``);
everything else a chapter computes (evaluations, figures, timing) is cached here by configuration hash.

A cached result lives in ``<results_dir>/<name>-<hash>/`` where ``hash`` is
:func:`saliency_lib.results.config_hash` of everything that determines it (agent
and its weights hash, games, episodes, seeds, caps, library version of the
computing code when relevant). The directory holds ``config.json`` and the
result. A re-run with the same configuration loads it; any change of the
configuration computes a new one next to it. Files are written atomically.

Everything under ``<results_dir>/_local/`` is machine-local and not committed:
binary media (GIFs, cheap to recompute and large) in ``_local/media/``, training
runs started by a chapter in ``_local/runs/`` and the record of the study's agents
``_local/study_agents.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from saliency_lib._io import atomic_write
from saliency_lib.results import canonical_json, config_hash
from saliency_lib.versions import environment_versions

from .paths import repo_path

__all__ = ["cache_dir", "cached_table", "cached_json", "cached_file", "LOCAL", "MEDIA"]

LOCAL = "_local"
"""Machine-local, uncommitted part of a results directory."""
MEDIA = f"{LOCAL}/media"


def _atomic(path: Path, write: Callable[[str], None]) -> Path:
    return atomic_write(path, write, fsync=False)


def cache_dir(name: str, config: Mapping, results_dir: str | os.PathLike = "data/results") -> Path:
    """``<results_dir>/<name>-<config_hash(config)>`` (not created)."""
    if not name or "/" in name or name.startswith((".", "_")):
        raise ValueError(f"name {name!r} must be a plain file-name prefix (no '/', not starting with '.' or '_')")
    return repo_path(results_dir) / f"{name}-{config_hash(config)}"


def _write_config(d: Path, config: Mapping) -> None:
    # the versions that computed the result are recorded beside its configuration, not hashed into it
    record = {**json.loads(canonical_json(config)), "_versions": environment_versions()}
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    _atomic(d / "config.json", lambda p: Path(p).write_text(text))


def cached_table(name: str, config: Mapping, compute: Callable[[], pd.DataFrame], *,
                 results_dir: str | os.PathLike = "data/results") -> pd.DataFrame:
    """Load the table of ``config`` from the cache, or ``compute()`` and store it as CSV.

    The returned frame's ``attrs`` hold ``cache`` (the directory) and ``cached``
    (whether it was loaded rather than computed).
    """
    d = cache_dir(name, config, results_dir)
    f = d / "table.csv"
    if f.is_file():
        df = pd.read_csv(f)
        df.attrs.update(cache=str(d), cached=True)
        return df
    df = compute()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"compute() must return a pandas.DataFrame, got {type(df).__name__}")
    _write_config(d, config)
    _atomic(f, lambda p: df.to_csv(p, index=False))
    df = df.copy()
    df.attrs.update(cache=str(d), cached=False)
    return df


def cached_json(name: str, config: Mapping, compute: Callable[[], object], *,
                results_dir: str | os.PathLike = "data/results"):
    """Like :func:`cached_table` for a JSON-able value."""
    d = cache_dir(name, config, results_dir)
    f = d / "value.json"
    if f.is_file():
        return json.loads(f.read_text())["value"]
    value = compute()
    text = canonical_json({"value": value})
    _write_config(d, config)
    _atomic(f, lambda p: Path(p).write_text(text))
    return json.loads(text)["value"]


def cached_file(name: str, config: Mapping, suffix: str, make: Callable[[str], object], *,
                results_dir: str | os.PathLike = "data/results") -> Path:
    """Path of a media file of ``config`` under ``<results_dir>/_local/media/``; ``make(path)`` writes it if missing."""
    if not suffix.startswith("."):
        raise ValueError(f"suffix must start with '.', got {suffix!r}")
    f = repo_path(results_dir) / MEDIA / f"{name}-{config_hash(config)}{suffix}"
    if not f.is_file():
        _atomic(f, make)
        _atomic(f.with_suffix(".json"), lambda p: Path(p).write_text(canonical_json(config) + "\n"))
    return f
