"""The study's cost and its scale-out (saliency_study.scaleout), chapter 6's display of them (saliency_book.ch6_*)
and benchmarks/scaleout.py."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import saliency_book.ch6_figures as fg
import saliency_book.ch6_runtime as rt
import saliency_book.ch6_scaleout as bs
import saliency_study.runtime as sr
import saliency_study.scaleout as so
from saliency_book.common import Note

ROOT = Path(__file__).resolve().parents[2]
RUN = {"date": "2030-02-03T04:05:06+00:00", "commit": "abc1234", "cpu": "Test CPU", "logical_cpus": 2,
       "load_average": [3.0, 2.0, 1.0], "load_average_at_end": [4.0, 2.0, 1.0], "python": "3.11", "torch": "9.9",
       "torch_threads": 1}


def _study_cost(core_hours_after=10.0):
    """Two methods; 2 DQN agents × 50 states (2 chunks of 25 each) and 20 Mask-A3C states (2 chunks of 10)."""
    return {
        "machine": RUN, "runs": {"methods": RUN, "cascade": RUN, "degradation": RUN, "projection": RUN},
        "setting": {"agent": "data/agents/dqn-Test", "states_per_call": 25, "map_states": 25, "repeats": 3, "cascade_states": 2},
        "methods": {
            "occlusion": {"ms": 50.0, "naive_ms": 300.0, "naive_floor_ms": 200.0, "forward_passes": 1000, "incremental": True,
                          "max_abs_map_diff": 2e-6, "target_speedup_vs_naive_floor": 2.5},
            "lime_slic": {"ms": 400.0, "naive_ms": 400.0, "naive_floor_ms": 320.0, "forward_passes": 2000, "incremental": False,
                          "max_abs_map_diff": 0.0},
        },
        "cascade": {"naive_ms_per_state": 3000.0, "ms_per_state": 1000.0, "levels": 5, "methods": ["occlusion", "lime_slic"],
                    "per_method_ms_per_state": {"occlusion": {"naive": 2000.0, "fast": 400.0},
                                                "lime_slic": {"naive": 1000.0, "fast": 600.0}},
                    "similarity_ms_per_state": 200.0},
        "degradation": {"naive_ms_per_state": 800.0, "ms_per_state": 400.0, "substrates": ["black", "random", "blur"],
                        "methods": ["occlusion", "lime_slic", "random"],
                        "per_method_ms_per_state": {"occlusion": {"naive": 300.0, "fast": 150.0},
                                                    "lime_slic": {"naive": 400.0, "fast": 200.0},
                                                    "random": {"naive": 100.0, "fast": 50.0}}},
        "projection": {"core_hours_before": 30.0, "core_hours_after": core_hours_after,
                       "dqn": {"agents": 2, "states": 50, "core_hours_before": 20.0, "core_hours_after": core_hours_after / 2},
                       "mask_a3c": {"states": 20, "core_hours_before": 10.0, "core_hours_after": core_hours_after / 2}},
    }


def _explainers():
    return {"machine": {"date": "2030-01-01T00:00:00+00:00"},
            "setting": {"agent": "random-weight DQN", "state": "MsPacman, 1 state per call"},
            "methods": {"occlusion": {"ms": 60.0, "forward_passes": 1000, "floor_ms": 100.0},
                        "lime_slic": {"ms": 500.0, "forward_passes": 2000, "floor_ms": 250.0}},
            "comparisons": {"captum.attr.Occlusion vs occlusion": {"ms": 300.0},
                            "captum.attr.Lime vs lime_slic": {"ms": 750.0},
                            "lime.lime_image vs lime_slic": {"ms": 1000.0}}}


def _scaleout():
    ex = [{"executor": "local", "workers": 1, "units": 10, "wall_s": 30.0, "units_per_min": 20.0, "steady_units_per_min": 24.0,
           "startup_s": 5.0, "efficiency": 1.0, "same_table_as_local": True},
          {"executor": "processes", "workers": 2, "units": 10, "wall_s": 20.0, "units_per_min": 30.0,
           "steady_units_per_min": 36.0, "startup_s": 3.6, "efficiency": 0.75, "same_table_as_local": True},
          {"executor": "ray", "workers": 2, "units": 10, "wall_s": 25.0, "units_per_min": 24.0,
           "steady_units_per_min": 24.0, "startup_s": 7.2, "efficiency": 0.5, "same_table_as_local": True}]
    return {"machine": RUN, "executors": ex, "shared_machine": "The machine was shared: test.",
            "ray_overhead": {"direct_call_us": 0.05, "noop_ms_per_task": 0.5, "noop_round_trip_ms": 2.0, "init_s": 4.0,
                             "per_unit_difference_s": 0.1},
            "shipped": {"unit_args_bytes": 400, "degradation_frame_bytes": 2_000_000, "sanity_rows_per_state": 10,
                        "degradation_rows_per_state": 100, "degradation_frame_bytes_per_state": 20_000},
            "driver": {"store_ms_per_row": 0.0},
            "assumptions": ["A recorded assumption."]}


@pytest.fixture
def bench(tmp_path):
    for name, doc in (("study_cost", _study_cost()), ("explainers", _explainers()), ("scaleout", _scaleout())):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    return sr.load_benchmarks(tmp_path)


def test_before_after_table_sets_captum_and_lime_beside_the_floor_of_their_own_run(bench):
    t = so.before_after_table(bench).set_index("method")
    assert t.loc["occlusion", "speedup"] == pytest.approx(4.0)  # floor 200 ÷ fast 50
    assert t.loc["lime_slic", "speedup"] == pytest.approx(0.8)
    assert t.loc["occlusion", "captum_ms"] == 300.0 and t.loc["occlusion", "captum_x_floor"] == pytest.approx(3.0)
    assert t.loc["lime_slic", "captum_x_floor"] == pytest.approx(3.0)  # 750 ÷ explainers.json's floor 250
    assert t.loc["lime_slic", "lime_x_floor"] == pytest.approx(4.0)
    assert math.isnan(t.loc["occlusion", "lime_ms"])
    runs = bs.provenance(bench)
    assert "explainers.json, run of 2030-01-01 (another run" in runs["captum"]
    assert "2030-02-03 at commit abc1234 on Test CPU" in runs["ours"]
    n = so.before_after_numbers(t.reset_index(), so.study_before_after_table(bench))
    assert (n["inc_speedup_min"], n["inc_speedup_max"], n["inc_max_diff"]) == pytest.approx((4.0, 4.0, 2e-6))
    assert (n["inc_methods"], n["full_methods"]) == (["Occlusion"], ["LIME (SLIC)"])
    assert n["full_ratio_min"] == pytest.approx(1.25)  # LIME has no incremental path: 1.25 times its floor
    assert math.isnan(t.loc["occlusion", "captum_x_ours"])  # another run's time does not divide by ours
    assert (n["study_2_speedup"], n["study_2_before"], n["study_2_after"]) == pytest.approx((3.0, 30.0, 10.0))
    empty = so.before_after_numbers(Note("x"), Note("y"))
    assert set(empty) == set(n) and math.isnan(empty["study_0_speedup"]) and empty["inc_methods"] == []


def test_same_run_comparisons_are_preferred(tmp_path):
    sc = _study_cost()
    sc["comparisons"] = {"captum.attr.Occlusion vs occlusion": {"ms": 800.0}}
    (tmp_path / "study_cost.json").write_text(json.dumps(sc))
    (tmp_path / "explainers.json").write_text(json.dumps(_explainers()))
    b = sr.load_benchmarks(tmp_path)
    t = so.before_after_table(b).set_index("method")
    assert t.loc["occlusion", "captum_x_floor"] == pytest.approx(4.0)  # 800 ÷ study_cost's own floor 200
    assert bs.provenance(b)["captum"].startswith("study_cost.json, the same run")
    assert math.isnan(t.loc["occlusion", "captum_x_ours"])  # no paired ratio recorded: none invented


def test_same_run_ratio_against_our_fast_path(tmp_path):
    sc = _study_cost()
    sc["comparisons"] = {"captum.attr.Occlusion vs occlusion": {"ms": 800.0, "ratio_vs_ours": 15.5},
                         "lime.lime_image vs lime_slic": {"ms": 1600.0, "ratio_vs_ours": 3.9}}
    (tmp_path / "study_cost.json").write_text(json.dumps(sc))
    b = sr.load_benchmarks(tmp_path)
    t = so.before_after_table(b).set_index("method")
    # the benchmark's paired ratio, not ms ÷ ms (800 ÷ 50 = 16 would mix rounds)
    assert t.loc["occlusion", "captum_x_ours"] == pytest.approx(15.5)
    assert t.loc["lime_slic", "lime_x_ours"] == pytest.approx(3.9) and math.isnan(t.loc["lime_slic", "captum_x_ours"])
    n = sr.table_numbers(t.reset_index(), "ba", "method", ["captum_x_floor", "lime_x_floor"])
    assert n["ba_occlusion_captum_x_floor"] == pytest.approx(4.0) and n["ba_lime_slic_lime_x_floor"] == pytest.approx(5.0)
    html = fg.show_before_after(t.reset_index(), "cap", bs.provenance(b)).to_html()
    assert "Captum ÷ fast" in html and "15.50×" in html


def test_study_table_and_missing_files(bench, tmp_path):
    t = so.study_before_after_table(bench)
    assert list(t["speedup"]) == pytest.approx([3.0, 2.0, 3.0])
    assert t.loc[2, "unit"] == "core hours" and t.loc[0, "run"] == "2030-02-03, abc1234"
    empty = sr.load_benchmarks(tmp_path / "none")
    for fn in (so.before_after_table, so.study_before_after_table, so.mask_a3c_local_table, so.executor_table,
               so.overhead_table, so.shipped_table, so.projection_table, bs.projection_inputs):
        with pytest.raises(sr.MissingBenchmark):
            fn(empty)
        assert isinstance(rt.tabulate(fn, empty), Note)
    note = rt.tabulate(so.before_after_table, empty)
    assert isinstance(fg.show_before_after_figure(note, empty), Note) and "study_cost.py --json" in note.text


def test_fields_the_cost_benchmark_adds_show_in_the_tables(tmp_path):
    """New per-method fields of study_cost.json (a FLOP-limit speed-up, its fraction, a per-game no-op share)
    become columns, and a further projection of core hours a row, without a change in the chapter."""
    sc = _study_cost()
    sc["methods"]["occlusion"].update(flop_limit_speedup=9.5, fraction_of_limit=0.42,
                                      noop_share={"Breakout": 0.31, "MsPacman": 0.05}, speedup_rounds=[1.0, 2.0])
    sc["projection"]["dqn_12_agents_core_hours"] = 35.9
    (tmp_path / "study_cost.json").write_text(json.dumps(sc))
    b = sr.load_benchmarks(tmp_path)
    t = so.before_after_table(b).set_index("method")
    assert t.loc["occlusion", "noop_share.Breakout"] == 0.31 and math.isnan(t.loc["lime_slic", "flop_limit_speedup"])
    html = fg.show_before_after(t.reset_index(), "cap").to_html()
    for field in ("flop_limit_speedup", "fraction_of_limit", "noop_share.Breakout", "noop_share.MsPacman", "9.5", "0.42"):
        assert field in html
    assert "speedup_rounds" not in html and "target_speedup_vs_naive_floor" not in html  # a list; shown as Target
    study = so.study_before_after_table(b).set_index("what")
    assert study.loc["dqn 12 agents", "after"] == 35.9 and math.isnan(study.loc["dqn 12 agents", "before"])


def test_study_tasks_count_the_full_profiles_units():
    t = so.study_tasks(_study_cost())
    # DQN: 2 agents × 2 chunks × (12 sanity + 15 degradation units: 12 methods, the 2 of the §6.2 ablation and
    # the random map); Mask-A3C: 2 chunks × (14 + 15)
    assert (t["dqn_tasks"], t["mask_a3c_tasks"], t["sweeps"]) == (2 * 2 * 27, 2 * 29, 2 + so.MASK_A3C_AGENTS)


def test_projection_known_answer_and_it_follows_study_cost():
    p = so.projection(_scaleout(), _study_cost(10.0))
    by = {r["target"]: r for r in p["targets"]}
    sweeps = 2 + so.MASK_A3C_AGENTS
    two = by["2 cores with processes"]
    assert two["compute_hours"] == pytest.approx(10.0 / (2 * 0.75))
    assert two["wall_hours"] == pytest.approx(10.0 / 1.5 + sweeps * 3.6 / 3600)
    cluster = by["a 64-core Ray cluster"]
    assert cluster["compute_hours"] == pytest.approx(10.0 / (64 * 0.5))
    # largest DQN unit: LIME's sanity unit, (600 + 200 / 2) ms × 25 states = 17.5 s; the Mask-A3C units are
    # scaled by their mean: (5 h / 58) ÷ (5 h / 108) × 17.5 s
    largest = 17.5 * 108 / 58
    assert p["largest_unit_s"] == pytest.approx(largest)
    assert cluster["wall_hours_upper"] - cluster["wall_hours"] == pytest.approx(sweeps * largest / 3600)
    assert p["rows"] == 2 * 50 * (12 * 10 + 15 * 100) + 20 * (14 * 10 + 15 * 100)
    again = so.projection(_scaleout(), _study_cost(20.0))
    assert again["targets"][0]["compute_hours"] == pytest.approx(2 * two["compute_hours"])
    slow_driver = {**_scaleout(), "driver": {"store_ms_per_row": 100.0}}  # 5.4 h of storing bounds the cluster
    c = so.projection(slow_driver, _study_cost(10.0))["targets"][2]
    assert c["wall_hours"] == pytest.approx(100 * p["rows"] / 3.6e6 + sweeps * 7.2 / 3600)
    bound = pd.DataFrame(so.projection(slow_driver, _study_cost(10.0))["targets"])
    n = so.scaleout_numbers(Note("-"), Note("-"), bound)
    assert n["ray_64_driver"] == pytest.approx(100 * p["rows"] / 3.6e6) and n["ray_64_driver"] > n["ray_64_compute"]
    assert math.isnan(n["local_rate"]) and math.isnan(n["noop_ms"])
    only_local = {**_scaleout(), "executors": _scaleout()["executors"][:1]}
    assert all("missing" in r for r in so.projection(only_local, _study_cost())["targets"])


def test_scaleout_tables_figures_and_numbers(bench):
    ex = so.executor_table(bench)
    assert list(ex["executor"]) == ["local", "processes", "ray"] and ex["same_table"].all()
    ov = so.overhead_table(bench).set_index("unit")
    assert ov.loc["µs", "value"] == 0.05
    assert so.shipped_table(bench).set_index("what")["bytes"].max() == 2_000_000
    pr = so.projection_table(bench)
    assert list(pr["target"]) == [t for t, _, _ in so.TARGETS]
    inputs = bs.projection_inputs(bench).set_index("input")["value"]
    assert inputs.filter(like="core hours after the speed-ups").item() == "10.0"
    assert "A recorded assumption." in set(inputs) and not inputs.index.str.contains("projected from").any()
    stale = sr.load_benchmarks(bench.directory)
    stale = type(stale)(**{**stale.__dict__, "scaleout": {**stale.scaleout, "projection": {"core_hours_after": 99.0}}})
    assert "99.0" in set(bs.projection_inputs(stale)["value"])  # the file's own projection used other core hours
    assert "A recorded assumption." in fg.show_projection_inputs(bs.projection_inputs(bench), "Cap.").to_html()
    n = so.scaleout_numbers(ex, so.overhead_table(bench), pr)
    assert n["local_rate"] == 24.0 and (n["processes_rate"], n["processes_efficiency"]) == (36.0, 0.75)
    assert n["noop_ms"] == 0.5 and n["per_unit_diff_s"] == pytest.approx(0.1)
    assert n["ray_64_wall"] == pytest.approx(pr.set_index("target").loc["a 64-core Ray cluster", "wall_hours"])
    for img in (fg.show_before_after_figure(so.before_after_table(bench), bench), fg.show_scaleout(ex, pr),
                fg.show_scaleout(ex, Note("none"))):
        assert img.data[:8] == b"\x89PNG\r\n\x1a\n"
    html = fg.show_before_after(so.before_after_table(bench), "Cap.", bs.provenance(bench)).to_html()
    assert "Captum and the lime package: explainers.json, run of 2030-01-01" in html and "4.00×" in html
    assert "Naive and fast: study_cost.json, methods run of 2030-02-03" in html
    assert "75%" in fg.show_executors(ex, "Cap.").to_html() and "Wall, upper bound (h)" in fg.show_projection(pr, "c").to_html()
    assert "2.0 MB" in fg.show_shipped(so.shipped_table(bench), "Cap.").to_html()
    assert "µs" in fg.show_overhead(so.overhead_table(bench), "Cap.").to_html()
    m = sr.machine_table(bench)
    assert list(m["benchmark"]) == ["explainers.json", "study_cost.json", "scaleout.json"]
    assert m.loc[2, "load"] == "3.0 → 4.0"
    assert "python benchmarks/scaleout.py --json" in rt.regenerate_commands(bench).data
    rows = so.row_costs(bench)  # Occlusion's naive floor 200 ms over 1,000 passes; no Mask-A3C row cost recorded
    assert rows["dqn_row_ms"] == pytest.approx(0.2) and math.isnan(rows["a3c_row_ms"]) and math.isnan(rows["a3c_over_dqn"])


def test_committed_files_give_a_projection():
    b = sr.load_benchmarks()
    if b.scaleout is None or b.study_cost is None:
        pytest.skip("scaleout.json or study_cost.json is not committed")
    t = so.projection_table(b)
    assert isinstance(t, pd.DataFrame) and (t["wall_hours"] > 0).all()
    assert (t["wall_hours_upper"] >= t["wall_hours"]).all()
    assert isinstance(so.before_after_table(b), pd.DataFrame)


def test_benchmark_writes_its_schema_on_a_tiny_run(tmp_path):
    """One method on 2 states, the local executor only (seconds); the schema, not the times."""
    (tmp_path / "study_cost.json").write_text(json.dumps(_study_cost()))
    out = tmp_path / "scaleout.json"
    cmd = [sys.executable, "benchmarks/scaleout.py", "--json", str(out), "--configs", "local:1", "--skip-ray-overhead",
           "--methods", "gradient", "--states", "2", "--chunk", "2", "--study-cost", str(tmp_path / "study_cost.json")]
    # the checkout's packages, not whichever copy the environment installed
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert {"machine", "background", "shared_machine", "setting", "executors", "ray_overhead", "shipped", "driver",
            "assumptions", "projection"} <= set(res)
    assert {"date", "commit", "cpu", "load_average", "load_average_at_end", "torch", "nice"} <= set(res["machine"])
    (row,) = res["executors"]
    assert row["executor"] == "local" and row["units"] == res["setting"]["units"] == 3  # sanity, degradation, random
    assert row["efficiency"] == 1.0 and row["same_table_as_local"] is True
    s = res["shipped"]
    assert s["degradation_frame_bytes"] > s["sanity_frame_bytes"] > s["unit_args_bytes"] > 0
    assert s["full_study_frame_bytes"] == pytest.approx(s["degradation_frame_bytes_per_state"] * 25)
    assert res["driver"]["rows"] > 0 and res["ray_overhead"] is None
    assert [t.get("missing", "") for t in res["projection"]["targets"]][0].startswith("no processes measurement")
    assert res["projection"]["core_hours_after"] == 10.0
    assert res["background"]["wall_s"] > 0 and res["shared_machine"].startswith("The machine was")


def test_mask_a3c_local_table(bench, tmp_path):
    note = rt.tabulate(so.mask_a3c_local_table, bench)  # the fixture has no local-method costs
    assert isinstance(note, Note) and "records no Mask-A3C local-method costs" in note.text
    assert "benchmarks/study_cost.py --json" in note.text and note.text.rstrip().endswith("--only projection` to measure it.")
    sc = _study_cost()
    sc["projection"]["mask_a3c"].update({"cascade_naive_ms_per_pass": 4.0, "local": {
        "occlusion": {"forward_passes": 1601, "naive_ms_per_pass": 2.0, "ms_per_pass": 0.25, "cascade_ms_per_pass": 0.5,
                      "max_abs_map_diff": 1e-6}}})
    (tmp_path / "study_cost.json").write_text(json.dumps(sc))
    t = so.mask_a3c_local_table(sr.load_benchmarks(tmp_path))
    sc["projection"]["mask_a3c"]["row_ms_inference_batch"] = 1.0
    (tmp_path / "study_cost.json").write_text(json.dumps(sc))
    assert so.row_costs(sr.load_benchmarks(tmp_path))["a3c_over_dqn"] == pytest.approx(5.0)  # 1.0 ÷ (200 / 1000)
    assert t.loc[0, "speedup"] == pytest.approx(8.0) and t.loc[0, "cascade_speedup"] == pytest.approx(8.0)
    assert "Incremental (ms/pass)" in fg.show_mask_a3c_local(t, "Cap.").to_html()
