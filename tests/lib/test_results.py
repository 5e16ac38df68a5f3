"""Tidy tables, their validation, config hashes and atomic writes."""


import numpy as np
import pandas as pd
import pytest

from saliency_lib.results import (
    KEY,
    SCHEMA,
    config_hash,
    empty_table,
    read_table,
    to_table,
    validate_table,
    write_table,
)


def _rows(n=3):
    return [{"state": i, "step": s, "measure": "q_ratio", "value": 0.1 * i + s} for i in range(n) for s in range(2)]


def _table(n=3):
    return to_table(_rows(n), experiment="insertion", agent="toy", game="Breakout", method="occlusion", substrate="black")


def test_to_table_fills_schema():
    t = _table()
    assert list(t.columns) == list(SCHEMA)
    assert len(t) == 6
    assert t["level"].isna().all() and t["constant_map"].isna().all()
    assert str(t["step"].dtype) == "Int64" and str(t["state"].dtype) == "int64"
    assert empty_table().columns.tolist() == list(SCHEMA)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_round_trip(tmp_path, suffix):
    t = _table()
    t.loc[0, "constant_map"] = True
    t.loc[1, "value"] = np.nan
    p = write_table(t, tmp_path / f"t{suffix}")
    back = read_table(p)
    pd.testing.assert_frame_equal(back, t)


def test_validation_errors():
    t = _table()
    with pytest.raises(ValueError, match="missing \\['config_hash'\\]"):
        validate_table(t.drop(columns=["config_hash"]))
    with pytest.raises(ValueError, match="unknown result columns \\['colour'\\]"):
        to_table([{"state": 0, "measure": "x", "value": 1.0, "colour": 1}], experiment="sanity", agent="a", game="g", method="m")
    with pytest.raises(ValueError, match="share their key columns"):
        validate_table(pd.concat([t, t.iloc[:1]]))
    other = t.iloc[:1].assign(config_hash="another-unit")  # the same row of another unit: unique per unit
    assert len(validate_table(pd.concat([t, other]), key=(*KEY, "config_hash"))) == len(t) + 1
    with pytest.raises(ValueError, match="key columns \\['colour'\\] are not in the schema"):
        validate_table(t, key=("state", "colour"))
    with pytest.raises(ValueError, match="unknown experiment \\['fidelity'\\]; valid experiments are: sanity"):
        to_table(_rows(), experiment="fidelity", agent="a", game="g", method="m")
    with pytest.raises(ValueError, match="column 'method' is required"):
        to_table(_rows(), experiment="sanity", agent="a", game="g")
    with pytest.raises(ValueError, match="column 'value' cannot be converted to float64"):
        to_table([{"state": 0, "measure": "x", "value": "high"}], experiment="sanity", agent="a", game="g", method="m")
    with pytest.raises(ValueError, match="unknown table format '.xlsx'"):
        write_table(t, "out.xlsx")
    with pytest.raises(TypeError, match="pandas.DataFrame"):
        validate_table([1, 2])


def test_config_hash_is_stable():
    a = config_hash({"method": "ns", "params": {"r": 3, "blur": True}, "states": (0, 1)})
    b = config_hash({"states": [0, 1], "params": {"blur": True, "r": 3}, "method": "ns"})
    assert a == b and len(a) == 16
    assert a != config_hash({"method": "ns", "params": {"r": 4, "blur": True}, "states": (0, 1)})
    assert config_hash({"x": np.int64(3), "y": np.float32(0.5)}) == config_hash({"x": 3, "y": 0.5})
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        config_hash({"f": object()})


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    p = write_table(_table(2), tmp_path / "t.parquet")
    before = p.read_bytes()

    def boom(self, *a, **k):
        with open(a[0], "wb") as f:
            f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    with pytest.raises(OSError, match="disk full"):
        write_table(_table(3), p)
    assert p.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["t.parquet"]  # no temp file left
