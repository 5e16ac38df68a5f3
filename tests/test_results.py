"""Tidy tables, atomic writes and the resumable config-hash cache."""

import os

import numpy as np
import pandas as pd
import pytest
import torch
from toy_models import PatchQNet, as_agent, random_states

from saliency_lib.metrics import Insertion, random_saliency
from saliency_lib.results import (
    KEY,
    SCHEMA,
    ResultStore,
    config_hash,
    empty_table,
    read_table,
    run_chunked,
    to_table,
    validate_table,
    write_table,
)

torch.set_num_threads(1)


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


class Interrupt(Exception):
    pass


def _insertion_run(tmp_path, chunk, interrupt_after=None, calls=None):
    agent = as_agent(PatchQNet(4), 4)
    states = random_states(7, seed=1)
    metric = Insertion(substrate="random", seed=3, batch_size=100)
    maps = random_saliency(7, (84, 84), seed=5)
    store = ResultStore(tmp_path, {"metric": metric.config, "method": "random", "n": 7}, name="insertion")

    def compute(ids):
        if calls is not None:
            calls.extend(ids)
        return metric.evaluate(agent, states[ids], saliency=maps[ids], state_ids=ids, method="random", agent_name="toy")

    done = []

    def on_chunk(ids, rows):
        done.append(ids)
        if interrupt_after is not None and len(done) == interrupt_after:
            raise Interrupt

    return run_chunked(store, range(7), compute, chunk=chunk, on_chunk=on_chunk), store


def test_interrupted_run_resumes_to_same_table(tmp_path):
    full, _ = _insertion_run(tmp_path / "a", chunk=3)
    with pytest.raises(Interrupt):
        _insertion_run(tmp_path / "b", chunk=3, interrupt_after=2)
    calls = []
    resumed, store = _insertion_run(tmp_path / "b", chunk=3, calls=calls)
    assert calls == [6]  # only the unfinished state was computed
    assert not resumed.duplicated(list(KEY)).any()
    pd.testing.assert_frame_equal(resumed, full)
    assert len(store.parts()) == 3
    # a third run computes nothing and returns the same table
    calls2 = []
    again, _ = _insertion_run(tmp_path / "b", chunk=3, calls=calls2)
    assert calls2 == []
    pd.testing.assert_frame_equal(again, full)
    # the random substrate depends on the state id only, so chunking does not matter
    other, _ = _insertion_run(tmp_path / "c", chunk=2)
    pd.testing.assert_frame_equal(other, full)


def test_interruption_inside_compute_writes_nothing(tmp_path):
    store = ResultStore(tmp_path, {"x": 1})

    def compute(ids):
        if 4 in ids:
            raise Interrupt
        return _table(0) if not ids else to_table(_rows(len(ids)), experiment="sanity", agent="a", game="g", method="m").assign(
            state=lambda d: np.repeat(ids, 2))

    with pytest.raises(Interrupt):
        run_chunked(store, range(6), compute, chunk=2)
    assert store.finished_states() == {0, 1, 2, 3}
    assert not any(p.name.startswith(".tmp") for p in store.directory.iterdir())


def test_store_rejects_bad_chunks(tmp_path):
    store = ResultStore(tmp_path, {"x": 1}, name="s")
    assert store.directory.name == f"s-{config_hash({'x': 1})}"
    store.write_chunk(_table(2))
    with pytest.raises(ValueError, match="already stored"):
        store.write_chunk(_table(1))
    with pytest.raises(ValueError, match="exactly the requested states"):
        run_chunked(store, [5, 6], lambda ids: _table(1).assign(state=9), chunk=2)
    with pytest.raises(ValueError, match="chunk must be a positive integer, got 0"):
        run_chunked(store, [5], lambda ids: None, chunk=0)
    with pytest.raises(ValueError, match="duplicates"):
        run_chunked(store, [5, 5], lambda ids: None)
    with pytest.raises(ValueError, match="name '../x'"):
        ResultStore(tmp_path, {"x": 1}, name="../x")
    # a stale temp file of a killed writer is cleaned up when the store is opened
    (store.directory / ".tmp-part-x.parquet.123").write_bytes(b"junk")
    ResultStore(tmp_path, {"x": 1}, name="s")
    assert not any(p.name.startswith(".tmp") for p in os.scandir(store.directory))
