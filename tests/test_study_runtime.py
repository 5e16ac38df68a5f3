"""Chapter 6 helpers (saliency_book.ch6_runtime): tables and sentences built from benchmark JSON files."""

import dataclasses
import json
import math

import pandas as pd
import pytest

import saliency_book.ch6_figures as fg
import saliency_book.ch6_runtime as rt
import saliency_book.ch6_spot as sp
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
    (tmp_path / "envs.json").write_text(json.dumps({
        "num_envs": 6, "cpu_count": 2, "machine": "x86_64", "load_avg": [1.0, 1.0, 1.0],
        "agent_steps_per_s": {"gymnasium_sync_ours": 1000.0, "ale_vector_gray84": 2500.0,
                              "envpool_gray84": "unavailable: ImportError: no envpool"}}))
    return tmp_path


def test_config_validates_and_sizes_the_spot_check():
    cfg = rt.RuntimeChapter(profile="tiny", seed=2.0)
    assert cfg.seed == 2 and cfg.spot["states"] == 1 and "gradient" in cfg.spot["methods"]
    assert rt.RuntimeChapter(profile="quick").spot["methods"] is None
    assert "profile `tiny`" in cfg._repr_markdown_()
    with pytest.raises(ValueError, match="unknown profile"):
        rt.RuntimeChapter(profile="fast")
    with pytest.raises(ValueError, match="unknown game"):
        rt.RuntimeChapter(game="Pacman")
    with pytest.raises(TypeError, match="seed must be an integer"):
        rt.RuntimeChapter(seed="zero")


def test_missing_files_become_notes_and_bad_json_raises(tmp_path):
    b = rt.load_benchmarks(tmp_path)
    assert b.explainers is None and b.training is None and b.envs is None
    for fn in (rt.explainer_table, rt.comparison_table, rt.bf16_table, rt.training_table, rt.envs_table, rt.machine_table):
        note = fn(b)
        assert isinstance(note, Note) and not note
    assert "benchmarks/explainers.py" in rt.explainer_table(b).text
    # Notes pass through the styling and summary helpers unchanged.
    note = rt.explainer_table(b)
    assert fg.style_explainer_table(note, "c") is note and rt.cost_summary(note) is note and rt.paper_summary(note) is note
    (tmp_path / "explainers.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        rt.load_benchmarks(tmp_path)
    (tmp_path / "explainers.json").write_text(json.dumps({"machine": {}}))
    with pytest.raises(ValueError, match="no 'methods'"):
        rt.load_benchmarks(tmp_path)


def test_explainer_table_ratios_captum_and_paper_columns(bench_dir):
    t = rt.explainer_table(rt.load_benchmarks(bench_dir)).set_index("method")
    assert t.loc["occlusion", "overhead"] == pytest.approx(200 / 160)
    assert t.loc["occlusion", "ms_per_pass"] == pytest.approx(0.2)
    assert t.loc["occlusion", "captum_speedup"] == pytest.approx(500 / 200)
    assert t.loc["lime_slic", "captum_speedup"] == pytest.approx(300 / 400)  # Captum faster: ratio below 1
    # Huber et al.'s seconds per map, converted: occlusion 2.80 s against our 200 ms.
    assert t.loc["occlusion", "paper_s"] == 2.80 and t.loc["occlusion", "paper_over_ours"] == pytest.approx(14.0)
    assert math.isnan(t.loc["ns_chosen", "paper_s"]) and math.isnan(t.loc["gradient", "captum_ms"])
    assert t.loc["gradient", "family"] == "gradient" and t.loc["random", "family"] == "chance reference"
    html = fg.style_explainer_table(t.reset_index(), "My caption").to_html()
    assert "My caption" in html and "NA" in html and "2.50×" in html
    assert "Captum equivalents: captum.attr.Occlusion for Occlusion and captum.attr.Lime for LIME (SLIC)." in html


def test_paper_seconds_are_the_reference_values():
    # reference-huber2021.md §6.3 (official final_parameters_results.csv)
    assert dict(rt.PAPER_SECONDS) == {"rise": 1.54, "lime_felzenszwalb": 1.71, "lime_slic": 2.08, "ns_original": 2.62,
                                      "lime_quickshift": 2.75, "occlusion": 2.80, "sarfa": 3.00}


def test_cost_summary_is_formatted_from_the_numbers(bench_dir):
    t = rt.explainer_table(rt.load_benchmarks(bench_dir))
    text = rt.cost_summary(t)
    # Largest jump in cost is gradient (4 ms) → ns_chosen (100 ms).
    assert "The cheap methods are Random (1.0 ms) and Gradient (4.0 ms)" in text
    assert "100 to 400 ms per map" in text and "500 to 2,000 forward passes" in text
    assert "1.11 to 1.25 times" in text  # overhead of the perturbation methods
    assert "LIME (SLIC), costs 100 times as much as the cheapest real explanation, Gradient" in text
    t2 = t.assign(ms=t["ms"].where(t["method"] != "lime_slic", 4000.0))
    assert "LIME (SLIC), costs 1,000 times" in rt.cost_summary(t2)


def test_paper_summary_names_the_range_and_the_methods_without_a_time(bench_dir):
    t = rt.explainer_table(rt.load_benchmarks(bench_dir))
    text = rt.paper_summary(t).data
    assert "5.2 (LIME (SLIC)) to 14.0 (Occlusion)" in text
    assert "no time for NS chosen action, Gradient and Random" in text


def test_cost_figure_is_an_image(bench_dir):
    b = rt.load_benchmarks(bench_dir)
    img = fg.cost_figure(rt.explainer_table(b), b)
    assert img.data[:8] == b"\x89PNG\r\n\x1a\n"
    fig = fg.plot_cost(rt.explainer_table(b), title="t")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_yticklabels()][-1] == "LIME (SLIC)"


def test_comparisons_and_their_summary(bench_dir):
    c = rt.comparison_table(rt.load_benchmarks(bench_dir)).set_index("key")
    lp = c.loc["lime.lime_image vs lime_slic"]
    assert lp["ratio"] == pytest.approx(4.0) and lp["floor_bound"] == pytest.approx(5.0)
    assert lp["setting"] == "batch_size=256 (10: 2,000 ms)"
    html = fg.style_comparisons(c.reset_index(), "cap").to_html()
    assert "Floor bound" in html and "5.00×" in html
    text = rt.comparison_summary(c.reset_index()).data
    assert "faster than Captum's Occlusion (which takes 2.5 times as long) and the lime package" in text
    assert "not faster than Captum's Lime (which takes 0.75 times as long)" in text
    assert "more than 5.0 times as fast as the lime package" in text


def _decision(method, kind, rho, speed, agents):
    keeps, faster = rho >= 0.99, speed > 1.0
    return {"precision": "bf16" if keeps and faster else "fp32", "min_spearman": rho, "min_bf16_speedup": speed,
            "agents": [f"agent{i}" for i in range(agents)], "states_per_agent": 20,
            "reason": "keeps" if keeps and faster else ("rho" if not keeps else "slower")}


def test_bf16_table_reads_the_decision_and_checks_the_library_offer(bench_dir, monkeypatch):
    (bench_dir / "bf16_decision.json").write_text(json.dumps({"decision": {
        "dqn": {"occlusion": _decision("occlusion", "dqn", 0.65, 0.15, 4), "rise": _decision("rise", "dqn", 1.0, 0.7, 4)},
        "mask_a3c": {"occlusion": _decision("occlusion", "mask_a3c", 0.999, 1.3, 1), "rise": _decision("rise", "mask_a3c", 0.9999, 1.4, 1)},
    }}))
    offers = {"occlusion": False, "rise": True}
    monkeypatch.setattr(rt, "_library_offers_bf16", lambda name: offers[name])
    t = rt.bf16_table(rt.load_benchmarks(bench_dir))
    assert list(zip(t["kind"], t["method"])) == [("dqn", "occlusion"), ("dqn", "rise"), ("mask_a3c", "occlusion"), ("mask_a3c", "rise")]
    assert list(t["precision"]) == ["fp32", "fp32", "bf16", "bf16"] and list(t["offered"]) == ["no", "yes", "no", "yes"]
    text = rt.bf16_summary(t).data
    assert "On 5 trained agents, 20 states each" in text
    assert "at least 0.99 with the float32 maps on every state for RISE, and not for Occlusion" in text
    assert "faster than the float32 default only for Occlusion on the Mask-A3C agent (×1.30) and RISE on the Mask-A3C agent (×1.40)" in text
    assert "exactly for the methods that kept their maps on every agent" in text
    assert "The library's bf16 defaults (none) differ from the measurement." in text  # the fixture has a faster pair
    monkeypatch.setattr(rt, "BF16_DEFAULTS", frozenset({("mask_a3c", "rise")}))
    assert "bf16 is the library's default exactly where it kept the maps and was faster: RISE on the Mask-A3C agent." in rt.bf16_summary(t).data
    offers["occlusion"] = True
    assert "differs from the measurement for Occlusion" in rt.bf16_summary(rt.bf16_table(rt.load_benchmarks(bench_dir))).data


def test_bf16_table_without_the_decision_file_is_a_note(bench_dir):
    assert isinstance(rt.bf16_table(rt.load_benchmarks(bench_dir)), rt.Note)


def test_training_envs_and_machine_tables(bench_dir):
    b = rt.load_benchmarks(bench_dir)
    tr = rt.training_table(b).set_index("key")
    assert tr.loc["ours_dqn_default", "vs_cleanrl"] == pytest.approx(2.0)
    assert tr.loc["cleanrl_style_dqn", "vs_cleanrl"] == pytest.approx(1.0)
    text = rt.training_summary(tr.reset_index()).data
    assert "runs 2.00 times as fast" in text
    assert "bf16 autocast makes the DQN trainer 1.50 times and the Mask-A2C trainer 1.50 times as fast as float32" in text
    assert "precision='bf16' (defaults now)" in tr.loc["ours_a2c_double", "setting"]  # the file records no settings
    recorded = {"ours_dqn_default": {"num_envs": 3, "batch_size": 64, "train_freq": 2, "precision": "fp32"},
                "ours_a2c_double": {"num_envs": 7, "num_steps": 20, "precision": "fp32"}}
    b2 = dataclasses.replace(b, training={**b.training, "settings": recorded})
    tr2 = rt.training_table(b2).set_index("key")
    assert tr2.loc["ours_dqn_default", "setting"] == "3 envs, batch 64 every 2 steps, precision='fp32'"
    assert tr2.loc["ours_a2c_double", "setting"] == "7 envs, 20-step rollouts, precision='fp32'"
    assert tr2.loc["ours_dqn_fp32", "setting"].endswith("(defaults now)")  # not recorded in that file
    en = rt.envs_table(b)
    assert en["vs_sync"].iloc[1] == pytest.approx(2.5) and math.isnan(en["steps_per_s"].iloc[2])
    text = rt.envs_summary(en).data
    assert "fastest backend is ale-py's AtariVectorEnv in grayscale, with 2,500" in text
    assert "Not measured: envpool (unavailable: ImportError: no envpool)" in text
    m = rt.machine_table(b)
    assert list(m["benchmark"]) == ["explainers.json", "training.json", "envs.json"]
    assert m.loc[0, "load"] == "4.0 → 5.0" and m.loc[0, "date"] == "2030-01-02"
    note = rt.hardware_note(b).data
    assert "1 torch thread on a machine with 2 logical CPUs (Test CPU; no CUDA)" in note


def test_regenerate_commands_use_the_recorded_settings(bench_dir):
    cmds = rt.regenerate_commands(rt.load_benchmarks(bench_dir))
    assert f"python benchmarks/explainers.py --json {bench_dir.resolve().as_posix()}/explainers.json \\\n" in cmds
    assert "    --repeats 7 --bf16-states 3\n" in cmds
    assert "--steps 123 --learning-starts 45 --game Pong" in cmds and "--num-envs 6" in cmds


def test_committed_benchmarks_load_and_agree_with_their_own_ratios():
    b = rt.load_benchmarks()
    if b.explainers is None:
        pytest.skip("data/benchmarks/explainers.json is not committed")
    t = rt.explainer_table(b)
    assert isinstance(t, pd.DataFrame) and (t["ms"] > 0).all()
    c = rt.comparison_table(b)
    for _, row in c.iterrows():  # our ratio equals the one the benchmark recorded
        assert row["ratio"] == pytest.approx(b.explainers["comparisons"][row["key"]]["ratio_vs_ours"])


def test_spot_check_without_agents_is_a_note(monkeypatch, bench_dir):
    monkeypatch.setattr(sp, "study_agent", lambda game, **kw: None)
    monkeypatch.setattr(sp, "official_available", lambda game=None, **kw: False)
    note = sp.spot_check(rt.RuntimeChapter(profile="tiny"), rt.load_benchmarks(bench_dir))
    assert isinstance(note, Note) and "No agent to time" in note.text
    assert fg.style_spot_check(note, "c") is note and sp.spot_summary(note) is note


def test_spot_check_times_a_random_dqn_agent_and_caches(monkeypatch, tmp_path, bench_dir):
    import torch

    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent

    torch.manual_seed(0)
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    path = save_agent(agent, tmp_path / "agent")
    monkeypatch.setattr(sp, "study_agent", lambda game, **kw: str(path))
    monkeypatch.setattr(sp, "official_available", lambda game=None, **kw: False)
    monkeypatch.setattr(sp, "_SKIP_STATES", 2)
    cfg = rt.RuntimeChapter(profile="tiny", results_dir=str(tmp_path / "results"))
    b = rt.load_benchmarks(bench_dir)
    t = sp.spot_check(cfg, b)
    assert list(t["method"]) == ["random", "gradient"]  # mask_policy does not apply to a DQN agent
    assert (t["ms"] > 0).all() and list(t["forward_passes"]) == [1, 2]
    assert t.set_index("method").loc["gradient", "benchmark_ms"] == 4.0
    assert t["input_shape"].iloc[0] == "4×84×84"
    assert len(list((tmp_path / "results").glob("runtime_spot-*/value.json"))) == 1
    again = sp.spot_check(cfg, b)  # from the cache: the same times
    assert list(again["ms"]) == list(t["ms"])
    html = fg.style_spot_check(t, "cap").to_html()
    assert "ms/map" in html and "Benchmark" in html
    assert "only methods with few forward passes" in sp.spot_summary(t).data
