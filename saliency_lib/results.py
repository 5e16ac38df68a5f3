"""Tidy result tables: schema, validation, atomic writes and a resumable cache.

Every metric of :mod:`saliency_lib.metrics` returns a *long* table with one row
per (experiment, agent, game, method, substrate, state, level, layer, step,
measure) and one number in ``value``. Aggregation is a ``groupby`` on that
table, never a flag of the metric.

Schema
------
=================  ===========  ===============================================
column             dtype        meaning
=================  ===========  ===============================================
experiment         string       ``"sanity"``, ``"insertion"`` or ``"deletion"``
agent              string       agent spec or name (e.g. ``"official:Breakout"``)
game               string       game name
method             string       explainer name (``"ns_original"``, ``"random"`` …)
substrate          string       insertion/deletion substrate; NA for sanity rows
state              int64        index of the explained state in its state set
level              Int64        randomisation level (0 = original model); NA else
layer              string       deepest randomised layer group, ``"original"``,
                                or a reference row (``"random_uniform"`` …)
step               Int64        insertion/deletion step (0 = substrate); NA for
                                per-state summaries such as AUCs
measure            string       ``"spearman"``, ``"q_ratio"``, ``"q_ratio_auc"`` …
value              float64      the number (NaN allowed, e.g. constant maps)
target             Int64        the explained action (the original agent's)
constant_map       boolean      a map was constant, so ``value`` is NaN
higher_is_better   boolean      score direction of ``measure``; NA if none
seed               Int64        seed of the run
config_hash        string       :func:`config_hash` of the run's configuration
precision          string       arithmetic of the forward passes that made the
                                map, ``"fp32"`` or ``"bf16"``; NA where no
                                explainer made it (random maps) or not recorded
=================  ===========  ===============================================

The key columns (:data:`KEY`) must be unique; :func:`validate_table` checks it.

Storage
-------
:func:`write_table` writes atomically (temporary file, ``fsync``, ``os.replace``).
The study stores one file per unit of work through :mod:`saliency_study.cache`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._io import atomic_write

__all__ = [
    "SCHEMA",
    "KEY",
    "REQUIRED",
    "EXPERIMENTS",
    "to_table",
    "validate_table",
    "empty_table",
    "config_hash",
    "LATER_COLUMNS",
    "with_later_columns",
    "write_table",
    "read_table_metadata",
    "read_table",
]

#: Column name → pandas dtype of the tidy table, in column order.
SCHEMA: dict[str, str] = {
    "experiment": "string",
    "agent": "string",
    "game": "string",
    "method": "string",
    "substrate": "string",
    "state": "int64",
    "level": "Int64",
    "layer": "string",
    "step": "Int64",
    "measure": "string",
    "value": "float64",
    "target": "Int64",
    "constant_map": "boolean",
    "higher_is_better": "boolean",
    "seed": "Int64",
    "config_hash": "string",
    "precision": "string",
}

#: Columns added to :data:`SCHEMA` after tables were first stored; a file without them reads as NA.
LATER_COLUMNS: tuple[str, ...] = ("precision",)

#: Columns that identify a row; they must be unique within a table.
KEY: tuple[str, ...] = ("experiment", "agent", "game", "method", "substrate", "state", "level", "layer", "step", "measure")

#: Columns that may not be missing (NA).
REQUIRED: tuple[str, ...] = ("experiment", "agent", "game", "method", "state", "measure")

EXPERIMENTS: tuple[str, ...] = ("sanity", "insertion", "deletion")

_FORMATS = (".parquet", ".csv")


def empty_table() -> pd.DataFrame:
    """A table with the schema's columns and no rows."""
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in SCHEMA.items()})


def _coerce(df: pd.DataFrame) -> pd.DataFrame:
    out = {}
    n = len(df)
    for col, dtype in SCHEMA.items():
        s = df[col] if col in df.columns else pd.Series([pd.NA] * n, index=df.index, dtype="object")
        try:
            if dtype == "int64":
                if s.isna().any():
                    raise ValueError("missing values")
                s = s.astype("int64")
            elif dtype == "float64":
                s = pd.to_numeric(s, errors="raise").astype("float64")
            elif dtype == "boolean":
                if s.dtype == object:
                    s = s.map(lambda v: pd.NA if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA
                              else {"true": True, "false": False}.get(str(v).lower(), v))
                s = s.astype("boolean")
            elif dtype == "Int64":
                s = s.astype("Float64").astype("Int64") if s.dtype == object else s.astype("Int64")
            else:
                s = s.astype("string")
        except (TypeError, ValueError) as e:
            raise ValueError(f"column {col!r} cannot be converted to {dtype}: {e}") from e
        out[col] = s
    return pd.DataFrame(out, index=df.index).reset_index(drop=True)


def validate_table(df: pd.DataFrame, *, key: Sequence[str] = KEY) -> pd.DataFrame:
    """Check a tidy table against :data:`SCHEMA` and return it with the schema's dtypes.

    Parameters
    ----------
    df : pandas.DataFrame
        Must have every column of :data:`SCHEMA` (optional ones may be all NA)
        and no other column.
    key : sequence of str, optional
        The columns that must be unique together (default :data:`KEY`). A store of
        several result sets adds the column that tells them apart (``config_hash``).

    Returns
    -------
    pandas.DataFrame
        The table with columns in schema order and schema dtypes.

    Raises
    ------
    ValueError
        If a column is missing or unknown, a value cannot be converted, a
        required column holds NA, ``experiment`` is not one of
        :data:`EXPERIMENTS`, or the ``key`` columns are not unique.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"a result table must be a pandas.DataFrame, got {type(df).__name__}")
    missing = [c for c in SCHEMA if c not in df.columns]
    extra = [c for c in df.columns if c not in SCHEMA]
    if missing or extra:
        raise ValueError(
            f"result table columns do not match the schema: missing {missing}, unknown {extra}; "
            f"expected exactly {list(SCHEMA)} (use to_table() to fill optional columns)"
        )
    out = _coerce(df)
    for c in REQUIRED:
        if out[c].isna().any():
            raise ValueError(f"column {c!r} is required but has {int(out[c].isna().sum())} missing values")
    bad = sorted(set(out["experiment"].dropna().unique()) - set(EXPERIMENTS))  # unique(): not a Python loop over rows
    if bad:
        raise ValueError(f"unknown experiment {bad}; valid experiments are: {', '.join(EXPERIMENTS)}")
    key = list(key)
    unknown = [c for c in key if c not in SCHEMA]
    if unknown:
        raise ValueError(f"key columns {unknown} are not in the schema; valid columns are: {', '.join(SCHEMA)}")
    dup = out.duplicated(key, keep=False)
    if dup.any():
        first = out.loc[dup, key].iloc[0].to_dict()
        raise ValueError(f"{int(dup.sum())} rows share their key columns {key}, e.g. {first}; each row must be unique")
    return out


def to_table(rows: pd.DataFrame | Iterable[Mapping], **constants) -> pd.DataFrame:
    """Build a validated tidy table from records, filling optional columns with NA.

    Parameters
    ----------
    rows : DataFrame or iterable of mappings
        Records with (a subset of) the schema's columns.
    **constants
        Column values shared by every row (``agent="official:Breakout"`` …);
        they override the same columns of ``rows``.

    Raises
    ------
    ValueError
        For unknown columns and everything :func:`validate_table` rejects.
    """
    df = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    unknown = [c for c in list(df.columns) + list(constants) if c not in SCHEMA]
    if unknown:
        raise ValueError(f"unknown result columns {sorted(set(unknown))}; valid columns are: {', '.join(SCHEMA)}")
    for k, v in constants.items():
        df[k] = v
    for c in SCHEMA:
        if c not in df.columns:
            df[c] = pd.NA
    return validate_table(df[list(SCHEMA)])


def _json_default(o):
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    if isinstance(o, Mapping):  # read-only mappings (a Profile's parameters) hash like the dict they hold
        return dict(o)
    raise TypeError(f"config value of type {type(o).__name__} is not JSON-serialisable; convert it to a string or number")


def canonical_json(config: Mapping) -> str:
    """Stable JSON of a configuration: sorted keys, no spaces, tuples as lists."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=_json_default, allow_nan=True)


def config_hash(config: Mapping, *, length: int = 16) -> str:
    """Hex SHA-256 (first ``length`` characters) of :func:`canonical_json` of ``config``.

    Examples
    --------
    >>> config_hash({"b": 1, "a": (1, 2)}) == config_hash({"a": [1, 2], "b": 1})
    True
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    if not 8 <= length <= 64:
        raise ValueError(f"length must be in [8, 64], got {length}")
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:length]


def _fmt(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        raise ValueError(f"unknown table format {suffix!r} of {str(path)!r}; use one of {', '.join(_FORMATS)}")
    return suffix


def _atomic_write(path: Path, write: Callable[[str], None]) -> Path:
    return atomic_write(path, write)


def write_table(df: pd.DataFrame, path: str | os.PathLike, *, validate: bool = True,
                metadata: Mapping[str, str] | None = None) -> Path:
    """Write a tidy table atomically as Parquet (pyarrow) or CSV, chosen by the suffix.

    The table is written to a temporary file in the same directory, flushed to
    disk and moved over ``path`` with ``os.replace``: readers see either the old
    or the new file, never a partial one. ``metadata`` (Parquet only) goes into the
    file's key-value metadata, beside the table (:func:`read_table_metadata`); the
    study records the package versions there (:mod:`saliency_lib.versions`).
    """
    path = Path(path)
    fmt = _fmt(path)
    if validate:
        df = validate_table(df)
    if fmt == ".parquet":
        if not metadata:
            return _atomic_write(path, lambda p: df.to_parquet(p, engine="pyarrow", index=False))
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        extra = {f"saliency_lib.{k}".encode(): str(v).encode() for k, v in metadata.items()}
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
        return _atomic_write(path, lambda p: pq.write_table(table, p))
    if metadata:
        raise ValueError("metadata can only be stored in Parquet tables")
    return _atomic_write(path, lambda p: df.to_csv(p, index=False))


def read_table_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The key-value metadata that :func:`write_table` stored with a Parquet table (``{}`` if none)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    prefix = b"saliency_lib."
    return {k[len(prefix):].decode(): v.decode() for k, v in meta.items() if k.startswith(prefix)}


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a table written by :func:`write_table` and validate it.

    A column of :data:`LATER_COLUMNS` missing from an older file reads as NA.
    """
    path = Path(path)
    fmt = _fmt(path)
    df = pd.read_parquet(path, engine="pyarrow") if fmt == ".parquet" else pd.read_csv(path, keep_default_na=True)
    return validate_table(with_later_columns(df))


def with_later_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every column of :data:`LATER_COLUMNS` it lacks added as NA (tables stored before them)."""
    missing = [c for c in LATER_COLUMNS if c not in df.columns]
    return df.assign(**{c: pd.array([pd.NA] * len(df), dtype=SCHEMA[c]) for c in missing}) if missing else df
