"""Chapter 5 (saliency_book.ch5_*): the chapter's configuration, its loading and what it shows.

The masks' statistics, the rankings and the comparison of the variants are tested with their study
modules (tests/study/test_study_masks.py, test_study_rankings.py, test_study_variants.py); these tests build
their inputs with the same toys (tests/toy_study.py). Every cache goes to a temporary ``results_dir``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from toy_study import save_ac, save_acs, ship_fake_run, toy_play, toy_rank_table

import saliency_book.ch5_mask_attention as ma
import saliency_book.ch5_rankings as rk
import saliency_book.ch5_scores as sc
from saliency_book.common import Note
from saliency_study import masks, rankings, variants
from saliency_study.profiles import PROFILES


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory):
    return save_acs(tmp_path_factory.mktemp("agents"))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return str(tmp_path_factory.mktemp("results"))


# -- configuration ---------------------------------------------------------------------------

def test_config_accepts_papermill_values_and_rejects_bad_ones():
    from saliency_book.config import ChapterConfig

    cfg = ma.MaskAttentionChapter(steps="25", filmstrip="4", top="0.2", seed="3", profile="tiny")
    assert isinstance(cfg, ChapterConfig) and (cfg.steps, cfg.filmstrip, cfg.top, cfg.seed) == (25, 4, 0.2, 3)
    assert cfg.play_steps == 25 and cfg.official == "official:Breakout"
    assert ma.MaskAttentionChapter(profile="tiny", steps="None").play_steps == PROFILES["tiny"].play_steps == 40
    assert "`top=0.1`" in ma.MaskAttentionChapter(profile="tiny")._repr_markdown_()
    with pytest.raises(ValueError, match=r"top must be a real number in \(0, 1\], got 0"):
        ma.MaskAttentionChapter(top=0)
    with pytest.raises(ValueError, match="unknown substrate 'gray'"):
        ma.MaskAttentionChapter(substrate="gray")
    with pytest.raises(ValueError, match="unknown executor 'slurm'"):
        ma.MaskAttentionChapter(executor="slurm")
    with pytest.raises(ValueError, match="steps must be an integer >= 1, got 0"):
        ma.MaskAttentionChapter(steps=0)
    with pytest.raises(ValueError, match="unknown profile"):
        ma.MaskAttentionChapter(profile="huge")
    errors = []
    for cls in (ma.MaskAttentionChapter, ChapterConfig):  # the base's message, word for word
        with pytest.raises(ValueError) as e:
            cls(seed="x")
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "seed must be an integer >= 0" in errors[0]


# -- the masks over play --------------------------------------------------------------------

def test_mask_summary_table_beside_the_reference_notes():
    rng = np.random.default_rng(1)
    pol = rng.random((5, 10, 10)) * 0.2
    val = pol.copy()
    val[:, :2] = 0.9  # the value mask opens two rows more
    summary = masks.series_summary(toy_play({"policy": pol, "value": val}), Note("missing"),
                                   {"x": toy_play({"policy": pol}, label="policy-only agent")})
    t = ma.show_mask_summary(summary, "Breakout", "cap").data.set_index("agent")
    assert list(t.columns) == ["steps", *ma.SUMMARY_COLUMNS.values()]
    assert t.loc["toy agent", "value: cells > 0.5"] == "20.0 % ± 0.0 %" and t.loc["policy-only agent", "top-cells IoU"] == "–"
    assert t.loc["released checkpoint, whole games (reference notes)", "policy: mean M"] == "0.12–0.16"
    assert isinstance(ma.show_mask_summary(summary.iloc[:0], "Breakout", "cap"), Note)
    assert all(np.isnan(v) for v in masks.series_numbers(Note("x")).values())  # a Note is a missing play


def test_figures_draw_both_masks_and_pass_notes_through():
    from IPython.display import Image

    rng = np.random.default_rng(2)
    play = toy_play({"policy": rng.random((5, 10, 10)), "value": rng.random((5, 10, 10))})
    for img in (ma.show_filmstrip(play, dpi=40), ma.show_series(play, dpi=40)):
        assert isinstance(img, Image) and img.data[:8] == b"\x89PNG\r\n\x1a\n"
    single = toy_play({"policy": rng.random((5, 10, 10))})
    assert isinstance(ma.show_series(single, dpi=40), Image)  # no agreement panel data, still draws
    note = Note("gone")
    assert ma.show_filmstrip(note) is note and ma.show_series(note) is note


# -- playing our own Mask-A3C agents -------------------------------------------------------------

def test_our_agents_fill_the_tabs_or_say_they_are_missing(agents_dir, results, tmp_path):
    import ipywidgets as w

    cfg = ma.MaskAttentionChapter(profile="tiny", steps=4, filmstrip=2, results_dir=results, agents_dir=str(agents_dir))
    plays = ma.our_mask_plays(cfg)
    assert sorted(plays) == ["a3c-Breakout-double-s0", "a3c-Breakout-policy-s0"]
    assert set(plays["a3c-Breakout-policy-s0"].masks) == {"policy"}
    assert "policy-mask A3C" in plays["a3c-Breakout-policy-s0"].label
    tabs = ma.show_our_plays(plays, dpi=30)
    assert isinstance(tabs, w.Tab) and len(tabs.children) == 2 and tabs.get_title(0) == "a3c-Breakout-double-s0"
    empty = ma.MaskAttentionChapter(profile="tiny", results_dir=results, agents_dir=str(tmp_path))
    note = ma.our_mask_plays(empty)
    assert isinstance(note, Note) and "not trained yet" in note.title and "official agent only" in note.text
    assert f"`{tmp_path.as_posix()}` holds no `a3c-Breakout-<variant>-s<seed>` agent" in note.text
    default = ma.our_mask_plays(ma.MaskAttentionChapter(profile="tiny", agents_dir="data/no-such-agents"))
    assert "`data/no-such-agents` holds no" in default.text  # shown relative to the repository
    assert ma.show_our_plays(note) is note


def test_missing_official_agent_gives_notes():
    cfg = ma.MaskAttentionChapter(game="Frostbite", profile="tiny")
    for got in (ma.official_play(cfg), rk.chapter_ranking(cfg)):
        assert isinstance(got, Note) and "no Mask-A3C checkpoint for Frostbite" in got.text
    assert all(np.isnan(v) for v in rankings.ranking_numbers(rk.chapter_ranking(cfg)).values())
    assert isinstance(rk.show_ranking(rk.chapter_ranking(cfg), "cap"), Note)
    assert isinstance(rk.show_mask_ranks(rk.chapter_ranking(cfg), "cap"), Note)


# -- the masks in the study's table ---------------------------------------------------------------

def _ranking(table, substrate="black"):
    return rankings.rank_methods(table, substrates=[substrate], test="wilcoxon")


def test_ranking_display_verdict_and_numbers():
    r = _ranking(toy_rank_table())
    st = rk.show_ranking(r, "cap")
    t = st.data
    assert list(t["method"]) == ["Occlusion", "Policy mask", "Random"]  # order of the first criterion
    assert t.loc[1, "insertion AUC, π(a) ↑"].endswith("] #2") and t.loc[2, "Spearman after full randomisation ↓"] == "–"
    assert t.columns[-1] == "n / ESS" and t.loc[0, "n / ESS"].startswith("8 / ")
    assert "font-weight: bold" in st.to_html()
    v = rk.show_mask_ranks(r, "cap").data  # the verdict: one row per mask present (no value mask here)
    assert list(v["mask"]) == ["Policy mask"] and v.loc[0, "game"] == "Breakout"
    assert v.loc[0, "insertion AUC, π(a) ↑"] == "#2 of 3 (↑1 ↓1)"  # Occlusion better, Random worse
    assert v.loc[0, "Spearman after full randomisation ↓"].startswith("#1 of 2")


def test_our_rankings_run_the_study_sweep_on_each_shipped_mask_agent(tmp_path, monkeypatch):
    from saliency_study import study

    agents = tmp_path / "agents"
    save_ac(agents, "double", seed=1)  # the tiny profile ranks only the first in name order: seed 0
    save_ac(agents, "double")
    save_ac(agents, "none")  # no masks: not ranked here
    assert PROFILES["tiny"].ranked_own_agents == 1 and PROFILES["quick"].ranked_own_agents is None
    monkeypatch.setattr(study, "STUDY_METHODS", ("gradient", "mask_policy", "mask_value"))  # the study's, smaller
    cfg = ma.MaskAttentionChapter(profile="tiny", results_dir=str(tmp_path / "r"), agents_dir=str(agents))
    ranked = rk.our_rankings(cfg)
    (label, r), = ranked.items()
    assert "a3c-Breakout-double-s0" in label
    assert set(r["method"]) == {"gradient", "mask_policy", "mask_value", "random"}
    assert {"ins_prob", "del_prob", "sanity"} <= set(r["criterion"]) and (r["n"] <= 2).all()
    stored = {p.parent.name for p in (tmp_path / "r" / "sweep").rglob("*.parquet")}
    assert stored == {"sanity", "degradation"}  # the study's units, so `saliency-study run` can store them ahead
    swept = set(pd.concat([pd.read_parquet(p, columns=["agent"])
                           for p in (tmp_path / "r" / "sweep").rglob("*.parquet")])["agent"])
    assert swept and all(a.endswith("a3c-Breakout-double-s0") for a in swept), swept  # seed 1 was not swept
    html = rk.show_our_rankings(ranked, "cap").data
    assert "Agent: our Mask-A3C (both masks) agent a3c-Breakout-double-s0." in html and "Policy mask" in html
    note = rk.our_rankings(ma.MaskAttentionChapter(profile="tiny", agents_dir=str(tmp_path / "none")))
    assert isinstance(note, Note) and "ranking above is therefore of the official agent only" in note.text
    assert rk.show_our_rankings(note, "cap") is note


def test_coarse_numbers_name_the_profiles_parameters():
    quick = rk.coarse_numbers("quick")
    assert quick["coarse_states"] == PROFILES["quick"].sweep["mask_a3c"].n_states
    assert "occlusion patch = 4" in quick["coarse_params"]
    assert rk.coarse_numbers("full")["coarse_params"] == "none"


# -- A3C vs Mask-A3C ---------------------------------------------------------------------------

def test_final_scores_and_curves_are_shown(tmp_path):
    from IPython.display import Image

    agents = tmp_path / "agents"
    ship_fake_run(agents, "none", 0, 10.0)
    ship_fake_run(agents, "double", 0, 30.0)
    ship_fake_run(agents, "double", 1, 50.0)
    r = variants.actor_critic_runs("Breakout", agents, None)
    st = sc.show_scores(variants.final_scores(r, "Breakout"), "cap")
    t = st.data.set_index("Model")
    assert t.loc["Mask-A3C (both masks)", "Per seed"] == "30.0, 50.0" and t.loc["A3C (no mask)", "Seeds"] == 1
    assert t.loc["Mask-A3C (both masks)", "From"] == "our agents (greedy evaluation)"
    assert "40.0" in st.to_html() and "Training games, last 10% of frames" in t.columns
    assert isinstance(sc.show_curves(r, "Breakout", dpi=40), Image)


def test_curves_figure_marks_the_official_milestones_at_equal_frames(tmp_path, monkeypatch):
    from IPython.display import Image
    from matplotlib.container import ErrorbarContainer
    from matplotlib.figure import Figure

    from saliency_lib.agents.official import official_test_log
    from saliency_lib.train.scores import SCORES_COLUMNS
    from saliency_study.variants import compare_variants

    # a synthetic official log: one test game per million global steps, scoring the step in millions,
    # so the milestone at m million steps averages m-4 ... m+5: m + 0.5
    logs = tmp_path / "official" / "logs"
    logs.mkdir(parents=True)
    lines = [f"{k * 1_000_000},00h 00m 00s,10,{float(k)},0.0" for k in range(0, 111)]
    (logs / "BreakoutNoFrameskip-v4_Mask-A3C-double+ConvLSTM_test.csv").write_text(
        "global_step,time,episode length,reward_sum,reward_mean\n" + "\n".join(lines) + "\n")
    monkeypatch.setenv("MASK_A3C_OFFICIAL_DIR", str(tmp_path / "official"))
    agents = tmp_path / "agents"
    seeds = {"none": [300.0, 340.0, 320.0], "value": [200.0]}
    for v, means in seeds.items():
        for seed, m in enumerate(means):
            ship_fake_run(agents, v, seed, m, frames=10_000_000)
    runs = variants.actor_critic_runs("Breakout", agents, None)
    table = pd.DataFrame([{"agent": f"a3c-Breakout-{v}-s{seed}", "algo": "a3c-sync", "game": "Breakout", "variant": v,
                           "seed": seed, "frames": 10_000_000, "protocol": "greedy", "mean": m}
                          for v, means in seeds.items() for seed, m in enumerate(means)]).reindex(columns=SCORES_COLUMNS)
    comparison = compare_variants(table, protocol="greedy")

    ax = Figure().subplots()
    handles = sc._official_course(ax, official_test_log("Breakout"), "Breakout", comparison, 10_000_000)
    diamonds = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert len(diamonds) == 1
    x, y = diamonds[0].get_data()
    assert list(x) == [4 * m * 1e6 for m in (5, 10, 20, 30, 50, 70, 100)]  # at equal frames: 4 per global step
    assert list(y) == [m + 0.5 for m in (5, 10, 20, 30, 50, 70, 100)]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    means = sorted(float(c.lines[0].get_ydata()[0]) for c in bars)
    assert means == [200.0, 320.0]  # one square per variant: the mean over its seeds
    none = comparison.table.set_index("variant").loc["none"]
    with_ci = [c for c in bars if c.has_yerr]
    assert len(with_ci) == 1  # the value variant has one seed: no interval
    seg = with_ci[0].lines[2][0].get_segments()[0]
    assert seg[0][1] == pytest.approx(none["ci_low"]) and seg[1][1] == pytest.approx(none["ci_high"])  # over seeds
    assert any("milestones" in h.get_label() for h in handles) and any("t-interval" in h.get_label() for h in handles)
    assert isinstance(sc.show_curves(runs, "Breakout", comparisons={"greedy": comparison}, dpi=40), Image)
    assert sc._greedy({"greedy": comparison}) is comparison and sc._greedy(comparison) is comparison
    assert sc._greedy(Note("none")) is None and sc._greedy({"greedy": Note("none")}) is None


def test_a3c_comparison_says_when_nothing_is_trained(tmp_path):
    r = variants.actor_critic_runs("Breakout", tmp_path / "agents", tmp_path / "runs")
    assert r.empty
    for got in (sc.show_curves(r, "Breakout"), sc.show_scores(variants.final_scores(r, "Breakout"), "cap")):
        assert isinstance(got, Note) and "not trained yet" in got.title.lower()
    c = sc.seed_comparisons("Breakout", tmp_path / "agents")
    assert list(c) == list(sc.MEASURES) and all(isinstance(n, Note) for n in c.values())
    assert "no scores table" in c["greedy"].text and "No final score, sticky actions to compare" in c["sticky"].text
    assert isinstance(sc.show_comparison(c, "cap"), Note)
    v = sc.comparison_verdicts(c)  # still one row per comparison, for the prose
    assert list(v["key"]) == list(sc.MEASURES) and (v["verdict"] == "no verdict").all() and v["diff"].isna().all()


def _scores_csv(path, seeds: dict):
    from saliency_lib.train.scores import SCORES_COLUMNS

    rows = []
    for variant, means in seeds.items():
        for seed, m in enumerate(means):
            for protocol in ("greedy", "sticky"):
                rows.append({"agent": f"a3c-Breakout-{variant}-s{seed}", "algo": "a3c-sync", "game": "Breakout",
                             "variant": variant, "seed": seed, "frames": 10_000_000, "protocol": protocol, "episodes": 3,
                             "distinct_games": 3, "mean": m, "std": 1.0, "scores": f"[{m - 1}, {m}, {m + 1}]",
                             "random_score": 1.7})
    pd.DataFrame(rows).reindex(columns=SCORES_COLUMNS).to_csv(path, index=False)


def test_seed_comparison_gives_no_verdict_from_one_seed_and_a_ci_over_seeds_from_three(tmp_path):
    _scores_csv(tmp_path / "scores.csv", {"none": [300.0, 340.0, 320.0], "double": [330.0]})
    c = sc.seed_comparisons("Breakout", tmp_path)
    assert c["greedy"].verdict is None  # one seed of double: no verdict
    assert isinstance(c["curve_mean"], Note)  # no shipped agent folder, so no evaluation checkpoints
    v = sc.comparison_verdicts(c).set_index("key")
    assert v.loc["greedy", "verdict"] == "no verdict" and "has 1 seed" in v.loc["greedy", "reason"]
    assert (v.loc["greedy", "n_baseline"], v.loc["greedy", "n_treatment"]) == (3, 1)
    assert v.loc["greedy", "mean_baseline"] == pytest.approx(320.0) and v.loc["greedy", "diff"] == pytest.approx(10.0)
    assert "has 1 seed" in sc.show_verdicts(sc.comparison_verdicts(c), "cap").to_html()
    html = sc.show_comparison(c, "cap").to_html()
    none = c["greedy"].table.set_index("variant").loc["none"]
    assert none["seeds"] == 3 and none["ci_low"] < 320 < none["ci_high"]  # over the 3 seeds, not the 9 games
    assert f"{none['ci_low']:,.1f} to {none['ci_high']:,.1f}" in html and "3 (3 distinct)" in html
    # a protocol nobody was evaluated under is a note, not an error
    greedy_only = pd.read_csv(tmp_path / "scores.csv")
    greedy_only[greedy_only["protocol"] == "greedy"].to_csv(tmp_path / "scores.csv", index=False)
    c = sc.seed_comparisons("Breakout", tmp_path)
    v = sc.comparison_verdicts(c).set_index("key")
    assert isinstance(c["sticky"], Note) and "no sticky evaluation" in v.loc["sticky", "reason"]
    assert np.isnan(v.loc["sticky", "diff"]) and v.loc["sticky", "verdict"] == "no verdict"
    assert "sticky" not in sc.show_comparison(c, "cap").to_html()


def test_the_verdict_table_shows_the_mde_the_margin_and_the_curves(tmp_path):
    _scores_csv(tmp_path / "scores.csv", {"none": [300.0, 340.0, 320.0], "double": [330.0, 310.0, 350.0]})
    for v, means in (("none", [300.0, 340.0, 320.0]), ("double", [330.0, 310.0, 350.0])):
        for s, m in enumerate(means):
            ship_fake_run(tmp_path, v, s, m, evals=[0.0, m / 2, m])
    c = sc.seed_comparisons("Breakout", tmp_path)
    assert all(isinstance(x, variants.VariantComparison) for x in c.values())
    t = sc.show_verdicts(sc.comparison_verdicts(c), "cap").data.set_index("Measure")
    assert list(t.index) == list(sc.MEASURES.values())
    sticky = c["sticky"].difference
    assert t.loc["final score, sticky actions", "Detectable at 80 % power"] == pytest.approx(sticky["mde"])
    assert t.loc["final score, sticky actions", "± 20 % of the baseline"] == pytest.approx(0.2 * 320.0)
    assert t.loc["final score, greedy", "Verdict"] == c["greedy"].verdict
    assert t.loc["checkpoints' IQM (greedy)", "Seeds"] == "3 and 3"
    html = sc.show_comparison(c, "cap").to_html()
    assert "checkpoints&#x27; mean (greedy)" in html or "checkpoints' mean (greedy)" in html


def test_comparison_tables_show_the_columns_the_study_adds():
    """A statistic the study's comparison gains (a learning-curve aggregate per variant, the minimum detectable
    effect of the difference) shows as a column without a change in the chapter."""
    rows = [{"agent": f"a3c-Breakout-{v}-s{s}", "algo": "a3c-sync", "game": "Breakout", "variant": v, "seed": s,
             "frames": 10_000_000, "protocol": "sticky", "mean": m + 10 * s} for v, m in (("none", 200.0), ("double", 300.0))
            for s in range(3)]
    c = variants.compare_variants(pd.DataFrame(rows), protocol="sticky")
    c.table["curve_iqm"] = [123.4, 234.5]
    c.difference["mde_80"] = 98.76
    html = sc.show_comparison({"sticky": c}, "cap").to_html()
    assert "curve_iqm" in html and "234.5" in html
    v = sc.comparison_verdicts({"sticky": c})
    assert v.loc[0, "verdict"] == "higher" and v.loc[0, "mde_80"] == pytest.approx(98.76)
    html = sc.show_verdicts(v, "cap").to_html()
    assert "mde_80" in html and "98.8" in html and "+100.0" in html
