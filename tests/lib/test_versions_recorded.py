"""Every stored unit and every saved agent records the package versions that made it."""

import json

import torch

from saliency_lib.agents import build_agent, load_agent, save_agent
from saliency_lib.results import read_table_metadata, write_table
from saliency_lib.sweep import SweepSpec, plan_units, run_sweep, stored_versions, unit_path, unit_versions
from saliency_lib.versions import environment_versions


def _agent(tmp_path):
    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4, "hidden": 16}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path / "dqn-Breakout-toy"))


def test_saved_agents_record_versions(tmp_path):
    spec = _agent(tmp_path)
    assert load_agent(spec).meta["versions"] == environment_versions()


def test_units_record_versions_and_differences_are_reported(tmp_path):
    spec = SweepSpec(agents=(_agent(tmp_path),), methods=("gradient",), experiments=("sanity",), n_states=2, chunk=1)
    results = tmp_path / "results"
    run_sweep(spec, results_dir=results, progress=False)
    units, _ = plan_units(spec, results_dir=results, states=False)
    assert len(units) == 2 and all(unit_versions(unit_path(u, results)) == environment_versions() for u in units)
    assert stored_versions(units, results_dir=results) == {"units": 2, "unrecorded": 0, "differences": {}}
    # one unit as if made with another numpy, one as if stored before versions were recorded
    old = {**environment_versions(), "numpy": "0.0.1"}
    p0, p1 = unit_path(units[0], results), unit_path(units[1], results)
    from saliency_lib.results import read_table

    write_table(read_table(p0), p0, metadata={"versions": json.dumps(old)})
    write_table(read_table(p1), p1)
    assert read_table_metadata(p1) == {}
    got = stored_versions(units, results_dir=results)
    assert got["unrecorded"] == 1 and got["differences"] == {"numpy": (["0.0.1"], environment_versions()["numpy"])}
