"""The study sweep: the same tables under every executor, faults lose nothing, resumes recompute nothing.

The agent is an untrained Nature-DQN saved like a shipped agent: cheap to explain, and
every number still flows through the real explainers and metrics.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from faults import dying_proc_worker, dying_ray_unit

from saliency_book.common import describe_params
from saliency_lib import sweep
from saliency_lib.agents import load_agent
from saliency_study import profiles, study

METHODS = ("occlusion", "gradient")


def _spec(agent_dir, **kw):
    kw = {"agents": (agent_dir,), "methods": METHODS, "experiments": ("sanity", "insertion"), "substrates": ("black",),
          "n_states": 6, "chunk": 3, "params": {"occlusion": {"patch": 12}}, **kw}
    return sweep.SweepSpec(**kw)


@pytest.fixture(scope="module")
def local_run(agent_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    return root, sweep.run_sweep(_spec(agent_dir), executor="local", results_dir=root, progress=False)


def test_units_cover_every_method_experiment_and_chunk(local_run):
    _, rep = local_run
    # sanity: 2 methods; insertion: 2 methods + the random baseline; 2 chunks each
    assert rep.total == rep.computed == (2 + 3) * 2
    t = rep.table
    assert set(t["experiment"]) == {"sanity", "insertion"}
    assert set(t.loc[t["experiment"] == "insertion", "method"]) == {*METHODS, "random"}
    assert sorted(set(t["state"])) == list(range(6))
    assert t.groupby(["experiment", "method"])["state"].nunique().eq(6).all()


def test_rerun_computes_nothing(local_run, agent_dir):
    root, rep = local_run
    again = sweep.run_sweep(_spec(agent_dir), executor="local", results_dir=root, progress=False)
    assert again.computed == 0 and again.skipped == rep.total
    pd.testing.assert_frame_equal(again.table, rep.table)


def test_unit_key_ignores_batch_size_and_seeds_from_the_unit(agent_dir, tmp_path):
    a, _ = sweep.plan_units(_spec(agent_dir), results_dir=tmp_path)
    b, _ = sweep.plan_units(_spec(agent_dir, batch_size=7), results_dir=tmp_path)
    c, _ = sweep.plan_units(_spec(agent_dir, seed=1), results_dir=tmp_path)
    assert [u.key for u in a] == [u.key for u in b]
    assert not {u.key for u in a} & {u.key for u in c}
    assert len({u.torch_seed for u in a}) == len(a)


def test_interrupted_sweep_recomputes_only_the_missing_units(local_run, agent_dir, tmp_path):
    _, full = local_run
    seen = []

    def stop_after_four(done, total, eta):
        seen.append((done, total))
        if len(seen) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(_spec(agent_dir), results_dir=tmp_path, progress=False, on_unit=stop_after_four)
    assert seen[-1] == (4, full.total)
    rest = sweep.run_sweep(_spec(agent_dir), results_dir=tmp_path, progress=False)
    assert rest.skipped == 4 and rest.computed == full.total - 4
    pd.testing.assert_frame_equal(rest.table, full.table)


def test_bad_inputs_are_refused(agent_dir):
    with pytest.raises(ValueError, match="unknown executor 'threads'"):
        sweep.run_sweep(_spec(agent_dir), executor="threads", results_dir="unused")
    with pytest.raises(ValueError, match="unknown methods"):
        _spec(agent_dir, methods=("occlusion", "shap"))
    with pytest.raises(ValueError, match="unknown experiments"):
        _spec(agent_dir, experiments=("insertion", "pointing"))
    with pytest.raises(ValueError, match="n_states must be a positive integer"):
        _spec(agent_dir, n_states=0)


def test_processes_executor_gives_identical_tables(local_run, agent_dir, tmp_path):
    _, rep = local_run
    got = sweep.run_sweep(_spec(agent_dir), executor="processes", workers=2, results_dir=tmp_path, progress=False)
    assert got.computed == rep.total
    pd.testing.assert_frame_equal(got.table, rep.table, check_exact=True)


def test_processes_executor_survives_a_killed_worker(local_run, agent_dir, tmp_path, monkeypatch):
    _, rep = local_run
    faults = tmp_path / "faults"
    monkeypatch.setattr("saliency_lib.sweep._executors._proc_worker", functools.partial(dying_proc_worker, str(faults)))
    got = sweep.run_sweep(_spec(agent_dir), executor="processes", workers=2, results_dir=tmp_path / "r", progress=False)
    assert (faults / "killed").exists()  # one worker was killed mid-unit
    assert len(list((tmp_path / "r" / "sweep").glob("*/*.parquet"))) == rep.total  # one row set per unit
    pd.testing.assert_frame_equal(got.table, rep.table, check_exact=True)


needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory):
    ray = pytest.importorskip("ray")
    # the workers read where to record their one fault (tests/faults.py) from their environment
    os.environ["SWEEP_FAULT_DIR"] = str(tmp_path_factory.mktemp("ray") / "faults")
    import faults
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(faults)  # the workers cannot import the test directory's modules
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@needs_ray
@pytest.mark.slow
def test_ray_executor_identical_and_survives_a_killed_worker(local_run, agent_dir, tmp_path, ray_local, monkeypatch):
    _, rep = local_run
    got = sweep.run_sweep(_spec(agent_dir), executor="ray", results_dir=tmp_path / "clean", progress=False)
    pd.testing.assert_frame_equal(got.table, rep.table, check_exact=True)
    faults = Path(os.environ["SWEEP_FAULT_DIR"])
    monkeypatch.setattr("saliency_lib.sweep._executors._ray_unit", dying_ray_unit)
    hurt = sweep.run_sweep(_spec(agent_dir), executor="ray", results_dir=tmp_path / "hurt", progress=False)
    assert (faults / "killed").exists()  # one worker was killed mid-unit, and Ray retried its unit
    assert len(list((tmp_path / "hurt" / "sweep").glob("*/*.parquet"))) == rep.total
    pd.testing.assert_frame_equal(hurt.table, rep.table, check_exact=True)


def test_ray_missing_gives_the_install_command(monkeypatch, agent_dir):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'saliency-lib\[ray\]'"):
        sweep.run_sweep(_spec(agent_dir), executor="ray", results_dir="unused")


def test_run_command_line(agent_dir, tmp_path):
    out = subprocess.run([sys.executable, "-m", "saliency_lib", "run", "--agents", agent_dir, "--methods", "gradient",
                          "--experiments", "insertion", "--substrates", "black", "--n-states", "4", "--chunk", "2",
                          "--results-dir", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "units: 4 computed, 0 skipped of 4" in out.stdout
    again = subprocess.run([sys.executable, "-m", "saliency_lib", "run", "--agents", agent_dir, "--methods", "gradient",
                            "--experiments", "insertion", "--substrates", "black", "--n-states", "4", "--chunk", "2",
                            "--results-dir", str(tmp_path), "--no-progress", "--compact"],
                           capture_output=True, text=True, timeout=300)
    assert "units: 0 computed, 4 skipped of 4" in again.stdout
    assert json.loads(again.stdout.splitlines()[0])["compact"]["units_packed"] == 4
    assert not list((tmp_path / "sweep").glob("*/*.parquet"))  # packed: one file
    assert len(list((tmp_path / "sweep" / "packs").glob("*/*.parquet"))) == 1


def test_sweep_sizes_and_parameter_text():
    assert profiles.sweep_sizes("quick", "mask_a3c") == profiles.PROFILES["quick"].sweep["mask_a3c"]
    assert profiles.sweep_sizes("quick", "some_adapter_preset") == profiles.PROFILES["quick"].sweep["dqn"]
    with pytest.raises(ValueError, match="unknown profile 'huge'"):
        profiles.sweep_sizes("huge", "dqn")
    text = describe_params({"occlusion": {"patch": 4}, "rise": {"n_masks": 500}}, label=str.upper, sep="=")
    assert text == "OCCLUSION patch=4, RISE n_masks=500"


def test_profiles_spread_the_mask_a3c_states_in_full_only(agent_dir):
    quick, full = profiles.PROFILES["quick"], profiles.PROFILES["full"]
    # every study sweep explains distinct states (issue "Reproduced, or not"), but the full Mask-A3C part,
    # which spreads its states over a whole game
    assert quick.selection("mask_a3c") == quick.selection("dqn") == full.selection("dqn") == "distinct"
    assert full.selection("mask_a3c") == "spread" and full.episode_cap() == 10_000
    assert "state_selection" not in quick.settings()
    # "first" adds nothing to the state set's configuration: the units stored before keep their keys
    agent = load_agent(agent_dir)
    assert set(sweep.state_config(agent_dir, agent, 5, 0)) == {"agent", "weights", "n", "seed"}
    spread = sweep.state_config(agent_dir, agent, 5, 0, "spread", 10_000)
    assert spread["selection"] == "spread" and spread["episode_cap"] == 10_000
    with pytest.raises(ValueError, match="unknown state_selection 'middle'"):
        _spec(agent_dir, state_selection="middle")
    with pytest.raises(ValueError, match="episode_cap must be a positive integer"):
        _spec(agent_dir, state_selection="spread", episode_cap=0)


def test_a_spread_sweep_explains_states_spread_over_the_game(agent_dir, tmp_path):
    kw = {"methods": ("gradient",), "experiments": ("insertion",), "n_states": 3, "chunk": 3}
    spec = _spec(agent_dir, state_selection="spread", episode_cap=41, **kw)
    got, context = sweep.plan_units(spec, results_dir=tmp_path)
    first, _ = sweep.plan_units(_spec(agent_dir, **kw), results_dir=tmp_path, states=False)
    assert not {u.key for u in got} & {u.key for u in first}  # other states, other units
    assert json.loads(got[0].state_config)["selection"] == "spread"
    states = context[got[0].state_config][2]
    assert states.meta["indices"] == [0, 20, 40] and states.steps.tolist() == [4, 24, 44]  # the paper's numbering
    cached, _ = sweep.spec_states(spec, results_dir=tmp_path)
    assert torch.equal(cached.states, states.states)
    rep = sweep.run_sweep(spec, results_dir=tmp_path, progress=False)
    assert rep.computed == len(got) and sorted(set(rep.table["state"])) == [0, 1, 2]


def test_the_committed_quick_units_are_all_found():
    """The shipped agents' quick units under data/results stay valid: ``run --profile quick`` computes nothing.
    Chapter 5 ranks every method on every shipped masked Mask-A3C agent, so each one's quick units must be
    committed (``scripts/train_agents.sh`` packs them when it ships the agent), or ``make book`` computes them."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    masked = sorted(f"data/agents/{d.name}" for v in ("double", "policy", "value")
                    for d in (root / "data" / "agents").glob(f"a3c-Breakout-{v}-s*") if (d / "meta.json").is_file())
    assert "data/agents/a3c-Breakout-double-s0" in masked
    agents = ["data/agents/dqn-Breakout-s0", *masked]
    st = study.study_status("quick", ["Breakout"], agents=agents)
    assert [r["agent"] for r in st["agents"]] == agents
    assert all(r["units_done"] == r["units_total"] > 0 and r["bytes"] > 0 for r in st["agents"])


def test_degradation_only_methods_get_insertion_units_and_no_sanity_units(agent_dir, tmp_path):
    """The §6.2 ablation (gray occlusion, blurred SARFA) is judged by insertion/deletion only."""
    spec = _spec(agent_dir, degradation_only=("occlusion_gray",),
                 params={"occlusion": {"patch": 12}, "occlusion_gray": {"patch": 12}})
    got, _ = sweep.plan_units(spec, results_dir=tmp_path, states=False)
    by = {(u.experiment, u.method) for u in got}
    assert ("degradation", "occlusion_gray") in by and ("sanity", "occlusion_gray") not in by
    base, _ = sweep.plan_units(_spec(agent_dir), results_dir=tmp_path, states=False)
    assert {u.key for u in base} < {u.key for u in got}  # the other units keep their keys
    with pytest.raises(ValueError, match="unknown methods"):
        _spec(agent_dir, degradation_only=("gray",))


def test_batch_size_none_means_each_agent_chooses_and_zero_is_refused(agent_dir, tmp_path):
    spec = _spec(agent_dir, batch_size=None)
    got, _ = sweep.plan_units(spec, results_dir=tmp_path, states=False)
    assert all(u.batch_size is None for u in got)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        _spec(agent_dir, batch_size=0)


def test_the_full_profile_plans_the_ablation_and_our_actor_critic_agents():
    """full: the DQN agent's sweep adds the §6.2 ablation to insertion/deletion; our two Breakout
    actor-critic agents join Breakout's plan with 50 states spread over a game, without the ablation."""
    from saliency_study.catalog import ABLATION_METHODS, STUDY_METHODS

    assert "ns_black" in STUDY_METHODS
    specs = {s.agents[0]: s for s in study.profile_specs("full", "Breakout")}
    dqn = specs["data/agents/dqn-Breakout-s0"]
    assert dqn.degradation_only == ABLATION_METHODS and dqn.n_states == 997 and dqn.state_selection == "distinct"
    for name in ("a3c-Breakout-none-s0", "a3c-Breakout-double-s0"):
        s = specs[f"data/agents/{name}"]
        assert (s.n_states, s.state_selection, s.degradation_only) == (50, "spread", ())
    assert not any("a3c-Breakout" in a for a in (s.agents[0] for s in study.profile_specs("full", "MsPacman")))
    assert not any("a3c-" in s.agents[0] for s in study.profile_specs("quick", "Breakout"))


def test_seed_specs_cover_every_shipped_masked_agent_with_the_seed_methods(tmp_path):
    """Issue 15 part 4: every shipped Mask-A3C agent with a mask (any seed, any variant), its masks and
    the gradient baselines, 50 states spread over a game; the unmasked A3C has nothing to explain here."""
    import shutil

    from saliency_study.catalog import SEED_METHODS

    agents = tmp_path / "agents"
    for name in ("a3c-Breakout-double-s0", "a3c-Breakout-none-s0", "dqn-Breakout-s0"):
        shutil.copytree(f"data/agents/{name}", agents / name)
    shutil.copytree("data/agents/a3c-Breakout-double-s0", agents / "a3c-Breakout-double-s7")
    meta = json.loads((agents / "a3c-Breakout-double-s7" / "meta.json").read_text())
    (agents / "a3c-Breakout-double-s7" / "meta.json").write_text(json.dumps({**meta, "seed": 7}))
    specs = study.seed_specs("full", "Breakout", agents_dir=agents)
    assert [s.agents[0] for s in specs] == [str(agents / "a3c-Breakout-double-s0"), str(agents / "a3c-Breakout-double-s7")]
    assert all(s.methods == SEED_METHODS and s.n_states == 50 and s.state_selection == "spread" for s in specs)
    assert study.seed_specs("full", "MsPacman", agents_dir=agents) == []
