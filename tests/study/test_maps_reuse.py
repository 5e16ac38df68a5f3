"""The local executor hands a sanity unit's original maps to the degradation unit of the same states:
the degradation rows must be those of a unit computed on its own, bit for bit, for every method of the
study on a DQN and on a Mask-A3C agent (the sweep's tables may not depend on the executor)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from saliency_lib import sweep
from saliency_study.catalog import STUDY_METHODS

# sample counts and the IG steps do not change a code path, only the time; the local methods keep the paper's grids
CHEAP = {"rise": {"n_masks": 48}, "lime_slic": {"n_samples": 48}, "lime_quickshift": {"n_samples": 48},
         "lime_felzenszwalb": {"n_samples": 48}, "integrated_gradients": {"n_steps": 6}}


@pytest.fixture(scope="module")
def mask_a3c_dir(tmp_path_factory):
    from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, save_agent

    torch.manual_seed(1)
    agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4, variant="double")), game="Breakout",
                             preset="mask_a3c", n_actions=4)
    d = tmp_path_factory.mktemp("agent") / "a3c-Breakout-toy"
    save_agent(agent, d)
    return str(d)


def _pairs(agent_dir, tmp_path, params):
    spec = sweep.SweepSpec(agents=(agent_dir,), methods=STUDY_METHODS, experiments=("sanity", "insertion", "deletion"),
                           substrates=("black", "blur"), n_states=3, chunk=3, params=params)
    planned, context = sweep.plan_units(spec, results_dir=tmp_path)
    by_key: dict = {}
    for u in planned:
        by_key.setdefault(sweep.maps_key(u), {})[u.experiment] = u
    return [(g["sanity"], g["degradation"]) for g in by_key.values() if set(g) == {"sanity", "degradation"}], context


@pytest.mark.parametrize("kind", ["dqn", "mask_a3c"])
def test_degradation_rows_are_the_same_with_the_sanity_units_maps(kind, agent_dir, mask_a3c_dir, tmp_path):
    spec_dir = agent_dir if kind == "dqn" else mask_a3c_dir
    params = dict(CHEAP)
    if kind == "mask_a3c":  # the paper's grids cost minutes per state on this network; the code path is the same
        params.update({m: {"stride": 8} for m in ("ns_original", "ns_chosen", "ns_black", "sarfa")} | {"occlusion": {"patch": 8}})
    pairs, context = _pairs(spec_dir, tmp_path, params)
    methods = {s.method for s, _ in pairs}
    assert methods == {m for m in STUDY_METHODS if kind == "mask_a3c" or not m.startswith("mask_")}
    for sanity, degradation in pairs:
        _, agent, states = context[sanity.state_config]
        cache: dict = {}
        sweep.compute_unit(sanity, agent, states, maps_cache=cache)
        assert sweep.maps_key(degradation) in cache
        reused = sweep.compute_unit(degradation, agent, states, maps_cache=cache)
        assert not cache, "the degradation unit takes the maps out of the cache"
        alone = sweep.compute_unit(degradation, agent, states)
        pd.testing.assert_frame_equal(reused, alone, check_exact=True, obj=f"{kind} {sanity.method}")


def test_local_executor_runs_each_sanity_unit_before_the_degradation_unit_of_its_maps(agent_dir, tmp_path, monkeypatch):
    seen = []
    real = sweep.compute_unit

    def spy(unit, agent, states, **kw):
        seen.append((unit.experiment, unit.method, unit.states, len(kw["maps_cache"])))
        return real(unit, agent, states, **kw)

    monkeypatch.setattr("saliency_lib.sweep._executors.compute_unit", spy)
    spec = sweep.SweepSpec(agents=(agent_dir,), methods=("occlusion", "gradient"), experiments=("sanity", "insertion"),
                           substrates=("black",), n_states=4, chunk=2, params={"occlusion": {"patch": 12}})
    sweep.run_sweep(spec, executor="local", results_dir=tmp_path, progress=False)
    kinds = [(e, m, s) for e, m, s, _ in seen if m != "random"]
    for i, (e, m, s) in enumerate(kinds):
        if e == "degradation":
            assert kinds[i - 1] == ("sanity", m, s)  # its maps were just computed
    assert all(n == 1 for e, m, _, n in seen if e == "degradation" and m != "random")  # and handed over
