"""A store that verifies and heals itself: damaged units, packs, temporary files, locks, claims, state caches.

The clean sweep is 30 units of an untrained Nature-DQN saved like a shipped agent (10 sanity
units of the gradient, 10 insertion units of the gradient and 10 of the random map, one state
each); each damage is done to a copy of it, and the sweep run on the copy must find it,
quarantine it (nothing deleted), compute what it lost and give the clean table bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from saliency_lib import sweep
from saliency_lib._io import host_name
from saliency_lib.cli import main
from saliency_lib.sweep import StoreWarning, compact, load_units, pack_path, quarantine_dir, unit_path, verify_store
from saliency_lib.sweep._claims import Claims, OwnedFile
from saliency_lib.sweep._compact import compaction_lock
from saliency_lib.sweep._verify import remove_stale_temporaries

N_UNITS = 30


def _spec(agent_dir):
    return sweep.SweepSpec(agents=(agent_dir,), methods=("gradient",), experiments=("sanity", "insertion"),
                           substrates=("black",), n_states=10, chunk=1,
                           metric={"levels": 1, "pixels_per_step": 84 * 12})


@pytest.fixture(scope="module")
def clean(agent_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("clean")
    rep = sweep.run_sweep(_spec(agent_dir), results_dir=root, progress=False)
    assert rep.total == rep.computed == N_UNITS
    return root, rep


def _copy(clean, tmp_path, name="r") -> Path:
    root = tmp_path / name
    shutil.copytree(clean[0], root)
    return root


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dead_pid() -> int:
    """The id of a process that has exited (and was reaped): no live owner has it."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _rerun(agent_dir, root, clean) -> sweep.SweepReport:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rep = sweep.run_sweep(_spec(agent_dir), results_dir=root, progress=False)
    rep.warnings = [str(w.message) for w in seen if issubclass(w.category, StoreWarning)]
    pd.testing.assert_frame_equal(rep.table, clean[1].table, check_exact=True)  # bit for bit the clean table
    return rep


def _damage(clean, root: Path) -> dict:
    """One loose unit truncated, one replaced by another unit's file, a partial .tmp-* pack of a dead writer."""
    units = clean[1].units
    san = [u for u in units if u.experiment == "sanity"]
    deg = [u for u in units if u.experiment == "degradation"]
    truncated, replaced, donor = san[0], deg[0], deg[1]
    p = unit_path(truncated, root)
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    shutil.copy(unit_path(donor, root), unit_path(replaced, root))
    # what a compaction killed while writing leaves: half a pack under its temporary name
    packed = root.parent / f"{root.name}-packed"
    shutil.copytree(clean[0], packed)
    compact(units, results_dir=packed)
    pack = pack_path(deg[0], packed)
    tmp = pack_path(deg[0], root).parent / f".tmp-{pack.name}.{host_name()}.{_dead_pid()}.k2j3h4g5.parquet"
    tmp.parent.mkdir(parents=True)
    tmp.write_bytes(pack.read_bytes()[: pack.stat().st_size // 2])
    return {"truncated": unit_path(truncated, root), "replaced": unit_path(replaced, root), "tmp": tmp,
            "digests": {unit_path(truncated, root).name: _digest(unit_path(truncated, root)),
                        unit_path(replaced, root).name: _digest(unit_path(replaced, root)), tmp.name: _digest(tmp)}}


def test_damaged_units_are_quarantined_and_recomputed_bit_for_bit(clean, agent_dir, tmp_path):
    root = _copy(clean, tmp_path)
    hurt = _damage(clean, root)
    assert sweep.stored_keys(clean[1].units, results_dir=root) == {u.key for u in clean[1].units}  # names lie
    rep = _rerun(agent_dir, root, clean)
    assert (rep.computed, rep.skipped) == (2, N_UNITS - 2)  # the truncated and the replaced unit
    assert len(rep.warnings) == 3 and all(len(w.splitlines()) == 1 for w in rep.warnings)
    text = "\n".join(rep.warnings)
    assert hurt["truncated"].name in text and "unreadable" in text
    assert hurt["replaced"].name in text and "holds the rows of unit" in text
    assert hurt["tmp"].name in text and "temporary file left behind" in text
    q = quarantine_dir(root)
    moved = {p.name: _digest(p) for p in q.rglob("*.parquet")}
    assert moved == hurt["digests"]  # nothing deleted: the damaged files, byte for byte
    log = [json.loads(line) for line in (q / "quarantine.jsonl").read_text().splitlines()]
    assert {Path(r["file"]).name for r in log} == set(hurt["digests"])
    assert not hurt["tmp"].exists() and not list((root / "sweep" / "claims").glob("*.claim"))
    again = _rerun(agent_dir, root, clean)
    assert again.computed == 0 and not again.warnings  # healed


def test_run_verify_names_each_damage_and_computes_nothing(clean, agent_dir, tmp_path, capsys):
    root = _copy(clean, tmp_path)
    hurt = _damage(clean, root)
    assert main(["run", "--verify", "--results-dir", str(root)]) == 0
    out, err = capsys.readouterr()
    (line,) = out.strip().splitlines()  # one JSON object
    got = json.loads(line)
    assert got["files_checked"] == N_UNITS and got["units_checked"] == N_UNITS and got["states_checked"] == 1
    by_name = {Path(q["file"]).name: q for q in got["quarantined"]}
    assert set(by_name) == set(hurt["digests"])
    assert by_name[hurt["truncated"].name]["reason"].startswith("unreadable")
    assert "holds the rows of unit" in by_name[hurt["replaced"].name]["reason"]
    assert "temporary file left behind" in by_name[hurt["tmp"].name]["reason"]
    assert got["units_quarantined"] == 2
    assert got["quarantine_bytes"] == sum(p.stat().st_size for p in quarantine_dir(root).rglob("*") if p.is_file())
    assert len([ln for ln in err.splitlines() if ln.startswith("saliency-study: warning: quarantined")]) == 3
    assert len(list((root / "sweep").glob("*/*.parquet"))) == N_UNITS - 2  # nothing computed
    assert main(["run", "--verify", "--results-dir", str(root)]) == 0  # a second check finds nothing new
    assert json.loads(capsys.readouterr().out)["quarantined"] == []
    rep = _rerun(agent_dir, root, clean)
    assert rep.computed == 2


def test_a_damaged_pack_is_quarantined_and_its_units_recovered_or_recomputed(clean, agent_dir, tmp_path):
    root = _copy(clean, tmp_path)
    units = clean[1].units
    compact(units, results_dir=root)
    deg = [u for u in units if u.experiment == "degradation"]
    pack = pack_path(deg[0], root)
    # a pack whose footer lists a unit whose rows are gone
    table = pq.read_table(pack)
    keep = pa.compute.not_equal(table["config_hash"], pa.scalar(deg[3].key))
    pq.write_table(table.filter(keep), pack)
    # and the loose files of two units left behind by a compaction stopped before it removed them
    for u in deg[:2]:
        shutil.copy(unit_path(u, clean[0]), unit_path(u, root))
    assert len(load_units([u for u in units if u.experiment == "sanity"], results_dir=root)) > 0  # other pack: fine
    with pytest.warns(StoreWarning, match=r"rows incomplete: 1 of the 20 units"):
        rep = sweep.run_sweep(_spec(agent_dir), results_dir=root, progress=False)
    assert rep.computed == len(deg) - 2  # two recovered from their loose files
    pd.testing.assert_frame_equal(rep.table, clean[1].table, check_exact=True)
    assert (quarantine_dir(root) / "packs" / "degradation" / pack.name).is_file()
    compact(units, results_dir=root)  # packed again, whole
    pd.testing.assert_frame_equal(load_units(units, results_dir=root), clean[1].table, check_exact=True)


def test_a_unit_of_a_plan_checks_its_rows_against_the_unit(clean, tmp_path):
    """A well-formed file with the unit's key but rows for too few states: incomplete for the unit."""
    root = _copy(clean, tmp_path)
    u = next(u for u in clean[1].units if u.experiment == "sanity")
    path = unit_path(u, root)
    t = pq.read_table(path)
    other = t.to_pandas().assign(state=7)  # the same rows, for another state than the unit's
    pq.write_table(pa.Table.from_pandas(other, schema=t.schema, preserve_index=False), path)
    with pytest.warns(StoreWarning, match=r"rows incomplete: unit .* has rows for states \[7\]"):
        with pytest.raises(FileNotFoundError, match="1 of 1 units are not stored"):
            load_units([u], results_dir=root)
    assert (quarantine_dir(root) / "sanity" / path.name).is_file()


# -- temporary files, locks, claims ---------------------------------------------------------------------

def test_temporary_files_are_never_read_and_only_stale_ones_removed(clean, tmp_path):
    root = _copy(clean, tmp_path)
    other = tmp_path / "other"
    shutil.copytree(clean[0], other)
    compact(clean[1].units, results_dir=other)
    d = root / "sweep" / "packs" / "sanity"
    d.mkdir(parents=True)
    src = pack_path(next(u for u in clean[1].units if u.experiment == "sanity"), other)
    live = d / f".tmp-{src.name}.{host_name()}.{os.getpid()}.aaaaaaaa.parquet"  # a whole pack, still being "written"
    shutil.copy(src, live)
    old = d / f".tmp-{src.name}.bbbbbbbb.parquet"  # no writer recorded, untouched for two hours
    shutil.copy(src, old)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    fresh = d / f".tmp-{src.name}.cccccccc.parquet"
    shutil.copy(src, fresh)
    assert sweep.packed_keys(clean[1].units, results_dir=root) == set()  # glob matches dot-files; the store does not
    with pytest.warns(StoreWarning, match="it names no writer and it was not modified for"):
        remove_stale_temporaries(root)
    assert live.exists() and fresh.exists() and not old.exists()


def test_locks_record_their_owner_and_stale_ones_are_taken_over(clean, tmp_path):
    root = _copy(clean, tmp_path)
    lock = compaction_lock(root).path
    lock.parent.mkdir(parents=True)
    aged = time.time() - 60
    for content, reason in [(b"", "it is empty"), (b"\x00garbled{", "it names no owner"),
                            (json.dumps({"host": host_name(), "pid": _dead_pid()}).encode(), "is gone"),
                            (b"0", "process 0")]:
        lock.write_bytes(content)
        os.utime(lock, (aged, aged))
        f = OwnedFile(lock)
        with pytest.warns(StoreWarning, match=f"taking over the stale compaction lock .*{reason}"):
            assert f.try_take(what="compaction lock")
        owner = json.loads(lock.read_text())
        assert owner["pid"] == os.getpid() and owner["host"] == host_name() and owner["start"] is not None
        f.release()
        assert not lock.exists()
    lock.write_text(json.dumps({"host": host_name(), "pid": os.getppid()}))  # a live owner keeps it
    with pytest.raises(RuntimeError, match=f"another compaction \\(process {os.getppid()} on"):
        compact(clean[1].units, results_dir=root)
    lock.write_text(json.dumps({"host": "elsewhere", "pid": 1}))  # another host: stale only once not refreshed
    assert OwnedFile(lock, timeout=30).holder() is not None
    os.utime(lock, (time.time() - 31, time.time() - 31))
    assert OwnedFile(lock, timeout=30).holder() is None
    lock.unlink()


def test_a_dead_sweeps_claim_expires_and_a_live_ones_is_waited_for(clean, agent_dir, tmp_path):
    root = _copy(clean, tmp_path)
    units = clean[1].units
    dead, live = units[0], units[1]
    for u in (dead, live):
        unit_path(u, root).unlink()
    claims = root / "sweep" / "claims"
    claims.mkdir(exist_ok=True)
    (claims / f"{dead.key}.claim").write_text(json.dumps({"host": host_name(), "pid": _dead_pid()}))
    (claims / f"{live.key}.claim").write_text(json.dumps({"host": host_name(), "pid": os.getppid()}))

    def other_sweep_finishes():  # the live owner stores its unit, then gives up its claim
        deadline = time.monotonic() + 300
        while not unit_path(dead, root).exists() and time.monotonic() < deadline:  # the sweep is waiting by now
            time.sleep(0.1)
        time.sleep(1.0)
        shutil.copy(unit_path(live, clean[0]), unit_path(live, root))
        (claims / f"{live.key}.claim").unlink()

    t = threading.Thread(target=other_sweep_finishes)
    t.start()
    with pytest.warns(StoreWarning, match=f"taking over the stale claim on unit .*{dead.key}.claim: its process"):
        rep = sweep.run_sweep(_spec(agent_dir), results_dir=root, progress=False, poll=0.2)
    t.join()
    assert (rep.computed, rep.skipped) == (1, N_UNITS - 1)  # the dead owner's unit; the live one's was waited for
    pd.testing.assert_frame_equal(rep.table, clean[1].table, check_exact=True)
    assert not list(claims.glob("*.claim"))


def test_claims_are_taken_once_and_refreshed(tmp_path):
    with Claims(tmp_path, heartbeat=0.2) as a:
        assert a.take("k1") and a.take("k1")
        with Claims(tmp_path) as b:
            assert not b.take("k1") and b.held_elsewhere("k1")
            path = tmp_path / "sweep" / "claims" / "k1.claim"
            before = path.stat().st_mtime_ns
            os.utime(path, ns=(before - 10**10, before - 10**10))
            time.sleep(0.6)
            assert path.stat().st_mtime_ns > before - 10**10  # the holder's heartbeat refreshed it
        a.release("k1")
        assert not path.exists()


_SWEEPER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    go = Path(sys.argv[1])
    from saliency_lib.cli import main
    while not go.exists():  # both processes start the sweep together
        time.sleep(0.05)
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.slow
def test_two_concurrent_sweeps_compute_each_unit_once(agent_dir, tmp_path, capsys):
    go = tmp_path / "go"
    args = ["run", "--agents", agent_dir, "--methods", "gradient", "--experiments", "insertion", "--substrates", "black",
            "--n-states", "15", "--chunk", "1", "--results-dir", str(tmp_path / "r"), "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    procs = [subprocess.Popen([sys.executable, "-c", _SWEEPER, str(go), *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    counts = []
    for out, _ in outs:
        last = out.strip().splitlines()[-1]  # "units: N computed, M skipped of 30"
        assert last.startswith("units: ") and last.endswith(f"of {N_UNITS}"), last
        n, m = (int(w) for w in last.removeprefix("units: ").replace(",", "").split()[::2][:2])
        assert n + m == N_UNITS
        counts.append(n)
    assert sum(counts) == N_UNITS, counts  # each unit computed once across both
    with capsys.disabled():
        print(f"\ntwo concurrent sweeps of {N_UNITS} units computed {counts[0]} and {counts[1]}")
    assert len(list((tmp_path / "r" / "sweep" / "degradation").glob("*.parquet"))) == N_UNITS
    assert not list((tmp_path / "r" / "sweep" / "claims").glob("*.claim"))
    # --status plans exactly the sweep that the same flags ran
    capsys.readouterr()
    assert main([*args, "--status"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["units_done"] == status["units_total"] == N_UNITS and status["agents"][0]["n_states"] == 15


# -- the states cache ------------------------------------------------------------------------------------

def test_a_corrupt_states_cache_is_rebuilt_with_a_warning(clean, agent_dir, tmp_path):
    root = _copy(clean, tmp_path)
    (path,) = (root / "sweep" / "states").glob("states-*.pt")
    want, _ = sweep.spec_states(_spec(agent_dir), results_dir=root)
    path.write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.warns(StoreWarning, match=r"quarantined states/states-.*unreadable state set: .*collecting the states again"):
        got, _ = sweep.spec_states(_spec(agent_dir), results_dir=root)
    assert torch.equal(got.states, want.states) and torch.equal(got.actions, want.actions)
    assert path.is_file() and sweep.spec_states(_spec(agent_dir), results_dir=root)[0].meta["state_config"]["n"] == 10
    (root / "sweep" / "states" / "states-0000000000000000.pt").write_bytes(path.read_bytes())  # the wrong name
    with pytest.warns(StoreWarning, match="another configuration"):
        report = verify_store(root)
    assert [Path(q["file"]).name for q in report["quarantined"]] == ["states-0000000000000000.pt"]
