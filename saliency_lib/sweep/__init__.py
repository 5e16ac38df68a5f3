"""The generic sweep: units of work, executors, the unit store and the mean curves.

A sweep (:class:`SweepSpec`) explains the states of some agents with some methods and scores
the maps with the sanity cascade and with insertion and deletion. It is split into units
(:class:`Unit`, :func:`plan_units`), each computed by :func:`compute_unit` under any executor
(:func:`run_sweep`: local, processes or Ray) and stored as soon as it is done (:func:`store_unit`);
a stored unit is never computed again. Every function takes the results directory as an
argument: the library knows no repository layout.

The modules are private; their public names are re-exported here, one import path each.
"""

from ._audit import verify_store
from ._claims import StoreWarning
from ._compact import compact
from ._curves import (
    BAND_COLUMNS,
    CURVE_KEY,
    SUMMARY_COLUMNS,
    curve_bands_table,
    output_rows,
    pool_curves,
    raw_curve_rows,
    summarise_curves,
)
from ._executors import EXECUTORS, RAY_INSTALL, SweepReport, run_sweep
from ._store import (
    load_units,
    mean_curves,
    pack_path,
    packed_keys,
    read_stored,
    states_dir,
    store_unit,
    stored_bytes,
    stored_keys,
    stored_versions,
    unit_path,
    unit_versions,
    verified_keys,
)
from ._units import (
    EXPERIMENTS,
    METRIC_OPTIONS,
    RANDOM_BASELINE,
    SANITY_SIMILARITIES,
    STATE_SELECTIONS,
    SUBSTRATES,
    SweepSpec,
    Unit,
    applicable,
    compute_unit,
    maps_key,
    one_thread,
    plan_units,
    spec_states,
    state_config,
    state_index,
    stored_state_index,
    study_states,
)
from ._verify import quarantine_dir

__all__ = [
    "SweepSpec", "Unit", "plan_units", "compute_unit", "run_sweep", "SweepReport", "EXECUTORS", "RAY_INSTALL",
    "EXPERIMENTS", "SUBSTRATES", "METRIC_OPTIONS", "RANDOM_BASELINE", "SANITY_SIMILARITIES", "STATE_SELECTIONS",
    "applicable", "state_config", "state_index", "stored_state_index", "study_states", "spec_states", "one_thread", "maps_key",
    "states_dir", "unit_path", "pack_path", "read_stored", "store_unit", "stored_keys", "packed_keys", "load_units",
    "mean_curves", "unit_versions", "stored_versions", "stored_bytes", "compact", "verified_keys", "verify_store",
    "quarantine_dir", "StoreWarning",
    "CURVE_KEY", "SUMMARY_COLUMNS", "BAND_COLUMNS", "summarise_curves", "pool_curves", "curve_bands_table",
    "raw_curve_rows", "output_rows",
]
