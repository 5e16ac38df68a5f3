"""Fault injection for the sweep's tests, from outside the production code.

A worker of the ``processes`` or ``ray`` executor is killed once per fault directory, right after
computing a unit and before handing its rows back: for the driver, the unit was started and never
finished. The tests put these functions in place of the executors' worker entry points with
``monkeypatch``; spawned processes and Ray workers import them by name from this module (the test
directory is on their ``sys.path``), so the production code carries no test hook.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def _die_once(fault_dir: str, key: str) -> None:
    """Kill this process the first time any worker gets here for ``fault_dir``; later calls return."""
    Path(fault_dir).mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(Path(fault_dir) / "killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, f"{key} {os.getpid()}".encode())
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def _dying(compute, fault_dir: str):
    def compute_unit(unit, agent, states, **kw):
        rows = compute(unit, agent, states, **kw)
        _die_once(fault_dir, unit.key)
        return rows
    return compute_unit


def dying_proc_worker(fault_dir: str, tasks, results, blob) -> None:
    """The ``processes`` executor's worker, whose first unit of ``fault_dir`` kills it."""
    from saliency_lib.sweep import _executors

    _executors.compute_unit = _dying(_executors.compute_unit, fault_dir)
    _executors._proc_worker(tasks, results, blob)


def dying_ray_unit(unit, refs):
    """The ``ray`` executor's task body, whose first unit of ``$SWEEP_FAULT_DIR`` kills its worker."""
    from saliency_lib.sweep import _executors

    compute = _executors.compute_unit
    _executors.compute_unit = _dying(compute, os.environ["SWEEP_FAULT_DIR"])
    try:
        return _executors._ray_unit(unit, refs)
    finally:
        _executors.compute_unit = compute
