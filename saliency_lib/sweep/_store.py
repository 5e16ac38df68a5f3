"""The sweep's unit store: what each finished unit keeps, loose at first, then packed.

What a unit keeps
-----------------
* **Tidy rows** (:mod:`saliency_lib.results` schema), the rows a reader of the sweep gets: a sanity
  unit's similarity per (state, method, level, measure); a degradation unit's AUCs per
  (state, method, substrate, measure, mode), ``step`` NA.
* **Curve summaries** (degradation units): per (mode, substrate, measure, step) the number of
  finite values, their mean and sum of squared deviations over the unit's states
  (:mod:`.curves`), not every state's curve. :func:`mean_curves` pools them into the mean
  curve and its band.

Layout under ``<results_dir>/sweep/``
-------------------------------------
``<experiment>/<unit key>.parquet``
    A **loose** unit, written atomically by the sweep as soon as the unit is done. The file
    holds the tidy rows and the summary rows (``state`` NA, ``value`` the mean, plus the
    columns ``n``, ``nonfinite`` and ``m2``); without curves (a sanity unit) it is a plain
    tidy table. Loose units stored before the compact format hold every state's curve (and
    the raw outputs ``q[j]``) instead; they are read the same way, their curves summarised
    on reading.
``packs/<experiment>/<agent>-<hash>.parquet``
    A **pack**: the units of one (experiment, agent, state set), i.e. of one agent in one
    sweep, in one file (:func:`compact`). Its summary rows are pooled per *series*, the
    units that differ only in their states (one method's chunks), so a pack keeps one mean
    curve per method and setting however many chunks it holds. The footer's metadata lists
    the units, the package versions that made each and the pools. A pack is replaced
    atomically; its loose files are removed only after it is written, so an interrupted
    compaction loses nothing and a reader always finds every stored unit.
``states/states-<hash>.pt``
    Cached state sets (:func:`~saliency_lib.sweep._units.study_states`; not committed).
``claims/<unit key>.claim``
    The claim of the sweep that computes a unit now (:mod:`._claims`).
``quarantine/``
    Damaged files, moved out of the store and never deleted (:mod:`._verify`).

Every file is checked on its first read in a process (:class:`Reader`): readable, its
units' keys what its name or footer says, its rows complete. A damaged one is quarantined
and its units count as not stored, so the next sweep computes them again. Temporary files
(``.tmp-*``, which ``Path.glob`` matches) are never read as stored files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from .._io import atomic_write
from ..results import KEY, SCHEMA, config_hash, empty_table, validate_table, with_later_columns
from ..versions import environment_versions, version_differences
from ._curves import SUMMARY_COLUMNS, curve_bands_table, pool_curves, raw_curve_rows, summarise_curves
from ._verify import QUARANTINE, check_loose, check_pack, check_units, quarantine, stamp

if TYPE_CHECKING:  # units import the store, not the other way round
    from ._units import Unit

__all__ = ["states_dir", "unit_path", "pack_path", "read_stored", "store_unit", "stored_keys", "packed_keys", "load_units",
           "mean_curves", "unit_versions", "stored_versions", "stored_bytes", "verified_keys", "sweep_files"]

_EXTRA = ("n", "nonfinite", "m2")
"""Columns of a stored file beyond the tidy schema: the curve summaries' statistics."""
FORMATS = {"unit": "saliency-unit/2", "pack": "saliency-pack/1"}


def _arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "Int64": pa.int64(), "float64": pa.float64(),
             "boolean": pa.bool_()}
    return pa.schema([(c, types[t]) for c, t in SCHEMA.items()]
                     + [("n", pa.int64()), ("nonfinite", pa.int64()), ("m2", pa.float64())])


def states_dir(results_dir) -> Path:
    return Path(results_dir) / "sweep" / "states"


def unit_path(unit: Unit, results_dir) -> Path:
    """Where ``unit`` is stored while loose."""
    return Path(results_dir) / "sweep" / unit.experiment / f"{unit.key}.parquet"


def pack_path(unit: Unit, results_dir) -> Path:
    """The pack that :func:`compact` puts ``unit`` in: one per (experiment, agent, state set)."""
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(unit.agent.split(":")[-1]).name)
    name = f"{unit.agent.split(':')[0]}-{slug}" if ":" in unit.agent else slug
    group = config_hash({"experiment": unit.experiment, "agent": unit.agent, "states": unit.state_config})
    return Path(results_dir) / "sweep" / "packs" / unit.experiment / f"{name}-{group}.parquet"


class _KeyRef(NamedTuple):
    """A degradation unit known by its key alone (the ``config_hash`` of its rows)."""

    key: str
    experiment: str = "degradation"
    agent: str = "?"
    method: str = "?"
    states: tuple = ("?",)
    precision: str | None = None  # unknown: rows keep what their file recorded


def series_key(unit: Unit) -> str:
    """The units whose curve summaries pool: the same unit but for its states."""
    d = asdict(unit)
    for k in ("states", "batch_size"):
        d.pop(k)
    return config_hash(d)


# -- files ------------------------------------------------------------------------------------------

def summary_table(summary: pd.DataFrame, tag: str) -> pd.DataFrame:
    """Summary statistics as rows of a stored file: ``state`` NA, ``value`` the mean, ``config_hash`` the tag."""
    return pd.DataFrame({
        **{c: summary[c].to_numpy() for c in ("experiment", "agent", "game", "method", "substrate", "measure", "step",
                                             "higher_is_better", "n", "nonfinite", "m2")},
        "value": summary["mean"].to_numpy(), "config_hash": tag})


def write_stored(path: Path, tidy: pd.DataFrame, summary_rows: pd.DataFrame, metadata: dict[str, str]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema()
    if not len(summary_rows):  # no curves (a sanity unit): a plain tidy table, which results.read_table reads
        for c in _EXTRA:
            schema = schema.remove(schema.get_field_index(c))
    cols = [f.name for f in schema]
    dtypes = {**{c: "Int64" if t == "int64" else t for c, t in SCHEMA.items()}, "n": "Int64", "nonfinite": "Int64",
              "m2": "float64"}
    dtypes = {c: dtypes[c] for c in cols}
    parts = [t.reindex(columns=cols).astype(dtypes) for t in (tidy, summary_rows) if len(t)]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols).astype(dtypes)
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    table = table.replace_schema_metadata({f"saliency_lib.{k}".encode(): v.encode() for k, v in metadata.items()})
    # value and m2 are noise to a dictionary; split bytes compress better (about 7 bytes per double)
    return atomic_write(path, lambda p: pq.write_table(
        table, p, compression="zstd", compression_level=9, use_dictionary=[c for c in cols if c not in ("value", "m2")],
        use_byte_stream_split=[c for c in ("value", "m2") if c in cols]))


def _metadata(path: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    prefix = b"saliency_lib."
    return {k[len(prefix):].decode(): v.decode() for k, v in meta.items() if k.startswith(prefix)}


class _File:
    """A stored file, read: its tidy rows, its curve summaries (computed on demand for a first-format unit)."""

    def __init__(self, tidy: pd.DataFrame, summaries: pd.DataFrame, raw: pd.DataFrame | None, meta: dict[str, str]):
        self.tidy = tidy
        """Tidy rows, schema dtypes (``config_hash``: the unit key)."""
        self._summaries, self._raw = summaries, raw
        self.meta = meta

    @property
    def summaries(self) -> pd.DataFrame:
        """Curve summaries: :data:`SUMMARY_COLUMNS` and ``tag`` (the unit key, or the pool of a pack)."""
        if self._raw is not None:  # a loose unit of the first format: every state's curve, summarised once
            extra = summarise_curves(self._raw).assign(tag=self._raw["config_hash"].iloc[0])
            self._summaries = pd.concat([self._summaries, extra], ignore_index=True).astype(_SUMMARY_DTYPES)
            self._raw = None
        return self._summaries


_SUMMARY_DTYPES = {"step": "int64", "n": "int64", "nonfinite": "int64", "mean": "float64", "m2": "float64"}


def _read(path: Path) -> _File:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    df = with_later_columns(table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}.get))
    for c in _EXTRA:
        if c not in df.columns:
            df[c] = pd.array([pd.NA] * len(df), dtype="Int64" if c != "m2" else "Float64")
    is_summary, raw = df["state"].isna(), raw_curve_rows(df)
    # a pack holds several units; two of them may share every key column (the same method and states with
    # other parameters, e.g. another precision), so rows are unique per unit
    tidy = validate_table(df.loc[~is_summary & ~raw, list(SCHEMA)], key=(*KEY, "config_hash"))
    s = df.loc[is_summary]
    summaries = pd.DataFrame({**{c: s[c] for c in SUMMARY_COLUMNS if c not in ("mean",)}, "mean": s["value"],
                              "tag": s["config_hash"]}).astype(_SUMMARY_DTYPES)
    return _File(tidy.reset_index(drop=True), summaries.reset_index(drop=True), df[raw] if raw.any() else None,
                 _metadata(path))


def read_stored(path: str | os.PathLike) -> pd.DataFrame:
    """The tidy rows of one stored file, a loose unit or a pack, validated per unit.

    The rows are unique per unit (key columns plus ``config_hash``) and carry the schema's
    dtypes; a file that does not validate raises ``ValueError`` naming the problem.
    """
    return _read(Path(path)).tidy


def store_unit(unit: Unit, rows: pd.DataFrame, results_dir) -> None:
    """Keep ``unit``'s tidy rows and the summaries of its curves, as one atomic loose file.

    ``rows`` are what :func:`~saliency_lib.sweep._units.compute_unit` returned: every state's
    curve too. The package versions that made them travel with the file.
    """
    got = set(rows["state"].astype(int)) if len(rows) else set()
    if got != set(unit.states):
        raise RuntimeError(f"unit {unit.key} returned rows for states {sorted(got)}, expected {list(unit.states)}")
    rows = validate_table(rows)
    raw = raw_curve_rows(rows)
    summary = summary_table(summarise_curves(rows[raw]), unit.key)
    write_stored(unit_path(unit, results_dir), rows[~raw], summary,
           {"format": FORMATS["unit"], "versions": json.dumps(environment_versions(), sort_keys=True)})


# -- packs ------------------------------------------------------------------------------------------

class _Pack(NamedTuple):
    path: Path
    units: dict[str, int]
    """Unit key → index into ``versions`` (-1: the unit recorded none)."""
    versions: list[dict]
    pools: dict[str, dict]
    """Pool tag → ``{"series", "keys", "states"}`` (states as ``[first, last]`` runs)."""


def read_pack(path: Path) -> _Pack:
    """A pack's footer, checked for its structure (``ValueError`` naming what is wrong)."""
    meta = _metadata(path)
    if meta.get("format") != FORMATS["pack"]:
        raise ValueError(f"its footer names the format {meta.get('format')!r}, not {FORMATS['pack']!r}")
    try:
        units, versions, pools = (json.loads(meta[k]) for k in ("units", "versions", "pools"))
    except KeyError as e:
        raise ValueError(f"its footer lacks {e}") from None
    if not (isinstance(units, dict) and all(isinstance(k, str) and isinstance(i, int) and -1 <= i < len(versions)
                                            for k, i in units.items()) and units):
        raise ValueError("its footer's list of units is garbled")
    if not (isinstance(versions, list) and isinstance(pools, dict)
            and all(isinstance(p, dict) and {"series", "keys", "states"} <= set(p) for p in pools.values())):
        raise ValueError("its footer's versions or pools are garbled")
    return _Pack(path, units, versions, pools)


# what a damaged file raises when read: pyarrow's errors are OSError or ValueError (ArrowInvalid)
_DAMAGE = (OSError, ValueError, KeyError, EOFError)


def _stored(directory: Path) -> list[Path]:
    """The stored files of a directory: ``*.parquet`` but no temporary file (``.tmp-*``: ``glob`` matches dot-files)."""
    return sorted(p for p in directory.glob("*.parquet") if not p.name.startswith(".")) if directory.is_dir() else []


def sweep_files(results_dir) -> list[Path]:
    """Every loose unit file of ``results_dir`` (``sweep/<experiment>/<key>.parquet``)."""
    root = Path(results_dir) / "sweep"
    skip = {"packs", "states", "claims", QUARANTINE}
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name not in skip) if root.is_dir() else []
    return [p for d in dirs for p in _stored(d)]


def scan_packs(results_dir, *, on_damage=None) -> dict[Path, tuple[_Pack | None, str | None]]:
    """Every pack with its footer; one whose footer does not read is quarantined (``(None, reason)``)."""
    root = Path(results_dir) / "sweep" / "packs"
    out: dict[Path, tuple[_Pack | None, str | None]] = {}
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        for p in _stored(d):
            seen = stamp(p)
            try:
                out[p] = (read_pack(p), None)
            except _DAMAGE as e:
                reason = f"unreadable pack: {_why(e)}"
                out[p] = (None, reason)
                if quarantine(p, reason, results_dir=results_dir, seen=seen) and on_damage is not None:
                    on_damage(p, reason, [])
    return out


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"[:300]


def stored_packs(results_dir) -> dict[Path, _Pack]:
    return {p: pack for p, (pack, _) in scan_packs(results_dir).items() if pack is not None}


def _locate(units: list[Unit], results_dir) -> dict[str, _Pack | Path]:
    """Where each stored unit is: its pack, else its loose file. Missing units are left out."""
    packed = {k: p for p in stored_packs(results_dir).values() for k in p.units}
    out: dict[str, _Pack | Path] = {}
    for u in units:
        if u.key in packed:
            out[u.key] = packed[u.key]
        elif (path := unit_path(u, results_dir)).exists():
            out[u.key] = path
    return out


def stored_keys(units: Iterable[Unit], *, results_dir) -> set[str]:
    """The keys of the ``units`` that are stored, loose or packed.

    They are known by their files' names and the packs' footers; :func:`verified_keys` reads and
    checks them.
    """
    return set(_locate(list(units), results_dir))


def packed_keys(units: Iterable[Unit], *, results_dir) -> set[str]:
    """The keys of the ``units`` that are packed (:func:`compact`): what a commit of the packs holds."""
    packed = {k for p in stored_packs(results_dir).values() for k in p.units}
    return {u.key for u in units if u.key in packed}


class Reader:
    """Reads each stored file once, and checks it and each unit asked of it on the first read (:mod:`._verify`).

    A file that fails is quarantined; its units then count as not stored. A file replaced since
    it was read (a compaction rewrote its pack) is read and checked again.
    """

    def __init__(self, results_dir, on_damage=None):
        self.results_dir, self.on_damage = results_dir, on_damage
        self.files: dict[Path, tuple] = {}
        """Path → (its stamp when read, the file read)."""
        self.checked: dict[Path, tuple] = {}
        """Path → (its stamp when checked, the keys of the units checked in it)."""

    def read(self, path: Path) -> _File:
        seen = stamp(path)
        if path not in self.files or self.files[path][0] != seen:
            self.files[path] = (seen, _read(path))
        return self.files[path][1]

    def check(self, src: _Pack | Path, units: list) -> bool:
        """Whether ``src`` and the ``units`` it holds are sound; quarantines it when not."""
        path = src.path if isinstance(src, _Pack) else src
        seen = stamp(path)
        done = self.checked.get(path)
        done = done[1] if done is not None and done[0] == seen else None
        todo = [u for u in units if not isinstance(u, _KeyRef) and (done is None or u.key not in done)]
        if done is not None and not todo:
            return True
        try:
            f = self.read(path)
            if isinstance(src, _Pack):
                reason = check_pack(src.units, src.pools, f.tidy, f.summaries) if done is None else None
                reason = reason or check_units(f.tidy, todo)
            else:
                reason = check_loose(path, f.tidy, f.summaries, raw=f._raw is not None, unit=todo[0] if todo else None)
        except _DAMAGE as e:
            reason = f"unreadable: {_why(e)}"
        if reason is None:
            self.checked[path] = (seen, (done or set()) | {u.key for u in todo})
            return True
        self.files.pop(path, None)
        self.checked.pop(path, None)
        keys = sorted(src.units) if isinstance(src, _Pack) else [path.stem]
        if quarantine(path, reason, results_dir=self.results_dir, units=keys, seen=seen) and self.on_damage:
            self.on_damage(path, reason, keys)
        return False


def read_checked(path: Path, *, results_dir, pack: _Pack | None = None, on_damage=None) -> _File | None:
    """One stored file read and checked without a plan (:func:`~._verify.verify_store`); None if quarantined."""
    reader = Reader(results_dir, on_damage)
    return reader.read(path) if reader.check(pack if pack is not None else path, []) else None


def _checked(units: list, results_dir, reader: Reader) -> dict[str, _Pack | Path]:
    """Where the sound stored ``units`` are, every file they are in checked.

    Damaged files are quarantined and their units looked for again (a quarantined pack's units may
    be loose files still).
    """
    for _ in range(4):
        where = _locate(units, results_dir)
        groups: dict[Path, tuple[_Pack | Path, list]] = {}
        for u in units:
            if (src := where.get(u.key)) is not None:
                groups.setdefault(src.path if isinstance(src, _Pack) else src, (src, []))[1].append(u)
        bad = {path for path, (src, us) in groups.items() if not reader.check(src, us)}
        if not bad:
            return where
    return {k: v for k, v in where.items() if (v.path if isinstance(v, _Pack) else v) not in bad}


def verified_keys(units: Iterable[Unit], *, results_dir, reader: Reader | None = None) -> set[str]:
    """The keys of the ``units`` that are stored and sound.

    Every file that holds one is read and checked (:mod:`._verify`) and quarantined when damaged, so
    its units are computed again.
    """
    return set(_checked(list(units), results_dir, reader or Reader(results_dir)))


def _where(units: list[Unit], results_dir, reader: Reader) -> dict[str, _Pack | Path]:
    where = _checked(units, results_dir, reader)
    missing = [u for u in units if u.key not in where]
    if missing:
        u = missing[0]
        raise FileNotFoundError(f"{len(missing)} of {len(units)} units are not stored under {Path(results_dir)}, "
                                f"e.g. {u.key} ({u.experiment}, {u.agent}, {u.method}, states {u.states[0]}…); "
                                "a sweep of them computes what is missing")
    return where


def load_units(units: Iterable[Unit], *, results_dir) -> pd.DataFrame:
    """The tidy rows of ``units`` (per-state similarities and AUCs), sorted by the results key.

    The curves are not among them: :func:`mean_curves` gives the mean curves and their bands.
    Every file read is checked first (:mod:`._verify`); a damaged one is quarantined.

    Raises
    ------
    FileNotFoundError
        Some of ``units`` are not stored (or were damaged, and are now in the quarantine).
    """
    units = list(units)
    return load_rows(units, results_dir, Reader(results_dir))


def load_rows(units: list[Unit], results_dir, reader: Reader) -> pd.DataFrame:
    where = _where(units, results_dir, reader)
    read = reader.read
    parts, by_file = [], {}
    for u in units:
        src = where[u.key]
        if isinstance(src, Path):  # a loose file is one unit
            parts.append(read(src).tidy)
            continue
        if src.path not in by_file:
            by_file[src.path] = dict(tuple(read(src.path).tidy.groupby("config_hash", sort=False)))
        parts.append(by_file[src.path].get(u.key))
    # files stored before rows recorded their precision: the unit's parameters say it
    parts = [p if u.precision is None or not p["precision"].isna().any()
             else p.assign(precision=p["precision"].fillna(u.precision))
             for p, u in zip(parts, units) if p is not None]
    if not parts:
        return empty_table()
    df = pd.concat(parts, ignore_index=True)
    return df.sort_values(list(KEY), kind="stable").reset_index(drop=True)


def _summaries(units: list[Unit], results_dir, reader: Reader) -> list[pd.DataFrame]:
    """The curve summaries that cover exactly the degradation ``units``, one per unit or pool."""
    where = _where(units, results_dir, reader)
    read = reader.read
    wanted = {u.key for u in units}
    blocks, seen = [], set()
    for u in units:
        src = where[u.key]
        if isinstance(src, Path):  # a loose file is one unit
            blocks.append(read(src).summaries)
            continue
        tag = next((t for t, p in src.pools.items() if u.key in p["keys"]), None)
        if tag is None or tag in seen:
            continue
        extra = set(src.pools[tag]["keys"]) - wanted
        if extra:
            raise ValueError(f"the curves of unit {u.key} were pooled with {len(extra)} units that were not asked for "
                             f"(e.g. {sorted(extra)[0]}) when {src.path.name} was packed; ask for all the units of "
                             "its sweep, whose curves it keeps as one mean")
        seen.add(tag)
        s = read(src.path).summaries
        blocks.append(s[s["tag"] == tag])
    return blocks


def mean_curves(units: Iterable[Unit | str], *, results_dir, confidence: float = 0.95,
                dependence: bool = True) -> pd.DataFrame:
    """The mean insertion/deletion curves of ``units`` over their states, with their band.

    ``units`` are :class:`~saliency_lib.sweep._units.Unit` s or the keys of degradation
    units: the ``config_hash`` column of the rows that :func:`load_units` returns, so a table
    of rows finds its own curves.

    One row per (experiment, agent, game, method, substrate, measure, step): ``n`` states with
    a finite value (``nonfinite`` left out), their ``mean``, ``std`` (ddof 1) and the
    ``confidence`` t-interval ``low``–``high`` of the mean (:mod:`.curves`). Units of the same
    point are pooled, exactly, whatever their chunking: give the units of one sweep. Sanity
    units have no curves and are ignored.

    With ``dependence`` (default) the band counts ``n_eff`` states, the effective sample size
    (:func:`saliency_lib.metrics.dependence.effective_sample_size`) of the same states' AUCs
    of that curve in state order, because consecutive states of a trajectory are not
    independent; curves without an AUC (the raw outputs ``q[j]``, ``logits[j]``) and
    ``dependence=False`` use ``n``.

    Raises
    ------
    FileNotFoundError
        Some of ``units`` are not stored.
    ValueError
        A packed unit whose curves were pooled with units not in ``units``.
    """
    units = [_KeyRef(u) if isinstance(u, str) else u for u in units]
    units = list({u.key: u for u in units if u.experiment == "degradation"}.values())  # each unit once
    reader = Reader(results_dir)
    blocks = _summaries(units, results_dir, reader)
    n_eff = _auc_ess(load_rows(units, results_dir, reader)) if dependence and blocks else None
    return curve_bands_table(pool_curves(blocks), confidence=confidence, n_eff=n_eff)


def _auc_ess(tidy: pd.DataFrame) -> pd.DataFrame:
    """Effective sample size of each curve's per-state AUCs (``<measure>_auc``), in state order."""
    from ..metrics.dependence import effective_sample_size

    keys = ["experiment", "agent", "game", "method", "substrate", "measure"]
    auc = tidy[tidy["step"].isna() & tidy["measure"].str.endswith("_auc")]
    auc = auc.assign(measure=auc["measure"].str.removesuffix("_auc")).sort_values([*keys, "state"], kind="stable")
    out = auc.groupby(keys, sort=True)["value"].agg(effective_sample_size)
    return out.rename("n_eff").reset_index()


# -- versions and bytes -------------------------------------------------------------------------------

def unit_versions(path: str | os.PathLike) -> dict[str, str] | None:
    """The package versions recorded with a loose unit file, or None for a unit stored before they were recorded."""
    raw = _metadata(Path(path)).get("versions")
    return json.loads(raw) if raw else None


def stored_versions(units: Iterable[Unit], *, results_dir) -> dict:
    """What versions made the stored ``units``, against the running environment.

    Returns ``{"units", "unrecorded", "differences"}``: the number of stored units, how
    many of them record no versions, and ``{package: (recorded versions, running version)}``
    for every package whose recorded version differs from the running one in some unit.
    """
    units = list(units)
    where = _locate(units, results_dir)
    n = unrecorded = 0
    diff: dict[str, tuple[set, str]] = {}
    for u in units:
        src = where.get(u.key)
        if src is None:
            continue
        n += 1
        if isinstance(src, _Pack):
            i = src.units[u.key]
            rec = src.versions[i] if i >= 0 else None
        else:
            rec = unit_versions(src)
        if rec is None:
            unrecorded += 1
            continue
        for name, (was, now) in version_differences(rec).items():
            diff.setdefault(name, (set(), now))[0].add(was)
    return {"units": n, "unrecorded": unrecorded,
            "differences": {k: (sorted(v[0]), v[1]) for k, v in sorted(diff.items())}}


def stored_bytes(units: Iterable[Unit], *, results_dir) -> int:
    """Bytes on disk of the stored ``units``: their loose files and every pack that holds one of them."""
    files = {src.path if isinstance(src, _Pack) else src for src in _locate(list(units), results_dir).values()}
    return sum(p.stat().st_size for p in files)
