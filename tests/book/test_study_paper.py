"""Huber et al.'s numbers beside ours (saliency_study.paper, .sanity, .agreement, .degradation) and chapters 3
and 4's display of them: loaders, per-game verdicts, the pooled 99 % CI, the paper's precedents and the
degenerate state value, on known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import saliency_book.ch3_figures as f3
import saliency_book.ch3_sanity as ch3
import saliency_book.ch4_degradation as ch4
import saliency_book.ch4_figures as f4
from saliency_book.ch4_degradation import DegradationChapter
from saliency_book.common import ExplainedAgent, Note
from saliency_lib.results import to_table
from saliency_study import agreement, degradation, paper, sanity
from saliency_study.evidence import verdict_counts


def ar1(n, phi=0.7, *, seed=0, scale=0.05):
    rng = np.random.default_rng(seed)
    x = np.empty(n)
    x[0] = rng.normal() / np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + rng.normal()
    return scale * x


# -- the extract ----------------------------------------------------------------------------------

def test_paper_tables_are_complete_and_in_our_names():
    s = paper.paper_sanity()
    assert len(s) == 4 * 9 * 5 * 3 and set(s["game"]) == set(paper.GAMES.values())
    assert set(s["measure"]) == {"spearman", "ssim", "hog_pearson"} and set(s["level"]) == {1, 2, 3, 4, 5}
    sarfa = s[(s.game == "Breakout") & (s.method == "sarfa") & (s.level == 5) & (s.measure == "spearman")].iloc[0]
    # 102 early states at 0.661 (rounded in the README) and 33 late ones at 0.592, weighted by their states
    assert sarfa["n"] == 135 and sarfa["layer"] == "conv1" and sarfa["mean"] == pytest.approx(0.644, abs=0.002)
    i = paper.paper_insertion()
    assert len(i) == 128 and set(i["method"]) >= {"ns_original", "random"} and (i["n"] == 997).all()
    row = i[(i.game == "Breakout") & (i.method == "lime_felzenszwalb") & (i.substrate == "black") & (i.measure == "q_ratio")]
    assert row["mean"].iloc[0] == 7.477 and row["std"].iloc[0] == 9.622
    ab = paper.paper_insertion("ablation")
    assert set(ab.loc[ab["differs_from_main"], "method"]) == {"occlusion", "sarfa"}
    with pytest.raises(ValueError, match="variant"):
        paper.paper_insertion("gray")


# -- per game ------------------------------------------------------------------------------------

def _ours(values: dict[tuple[str, str], np.ndarray]) -> pd.DataFrame:
    """State-level rows: ``values[(game, method)]`` per state, level 5, Spearman."""
    rows = [{"game": g, "method": m, "level": 5, "state": i, "value": v}
            for (g, m), vs in values.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows)


def test_per_game_verdicts_on_known_answers():
    p = paper.paper_sanity([5])
    p = p[p["measure"] == "spearman"]
    truth = p.set_index(["game", "method"])["mean"]
    ours = _ours({
        ("Breakout", "sarfa"): truth[("Breakout", "sarfa")] + _centred(400, 1),  # our mean equals the paper's
        ("Breakout", "occlusion"): truth[("Breakout", "occlusion")] + 0.3 + ar1(400, seed=2),  # far off
        ("Breakout", "ns_original"): truth[("Breakout", "ns_original")] + 0.1 + _centred(400, 4),  # on the margin
        ("Breakout", "rise"): truth[("Breakout", "rise")] + ar1(20, seed=3),  # too few effective states
    })
    t = paper.compare_per_game(ours, p, ["method", "level"]).set_index(["game", "method"])
    assert t.loc[("Breakout", "sarfa"), "verdict"] == "reproduced"
    assert t.loc[("Breakout", "occlusion"), "verdict"] == "differs"
    assert t.loc[("Breakout", "ns_original"), "verdict"] == "inconclusive"
    assert t.loc[("Breakout", "rise"), "verdict"] == "withheld" and t.loc[("Breakout", "rise"), "n"] == 20
    assert t.loc[("Breakout", "rise"), "reason"].startswith("effective sample size")
    assert t.loc[("Breakout", "lime_slic"), "verdict"] == paper.NOT_RUN  # the game is run, the method is not
    assert (t.loc["MsPacman", "verdict"] == paper.NOT_RUN).all() and t.loc["MsPacman", "paper"].notna().all()
    assert len(t) == 4 * 9 and t.loc[("Breakout", "sarfa"), "n_eff"] < 400 and (t["margin"] == 0.1).all()
    assert t.loc[("Breakout", "occlusion"), "difference"] == pytest.approx(0.3, abs=0.05)
    # the interval is the one of the states in trajectory order, whatever the rows' order
    shuffled = paper.compare_per_game(ours.sample(frac=1.0, random_state=0), p, ["method", "level"])
    assert shuffled.set_index(["game", "method"]).loc[("Breakout", "sarfa"), "ci_low"] == t.loc[("Breakout", "sarfa"), "ci_low"]
    html = f3.show_comparison(t.reset_index(), "cap", game="Breakout").to_html()
    assert "Huber et al." in html and "ESS" in html and "reproduced" in html and "all layers" in html
    assert "Margin" in html and "Difference" in html
    assert "not yet run" in f3.show_comparison(t.reset_index(), "cap", game="Frostbite").to_html()
    counts = verdict_counts(t.reset_index(), by="game").set_index("game")
    assert counts.loc["MsPacman", paper.NOT_RUN] == 9 and counts.loc["MsPacman", "states"] == 0
    assert counts.loc["Breakout", ["reproduced", "differs", "inconclusive", "withheld", paper.NOT_RUN]].tolist() == [
        1, 1, 1, 1, 5]
    assert counts.loc["Breakout", "states"] == 400 and list(counts.index) == list(paper.GAME_ORDER)


@pytest.mark.parametrize(("offset", "verdict"), [(0.06, "reproduced"), (0.14, "differs"), (-0.14, "differs")])
def test_the_verdict_flips_at_the_margin(offset, verdict):
    """Tight values 0.06 from the paper's lie inside the ±0.10 margin; 0.14 from it, outside."""
    p = paper.paper_sanity([5])
    p = p[(p["measure"] == "spearman") & (p["game"] == "Breakout") & (p["method"] == "sarfa")]
    ours = _ours({("Breakout", "sarfa"): p["mean"].iloc[0] + offset + 0.2 * _centred(997, 5)})
    row = paper.compare_per_game(ours, p, ["method", "level"], games=["Breakout"]).iloc[0]
    assert row["verdict"] == verdict and row["diff_low"] <= offset <= row["diff_high"]


def test_per_game_handles_one_to_four_games():
    p = paper.paper_sanity([5])
    p = p[p["measure"] == "spearman"]
    for k in range(1, 5):
        games = list(paper.GAMES.values())[:k]
        ours = _ours({(g, "sarfa"): 0.5 + ar1(60, seed=i) for i, g in enumerate(games)})
        t = paper.compare_per_game(ours, p, ["method", "level"], n_resamples=50)
        run = t[t["verdict"] != paper.NOT_RUN]
        assert set(run["game"]) == set(games) and (run["method"] == "sarfa").all()
        pooled = paper.compare_pooled(ours, p, ["method", "level"], n_resamples=50)
        assert pooled["games"].iloc[0] == ", ".join(games) and pooled["n"].iloc[0] == 60 * k


def test_pooled_ci_covers_a_known_mean_and_pools_the_papers_games_alike():
    p = paper.paper_sanity([5])
    p = p[p["measure"] == "spearman"]
    games = ["Breakout", "Frostbite"]
    hits = 0
    for r in range(30):
        ours = _ours({(g, "sarfa"): 0.4 + ar1(150, 0.6, seed=100 * r + i, scale=0.1) for i, g in enumerate(games)})
        row = paper.compare_pooled(ours, p, ["method", "level"], n_resamples=300, seed=r).iloc[0]
        hits += row["ci_low"] <= 0.4 <= row["ci_high"]
    assert hits >= 26, hits  # 99 % intervals
    q = p[p["game"].isin(games) & (p["method"] == "sarfa")]
    assert row["paper"] == pytest.approx((q["mean"] * q["n"]).sum() / q["n"].sum())
    assert row["verdict"] in paper.VERDICTS and row["n"] == 300 and row["margin"] == 0.1


# -- what the paper already shows ------------------------------------------------------------------

def test_precedents_credit_the_paper_with_sarfa_on_breakout():
    who = ExplainedAgent("dqn", "Breakout", "dqn-test", "study's DQN agent")
    verdicts = pd.DataFrame({"agent": "dqn-test", "method": ["sarfa", "integrated_gradients", "occlusion", "ns_chosen"],
                             "spearman": [0.59, 0.95, 0.02, 0.6], "n": [20, 20, 20, 20], "n_eff": 9.0})
    t = ch3.precedents(verdicts, who, "Breakout", threshold=0.5).set_index("method")
    assert "occlusion" not in t.index and (t["source"] == "this chapter").all() and (t["n"] == 20).all()
    assert t["paper_shows_it"].to_dict() == {"sarfa": "yes", "integrated_gradients": "not run", "ns_chosen": "no"}
    assert t.loc["sarfa", "paper"] == pytest.approx(0.644, abs=0.002) and t.loc["sarfa", "ours"] == 0.59
    assert isinstance(ch3.precedents(verdicts, who, "Seaquest"), Note)
    assert isinstance(ch3.precedents(verdicts.assign(spearman=0.1), who, "Breakout"), Note)  # no such effect
    assert sanity.precedents(verdicts, "dqn-test", "Seaquest").empty
    assert "Paper shows it" in f3.show_table(t.reset_index(), "cap").to_html()


def test_precedents_take_the_stored_study_where_it_has_the_game():
    """Where the stored study holds at least as many states as the chapter's for every method, the means come from
    the paper-scale study, not the chapter's, whatever their effective sample sizes."""
    who = ExplainedAgent("dqn", "Breakout", "dqn-test", "study's DQN agent")
    verdicts = pd.DataFrame({"agent": "dqn-test", "method": ["sarfa"], "spearman": [0.59], "n": [20], "n_eff": [12.0]})

    def study(n, sarfa=0.62, agent="dqn-test", game="Breakout", phi=0.0):
        base = {"agent": agent, "game": game, "measure": "spearman", "level": 5}
        wobble = ar1(n, phi, seed=1, scale=0.01) if n else []
        sim = [{**base, "method": "sarfa", "state": s, "value": sarfa + w} for s, w in enumerate(wobble)]
        sim += [{**base, "method": "ns_chosen", "state": s, "value": 0.1 + w} for s, w in enumerate(wobble)]
        other = [{**base, "method": "sarfa", "state": s, "level": 1, "value": 0.99} for s in range(n)]  # another level
        return pd.DataFrame(sim + other)

    t = ch3.precedents(verdicts, who, "Breakout", study=study(997))
    assert t["method"].tolist() == ["sarfa"] and t["source"].tolist() == ["paper-scale study"]  # NS chosen: 0.1 < τ
    assert t["ours"].iloc[0] == pytest.approx(0.62, abs=0.002) and t["n"].iloc[0] == 997 and t["n_eff"].iloc[0] > 500
    m = sanity.study_means(study(997), "dqn-test", "Breakout")
    assert m.set_index("method")["spearman"].to_dict() == pytest.approx({"ns_chosen": 0.1, "sarfa": 0.62}, abs=0.002)
    assert sanity.study_means(study(0), "dqn-test", "Breakout") is None
    # 997 states that drift as one slow trajectory are worth fewer effective states than the chapter's 12, and
    # still hold the chapter's 20 and more: the study's means stand, with their ESS
    drift = ch3.precedents(verdicts, who, "Breakout", study=study(997, phi=0.995))
    assert drift["source"].tolist() == ["paper-scale study"] and (drift["n_eff"] < 12).all()
    assert ch3.precedents(verdicts, who, "Breakout", study=study(20))["source"].tolist() == ["paper-scale study"]
    for stored in (study(19), study(997, game="MsPacman"), study(997, agent="other"), study(0)):
        t = ch3.precedents(verdicts, who, "Breakout", study=stored)  # the chapter's own numbers
        assert t["source"].tolist() == ["this chapter"] and t["ours"].tolist() == [0.59] and t["n"].tolist() == [20]


# -- the degenerate state value ----------------------------------------------------------------------

def _curves(agent: str, measure: str, clean: float, substrate: float, bulge: dict[str, float], n_states=6,
            steps=10) -> pd.DataFrame:
    """Insertion and deletion curves from ``substrate`` to ``clean`` with a bump of ``bulge[method]`` mid-path,
    and their plain-mean AUC rows."""
    parts = []
    x = np.linspace(0, 1, steps + 1)
    for exp in ("insertion", "deletion"):
        for method, b in bulge.items():
            recs = []
            for st in range(n_states):
                ins = substrate + (clean - substrate) * x + b * np.sin(np.pi * x)
                curve = ins if exp == "insertion" else ins[::-1]
                recs += [{"state": st, "step": t, "measure": measure, "value": v} for t, v in enumerate(curve)]
                recs.append({"state": st, "measure": f"{measure}_auc", "value": float(curve.mean())})
            parts.append(to_table(pd.DataFrame(recs), experiment=exp, agent=agent, game="Breakout", method=method,
                                  substrate="black", higher_is_better=exp == "insertion", seed=0))
    return pd.concat(parts, ignore_index=True)


def test_degenerate_value_is_detected_and_a_sound_measure_is_not():
    # V: the substrate leaves it at the clean level; the random map disturbs the image most and lifts V most
    v = _curves("official:Breakout", "value", 3.56, 3.56, {"random": 15.0, "occlusion": 5.0, "rise": 8.0})
    # a sound measure: the substrate drops it, and the faithful map recovers it early (no mid-path bump for random)
    q = _curves("dqn", "q_ratio", 1.0, 0.2, {"random": -0.2, "occlusion": 0.3, "rise": 0.1})
    rows = pd.concat([v, q])
    cfg = DegradationChapter()
    curves = ch4.mean_curve_table(cfg, rows)
    assert list(curves.columns) == list(degradation.CURVE_COLUMNS) and len(curves) == 2 * 2 * 3 * 11
    d = degradation.measure_degeneracy(rows, curves).set_index("measure")
    # the same from a store that keeps mean curves only (state NA, one row per step)
    only_aucs = rows[rows["step"].isna()]
    assert degradation.measure_degeneracy(only_aucs, curves).set_index("measure").equals(d)
    assert d.loc["value", "degenerate"] and not d.loc["q_ratio", "degenerate"]
    assert d.loc["value", "random_insertion"] == 1 and d.loc["value", "random_deletion"] == 3
    assert d.loc["value", "clean"] == pytest.approx(3.56) and d.loc["value", "substrate_value"] == pytest.approx(3.56)
    assert d.loc["value", "gap_share"] == pytest.approx(0.0) and d.loc["value", "peak"] > 4
    assert d.loc["q_ratio", "gap_share"] > 0.3 and d.loc["value", "n"] == 6
    html = f4.show_table(d.reset_index(), "cap").to_html()
    assert "Degenerate" in html and "state value V" in html and "color: #cf222e" in html  # flagged in red
    assert isinstance(ch4.measure_degeneracy(v.iloc[:0], curves.iloc[:0]), Note)
    assert isinstance(ch4.measure_degeneracy(rows, Note("no curves")), Note)
    assert degradation.measure_degeneracy(v.iloc[:0], curves.iloc[:0]).empty


def _centred(n, seed):
    e = ar1(n, seed=seed)
    return e - e.mean()  # our mean is exactly the paper's


def test_insertion_per_game_table_reads_the_papers_settings():
    p = paper.paper_insertion()
    truth = p[(p.game == "Breakout") & (p.substrate == "black") & (p.measure == "q_ratio")].set_index("method")["mean"]
    rows = [{"agent": "dqn", "game": "Breakout", "substrate": "black", "measure": "q_ratio", "method": m, "state": i,
             "value": truth[m] + e} for k, m in enumerate(truth.index) for i, e in enumerate(_centred(400, k))]
    t = agreement.per_game(pd.DataFrame(rows))
    b = t[(t.game == "Breakout") & (t.substrate == "black") & (t.measure == "q_ratio")]
    p_sd = p[(p.game == "Breakout") & (p.substrate == "black") & (p.measure == "q_ratio")].set_index("method")["std"]
    assert (b.set_index("method")["margin"] == 0.25 * p_sd).all()  # a quarter of the paper's per-state spread
    assert (b["verdict"] == "reproduced").all() and len(b) == 8
    assert (t.loc[t.game != "Breakout", "verdict"] == paper.NOT_RUN).all() and len(t) == 128
    assert list(t["game"].unique()) == list(paper.GAME_ORDER)
    counts = verdict_counts(t, by="game").set_index("game")
    assert counts.loc["Breakout", ["reproduced", paper.NOT_RUN, "states"]].tolist() == [8, 24, 400]
    assert (counts.loc["Frostbite", paper.NOT_RUN], counts.loc["Frostbite", "states"]) == (32, 0)
    html = f4.show_comparison(t, "cap", game="Breakout").to_html()
    assert "Huber et al." in html and "LIME-SLIC" in html and "reproduced" in html


def _as_papers(game: str, **override) -> pd.DataFrame:
    """An auc_summary whose means are the paper's for ``game`` (``override[method]`` replaces one everywhere)."""
    p = paper.paper_insertion()
    p = p[p.game == game]
    return pd.DataFrame({"agent": "dqn", "experiment": "insertion", "substrate": p["substrate"], "measure": p["measure"],
                         "method": p["method"], "mean": [override.get(m, v) for m, v in zip(p["method"], p["mean"])],
                         "std": 0.0, "n": 60, "n_eff": 40.0})


def _random_first(summary: pd.DataFrame, game: str) -> pd.DataFrame:
    a = agreement.rank_agreement(agreement.side_by_side(summary, game))
    return a.set_index(["substrate", "paper_measure"])[["paper_random_first", "our_random_first"]]


def test_rank_agreement_says_where_the_papers_table_already_has_the_random_map_first():
    # Frostbite, random insertion, advantage: the paper's random map has the highest mean of its columns
    f = _random_first(_as_papers("Frostbite"), "Frostbite")
    assert f.loc[("random", "advantage")].tolist() == [True, True] and f.sum().tolist() == [1, 1]
    assert _random_first(_as_papers("Breakout"), "Breakout").sum().tolist() == [0, 0]  # the paper never has it first
    flipped = _random_first(_as_papers("Breakout", random=99.0), "Breakout")
    assert flipped["our_random_first"].all() and not flipped["paper_random_first"].any()
    c = agreement.agreement_counts({"x": agreement.rank_agreement(agreement.side_by_side(_as_papers("Frostbite"),
                                                                                        "Frostbite"))}).iloc[0]
    assert (c["random first"], c["random first, paper too"], c["states"], c["ess"]) == (1, 1, 60, 40.0)


def test_the_per_game_tables_read_the_stored_study_whatever_profile_builds_the_chapter(monkeypatch):
    """``study_profile`` (default full) names the stored study that chapters 3 and 4 compare with the paper,
    so the quick book shows the committed paper-scale study; a bad name is refused."""
    from saliency_book.ch3_sanity import SanityChapter

    calls = []

    def fake(profile, games, *, experiments, **kw):
        assert kw["packed_only"], "the book reads the committed (packed) study only"
        calls.append((profile, tuple(experiments)))
        return pd.DataFrame(columns=["experiment", "agent", "game", "method", "substrate", "state", "level", "layer",
                                     "step", "measure", "value"])  # what an empty store gives

    monkeypatch.setattr(paper, "stored_rows", fake)  # the module both chapters read the stored study through
    assert SanityChapter().study_profile == "full" and DegradationChapter().study_profile == "full"
    assert sanity.sanity_rows(SanityChapter(profile="quick").study_profile).empty
    assert calls[-1] == ("full", ("sanity",))
    sanity.sanity_rows(SanityChapter(profile="full", study_profile="tiny").study_profile)
    assert calls[-1] == ("tiny", ("sanity",))
    assert agreement.insertion_aucs(DegradationChapter(profile="tiny").study_profile).empty
    assert calls[-1] == ("full", ("insertion", "deletion"))
    with pytest.raises(ValueError, match="unknown profile 'paper'"):
        SanityChapter(study_profile="paper")
    with pytest.raises(ValueError, match="unknown profile 'paper'"):
        DegradationChapter(study_profile="paper")
