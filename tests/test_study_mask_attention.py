"""Chapter 5 (saliency_book.ch5_*): mask statistics, plays, the profile's ranking, A3C vs Mask-A3C.

Our own actor-critic agents are not trained yet, so the tests save tiny untrained
MaskA3CNet agents (and synthetic shipped-agent folders with logs) in temporary
directories; every cache goes to a temporary ``results_dir``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import saliency_book.ch5_mask_attention as ma
import saliency_book.ch5_rankings as rk
import saliency_book.ch5_scores as sc
from saliency_book.common import Note
from saliency_study.profiles import PROFILES


def _save_ac(agents_dir, variant: str, seed: int = 0, game: str = "Breakout"):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(seed)
    agent = build_agent("MaskA3CNet", {"n_actions": 4, "variant": variant}, game=game, preset="mask_a3c")
    return save_agent(agent, agents_dir / f"a3c-{game}-{variant}-s{seed}", algo="a3c-sync", variant=variant,
                      seed=seed, frames=4_000)


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("agents")
    for v in ("double", "policy", "none"):
        _save_ac(d, v)
    return d


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return str(tmp_path_factory.mktemp("results"))


def _play(masks: dict, n: int = 5, label: str = "toy agent") -> ma.MaskPlay:
    return ma.MaskPlay(spec="toy", label=label, game="Breakout", steps=np.arange(n), episode=np.zeros(n, int),
                       actions=np.zeros(n, int), value=np.linspace(0, 1, n), reset=np.r_[True, np.zeros(n - 1, bool)],
                       masks=masks, frames={0: np.zeros((210, 160, 3), np.uint8), n - 1: np.zeros((210, 160, 3), np.uint8)},
                       action_names=("NOOP", "FIRE", "RIGHT", "LEFT"))


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


# -- per-step statistics ---------------------------------------------------------------------

def test_mask_statistics_on_hand_computable_masks():
    uniform = np.full((1, 2, 2), 0.5)
    peak = np.array([[[1.0, 0.0], [0.0, 0.0]]])
    m = np.concatenate([uniform, peak])
    np.testing.assert_allclose(ma.mask_mass(m), [0.5, 0.25])
    np.testing.assert_allclose(ma.mask_fraction_open(m), [0.0, 0.25])  # 0.5 is not > 0.5
    np.testing.assert_allclose(ma.mask_entropy(m), [1.0, 0.0], atol=1e-12)
    assert np.isnan(ma.mask_entropy(np.zeros((1, 2, 2))))[0]
    with pytest.raises(ValueError, match="non-negative"):
        ma.mask_entropy(-m)
    with pytest.raises(ValueError, match=r"shape \(N, H, W\)"):
        ma.mask_mass(np.ones((2, 2)))


def test_topk_iou_spearman_and_chance_level():
    a = np.arange(16, dtype=float).reshape(1, 4, 4)
    assert ma.topk_iou(a, a, 0.25)[0] == 1.0
    assert ma.topk_iou(a, -a, 0.25)[0] == 0.0  # top 4 vs bottom 4 cells
    b = a.copy()
    b[0, 3, 3] = -1  # one of the top 4 cells drops out: 3 shared of 5
    assert ma.topk_iou(a, b, 0.25)[0] == pytest.approx(3 / 5)
    np.testing.assert_allclose(ma.mask_spearman(np.concatenate([a, a]), np.concatenate([a, -a])), [1.0, -1.0])
    with pytest.raises(ValueError, match="differ in shape"):
        ma.topk_iou(a, a[:, :2], 0.25)
    # two random 2-sets of 4 cells: overlap 0, 1, 2 with p 1/6, 4/6, 1/6 -> IoU 0, 1/3, 1
    assert ma.chance_iou(4, 0.5) == pytest.approx(7 / 18)
    assert ma.chance_iou(100, 0.01) == pytest.approx(0.01)
    rng = np.random.default_rng(0)
    mc = ma.topk_iou(rng.random((4000, 10, 10)), rng.random((4000, 10, 10)), 0.1).mean()
    assert mc == pytest.approx(ma.chance_iou(100, 0.1), abs=0.01)


def test_series_summary_and_numbers_from_a_synthetic_play():
    rng = np.random.default_rng(1)
    pol = rng.random((5, 10, 10)) * 0.2
    val = pol.copy()
    val[:, :2] = 0.9  # the value mask opens two rows more
    play = _play({"policy": pol, "value": val})
    s = ma.mask_series(play, top=0.1)
    assert list(s["t"]) == list(range(5)) and s["reset"].tolist() == [True, False, False, False, False]
    np.testing.assert_allclose(s["value_open"], 0.2)
    assert (s["policy_open"] == 0).all() and (s["value_mass"] > s["policy_mass"]).all()
    summary = ma.series_summary(play, Note("missing"), {"x": _play({"policy": pol}, label="policy-only agent")})
    assert set(summary["agent"]) == {"toy agent", "policy-only agent"}
    only = summary[summary["agent"] == "policy-only agent"].set_index("stat")
    assert np.isnan(only.loc["iou", "mean"]) and np.isnan(only.loc["value_mass", "mean"])
    html = ma.show_mask_summary(summary, "Breakout", "cap").to_html()
    assert "reference notes" in html and "0.12–0.16" in html and "20.0 % ± 0.0 %" in html
    assert isinstance(ma.show_mask_summary(summary.iloc[:0], "Breakout", "cap"), Note)
    n = ma.series_numbers(play, top=0.1)
    assert n["steps"] == 5 and n["resets"] == 0 and n["value_open"] == pytest.approx(0.2)
    assert n["value_mass"] == pytest.approx(s["value_mass"].mean()) and n["chance_iou"] == pytest.approx(ma.chance_iou(100))
    assert all(np.isnan(v) for v in ma.series_numbers(Note("x")).values())
    assert set(ma.series_numbers(Note("x"))) == set(n)  # the prose can quote every name in either case


def test_figures_draw_both_masks_and_pass_notes_through():
    from IPython.display import Image

    rng = np.random.default_rng(2)
    play = _play({"policy": rng.random((5, 10, 10)), "value": rng.random((5, 10, 10))})
    for img in (ma.show_filmstrip(play, dpi=40), ma.show_series(play, dpi=40)):
        assert isinstance(img, Image) and img.data[:8] == b"\x89PNG\r\n\x1a\n"
    single = _play({"policy": rng.random((5, 10, 10))})
    assert isinstance(ma.show_series(single, dpi=40), Image)  # no agreement panel data, still draws
    note = Note("gone")
    assert ma.show_filmstrip(note) is note and ma.show_series(note) is note


# -- playing our own Mask-A3C agents -------------------------------------------------------------

def test_conv_resets_and_filmstrip_indices():
    h = torch.ones(4, 2, 3, 3)
    h[0] = 0
    h[2] = 0
    c = torch.ones(4, 2, 3, 3)
    c[0] = 0
    assert ma.conv_resets((h, c)).tolist() == [True, False, False, False]  # step 2: h zero but c not
    assert ma.filmstrip_indices(10, 4).tolist() == [0, 3, 6, 9]
    assert ma.filmstrip_indices(3, 6).tolist() == [0, 1, 2]


def test_mask_agents_finds_masked_actor_critics_only(agents_dir, tmp_path):
    found = ma.mask_agents("Breakout", agents_dir)
    assert sorted(found["variant"]) == ["double", "policy"]  # the 'none' agent has no mask
    assert ma.mask_agents("MsPacman", agents_dir).empty
    assert ma.mask_agents("Breakout", tmp_path / "nothing").empty


def test_play_masks_records_and_caches_an_untrained_agent(agents_dir, results):
    spec = str(agents_dir / "a3c-Breakout-double-s0")
    play = ma.play_masks(spec, steps=6, seed=0, filmstrip=3, label="toy", results_dir=results)
    assert len(play) == 6 and set(play.masks) == {"policy", "value"}
    assert play.masks["policy"].shape == (6, 10, 10) and ((play.masks["value"] > 0) & (play.masks["value"] < 1)).all()
    assert sorted(play.frames) == [0, 2, 5] and play.frames[0].shape == (210, 160, 3)
    assert play.reset[0] and play.steps[0] == 0 and play.action_names[1] == "FIRE"
    cached = ma.play_masks(spec, steps=6, seed=0, filmstrip=3, label="toy", results_dir=results)
    np.testing.assert_array_equal(cached.masks["policy"], play.masks["policy"])
    assert len(list((ma.repo_path(results) / "_local" / "media").glob("mask_play-*.npz"))) == 1
    with pytest.raises(ValueError, match="has no attention masks"):
        ma.play_masks(str(agents_dir / "a3c-Breakout-none-s0"), steps=2, results_dir=results)


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
    assert all(np.isnan(v) for v in rk.ranking_numbers(rk.chapter_ranking(cfg)).values())
    assert isinstance(rk.show_ranking(rk.chapter_ranking(cfg), "cap"), Note)
    assert isinstance(rk.show_mask_ranks(rk.chapter_ranking(cfg), "cap"), Note)


# -- the masks in the study's table ---------------------------------------------------------------

def _rows(experiment, measure, values: dict, *, substrate=pd.NA, level=pd.NA, layer=pd.NA, agent="official:Breakout"):
    return [{"experiment": experiment, "agent": agent, "game": "Breakout", "method": m, "substrate": substrate,
             "state": s, "level": level, "layer": layer, "step": pd.NA, "measure": measure, "value": v}
            for m, vs in values.items() for s, v in enumerate(vs)]


def _table(agent="official:Breakout"):
    ins = {"occlusion": [0.9, 0.8, 0.85, 0.95, 0.9, 0.88, 0.83, 0.97],
           "mask_policy": [0.5, 0.6, 0.55, 0.52, 0.58, 0.51, 0.57, 0.53],
           "random": [0.1, 0.2, 0.15, 0.12, 0.11, 0.13, 0.16, 0.14]}
    rows = _rows("insertion", "prob_auc", ins, substrate="black", agent=agent)
    rows += _rows("insertion", "prob_auc", {k: [1 - x for x in v] for k, v in ins.items()}, substrate="random", agent=agent)
    rows += _rows("deletion", "prob_auc", ins, substrate="black", agent=agent)  # lower is better: order flips
    sanity_full = {"occlusion": [0.2] * 8, "mask_policy": [0.05, 0.1, 0.08, 0.07, 0.06, 0.09, 0.04, 0.03]}
    rows += _rows("sanity", "spearman", sanity_full, level=6, layer="conv1", agent=agent)
    rows += _rows("sanity", "spearman", {"occlusion": [0.0] * 8, "mask_policy": [1.0] * 8}, level=1, layer="heads", agent=agent)
    rows += _rows("sanity", "spearman", {"occlusion": [0.9] * 8, "mask_policy": [0.9] * 8}, layer="random_uniform", agent=agent)
    df = pd.DataFrame(rows)
    per_step = df.iloc[:3].assign(step=1, value=99.0)  # curve rows are ignored
    return pd.concat([df, per_step], ignore_index=True)


def _ranking(table, substrate="black"):
    return rk.rank_methods(table, substrates=[substrate], test="wilcoxon")


def test_method_ranking_uses_direction_substrate_and_full_randomisation():
    r = _ranking(_table())
    assert list(r["criterion"].unique()) == ["ins_prob", "del_prob", "sanity"]  # no value_auc rows in the table
    ins = r[r["criterion"] == "ins_prob"].set_index("method")
    assert ins["rank"].to_dict() == {"occlusion": 1, "mask_policy": 2, "random": 3} and (ins["of"] == 3).all()
    assert ins.loc["mask_policy", "mean"] == pytest.approx(np.mean([0.5, 0.6, 0.55, 0.52, 0.58, 0.51, 0.57, 0.53]))
    assert ins.loc["mask_policy", "ci_low"] < ins.loc["mask_policy", "mean"] < ins.loc["mask_policy", "ci_high"]
    assert ins.loc["mask_policy", "better_than"] == "random"  # 8 of 8 pairs: p = 0.008, Holm 0.023
    assert ins.loc["mask_policy", "worse_than"] == "occlusion"
    dele = r[r["criterion"] == "del_prob"].set_index("method")
    assert dele["rank"].to_dict() == {"random": 1, "mask_policy": 2, "occlusion": 3}
    san = r[r["criterion"] == "sanity"].set_index("method")
    assert san.loc["mask_policy", "rank"] == 1 and pd.isna(san.loc["mask_policy", "substrate"])
    assert san.loc["occlusion", "mean"] == pytest.approx(0.2)  # level 6 only, not level 1 or the reference rows
    other = _ranking(_table(), "random").set_index(["criterion", "method"])
    assert other.loc[("ins_prob", "random"), "rank"] == 1
    with pytest.raises(ValueError, match="rows of one agent"):
        _ranking(pd.concat([_table(), _table("dqn")]))


def test_ranking_display_verdict_and_numbers():
    r = _ranking(_table())
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
    assert rk.ranking_numbers(r) == {"rank_states": 8, "rank_min_p": pytest.approx(2 / 2 ** 8)}
    five = rk.ranking_numbers(_ranking(_table()[lambda d: d["state"] < 5]))
    assert five["rank_min_p"] == pytest.approx(0.0625)  # 2 / 2^5: no Holm-corrected test can reach 0.05


def test_our_rankings_run_the_study_sweep_on_each_shipped_mask_agent(tmp_path, monkeypatch):
    from saliency_study import study

    agents = tmp_path / "agents"
    _save_ac(agents, "double", seed=1)  # the tiny profile ranks only the first in name order: seed 0
    _save_ac(agents, "double")
    _save_ac(agents, "none")  # no masks: not ranked here
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
    swept = set(pd.concat([pd.read_parquet(p, columns=["agent"]) for p in (tmp_path / "r" / "sweep").rglob("*.parquet")])["agent"])
    assert swept and all(a.endswith("a3c-Breakout-double-s0") for a in swept), swept  # seed 1 was not swept
    html = rk.show_our_rankings(ranked, "cap").data
    assert "Agent: our Mask-A3C (both masks) agent a3c-Breakout-double-s0." in html and "Policy mask" in html
    note = rk.our_rankings(ma.MaskAttentionChapter(profile="tiny", agents_dir=str(tmp_path / "none")))
    assert isinstance(note, Note) and "ranking above is therefore of the official agent only" in note.text
    assert rk.show_our_rankings(note, "cap") is note


def test_coarse_numbers_name_the_profiles_parameters():
    quick = rk.coarse_numbers("quick")
    assert quick["coarse_states"] == PROFILES["quick"].sweep["mask_a3c"].n_states and "occlusion patch = 4" in quick["coarse_params"]
    assert rk.coarse_numbers("full")["coarse_params"] == "none"


# -- A3C vs Mask-A3C ---------------------------------------------------------------------------

def _shipped(agents_dir, variant, seed, score, frames=2_000_000, logs=True):
    d = agents_dir / f"a3c-Breakout-{variant}-s{seed}"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"algo": "a3c-sync", "game": "Breakout", "variant": variant, "seed": seed,
                                             "frames": frames, "eval_score": score, "arch": "MaskA3CNet"}))
    if logs:
        f = np.arange(1, 11) * frames / 10
        pd.DataFrame({"step": f / 4, "frames": f, "episode_score": np.linspace(0, score, 10)}).to_csv(d / "train_log.csv", index=False)
        pd.DataFrame({"step": f[::5] / 4, "frames": f[::5], "eval_mean": [score / 2, score], "eval_std": [1.0, 2.0]}
                     ).to_csv(d / "eval_log.csv", index=False)
    return d


def test_actor_critic_runs_reads_shipped_agents_scores_and_runs_in_progress(tmp_path):
    agents, runs = tmp_path / "agents", tmp_path / "runs"
    _shipped(agents, "none", 0, 10.0)
    _shipped(agents, "double", 0, 30.0)
    _shipped(agents, "double", 1, 50.0, logs=False)
    (agents / "dqn-Breakout-s0").mkdir()
    (agents / "dqn-Breakout-s0" / "meta.json").write_text(json.dumps({"algo": "dqn", "game": "Breakout"}))
    pd.DataFrame({"agent": ["a3c-Breakout-double-s1"], "episodes": [10], "mean": [40.0], "std": [3.0]}).to_csv(
        agents / "scores.csv", index=False)
    (runs / "a3c-Breakout-value-s0").mkdir(parents=True)
    pd.DataFrame({"frames": [100, 200], "episode_score": [1.0, 2.0]}).to_csv(runs / "a3c-Breakout-value-s0" / "train_log.csv", index=False)
    (runs / "a3c-Breakout-double-s0").mkdir()  # the shipped copy wins
    r = sc.actor_critic_runs("Breakout", agents, runs)
    assert list(r["agent"]) == ["a3c-Breakout-none-s0", "a3c-Breakout-value-s0", "a3c-Breakout-double-s0",
                                "a3c-Breakout-double-s1"]
    by = r.set_index("agent")
    assert by.loc["a3c-Breakout-double-s1", "mean"] == 40.0  # scores.csv beats meta.json's eval_score
    assert by.loc["a3c-Breakout-double-s0", "mean"] == 30.0 and pd.isna(by.loc["a3c-Breakout-double-s1", "logs"])
    assert not by.loc["a3c-Breakout-value-s0", "shipped"] and by.loc["a3c-Breakout-value-s0", "frames"] == 200
    assert sc.actor_critic_runs("MsPacman", agents, runs).empty

    t = sc.a3c_score_table(r, "Breakout")
    ours = t[t["variant"] != "official"].set_index("variant")
    assert list(ours.index) == ["none", "double"]  # the value run in progress has no final score
    assert ours.loc["double", "mean"] == 35.0 and ours.loc["double", "seeds"] == 2
    assert ours.loc["double", "sd_seeds"] == pytest.approx(np.std([30, 40], ddof=1)) and np.isnan(ours.loc["none", "sd_seeds"])
    # training games in the last 10 % of frames (> 1.8 M of 2 M: the last logged game); seed 1 has no log
    assert ours.loc["double", "train_final"] == 30.0 and ours.loc["double", "train_games"] == 1
    assert ours.loc["none", "train_final"] == 10.0
    if ma.official_available("Breakout", logs=True):
        off = t[t["variant"] == "official"].iloc[0]
        assert off["frames"] == 2_000_000 and np.isfinite(off["mean"])
    assert "Mask-A3C (both masks)" in sc.show_scores(t, "cap").to_html()

    from IPython.display import Image

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
            _shipped(agents, v, seed, m, frames=10_000_000)
    runs = sc.actor_critic_runs("Breakout", agents, None)
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
    r = sc.actor_critic_runs("Breakout", tmp_path / "agents", tmp_path / "runs")
    assert r.empty
    for got in (sc.show_curves(r, "Breakout"), sc.a3c_score_table(r, "Breakout")):
        assert isinstance(got, Note) and "not trained yet" in got.title.lower()
    note = sc.seed_comparisons("Breakout", tmp_path / "agents")
    assert "not trained yet" in note.title.lower()
    v = sc.comparison_verdicts(note)  # still one row per protocol, for the prose
    assert list(v["protocol"]) == ["greedy", "sticky"] and (v["verdict"] == "no verdict").all() and v["diff"].isna().all()


def test_seed_comparison_gives_no_verdict_from_one_seed_and_a_ci_over_seeds_from_three(tmp_path):
    from saliency_lib.train.scores import SCORES_COLUMNS

    rows = []
    for variant, means in (("none", [300.0, 340.0, 320.0]), ("double", [330.0])):
        for seed, m in enumerate(means):
            for protocol in ("greedy", "sticky"):
                rows.append({"agent": f"a3c-Breakout-{variant}-s{seed}", "algo": "a3c-sync", "game": "Breakout", "variant": variant,
                             "seed": seed, "frames": 10_000_000, "protocol": protocol, "episodes": 3, "distinct_games": 3,
                             "mean": m, "std": 1.0, "scores": f"[{m - 1}, {m}, {m + 1}]", "random_score": 1.7})
    pd.DataFrame(rows).reindex(columns=SCORES_COLUMNS).to_csv(tmp_path / "scores.csv", index=False)
    c = sc.seed_comparisons("Breakout", tmp_path)
    assert set(c) == {"greedy", "sticky"} and c["greedy"].verdict is None  # one seed of double: no verdict
    v = sc.comparison_verdicts(c).set_index("protocol")
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
    v = sc.comparison_verdicts(c).set_index("protocol")
    assert isinstance(c["sticky"], Note) and "No sticky evaluation" in v.loc["sticky", "reason"]
    assert np.isnan(v.loc["sticky", "diff"]) and v.loc["sticky", "verdict"] == "no verdict"
    assert "sticky" not in sc.show_comparison(c, "cap").to_html()


def test_comparison_tables_show_the_columns_the_study_adds():
    """A statistic the study's comparison gains (a learning-curve aggregate per variant, the minimum detectable
    effect of the difference) shows as a column without a change in the chapter."""
    from saliency_study.variants import compare_variants

    rows = [{"agent": f"a3c-Breakout-{v}-s{s}", "algo": "a3c-sync", "game": "Breakout", "variant": v, "seed": s,
             "frames": 10_000_000, "protocol": "sticky", "mean": m + 10 * s} for v, m in (("none", 200.0), ("double", 300.0))
            for s in range(3)]
    c = compare_variants(pd.DataFrame(rows), protocol="sticky")
    c.table["curve_iqm"] = [123.4, 234.5]
    c.difference["mde_80"] = 98.76
    html = sc.show_comparison({"sticky": c}, "cap").to_html()
    assert "curve_iqm" in html and "234.5" in html
    v = sc.comparison_verdicts({"sticky": c})
    assert v.loc[1, "verdict"] == "higher" and v.loc[1, "mde_80"] == pytest.approx(98.76)
    html = sc.show_verdicts(v, "cap").to_html()
    assert "mde_80" in html and "98.8" in html and "+100.0" in html
