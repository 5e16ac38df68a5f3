"""Checks of the unit store, its quarantine, and the stale temporary files it removes.

Every stored file checks itself on its first read in a process (:mod:`._store` reads through
these checks), and :func:`~._audit.verify_store` checks the whole store at once.

What a stored file must be
--------------------------
A **loose unit** ``<experiment>/<key>.parquet``:

* readable, and valid as a table (schema, rows unique per unit);
* its rows' ``config_hash`` is its name, the unit's key: one unit, and the right one;
* complete: every measure (and level and layer, and substrate) covers the same states,
  the unit's own when the unit is known; a degradation unit has its curve summaries, and
  insertion or deletion rows for each of its (mode, substrate) pairs; the rows name the
  unit's agent and method.

A **pack** ``packs/<experiment>/<name>.parquet``: a readable footer that lists its units,
their versions and the pools of their curves; a row for every unit it lists and none for
another; the curve summaries of every pool; every unit complete as above.

What happens to a file that fails
---------------------------------
It is moved to ``<results_dir>/sweep/quarantine/`` under its path in the store (a numbered
name if that is taken) and never deleted; ``quarantine/quarantine.jsonl`` gets one line with
the file, the reason and the units it held, and a one-line
:class:`~._claims.StoreWarning` names it. Its units count as not stored, so a sweep computes
them again (a pack's units are found as loose files first, where a compaction left them).

A file is moved only if it is still the file that was judged (same inode, size and
modification time); one replaced meanwhile by a writer is left to be judged again.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .._io import TMP_PREFIX
from ._claims import StoreWarning, stale_temporary

if TYPE_CHECKING:
    from ._units import Unit

__all__ = ["quarantine_dir", "quarantine", "quarantine_bytes", "check_loose", "check_pack", "check_units",
           "remove_stale_temporaries", "FileStamp", "stamp"]

QUARANTINE = "quarantine"
_LOG = "quarantine.jsonl"
_GROUP = ["config_hash", "experiment", "method", "substrate", "measure", "level", "layer"]


def _sweep(results_dir) -> Path:
    return Path(results_dir) / "sweep"


def quarantine_dir(results_dir) -> Path:
    """``<results_dir>/sweep/quarantine``: the files taken out of the store, never deleted."""
    return _sweep(results_dir) / QUARANTINE


FileStamp = tuple[int, int, int]


def stamp(path: Path) -> FileStamp | None:
    """(inode, size, mtime ns) of a file, to tell whether it changed since it was read; None if gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def quarantine(path: Path, reason: str, *, results_dir, units: Iterable[str] = (), seen: FileStamp | None = None) -> Path | None:
    """Move ``path`` into the quarantine, record why, warn in one line; the new path, or None if not moved.

    ``seen`` is the :func:`stamp` of the file that was judged: a file changed since (replaced by a
    writer) is not moved.
    """
    path = Path(path)
    if seen is not None and stamp(path) != seen:
        return None
    root = _sweep(results_dir)
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = Path(path.name)
    dest = quarantine_dir(results_dir) / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):  # link, then unlink: never overwrites an earlier quarantined file
        try:
            os.link(path, dest)
            break
        except FileExistsError:
            dest = dest.with_name(f"{rel.stem}.{n}{rel.suffix}")
        except FileNotFoundError:
            return None  # someone else moved it
        except OSError:  # no hard links: rename (a rare race may then overwrite a quarantined copy)
            while dest.exists():
                dest = dest.with_name(f"{dest.stem}.{n}{rel.suffix}")
            try:
                os.rename(path, dest)
            except FileNotFoundError:
                return None
            break
    path.unlink(missing_ok=True)
    units = list(units)
    record = {"file": rel.as_posix(), "moved_to": dest.relative_to(root).as_posix(), "reason": reason,
              "units": units, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with open(quarantine_dir(results_dir) / _LOG, "a") as f:
        f.write(json.dumps(record) + "\n")
    held = f" ({len(units)} units, computed again when a sweep needs them)" if len(units) > 1 else ""
    warnings.warn(f"quarantined {rel.as_posix()}: {reason}{held}; moved to {dest}", StoreWarning, stacklevel=3)
    return dest


def quarantine_bytes(results_dir) -> int:
    """Bytes of the files in the quarantine (its log included)."""
    q = quarantine_dir(results_dir)
    return sum(p.stat().st_size for p in q.rglob("*") if p.is_file()) if q.is_dir() else 0


# -- checks of the rows ------------------------------------------------------------------------------

def _states_agree(tidy: pd.DataFrame) -> str | None:
    """Whether every measure (and level, layer, substrate) of each unit covers the same states."""
    if not len(tidy):
        return None
    per_group = tidy.groupby(_GROUP, dropna=False, sort=False, observed=True)["state"].nunique()
    per_unit = tidy.groupby("config_hash", sort=False, observed=True)["state"].nunique()
    want = per_unit.reindex(per_group.index.get_level_values("config_hash")).to_numpy()
    bad = per_group.to_numpy() != want
    if not bad.any():
        return None
    i = int(bad.argmax())
    key = dict(zip(_GROUP, per_group.index[i]))
    what = ", ".join(f"{k} {v}" for k, v in key.items() if k != "config_hash" and not pd.isna(v))
    return (f"rows incomplete: unit {key['config_hash']} has {int(per_group.iloc[i])} states for {what} "
            f"but {int(want[i])} in all")


def _against_unit(rows: pd.DataFrame, unit: Unit) -> str | None:
    """Whether ``rows`` (one unit's tidy rows) are complete for ``unit``."""
    if not len(rows):
        return f"holds no rows of unit {unit.key}"
    states = {int(s) for s in rows["state"].unique()}
    if states != set(unit.states):
        missing, extra = sorted(set(unit.states) - states), sorted(states - set(unit.states))
        return (f"rows incomplete: unit {unit.key} has rows for states {sorted(states)[:5]}…, expected {list(unit.states)[:5]}… "
                f"(missing {missing[:5]}, unexpected {extra[:5]})")
    for col, want in (("agent", unit.agent), ("method", unit.method)):
        got = set(rows[col].astype(str).unique())
        if got != {want}:
            return f"rows of unit {unit.key} name {col} {sorted(got)}, expected {want!r}"
    pairs = set(zip(rows["experiment"].astype(str), rows["substrate"].astype(str)))
    if unit.experiment == "sanity":
        if {e for e, _ in pairs} != {"sanity"}:
            return f"rows of sanity unit {unit.key} are of experiments {sorted({e for e, _ in pairs})}"
    elif pairs != {(m, s) for m, s in unit.degradation}:
        return f"rows incomplete: unit {unit.key} has (mode, substrate) {sorted(pairs)}, expected {sorted(unit.degradation)}"
    return None


def check_loose(path: Path, tidy: pd.DataFrame, summaries: pd.DataFrame, *, raw: bool, unit: Unit | None) -> str | None:
    """Why a loose unit file is damaged, or None.

    ``tidy``/``summaries`` are what it read back; ``raw``: it holds every state's curve (the first
    format) instead of summaries.
    """
    key = Path(path).stem
    keys = sorted(set(tidy["config_hash"].dropna().astype(str)))
    if not len(tidy):
        return "holds no rows"
    if keys != [key] or tidy["config_hash"].isna().any():
        other = f"unit {keys[0]}" if len(keys) == 1 else f"{len(keys)} units"
        return f"holds the rows of {other}, not of unit {key} that its name and place say"
    if unit is not None and unit.key != key:  # a caller's mistake rather than damage
        raise ValueError(f"{path} is the file of unit {key}, not of unit {unit.key}")
    reason = _states_agree(tidy) or (_against_unit(tidy, unit) if unit is not None else None)
    if reason:
        return reason
    degradation = tidy["experiment"].isin(["insertion", "deletion"]).any()
    if degradation and not raw:
        tags = set(summaries["tag"].astype(str))
        if tags != {key}:
            return "its curve summaries are missing" if not tags else f"its curve summaries belong to {sorted(tags)}"
    return None


def check_pack(meta_units: dict, pools: dict, tidy: pd.DataFrame, summaries: pd.DataFrame) -> str | None:
    """Why a pack is damaged, or None: its rows against the units and pools its footer lists."""
    listed = set(meta_units)
    have = set(tidy["config_hash"].dropna().astype(str).unique())
    if have != listed:
        missing, extra = sorted(listed - have), sorted(have - listed)
        if missing:
            return f"rows incomplete: {len(missing)} of the {len(listed)} units it lists have no rows (e.g. {missing[0]})"
        return f"holds rows of {len(extra)} units it does not list (e.g. {extra[0]})"
    tags = set(summaries["tag"].astype(str).unique())
    if tags != set(pools):
        return f"curve summaries of {len(set(pools) - tags)} of its {len(pools)} pools are missing"
    stray = sorted({k for p in pools.values() for k in p.get("keys", [])} - listed)
    if stray:
        return f"its pools name {len(stray)} units it does not list (e.g. {stray[0]})"
    return _states_agree(tidy)


def check_units(tidy: pd.DataFrame, units: Iterable[Unit]) -> str | None:
    """Why the rows of one of ``units`` in ``tidy`` (a pack's rows) do not make the unit, or None."""
    units = list(units)
    if not units:
        return None
    by_key = dict(tuple(tidy[tidy["config_hash"].isin([u.key for u in units])].groupby("config_hash", sort=False)))
    for u in units:
        reason = _against_unit(by_key.get(u.key, tidy.iloc[:0]), u)
        if reason:
            return reason
    return None


# -- temporary files -----------------------------------------------------------------------------------

def remove_stale_temporaries(results_dir) -> list[dict]:
    """Quarantine the temporary files (``.tmp-*``) of the store that no live writer will finish.

    Left by a process killed while it wrote a unit, a pack, a state set or a claim; a temporary
    file is never read as a result. Returns ``[{"file", "reason"}]`` of those moved.
    """
    root = _sweep(results_dir)
    if not root.is_dir():
        return []
    dirs = [d for d in root.iterdir() if d.is_dir() and d.name not in (QUARANTINE,)]
    dirs += [d for d in (root / "packs").iterdir() if d.is_dir()] if (root / "packs").is_dir() else []
    out = []
    for d in [root, *dirs]:
        for p in sorted(d.glob(f"{TMP_PREFIX}*")):
            if not p.is_file():
                continue
            seen = stamp(p)
            reason = stale_temporary(p)
            if reason:
                reason = f"a temporary file left behind: {reason}"
                if quarantine(p, reason, results_dir=results_dir, seen=seen):
                    out.append({"file": p.relative_to(root).as_posix(), "reason": reason})
    return out
