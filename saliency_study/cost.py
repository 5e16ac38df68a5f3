"""What a sweep will cost before it runs: its missing units priced at the measured per-state costs.

The per-state costs are those that ``benchmarks/study_cost.py`` measured on one core and wrote to
``data/benchmarks/study_cost.json``, with the paper's explainer parameters:

* a **sanity** unit of method *m* costs, per state, the ``cascade`` record's time to explain the original
  network and its cascading levels (``per_method_ms_per_state[m]``) plus its share of the similarity
  table (``similarity_ms_per_state`` over the timed methods);
* a **degradation** unit costs the ``degradation`` record's time of *m* (insertion and deletion on
  every substrate, ``per_method_ms_per_state[m]``).

Each record holds a ``fast`` time (incremental inference and the staged cascade) and a ``naive`` one
(full forward passes). A network that the engines do not support (:func:`~saliency_lib.inference.incremental_support`,
e.g. a Stable-Baselines3 or CleanRL network) is priced at the naive time. A method run with coarser
parameters than the paper's (the ``tiny`` profile) is priced in proportion to its perturbations: the
ratio of the resolved parameters (stride², masks, samples, steps) to the defaults'. The Mask-A3C
network is priced from the record's Mask-A3C projection (its per-state time at the paper's
parameters, split over the methods by their forward passes). A method the records lack costs what
the cheapest timed method costs. Playing the games that give the states is not counted.

Every unit also has a fixed cost (its states loaded, its file written, the sweep's bookkeeping), and a
sweep a start-up cost: both come from ``data/benchmarks/scaleout.json`` (``benchmarks/scaleout.py``), whose
local executor ran units of the ``tiny`` profile, about a second of work each: the fixed cost is its
steady time per unit, the start-up its ``startup_s``. They dominate a small sweep.

The estimate is of core time on the measuring machine; another machine, or one shared with other
jobs, takes longer or shorter in proportion.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .paths import repo_path

__all__ = ["STUDY_COST_JSON", "SCALEOUT_JSON", "SweepEstimate", "read_costs", "unit_seconds", "estimate_sweep",
           "full_pass_reason"]

STUDY_COST_JSON = "data/benchmarks/study_cost.json"
"""The measured per-state costs (``benchmarks/study_cost.py``)."""
SCALEOUT_JSON = "data/benchmarks/scaleout.json"
"""The measured per-unit and start-up costs of the executors (``benchmarks/scaleout.py``)."""
_SCALED = {"stride": -2, "n_masks": 1, "n_samples": 1, "n_steps": 1}
"""Resolved explainer parameters that set the number of perturbations, with the power of their ratio."""


def read_costs(path: str | os.PathLike = STUDY_COST_JSON, scaleout: str | os.PathLike = SCALEOUT_JSON) -> dict | None:
    """The records of ``study_cost.json`` that price units (and, from ``scaleout.json``, the local executor's
    ``unit_s`` and ``startup_s``, 0 where missing), or None when the per-state costs are missing."""
    p, q = repo_path(path), repo_path(scaleout)
    if not p.is_file():
        return None
    d = json.loads(p.read_text())
    cascade, degradation = d.get("cascade") or {}, d.get("degradation") or {}
    if not cascade.get("per_method_ms_per_state") or not degradation.get("per_method_ms_per_state"):
        return None
    local = {}
    if q.is_file():
        runs = json.loads(q.read_text()).get("executors") or []
        local = next((r for r in runs if r.get("executor") == "local" and r.get("workers") == 1), {})
    rate = local.get("steady_units_per_min")
    return {"cascade": cascade, "degradation": degradation,
            "mask_a3c": (d.get("projection") or {}).get("mask_a3c") or {}, "path": str(path),
            "unit_s": 60.0 / rate if rate else 0.0, "startup_s": float(local.get("startup_s") or 0.0)}


def full_pass_reason(agent) -> str | None:
    """Why the explainers and metrics evaluate ``agent`` with full forward passes, or None where they need not."""
    from saliency_lib.inference import incremental_support, mask_a3c_support

    if agent.preset == "mask_a3c":
        return mask_a3c_support(agent)
    return incremental_support(agent)


def _param_scale(method: str, agent, params: Mapping) -> float:
    """Perturbations of ``method`` with ``params`` relative to its defaults (1 when they set none)."""
    from saliency_lib.explainers import get_explainer

    if not params:
        return 1.0
    try:
        given, default = get_explainer(method, agent, **params).config, get_explainer(method, agent).config
    except (TypeError, ValueError):
        return 1.0
    scale = 1.0
    for key, power in _SCALED.items():
        a, b = given.get(key), default.get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0 and b > 0:
            scale *= (a / b) ** power
    return scale


def _mask_a3c_ms(costs: Mapping, method: str, experiment: str) -> float | None:
    """Per-state ms of ``method`` on the Mask-A3C network, from the projection (None without it)."""
    p = costs["mask_a3c"]
    passes = p.get("passes_per_state") or {}
    if not passes or not p.get("core_hours_after") or not p.get("states"):
        return None
    total = p["core_hours_after"] * 3.6e6 / p["states"]
    c, d = p.get("cascade_passes_per_state", 1), p.get("degradation_passes_per_state", 1)
    share = (c if experiment == "sanity" else d) / (c + d)
    return total * share * passes.get(method, min(passes.values())) / sum(passes.values())


def unit_seconds(unit, agent, costs: Mapping, *, full_passes: bool) -> float:
    """Core seconds of one sweep unit (:class:`~saliency_lib.sweep.Unit`) of ``agent`` at the measured costs."""
    experiment = "sanity" if unit.experiment == "sanity" else "degradation"
    ms = _mask_a3c_ms(costs, unit.method, experiment) if agent.preset == "mask_a3c" else None
    if ms is None:
        record = costs["cascade" if experiment == "sanity" else "degradation"]
        per = record["per_method_ms_per_state"]
        which = "naive" if full_passes else "fast"
        cheapest = min(v[which] for v in per.values())
        ms = per[unit.method][which] if unit.method in per else cheapest
        if experiment == "sanity":
            sim = record.get("similarity_ms_per_state") or 0.0  # the maps' comparison: the same for any network
            ms += sim / max(len(record.get("methods") or per), 1)
    work = len(unit.states) * ms * _param_scale(unit.method, agent, json.loads(unit.params or "{}")) / 1000.0
    return work + costs.get("unit_s", 0.0)


@dataclass(frozen=True)
class SweepEstimate:
    """The units of a sweep, how many are not stored yet, and their estimated core time."""

    units: int
    missing: int
    seconds: float | None
    """Estimated core seconds of the missing units; None without measured costs."""
    full_passes: dict[str, str]
    """Agent spec → why it runs with full forward passes (only the agents that do)."""
    source: str

    def line(self) -> str:
        """One line for a terminal: what will be computed and for about how long."""
        if not self.missing:
            return f"all {self.units} sweep units are stored: nothing to compute"
        when = ("time unknown (no measured costs in " + self.source + ")" if self.seconds is None else
                f"about {_duration(self.seconds)} of one core, from the costs measured in {self.source} "
                "(a machine shared with other jobs takes longer)")
        return f"{self.missing} of {self.units} sweep units to compute: {when}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_sweep(specs: Sequence, *, results_dir, costs_path: str | os.PathLike = STUDY_COST_JSON) -> SweepEstimate:
    """Plan the units of ``specs`` (:class:`~saliency_lib.sweep.SweepSpec`) and price those not stored yet.

    Planning computes nothing, except that a ``"distinct"`` state selection plays its game once to know
    where the states first differ from the plain trajectory (as every run of the sweep does).
    """
    from saliency_lib.sweep import plan_units, stored_keys

    costs = read_costs(costs_path)
    total, missing, seconds, full = 0, 0, 0.0, {}
    for spec in specs:
        units, context = plan_units(spec, results_dir=results_dir, states=False)
        done = stored_keys(units, results_dir=results_dir)
        agents = {a: agent for a, agent, _ in context.values()}
        for spec_agent, agent in agents.items():
            if (why := full_pass_reason(agent)) is not None:
                full[spec_agent] = why
        total += len(units)
        todo = [u for u in units if u.key not in done]
        missing += len(todo)
        if costs is not None:
            seconds += sum(unit_seconds(u, agents[u.agent], costs, full_passes=u.agent in full) for u in todo)
            seconds += costs["startup_s"] if todo else 0.0
    return SweepEstimate(total, missing, None if costs is None else seconds, full, str(Path(costs_path)))
