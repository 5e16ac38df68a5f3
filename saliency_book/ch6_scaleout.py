"""Chapter 6 (Run-time), the study's cost: where the before/after numbers come from, and what the projection rests on.

The tables of ``study_cost.json`` and ``scaleout.json`` and the projection are :mod:`saliency_study.scaleout`'s;
:func:`provenance` and :func:`projection_inputs` describe them for the reader.
"""

from __future__ import annotations

import math

import pandas as pd

from saliency_study.runtime import Benchmarks
from saliency_study.scaleout import check_projection, projection, run_of

__all__ = ["provenance", "projection_inputs"]


def provenance(b: Benchmarks) -> dict[str, str]:
    """Which run each number of the before/after comparison comes from: ``{"ours", "captum", "lime"}``.

    Captum's and the ``lime`` package's times come from ``study_cost.json`` when it has ``comparisons`` (the
    same run as the naive and fast times), else from ``explainers.json``, whose run is described."""
    out = {}
    if b.study_cost is not None:
        r, s = run_of(b.study_cost, "methods"), b.study_cost.get("setting", {})
        cpu = f" on {r['cpu']}" if r.get("cpu") else ""
        out["ours"] = (f"study_cost.json, methods run of {r.get('date', '?')[:10]} at commit {r.get('commit') or '?'}{cpu}: "
                       f"{s.get('agent', '?')}, {s.get('states_per_call', '?')} real states per call, CPU time of one thread")
    if b.study_cost is not None and b.study_cost.get("comparisons"):
        out["captum"] = out["lime"] = "study_cost.json, the same run as the naive and fast times"
    elif b.explainers is not None:
        m, s = b.explainers.get("machine", {}), b.explainers.get("setting", {})
        out["captum"] = out["lime"] = (f"explainers.json, run of {m.get('date', '?')[:10]} (another run, on another network "
                                       f"and state: {s.get('agent', '?')}; {s.get('state', '?')}; wall time)")
    return out


def projection_inputs(b: Benchmarks) -> pd.DataFrame:
    """The projection's inputs (read now from the committed files) and the assumptions ``scaleout.json`` records:
    columns ``input, value`` (for :func:`~saliency_book.ch6_runtime.tabulate`)."""
    check_projection(b)
    p, r = projection(b.scaleout, b.study_cost), run_of(b.study_cost, "projection")
    t = p["tasks"]
    rows = [("core hours after the speed-ups (study_cost.json, projection run of "
             f"{r.get('date', '?')[:10]}, commit {r.get('commit') or '?'})", f"{p['core_hours_after']:.1f}"),
            ("units (DQN, Mask-A3C)", f"{t['total']:,} ({t['dqn_tasks']:,}, {t['mask_a3c_tasks']:,})"),
            ("sweeps, one per agent", f"{t['sweeps']}"),
            ("states per unit (DQN, Mask-A3C; the full profile)", f"{t['dqn_chunk']}, {t['mask_a3c_chunk']}"),
            ("largest unit", f"{p['largest_unit_s'] / 60:.1f} minutes" if p["largest_unit_s"] else "unknown"),
            ("rows stored by the driver", f"{p['rows']:,.0f} (about {p['bytes_to_driver'] / 1e9:.1f} GB pickled)")]
    used = b.scaleout.get("projection", {}).get("core_hours_after")
    if used is not None and not math.isclose(used, p["core_hours_after"], rel_tol=1e-9):
        rows.append(("core hours scaleout.json projected from when it was measured", f"{used:.1f}"))
    rows += [("assumption recorded by benchmarks/scaleout.py", a) for a in b.scaleout.get("assumptions", [])]
    return pd.DataFrame(rows, columns=["input", "value"])
