"""Insertion and deletion (saliency_study.degradation, .agreement) and chapter 4's display of them: the paper's
table, AUC tables, rankings on the effective sample size, comparisons and paths."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import saliency_book.ch4_degradation as ch
import saliency_book.ch4_figures as fg
import saliency_study.agreement as pp
import saliency_study.degradation as dg
from saliency_book.common import Note
from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent
from saliency_lib.results import to_table
from saliency_study.profiles import PROFILES

DQN, A3C = "data/agents/dqn-Breakout-toy", "official:Breakout"
PRESETS = {DQN: "dqn", A3C: "mask_a3c"}


@pytest.fixture(autouse=True)
def _presets(monkeypatch):
    """Agent kinds of the synthetic tables' specs, without loading checkpoints."""
    monkeypatch.setattr(dg, "agent_preset", lambda spec: PRESETS.get(spec, "dqn"))


def _rows(agent: str, base: dict, *, measures=("q_ratio", "advantage"), n_states: int = 12, steps: int = 4,
          experiments=("insertion", "deletion"), substrates=("black", "random", "blur")) -> pd.DataFrame:
    """A tidy table whose per-state AUC of ``method`` is ``base[method] + 0.01·state`` plus a little independent
    jitter in every setting: the paired differences between methods are the jitter's, worth about as many
    effective states as there are states."""
    parts = []
    for exp in experiments:
        for sub in substrates:
            for method, b in base.items():
                recs = []
                jitter = np.random.default_rng(len(parts)).uniform(0, 0.005, n_states)  # no tied differences
                for st in range(n_states):
                    auc = b + 0.01 * st + jitter[st]
                    for m in measures:
                        recs.append({"state": st, "measure": f"{m}_auc", "value": auc})
                        recs.append({"state": st, "measure": f"{m}_auc_trapz", "value": -99.0})
                        recs += [{"state": st, "step": t, "measure": m, "value": auc * t / steps}
                                 for t in range(steps + 1)]
                    recs.append({"state": st, "step": 0, "measure": "q[0]", "value": 1.0})
                parts.append(to_table(pd.DataFrame(recs), experiment=exp, agent=agent, game="Breakout", method=method,
                                      substrate=sub, higher_is_better=exp == "insertion", seed=0))
    return pd.concat(parts, ignore_index=True)


BASE = {"occlusion": 3.0, "rise": 2.0, "sarfa": 1.0, "random": 0.5}


@pytest.fixture(scope="module")
def table():
    return _rows(DQN, BASE)


# -- the paper's table ---------------------------------------------------------------------------

def test_paper_table_is_complete_typed_and_matches_the_bold_cells():
    p = dg.PAPER_AUC
    assert len(p) == 4 * 2 * 2 * 8 and not p[["mean", "std"]].isna().any().any()
    assert str(p["mean"].dtype) == "float64" and str(p["method"].dtype) == "string"
    cell = p[(p.game == "MsPacman") & (p.substrate == "black") & (p.measure == "q_ratio") & (p.method == "occlusion")]
    assert cell[["mean", "std"]].to_numpy().tolist() == [[3.081, 3.178]]
    # the bold (best non-random) cells of reference §6.1, row by row (Pac-Man, Breakout, Frostbite, Space Inv.)
    bold = {("black", "q_ratio"): ["occlusion", "lime_felzenszwalb", "occlusion", "lime_slic"],
            ("black", "advantage"): ["sarfa", "lime_slic", "sarfa", "sarfa"],
            ("random", "q_ratio"): ["rise", "lime_quickshift", "rise", "rise"],
            ("random", "advantage"): ["rise", "rise", "ns_original", "lime_felzenszwalb"]}
    for (sub, meas), best in bold.items():
        got = [dg.best_non_random(p[(p.game == g) & (p.substrate == sub) & (p.measure == meas)].set_index("method")["mean"])
               for g in ch.PAPER_GAMES]
        assert got == best, (sub, meas)


def test_paper_factors_are_counted_from_the_paper_table(table):
    f = pp.factors(dg.auc_summary(table, n_resamples=20))
    counts = pp.paper_factor_counts(f)
    assert "Huber et al.: Pac-Man" in fg.show_factors(f, "cap").to_html()
    assert counts["sarfa_best"] == "Ms. Pac-Man, Frostbite, Space Invaders"
    assert counts["random_first"] == "Frostbite, Space Invaders"
    assert counts["games"] == 4 and counts["roles_differ_black"] == 4 and counts["roles_differ_random"] == 3
    paper = f[f["source"] == "paper"]
    assert len(paper) == 8 and (paper["n"] == 997).all() and paper["rho_black_value"].isna().sum() == 4
    assert list(dict.fromkeys(paper["agent"])) == ["MsPacman", "Breakout", "Frostbite", "SpaceInvaders"]


# -- configuration -------------------------------------------------------------------------------

def test_config_coerces_papermill_values_and_rejects_bad_ones():
    cfg = ch.DegradationChapter(agent="None", seed="2", alpha="0.1", profile="tiny")
    assert cfg.agent is None and cfg.seed == 2 and cfg.alpha == 0.1 and cfg.n_resamples == PROFILES["tiny"].bootstrap_resamples
    assert "profile `tiny`" in cfg._repr_markdown_()
    assert ch.chapter_agents(ch.DegradationChapter(agent="a, official:Breakout")) == ["a", "official:Breakout"]
    with pytest.raises(ValueError, match="unknown profile"):
        ch.DegradationChapter(profile="fast")
    with pytest.raises(ValueError, match="unknown executor 'slurm'"):
        ch.DegradationChapter(executor="slurm")
    with pytest.raises(ValueError, match=r"alpha must be a real number in \(0, 1\)"):
        ch.DegradationChapter(alpha=1.5)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got 'x'"):  # the base's message
        ch.DegradationChapter(seed="x")


# -- AUC tables ----------------------------------------------------------------------------------

def test_auc_summary_uses_the_plain_mean_auc_only(table):
    s = dg.auc_summary(table, n_resamples=100)
    assert len(s) == 2 * 3 * 2 * len(BASE)  # experiments × substrates × measures × methods
    occ = s[(s.method == "occlusion") & (s.experiment == "insertion") & (s.substrate == "black") & (s.measure == "q_ratio")]
    raw = table[(table.method == "occlusion") & (table.experiment == "insertion") & (table.substrate == "black")
                & (table.measure == "q_ratio_auc")]["value"].to_numpy()
    assert len(raw) == 12 and occ["mean"].iloc[0] == pytest.approx(raw.mean())  # not the _auc_trapz rows (-99)
    assert occ["std"].iloc[0] == pytest.approx(raw.std()) and 3.05 < raw.mean() < 3.065
    assert set(s.loc[s.experiment == "deletion", "higher_is_better"]) == {False}


def _bold(styler) -> dict:
    """Each row's bold cell (its column label) of a styled AUC table, None where no cell is bold."""
    styler._compute()
    rows, cols = styler.data.index, styler.data.columns
    bold = {}
    for (i, j), props in styler.ctx.items():
        if ("font-weight", "bold") in props:
            bold[rows[i]] = cols[j]
    return {r: bold.get(r) for r in rows}


def test_paper_layout_puts_our_rows_under_the_papers(table):
    s = dg.auc_summary(pd.concat([table, _rows(A3C, BASE, measures=("value", "prob"))]), n_resamples=50)
    shown = fg.show_paper_table(s, "black", "q_ratio", "cap")
    t = shown.data
    assert list(t.columns[:8]) == ["Occl", "NS", "SARFA", "RISE", "LIME-Felz", "LIME-Quick", "LIME-SLIC", "Rnd"]
    assert list(t.index[:4]) == ["Huber et al.: Pac-Man", "Huber et al.: Breakout", "Huber et al.: Frostbite",
                                 "Huber et al.: Space Inv."]
    assert t.loc["Huber et al.: Breakout", "LIME-Felz"] == "7.477±9.622"
    ours, a3c = f"Ours: {ch.agent_label(DQN)}", f"Ours: {ch.agent_label(A3C)}, state value V"
    assert a3c not in t.index  # V is degenerate: never beside the paper's Q-value table
    adv = fg.show_paper_table(s, "black", "advantage", "cap")
    assert _bold(adv)[f"Ours: {ch.agent_label(A3C)}, policy probability"] == "Occl"
    occ = s[(s.agent == DQN) & (s.method == "occlusion") & (s.experiment == "insertion") & (s.substrate == "black")
            & (s.measure == "q_ratio")].iloc[0]
    assert t.loc[ours, "Occl"] == f"{occ['mean']:.3f}±{occ['std']:.3f}" and t.loc[ours, "NS"] == "NA"
    assert _bold(shown)[ours] == "Occl"  # Rnd is never "best"
    assert _bold(shown)["Huber et al.: Breakout"] == "LIME-Felz"
    assert "font-weight: bold" in shown.to_html() and "cap" in shown.to_html()
    with pytest.raises(ValueError, match="the paper has insertion tables"):
        fg.show_paper_table(s, "blur", "q_ratio", "cap")


def test_our_auc_table_and_missing_agents(table):
    s = dg.auc_summary(table, n_resamples=50)
    shown = fg.show_auc_table(s, "dqn", "cap")
    t, best = shown.data, _bold(shown)
    assert len(t) == 12 and t.index[0] == ("insertion", "black", "Q-ratio") and t.index[-1] == ("deletion", "blur", "advantage")
    assert best[("deletion", "black", "Q-ratio")] == "SARFA"  # lowest deletion AUC wins
    assert best[("insertion", "black", "Q-ratio")] == "Occl"
    assert all(v in t.columns for v in best.values())  # one bold cell per row
    note = fg.show_auc_table(s, "mask_a3c", "cap")
    assert isinstance(note, Note) and "No Mask-A3C agent" in note.title
    assert fg.show_auc_table(Note("x"), "dqn", "cap").text == "x"  # a Note passes through
    assert ch.auc_summary(note) is note


# -- rankings ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big():
    """The same table on 100 states, worth enough effective ones for a verdict."""
    return _rows(DQN, BASE, n_states=100, steps=2)


def test_rankings_find_the_consistent_order_significant(big):
    r = dg.rankings(big, n_resamples=50)  # the differences' jitter is independent: every pair is tested
    ins = r[(r.experiment == "insertion") & (r.substrate == "black") & (r.measure == "q_ratio")]
    assert ins["method"].tolist() == ["occlusion", "rise", "sarfa", "random"]
    assert set(ins.iloc[0]["better_than"].split(", ")) == {"rise", "sarfa", "random"}
    dele = r[(r.experiment == "deletion") & (r.substrate == "black") & (r.measure == "q_ratio")]
    assert dele["method"].tolist()[0] == "random"  # lower is better in deletion
    html = fg.show_rankings(r, "dqn", "insertion", "cap").to_html()
    assert "font-weight: bold" in html and "#d9f2d9" in html and "#f8d7d7" not in html
    d = ch.ranking_detail(r, "dqn")
    assert d.attrs["measure"] == "q_ratio" and set(d["better_than"].iloc[0].split(", ")) == {"rise", "sarfa", "random"}
    html = fg.show_ranking_detail(d, "cap").to_html()
    shown = fg.show_ranking_detail(d, "cap").data
    assert "Significantly better than" in html and "ESS" in html
    assert set(shown["Significantly better than"].iloc[0].split(", ")) == {"RISE", "SARFA", "Rnd"}
    c = dg.significance_counts(r).iloc[0]
    assert (c["pairs"], c["significant"], c["settings"]) == (72, 72, 12)
    assert (c["beat random"], c["lose to random"], c["cells"]) == (18, 18, 36)
    assert c["states"] == 100 and c["ess_high"] <= 100 and (r["n_eff"] <= 100).all()


@pytest.mark.parametrize("n_states", [2, 25])
def test_rankings_below_the_minimum_of_effective_states_say_nothing_is_significant(n_states):
    r = dg.rankings(_rows(DQN, BASE, n_states=n_states, steps=2), n_resamples=20)
    assert (r["better_than"] == "").all() and (r["worse_than"] == "").all()
    c = dg.significance_counts(r).iloc[0]
    assert c["states"] == n_states and c["significant"] == 0 and c["beat random"] == c["lose to random"] == 0


def test_rankings_bar_is_the_effective_not_the_counted_states(big):
    """States carry a ranking only when the differences are worth enough effective ones: raised above their
    number, the bar leaves nothing significant."""
    assert dg.rankings(big, n_resamples=20, min_ess=0)["better_than"].ne("").any()
    assert (dg.rankings(big, n_resamples=20, min_ess=101)["better_than"] == "").all()


def test_the_state_value_is_never_ranked(big):
    both = pd.concat([big, _rows(A3C, BASE, measures=("value", "prob"), n_states=60, steps=2)])
    r = dg.rankings(both, n_resamples=20)
    assert "value" not in set(r["measure"]) and "prob" in set(r["measure"])
    note = ch.ranking_detail(r, "mask_a3c", role="value")
    assert isinstance(note, Note) and "state value V is not ranked" in note.text
    assert ch.ranking_detail(r, "mask_a3c", role="action").attrs["measure"] == "prob"
    assert isinstance(ch.ranking_detail(r.assign(agent=DQN), "mask_a3c"), Note)  # no such agent
    s = dg.auc_summary(both, n_resamples=20)
    t = fg.show_auc_table(s, "mask_a3c", "cap")
    assert ("insertion", "black", "V (not ranked)") in t.data.index and _bold(t)[("insertion", "black", "V (not ranked)")] is None
    assert "value" not in set(pp.side_by_side(s, "Breakout")["our_measure"])
    f = pp.factors(s)
    assert set(f["agent"]) == {*dg.PAPER_AUC["game"], DQN} and A3C not in set(f["agent"])


# -- beside the paper ----------------------------------------------------------------------------

def _as_paper(game: str, sub: str, meas: str, *, reverse: bool = False) -> dict:
    p = dg.PAPER_AUC[(dg.PAPER_AUC.game == game) & (dg.PAPER_AUC.substrate == sub) & (dg.PAPER_AUC.measure == meas)]
    means = p.set_index("method")["mean"]
    return {m: (-v if reverse else v) for m, v in means.items()
            if m in ("occlusion", "ns_original", "sarfa", "rise", "lime_slic", "random")}


def test_rank_agreement_is_one_for_the_papers_order_and_minus_one_reversed():
    same = dg.auc_summary(_rows(DQN, _as_paper("Breakout", "black", "q_ratio"), n_states=4,
                                substrates=("black",), experiments=("insertion",)), n_resamples=20)
    side = pp.side_by_side(same, "Breakout")
    a = pp.rank_agreement(side)
    q = a[a.paper_measure == "q_ratio"].iloc[0]
    assert q["spearman"] == pytest.approx(1.0) and q["kendall"] == pytest.approx(1.0)
    assert q["paper_best"] == q["our_best"] == "lime_slic"
    rev = pp.rank_agreement(pp.side_by_side(dg.auc_summary(_rows(
        DQN, _as_paper("Breakout", "black", "q_ratio", reverse=True), n_states=4, substrates=("black",),
        experiments=("insertion",)), n_resamples=20), "Breakout"))
    assert rev[rev.paper_measure == "q_ratio"]["spearman"].iloc[0] == pytest.approx(-1.0)
    wide = fg.show_side_by_side(side, "cap").data
    assert wide.loc[(ch.agent_label(DQN), "LIME-SLIC"), ("black, Q-ratio", "Huber et al.")] == "6.118 (1)"
    assert wide.loc[(ch.agent_label(DQN), "Rnd"), ("black, Q-ratio", "ours")].endswith("(5)")
    assert "1.00 (p = " in fg.show_agreement(a, "cap").to_html()
    c = pp.agreement_counts({"this chapter": a}).iloc[0]
    assert c["agent"] == DQN and c["states"] == 4 and (a["n"] == 4).all()  # the counts name their n
    assert c["settings"] == 2 and c["same best"] >= 1 and c["ess"] <= 4
    assert c["significant"] == 0 and c["withheld"] == 2  # 4 states: no agreement is significant
    lax = pp.agreement_counts({"this chapter": a}, min_ess=0).iloc[0]
    assert lax["significant"] >= 1 and lax["withheld"] == 0
    assert c["random first"] == 0 and c["random last agrees"] == 2


def test_side_by_side_refuses_games_the_paper_did_not_run(table):
    note = ch.side_by_side(dg.auc_summary(table, n_resamples=20), "Seaquest")
    assert isinstance(note, Note) and "not Seaquest" in note.text
    assert ch.rank_agreement(note) is note and isinstance(ch.agreement_counts({"x": note}), Note)
    assert pp.side_by_side(dg.auc_summary(table, n_resamples=20), "Seaquest").empty


def test_factors_report_winners_per_measure_and_substrate():
    t = pd.concat([_rows(DQN, BASE, measures=("q_ratio",), experiments=("insertion",)),
                   _rows(DQN, {"occlusion": 1.0, "rise": 2.0, "sarfa": 3.0, "random": 0.5}, measures=("advantage",),
                         experiments=("insertion",))])
    f = pp.factors(dg.auc_summary(t, n_resamples=20))
    ours = f[(f["source"] == "ours") & (f["agent"] == DQN)].set_index("substrate")
    assert list(ours.index) == ["black", "random", "blur"] and (ours["n"] == 12).all()
    assert (ours["best_value"] == "occlusion").all() and (ours["best_action"] == "sarfa").all()  # differs on 3 of 3 substrates
    assert ours["rho_roles"].to_numpy() == pytest.approx([0.2] * 3)  # random is last in both orders
    assert ours.loc[["random", "blur"], "rho_black_value"].to_numpy() == pytest.approx([1.0, 1.0])
    assert not ours["random_first_value"].any()
    html = fg.show_factors(f, "cap").to_html()
    assert "Huber et al.: Pac-Man" in html and "LIME-SLIC" in html and f"Ours: {ch.agent_label(DQN)}" in html


# -- curves and paths ----------------------------------------------------------------------------

def test_curve_bands():
    v = np.array([[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0]])
    mean, lo, hi = dg.curve_bands(v, n_resamples=500)
    assert np.allclose(mean, [2, 3, 4]) and (lo <= mean).all() and (hi >= mean).all() and (hi > lo).all()
    one = dg.curve_bands(v[:1])
    assert np.array_equal(one[1], one[0]) and np.array_equal(one[2], one[0])
    same = dg.curve_bands(np.ones((5, 3)))
    assert np.allclose(same[1], 1) and np.allclose(same[2], 1)
    with pytest.raises(ValueError, match="n_states, n_steps"):
        dg.curve_bands(np.ones(3))


def test_curves_figure_draws_an_image_or_says_what_is_missing(table):
    img = fg.show_curves(table, "dqn", "insertion", n_resamples=20, dpi=30)
    assert img.data[:4] == b"\x89PNG"
    assert isinstance(fg.show_curves(table, "mask_a3c", "insertion"), Note)


@pytest.fixture(scope="module")
def toy_agent():
    torch.manual_seed(0)
    return QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)


@pytest.mark.parametrize("substrate", ["black", "random", "blur"])
def test_degraded_images_are_the_metrics_inputs(toy_agent, substrate):
    from saliency_lib.metrics import Insertion, make_substrate

    g = torch.Generator().manual_seed(1)
    x = torch.rand(1, 4, 84, 84, generator=g)
    sal = torch.rand(84, 84, generator=g).numpy()
    steps = np.array([0, 1, 7, 40, 84])
    imgs = dg.degraded_images(x[0], sal, substrate=substrate, fractions=steps * 84 / 7056, seed=3, state_id=5)
    sub = make_substrate(x, substrate, seed=3, state_ids=[5])[0]
    assert torch.equal(imgs[0], sub) and torch.equal(imgs[-1], x[0])
    with torch.no_grad():
        q = toy_agent(imgs)["q"].numpy()
    ref = Insertion(substrate=substrate, seed=3).curves(toy_agent, x, sal[None], state_ids=[5])["scores"][0]
    assert np.allclose(q, ref[steps], atol=1e-5)
    dele = dg.degraded_images(x[0], sal, substrate=substrate, fractions=[0.0, 1.0], mode="deletion", seed=3, state_id=5)
    assert torch.equal(dele[0], x[0]) and torch.equal(dele[1], sub)


def test_degraded_images_reject_bad_input():
    x = torch.zeros(4, 8, 8)
    with pytest.raises(ValueError, match="saliency must have shape"):
        dg.degraded_images(x, np.zeros((4, 4)), substrate="black", fractions=[0.5])
    with pytest.raises(ValueError, match="fractions must be"):
        dg.degraded_images(x, np.zeros((8, 8)), substrate="black", fractions=[1.5])
    with pytest.raises(ValueError, match="mode must be"):
        dg.degraded_images(x, np.zeros((8, 8)), substrate="black", fractions=[0.5], mode="sanity")


# -- the study's rows ----------------------------------------------------------------------------

def test_degradation_results_reuse_the_study_units_without_sanity(toy_agent, tmp_path, monkeypatch):
    from saliency_lib import sweep
    from saliency_study import study

    d = tmp_path / "dqn-Breakout-toy"
    save_agent(toy_agent, d)
    spec = sweep.SweepSpec(agents=(str(d),), methods=("gradient",), n_states=2, chunk=2)
    monkeypatch.setattr(study, "profile_specs", lambda *a, **k: [spec])
    cfg = ch.DegradationChapter(agent=str(d), profile="tiny", results_dir=str(tmp_path / "r"))
    res = ch.degradation_results(cfg)
    assert set(res["experiment"]) == {"insertion", "deletion"} and set(res["method"]) == {"gradient", "random"}
    assert not (tmp_path / "r" / "sweep" / "sanity").exists()
    units, _ = sweep.plan_units(spec, results_dir=tmp_path / "r")  # the full study spec, sanity included
    stored = {p.stem for p in (tmp_path / "r" / "sweep" / "degradation").glob("*.parquet")}
    assert stored == {u.key for u in units if u.experiment == "degradation"}
    none = ch.degradation_results(ch.DegradationChapter(game="Pong", results_dir=str(tmp_path)))
    assert isinstance(none, Note) and "No agent to evaluate for Pong" in none.text



def test_study_agreement_reads_the_stored_study_or_says_why_not(tmp_path):
    empty = ch.study_agreement(ch.DegradationChapter(results_dir=str(tmp_path)), "Breakout")
    assert isinstance(empty, Note) and "no insertion units of Breakout" in empty.text
    assert pp.study_agreement("Breakout", results_dir=str(tmp_path)).empty
    a = ch.study_agreement(ch.DegradationChapter(), "Breakout")  # the committed paper-scale study
    assert not isinstance(a, Note), a
    n = int(a["n"].iloc[0])  # every stored state (the full study's distinct ones: 850 of Breakout's 997 so far)
    assert len(a) == 4 and 500 < n <= 997 and (a["n"] == n).all() and (a["methods"] == 8).all()
    assert (a["n_eff"] <= n).all()
    c = pp.agreement_counts({"paper-scale study": a}).iloc[0]
    assert c["states"] == n and c["significant"] + c["withheld"] <= 4 and c["ess"] == a["n_eff"].min()
