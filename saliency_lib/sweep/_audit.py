"""The whole store checked at once (``saliency-study run --verify``), computing nothing.

Every loose unit, pack and cached state set of a results directory is read and checked by
the rules of :mod:`._verify` (without a plan: each unit against its own name and rows), the
damaged ones are quarantined, and stale temporary files are removed to the quarantine.
"""

from __future__ import annotations

from pathlib import Path

from ._claims import claims_dir
from ._store import read_checked, scan_packs, sweep_files
from ._units import check_states_file
from ._verify import quarantine, quarantine_bytes, remove_stale_temporaries, stamp

__all__ = ["verify_store"]


def _sweep(results_dir) -> Path:
    return Path(results_dir) / "sweep"


def verify_store(results_dir) -> dict:
    """Check every stored file of ``results_dir`` without computing anything; quarantine the damaged.

    Loose units, packs and cached state sets are read and checked (see the module docstring:
    without a plan, a unit is checked against its own name and rows) and stale temporary files
    are removed to the quarantine.

    Returns
    -------
    dict
        ``{"results_dir", "files_checked", "units_checked", "states_checked", "quarantined": [{"file",
        "reason", "units"}], "units_quarantined", "quarantine_bytes", "claims"}``: ``quarantine_bytes``
        counts everything in the quarantine, also from earlier runs; ``claims`` the claims on units
        held now (by running sweeps, or left by dead ones until a sweep takes them over).
    """
    results_dir = Path(results_dir)
    if results_dir.exists() and not results_dir.is_dir():
        raise NotADirectoryError(f"results directory {results_dir} is a file; pass a directory")
    report: dict = {"results_dir": str(results_dir), "files_checked": 0, "units_checked": 0, "states_checked": 0,
                    "quarantined": []}
    for t in remove_stale_temporaries(results_dir):
        report["quarantined"].append({**t, "units": []})

    def bad(path, reason, units):
        report["quarantined"].append({"file": Path(path).relative_to(_sweep(results_dir)).as_posix(), "reason": reason,
                                      "units": list(units)})

    for path, (pack, _) in scan_packs(results_dir, on_damage=bad).items():
        report["files_checked"] += 1
        if pack is None:
            continue
        report["units_checked"] += len(pack.units)
        read_checked(path, results_dir=results_dir, pack=pack, on_damage=bad)
    for path in sweep_files(results_dir):
        report["files_checked"] += 1
        report["units_checked"] += 1
        read_checked(path, results_dir=results_dir, on_damage=bad)
    states = _sweep(results_dir) / "states"
    for path in sorted(states.glob("states-*.pt")) if states.is_dir() else []:
        report["states_checked"] += 1
        seen = stamp(path)
        reason = check_states_file(path)
        if reason and quarantine(path, reason, results_dir=results_dir, seen=seen):
            bad(path, reason, [])
    report["units_quarantined"] = sum(len(q["units"]) for q in report["quarantined"])
    report["quarantine_bytes"] = quarantine_bytes(results_dir)
    claims = claims_dir(results_dir)
    report["claims"] = len(list(claims.glob("*.claim"))) if claims.is_dir() else 0
    return report
