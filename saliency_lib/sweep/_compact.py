"""Compaction: the loose files of finished units moved into packs, one per (experiment, agent, state set).

See :mod:`._store` for what a pack holds. Only one compaction runs at a time per results
directory: it holds ``<results_dir>/sweep/packs/.compact.lock``, an owned file
(:class:`~._claims.OwnedFile`) that records its owner atomically and that a later
compaction takes over, with a warning, when it is empty, garbled, or its owner is gone.
Every file it reads is checked first (:mod:`._verify`): a damaged loose unit is quarantined
and left out, a damaged pack is quarantined and its units packed again from their loose
files where they are still there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..results import config_hash
from ._claims import HEARTBEAT, Heartbeat, OwnedFile
from ._curves import pool_curves
from ._store import (
    FORMATS,
    Reader,
    pack_path,
    read_pack,
    series_key,
    stored_packs,
    summary_table,
    unit_path,
    write_stored,
)
from ._verify import remove_stale_temporaries

if TYPE_CHECKING:
    from ._units import Unit

__all__ = ["compact", "compaction_lock"]


def compaction_lock(results_dir) -> OwnedFile:
    """The owned file that one compaction at a time holds (``sweep/packs/.compact.lock``)."""
    return OwnedFile(Path(results_dir) / "sweep" / "packs" / ".compact.lock")


class _Lock:
    """Hold the compaction lock for a block (refreshed while held), or raise ``RuntimeError``."""

    def __init__(self, results_dir):
        self.file = compaction_lock(results_dir)
        self.beat = Heartbeat(HEARTBEAT)

    def __enter__(self):
        if not self.file.try_take(what="compaction lock"):
            owner = self.file.holder()
            who = f"process {owner.pid} on {owner.host}" if owner else "another process"
            raise RuntimeError(f"another compaction ({who}) holds {self.file.path}; wait for it to finish")
        self.beat.add(self.file)
        return self

    def __exit__(self, *exc):
        self.beat.stop()
        self.file.release()


def _ranges(states: Iterable[int]) -> list[list[int]]:
    """Sorted states as ``[first, last]`` runs of consecutive ones (what a pool's metadata keeps)."""
    out: list[list[int]] = []
    for s in sorted(states):
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def _unranges(runs: list[list[int]]) -> list[int]:
    return [s for a, b in runs for s in range(a, b + 1)]


def _merge(pools: dict[str, dict], blocks: dict[str, list], unit: Unit, summary: pd.DataFrame) -> None:
    """Put ``unit``'s summary into a pool of its series whose states it does not share, or a new one."""
    series, states = series_key(unit), set(unit.states)
    tag = next((t for t, p in pools.items() if p["series"] == series and not states & set(p["states"])), None)
    if tag is None:
        tag = f"new-{len(pools)}"
        pools[tag] = {"series": series, "keys": [], "states": []}
        blocks[tag] = []
    pools[tag]["keys"].append(unit.key)
    pools[tag]["states"].extend(unit.states)
    blocks[tag].append(summary)


def compact(units: Iterable[Unit], *, results_dir) -> dict:
    """Move the loose files of ``units`` into their packs (:func:`~._store.pack_path`), losing nothing.

    Each pack is rewritten once, atomically, with its units so far and the new ones; then the
    new units' loose files are removed (and any loose copy of a unit the pack already holds,
    left by a compaction stopped in between, once the pack is checked sound). A unit that is
    not stored is left out, so compacting again, or in the middle of a sweep, is safe. Only one
    compaction runs at a time per results directory.

    Returns
    -------
    dict
        ``{"units_packed", "packs_written", "bytes_before", "bytes_after"}``: the bytes of the
        files touched, before and after.

    Raises
    ------
    RuntimeError
        Another live compaction holds the results directory's lock.
    """
    units = list(units)
    groups: dict[Path, list[Unit]] = {}
    for u in units:
        groups.setdefault(pack_path(u, results_dir), []).append(u)
    report = {"units_packed": 0, "packs_written": 0, "bytes_before": 0, "bytes_after": 0}
    reader = Reader(results_dir)
    with _Lock(results_dir):
        remove_stale_temporaries(results_dir)
        packs = stored_packs(results_dir)
        for path, group in groups.items():
            old = packs.get(path)
            if old is not None and not reader.check(old, [u for u in group if u.key in old.units]):
                old = None  # quarantined: its units are packed again from their loose files, where there are any
            have = set(old.units) if old else set()
            for u in group:  # left over by a compaction stopped between writing the pack and removing them
                if u.key in have and unit_path(u, results_dir).exists():
                    unit_path(u, results_dir).unlink()
            new = [u for u in {u.key: u for u in group if u.key not in have}.values()
                   if unit_path(u, results_dir).exists() and reader.check(unit_path(u, results_dir), [u])]
            if not new:
                continue
            tidy, blocks, versions, index = [], {}, [], {}
            pools: dict[str, dict] = {}
            if old is not None:
                f = reader.read(path)
                tidy.append(f.tidy)
                pools = {t: {"series": p["series"], "keys": list(p["keys"]), "states": _unranges(p["states"])}
                         for t, p in old.pools.items()}
                blocks = {t: [f.summaries[f.summaries["tag"] == t]] for t in pools}
                versions = list(old.versions)
                index = dict(old.units)
                report["bytes_before"] += path.stat().st_size
            for u in new:
                f = reader.read(unit_path(u, results_dir))
                tidy.append(f.tidy.assign(config_hash=u.key))  # the pack finds a unit's rows by its key
                if len(f.summaries):  # sanity units have no curves
                    _merge(pools, blocks, u, f.summaries)
                rec = json.loads(f.meta["versions"]) if f.meta.get("versions") else None
                if rec is None:
                    index[u.key] = -1
                else:
                    if rec not in versions:
                        versions.append(rec)
                    index[u.key] = versions.index(rec)
                report["bytes_before"] += unit_path(u, results_dir).stat().st_size
            summary_rows, final = [], {}
            for tag, p in pools.items():
                tag2 = config_hash({"series": p["series"], "keys": sorted(p["keys"])})
                final[tag2] = {"series": p["series"], "keys": sorted(p["keys"]), "states": _ranges(p["states"])}
                pooled = pool_curves(blocks[tag]) if len(blocks[tag]) > 1 else blocks[tag][0]
                summary_rows.append(summary_table(pooled, tag2))
            rows = pd.concat(tidy, ignore_index=True)
            # sorted so that equal columns run together (smaller after compression); readers sort by KEY anyway
            rows = rows.sort_values(["experiment", "method", "substrate", "measure", "level", "layer", "config_hash",
                                     "state"], kind="stable")
            srows = pd.concat(summary_rows, ignore_index=True) if summary_rows else pd.DataFrame()
            write_stored(path, rows, srows, {"format": FORMATS["pack"], "units": json.dumps(index, sort_keys=True),
                                       "versions": json.dumps(versions, sort_keys=True),
                                       "pools": json.dumps(final, sort_keys=True)})
            if set(read_pack(path).units) != set(index):  # never remove a loose file that the pack does not list
                raise RuntimeError(f"pack {path} does not list the units just written into it")
            for u in new:
                unit_path(u, results_dir).unlink(missing_ok=True)
            report["units_packed"] += len(new)
            report["packs_written"] += 1
            report["bytes_after"] += path.stat().st_size
    return report
