"""The committed benchmarks (saliency_study.runtime): tables and numbers built from benchmark JSON files, and
chapter 6's loading and display of them (saliency_book.ch6_runtime, ch6_figures)."""

import dataclasses
import json
import math

import pandas as pd
import pytest

import saliency_book.ch6_figures as fg
import saliency_book.ch6_runtime as rt
import saliency_study.runtime as sr
from saliency_book.common import Note


def _method(ms, passes, floor, **extra):
    return {"ms": ms, "chunk": 64, "forward_passes": passes, "floor_ms": floor, "overhead_ratio": ms / floor, **extra}


def _explainers():
    return {
        "machine": {"date": "2030-01-02T03:04:05+00:00", "cpu": "Test CPU", "logical_cpus": 2, "torch_threads": 1,
                    "cuda": False, "torch": "9.9", "load_average_at_start": [4.0, 0, 0], "load_average_at_end": [5.0, 0, 0]},
        "setting": {"statistic": "median of 7 rounds after a warm-up"},
        "methods": {
            "occlusion": _method(200.0, 1000, 160.0, target_overhead=1.25, bf16_speedup=1.5, bf16_spearman_random_dqn=0.7),
            "lime_slic": _method(400.0, 2000, 320.0, target_overhead=2.0, bf16_speedup=0.8, bf16_spearman_random_dqn=0.99),
            "ns_chosen": _method(100.0, 500, 90.0, bf16_speedup=1.2),
            "gradient": _method(4.0, 2, 1.0),
            "random": _method(1.0, 1, 0.9),
        },
        "comparisons": {
            "captum.attr.Occlusion vs occlusion": {"ms": 500.0, "perturbations_per_eval": 64,
                                                   "ms_per_setting": {"64": 500.0, "128": 600.0}},
            "captum.attr.Lime vs lime_slic": {"ms": 300.0, "perturbations_per_eval": 256, "ms_per_setting": {"256": 300.0}},
            "lime.lime_image vs lime_slic": {"ms": 1600.0, "batch_size": 256, "ms_per_setting": {"10": 2000.0, "256": 1600.0}},
        },
        "bf16_agreement": {"states": 3, "methods": {
            "occlusion": {"min_spearman": 0.995, "keeps_0.99": True},
            "lime_slic": {"min_spearman": 0.9999, "keeps_0.99": True},
            "ns_chosen": {"min_spearman": 0.8, "keeps_0.99": False},
        }},
    }


def _video():
    run = {"agent": "data/agents/dqn-Breakout-s0", "max_steps": 200, "frames": 200, "frames_read_back": 200,
           "forward_passes_per_map": 1765, "maps_per_second": 3.08, "explain_seconds": 64.8, "wall_seconds": 79.7,
           "total_seconds": 80.2, "mp4_bytes": 848301, "load_avg_before": [7.7, 7.6, 5.9], "load_avg_after": [8.2, 7.8, 6.1]}
    return {"runs": [{**run, "method": "occlusion"}, {**run, "method": "gradient", "maps_per_second": 165.9,
                                                       "load_avg_before": [8.2, 7.8, 6.1], "load_avg_after": [8.4, 7.9, 6.2]},
                     {"agent": "official:Breakout", "method": "mask_policy", "skipped": "official checkpoints not found"}],
            "torch_threads": 1, "cpu_model": "Test CPU", "cpu_count": 2, "torch": "9.9"}


@pytest.fixture
def bench_dir(tmp_path):
    (tmp_path / "explainers.json").write_text(json.dumps(_explainers()))
    (tmp_path / "training.json").write_text(json.dumps({
        "agent_steps_per_s": {"ours_dqn_default": 150.0, "cleanrl_style_dqn": 75.0, "ours_dqn_fp32": 100.0,
                              "ours_a2c_double": 60.0, "ours_a2c_double_fp32": 40.0},
        "frames_per_s": {"ours_dqn_default": 600.0, "cleanrl_style_dqn": 300.0, "ours_dqn_fp32": 400.0,
                         "ours_a2c_double": 240.0, "ours_a2c_double_fp32": 160.0},
        "game": "Pong", "timed_steps": 123, "learning_starts": 45, "torch_threads": 1, "cpu_count": 2,
        "load_avg_at_end": [3.0, 3.0, 3.0]}))
    (tmp_path / "video_speed.json").write_text(json.dumps(_video()))
    (tmp_path / "envs.json").write_text(json.dumps({
        "num_envs": 6, "cpu_count": 2, "machine": "x86_64", "load_avg": [1.0, 1.0, 1.0],
        "agent_steps_per_s": {"gymnasium_sync_ours": 1000.0, "ale_vector_gray84": 2500.0,
                              "envpool_gray84": "unavailable: ImportError: no envpool"}}))
    return tmp_path


def test_config_validates_and_sizes_the_spot_check():
    from saliency_book.config import ChapterConfig

    cfg = rt.RuntimeChapter(profile="tiny", seed="2")
    assert isinstance(cfg, ChapterConfig) and cfg.seed == 2
    assert cfg.spot["states"] == 1 and "gradient" in cfg.spot["methods"]
    assert rt.RuntimeChapter(profile="quick").spot["methods"] is None
    assert "`benchmarks_dir='data/benchmarks'`" in cfg._repr_markdown_()
    with pytest.raises(ValueError, match="unknown profile"):
        rt.RuntimeChapter(profile="fast")
    with pytest.raises(ValueError, match="unknown game"):
        rt.RuntimeChapter(game="Pacman")
    with pytest.raises(ValueError, match="benchmarks_dir must be a non-empty path"):
        rt.RuntimeChapter(benchmarks_dir="")
    errors = []
    for cls in (rt.RuntimeChapter, ChapterConfig):  # the same bad seed, the same error in every chapter
        with pytest.raises(ValueError) as e:
            cls(seed="zero")
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "seed must be an integer >= 0, got 'zero'" in errors[0]


def test_missing_files_raise_and_become_notes_and_bad_json_raises(tmp_path):
    b = sr.load_benchmarks(tmp_path)
    assert b.explainers is None and b.training is None and b.envs is None and b.video is None
    for fn, script in ((sr.explainer_table, "explainers.py"), (sr.comparison_table, "explainers.py"),
                       (sr.bf16_table, "bf16_decision.py"), (sr.training_table, "training.py"),
                       (sr.envs_table, "envs.py"), (sr.video_table, "video.py")):
        with pytest.raises(sr.MissingBenchmark) as e:
            fn(b)
        assert e.value.script == script and e.value.part is None
        note = rt.tabulate(fn, b)
        assert isinstance(note, Note) and not note and f"benchmarks/{script} --json" in note.text
    assert sr.machine_table(b).empty and "No benchmark results" in rt.tabulate(sr.machine_table, b).text
    # Notes pass through the displays; the numbers of a missing file are NaN, under the same names
    note = rt.tabulate(sr.explainer_table, b)
    assert fg.show_explainers(note, "c") is note and fg.show_cost(note, b) is note
    numbers = sr.cost_numbers(note)
    assert math.isnan(numbers["pert_ms_min"]) and numbers["dear_label"] == "NA"
    (tmp_path / "explainers.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        sr.load_benchmarks(tmp_path)
    (tmp_path / "explainers.json").write_text(json.dumps({"machine": {}}))
    with pytest.raises(ValueError, match="no 'methods'"):
        sr.load_benchmarks(tmp_path)


def test_a_missing_part_names_what_the_file_lacks(bench_dir):
    doc = _explainers()
    del doc["comparisons"]
    (bench_dir / "explainers.json").write_text(json.dumps(doc))
    note = rt.tabulate(sr.comparison_table, sr.load_benchmarks(bench_dir))
    assert note.text.startswith("`explainers.json` records no comparison with Captum or the lime package.")
    assert "python benchmarks/explainers.py --json" in note.text


def test_explainer_table_ratios_captum_and_paper_columns(bench_dir):
    t = sr.explainer_table(sr.load_benchmarks(bench_dir)).set_index("method")
    assert t.loc["occlusion", "overhead"] == pytest.approx(200 / 160)
    assert t.loc["occlusion", "ms_per_pass"] == pytest.approx(0.2)
    assert t.loc["occlusion", "captum_speedup"] == pytest.approx(500 / 200)
    assert t.loc["lime_slic", "captum_speedup"] == pytest.approx(300 / 400)  # Captum faster: ratio below 1
    # Huber et al.'s seconds per map, converted: occlusion 2.80 s against our 200 ms.
    assert t.loc["occlusion", "paper_s"] == 2.80 and t.loc["occlusion", "paper_over_ours"] == pytest.approx(14.0)
    assert math.isnan(t.loc["ns_chosen", "paper_s"]) and math.isnan(t.loc["gradient", "captum_ms"])
    assert t.loc["gradient", "family"] == "gradient" and t.loc["random", "family"] == "chance reference"
    assert t.loc["occlusion", "bf16_speedup"] == 1.5  # the record's own fields are kept
    html = fg.show_explainers(t.reset_index(), "My caption").to_html()
    assert "My caption" in html and "NA" in html and "2.50×" in html
    assert "Captum equivalents: captum.attr.Occlusion for Occlusion and captum.attr.Lime for LIME (SLIC)." in html


def test_paper_seconds_are_the_reference_values():
    # reference-huber2021.md §6.3 (official final_parameters_results.csv)
    assert dict(sr.PAPER_SECONDS) == {"rise": 1.54, "lime_felzenszwalb": 1.71, "lime_slic": 2.08, "ns_original": 2.62,
                                      "lime_quickshift": 2.75, "occlusion": 2.80, "sarfa": 3.00}


def test_cost_numbers_come_from_the_table(bench_dir):
    t = sr.explainer_table(sr.load_benchmarks(bench_dir))
    n = sr.cost_numbers(t)
    assert (n["pert_passes_min"], n["pert_passes_max"], n["pert_ms_min"], n["pert_ms_max"]) == (500, 2000, 100, 400)
    assert (n["pert_overhead_min"], n["pert_overhead_max"]) == pytest.approx((100 / 90, 1.25))
    assert n["cheap_passes"] == 2 and (n["cheap_label"], n["cheap_ms"]) == ("Gradient", 4.0)  # the random map is no explanation
    assert n["dear_label"] == "LIME (SLIC)" and n["dear_over_cheap"] == pytest.approx(100.0)
    assert (n["paper_min"], n["paper_min_label"]) == (pytest.approx(5.2), "LIME (SLIC)")
    assert (n["paper_max"], n["paper_max_label"]) == (pytest.approx(14.0), "Occlusion")
    assert n["paper_none"] == ["NS chosen action", "Gradient", "Random"]
    t2 = t.assign(ms=t["ms"].where(t["method"] != "lime_slic", 4000.0))
    assert sr.cost_numbers(t2)["dear_over_cheap"] == pytest.approx(1000.0)


def test_cost_figure_is_an_image(bench_dir):
    b = sr.load_benchmarks(bench_dir)
    img = fg.show_cost(sr.explainer_table(b), b)
    assert img.data[:8] == b"\x89PNG\r\n\x1a\n"
    ax = fg._plot_cost(sr.explainer_table(b), title="t").axes[0]
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_yticklabels()][-1] == "LIME (SLIC)"


def test_comparisons_and_their_numbers(bench_dir):
    c = sr.comparison_table(sr.load_benchmarks(bench_dir))
    lp = c.set_index("key").loc["lime.lime_image vs lime_slic"]
    assert lp["ratio"] == pytest.approx(4.0) and lp["floor_bound"] == pytest.approx(5.0)
    assert lp["setting"] == "batch_size=256 (10: 2,000 ms)" and lp["name"] == "lime_package"
    html = fg.show_comparisons(c, "cap").to_html()
    assert "Floor bound" in html and "5.00×" in html
    n = sr.table_numbers(c, "cmp", "name", ["ratio", "floor_bound"], keys=["captum_kernelshap"])
    assert n["cmp_captum_occlusion_ratio"] == pytest.approx(2.5) and n["cmp_captum_lime_ratio"] == pytest.approx(0.75)
    assert n["cmp_lime_package_floor_bound"] == pytest.approx(5.0)
    assert math.isnan(n["cmp_captum_kernelshap_ratio"])  # not in this file: NaN under the name the prose quotes
    assert all(math.isnan(v) for v in sr.table_numbers(Note("x"), "cmp", "name", ["ratio"], keys=["a"]).values())
    assert all(math.isnan(v) for v in sr.table_numbers(None, "cmp", "name", ["ratio"], keys=["a"]).values())


def _decision(method, kind, rho, speed, agents):
    keeps, faster = rho >= 0.99, speed > 1.0
    return {"precision": "bf16" if keeps and faster else "fp32", "min_spearman": rho, "min_bf16_speedup": speed,
            "agents": [f"agent{i}" for i in range(agents)], "states_per_agent": 20,
            "reason": "keeps" if keeps and faster else ("rho" if not keeps else "slower")}


def test_bf16_table_reads_the_decision_and_checks_the_library_offer(bench_dir, monkeypatch):
    (bench_dir / "bf16_decision.json").write_text(json.dumps({"decision": {
        "dqn": {"occlusion": _decision("occlusion", "dqn", 0.65, 0.15, 4), "rise": _decision("rise", "dqn", 1.0, 0.7, 4)},
        "mask_a3c": {"occlusion": _decision("occlusion", "mask_a3c", 0.999, 1.3, 1),
                     "rise": _decision("rise", "mask_a3c", 0.9999, 1.4, 1)},
    }}))
    offers = {"occlusion": False, "rise": True}
    monkeypatch.setattr(sr, "_library_offers_bf16", lambda name: offers[name])
    t = sr.bf16_table(sr.load_benchmarks(bench_dir))
    assert list(zip(t["kind"], t["method"])) == [("dqn", "occlusion"), ("dqn", "rise"), ("mask_a3c", "occlusion"),
                                                 ("mask_a3c", "rise")]
    assert list(t["precision"]) == ["fp32", "fp32", "bf16", "bf16"] and list(t["offered"]) == ["no", "yes", "no", "yes"]
    summary = sr.bf16_summary(t)
    assert (summary["kept"], summary["not_kept"], summary["defaults_match"]) == (["rise"], ["occlusion"], False)
    assert summary["faster"] == [("mask_a3c", "occlusion", 1.3), ("mask_a3c", "rise", 1.4)]
    n = rt.bf16_numbers(t)
    assert (n["bf16_agents"], n["bf16_states"], n["bf16_kept"], n["bf16_not_kept"]) == (5, 20, "RISE", "Occlusion")
    assert n["bf16_faster"] == "Occlusion on the Mask-A3C agent (×1.30) and RISE on the Mask-A3C agent (×1.40)"
    assert n["bf16_defaults"] == "none" and n["bf16_defaults_match"] == "no"  # the fixture has a faster pair that kept its maps
    monkeypatch.setattr(sr, "BF16_DEFAULTS", frozenset({("mask_a3c", "rise")}))
    n = rt.bf16_numbers(t)
    assert n["bf16_defaults"] == "RISE on the Mask-A3C agent" and n["bf16_defaults_match"] == "yes"
    assert "Offered" in fg.show_bf16(t, "cap").to_html()


def test_bf16_table_without_the_decision_file_is_a_note(bench_dir):
    note = rt.tabulate(sr.bf16_table, sr.load_benchmarks(bench_dir))
    assert isinstance(note, Note) and "bf16_decision.py --json" in note.text
    assert rt.bf16_numbers(note)["bf16_kept"] == "NA" and sr.bf16_summary(note) is None


def test_training_envs_video_and_machine_tables(bench_dir):
    b = sr.load_benchmarks(bench_dir)
    tr = sr.training_table(b)
    n = sr.table_numbers(tr, "train", "key", ["vs_cleanrl", "steps_per_s"])
    assert n["train_ours_dqn_default_vs_cleanrl"] == pytest.approx(2.0) and n["train_cleanrl_style_dqn_vs_cleanrl"] == 1.0
    assert n["train_ours_dqn_default_steps_per_s"] / n["train_ours_dqn_fp32_steps_per_s"] == pytest.approx(1.5)
    assert "precision='bf16' (defaults now)" in tr.set_index("key").loc["ours_a2c_double", "setting"]  # no settings recorded
    recorded = {"ours_dqn_default": {"num_envs": 3, "batch_size": 64, "train_freq": 2, "precision": "fp32"},
                "ours_a2c_double": {"num_envs": 7, "num_steps": 20, "precision": "fp32"}}
    tr2 = sr.training_table(dataclasses.replace(b, training={**b.training, "settings": recorded})).set_index("key")
    assert tr2.loc["ours_dqn_default", "setting"] == "3 envs, batch 64 every 2 steps, precision='fp32'"
    assert tr2.loc["ours_a2c_double", "setting"] == "7 envs, 20-step rollouts, precision='fp32'"
    assert tr2.loc["ours_dqn_fp32", "setting"].endswith("(defaults now)")  # not recorded in that file
    assert "× CleanRL-style" in fg.show_training(tr, "cap").to_html()
    en = sr.envs_table(b)
    assert en["vs_sync"].iloc[1] == pytest.approx(2.5) and math.isnan(en["steps_per_s"].iloc[2])
    assert en["note"].iloc[2] == "unavailable: ImportError: no envpool" and "DQN trainer" in fg.show_envs(en, "c").to_html()
    v = sr.video_table(b)
    assert list(v["method"]) == ["occlusion", "gradient", "mask_policy"] and list(v["label"])[0] == "Occlusion"
    assert v.loc[2, "skipped"] == "official checkpoints not found" and "load_avg_before" not in v  # lists left out
    html = fg.show_video(v, "cap").to_html()
    assert "Maps/s" in html and "165.9" in html and "official checkpoints not found" in html and "frames_read_back" not in html
    n = sr.table_numbers(v, "video", "method", ["maps_per_second"])
    assert n["video_occlusion_maps_per_second"] == 3.08 and math.isnan(n["video_mask_policy_maps_per_second"])
    m = sr.machine_table(b)
    assert list(m["benchmark"]) == ["explainers.json", "training.json", "envs.json", "video_speed.json"]
    assert m.loc[0, "load"] == "4.0 → 5.0" and m.loc[0, "date"] == "2030-01-02" and m.loc[3, "load"] == "7.7 → 8.4"
    assert "Test CPU" in fg.show_machine(m, "cap").to_html()


def test_video_table_shows_the_fields_the_benchmark_adds(bench_dir):
    doc = _video()
    doc["runs"][0]["maps_per_core_second"] = 2.5
    (bench_dir / "video_speed.json").write_text(json.dumps(doc))
    assert "maps_per_core_second" in fg.show_video(sr.video_table(sr.load_benchmarks(bench_dir)), "c").to_html()


def test_regenerate_commands_use_the_recorded_settings(bench_dir):
    md = rt.regenerate_commands(sr.load_benchmarks(bench_dir)).data
    assert md.startswith("```bash\npython benchmarks/explainers.py") and md.endswith("```\n")
    cmds = "\n".join(sr.regenerate_commands(sr.load_benchmarks(bench_dir))) + "\n"
    assert f"python benchmarks/explainers.py --json {bench_dir.resolve().as_posix()}/explainers.json \\\n" in cmds
    assert "    --repeats 7 --bf16-states 3\n" in cmds
    assert "--steps 123 --learning-starts 45 --game Pong" in cmds and "--num-envs 6" in cmds
    assert "video_speed.json \\\n    --max-steps 200" in cmds


def test_committed_benchmarks_load_and_agree_with_their_own_ratios():
    b = sr.load_benchmarks()
    if b.explainers is None:
        pytest.skip("data/benchmarks/explainers.json is not committed")
    t = sr.explainer_table(b)
    assert isinstance(t, pd.DataFrame) and (t["ms"] > 0).all()
    c = sr.comparison_table(b)
    for _, row in c.iterrows():  # our ratio equals the one the benchmark recorded
        assert row["ratio"] == pytest.approx(b.explainers["comparisons"][row["key"]]["ratio_vs_ours"])
    if b.video is not None:
        v = sr.video_table(b)
        assert (v["maps_per_second"].dropna() > 0).all()


def test_spot_check_without_agents_is_a_note(monkeypatch, bench_dir):
    monkeypatch.setattr(sr, "study_agent", lambda game, **kw: None)
    monkeypatch.setattr(sr, "official_available", lambda game=None, **kw: False)
    assert sr.spot_check("Breakout", states=1) is None
    note = rt.spot_check(rt.RuntimeChapter(profile="tiny"), sr.load_benchmarks(bench_dir))
    assert isinstance(note, Note) and "No agent to time" in note.text
    assert fg.show_spot_check(note, "c") is note and all(math.isnan(v) for v in sr.spot_numbers(note).values())


def test_spot_check_times_a_random_dqn_agent_and_caches(monkeypatch, tmp_path, bench_dir):
    import torch

    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent

    torch.manual_seed(0)
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    path = save_agent(agent, tmp_path / "agent")
    monkeypatch.setattr(sr, "study_agent", lambda game, **kw: str(path))
    monkeypatch.setattr(sr, "official_available", lambda game=None, **kw: False)
    monkeypatch.setattr(sr, "_SKIP_STATES", 2)
    cfg = rt.RuntimeChapter(profile="tiny", results_dir=str(tmp_path / "results"))
    b = sr.load_benchmarks(bench_dir)
    t = rt.spot_check(cfg, b)
    assert list(t["method"]) == ["random", "gradient"]  # mask_policy does not apply to a DQN agent
    assert (t["ms"] > 0).all() and list(t["forward_passes"]) == [1, 2]
    assert t.set_index("method").loc["gradient", "benchmark_ms"] == 4.0
    assert t["input_shape"].iloc[0] == "4×84×84"
    assert len(list((tmp_path / "results").glob("runtime_spot-*/value.json"))) == 1
    again = rt.spot_check(cfg, b)  # from the cache: the same times
    assert list(again["ms"]) == list(t["ms"])
    html = fg.show_spot_check(t, "cap").to_html()
    assert "ms/map" in html and "Benchmark" in html
    assert math.isnan(sr.spot_numbers(t)["spot_dqn_ms_per_pass"])  # only methods with few forward passes were timed
    many = t.assign(forward_passes=[200, 400], benchmark_passes=[100, 100], benchmark_ms=[10.0, 10.0],
                    ms_per_pass=[0.2, 0.4])
    n = sr.spot_numbers(many)
    assert n["spot_dqn_ms_per_pass"] == pytest.approx(0.3) and n["spot_dqn_ratio"] == pytest.approx(3.0)
    assert math.isnan(n["spot_mask_a3c_ratio"])
