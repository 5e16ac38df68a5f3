"""Inference engines: exact, network-specific ways to evaluate many perturbations of one state.

Explainers and metrics evaluate a network on many inputs that differ from a clean input in a few
places, or on one input under many networks (the sanity cascade). Both can be computed far below
the cost of a full forward pass per input, with the same numbers:

* :func:`staged_forward` (:class:`StagedForward`): one network split into stages, so that a cascade
  of randomised copies reuses every activation that a randomised layer does not change; the
  insertion and deletion metrics use it to evaluate their steps;
* :func:`engine_for` (:class:`IncrementalDQN`, :class:`IncrementalMaskA3C`): incremental inference,
  which recomputes only the output positions that a local perturbation changes;
  :func:`delta_from_values` and :func:`gather_rows` are the pieces the perturbation explainers call.

An engine supports a network or says it does not (:func:`incremental_support`,
:func:`mask_a3c_support`, :func:`staged_support`); callers then fall back to full passes. The
modules are private; this package is their one import path.
"""

from ._cascade import SharedReadouts, StagedForward, forward_all, stage_cuts, staged_forward, staged_support
from ._incremental import IncrementalDQN, delta_from_values, engine_for, incremental_support, notice_once
from ._incremental_a3c import IncrementalMaskA3C, mask_a3c_support
from ._rows import gather_rows
from ._window_plan import Group, Layer, plan_windows

__all__ = [
    "StagedForward", "SharedReadouts", "staged_support", "staged_forward", "forward_all", "stage_cuts",
    "IncrementalDQN", "IncrementalMaskA3C", "incremental_support", "mask_a3c_support", "engine_for",
    "delta_from_values", "gather_rows", "notice_once", "Group", "Layer", "plan_windows",
]
