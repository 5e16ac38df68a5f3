"""The introduction's generated findings (saliency_book.findings) on known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from saliency_book import findings as fd


def _rows(game: str, n: int, values: dict[tuple[str, int], float], *, untied: dict | None = None, seed: int = 0) -> pd.DataFrame:
    """Sanity rows: ``values[(method, level)]`` is the mean Spearman similarity, plus AR(1) noise over the states."""
    rng = np.random.default_rng(seed)
    out = []
    for (method, level), mean in values.items():
        e = np.zeros(n)
        for t in range(1, n):
            e[t] = 0.6 * e[t - 1] + rng.normal(scale=0.02)
        for s in range(n):
            out.append({"game": game, "method": method, "level": level, "measure": "spearman", "state": s,
                        "value": mean + e[s]})
            if untied is not None and (method, level) in untied:
                out.append({"game": game, "method": method, "level": level, "measure": "spearman_untied", "state": s,
                            "value": untied[(method, level)] + e[s]})
    return pd.DataFrame(out)


def test_ns_finding_reproduced_opposite_undecided_and_too_few():
    rows = pd.concat([
        _rows("Breakout", 200, {("ns_original", 1): 0.9, ("ns_chosen", 1): 0.2}),
        _rows("MsPacman", 200, {("ns_original", 1): 0.2, ("ns_chosen", 1): 0.6}, seed=1),
        _rows("SpaceInvaders", 20, {("ns_original", 1): 0.9, ("ns_chosen", 1): 0.2}, seed=2),
    ], ignore_index=True)
    text = fd.ns_finding(rows, n_resamples=300)
    assert "Breakout (200 states, effective sample size" in text
    assert "): reproduced, ρ = 0.90 for NS original against 0.20 for NS chosen action, difference 0.7" in text
    assert "Ms. Pac-Man (200 states" in text and "the opposite" in text
    assert "Space Invaders: too few states (n=20) for a verdict" in text
    assert text.endswith("Frostbite: not yet run.")
    # identical similarities: no detectable difference
    same = _rows("Frostbite", 120, {("ns_original", 1): 0.5, ("ns_chosen", 1): 0.5}, seed=3)
    same.loc[same["method"] == "ns_chosen", "value"] += np.random.default_rng(4).normal(scale=0.05, size=120)
    assert "no detectable difference" in fd.ns_finding(same, n_resamples=300)
    assert fd.ns_finding(rows.iloc[:0]).endswith("Ms. Pac-Man, Breakout, Frostbite and Space Invaders: not yet run.")


def test_sanity_finding_counts_pass_fail_and_undecided_per_game():
    rows = pd.concat([
        _rows("Breakout", 100, {("occlusion", 5): 0.05, ("integrated_gradients", 5): 0.9, ("rise", 5): 0.5,
                                ("occlusion", 1): 0.99}),
        _rows("Breakout", 30, {("sarfa", 5): 0.9}, seed=5),
    ], ignore_index=True)
    rise = rows["method"] == "rise"  # a slow swing around τ: its CI holds τ
    rows.loc[rise, "value"] = 0.5 + 0.3 * np.sin(rows.loc[rise, "state"].to_numpy() / 8.0)
    text = fd.sanity_finding(rows, n_resamples=300)
    assert ("Breakout (100 states): 1 of 3 methods pass (**Occlusion**), 1 fail (**Integrated Gradients**), "
            "1 undecided (**RISE**); **SARFA** not yet on 50 states.") in text
    assert "Ms. Pac-Man, Frostbite and Space Invaders: not yet run." in text
    one = fd.sanity_finding(_rows("Breakout", 60, {("occlusion", 5): 0.05}), n_resamples=100)
    assert "1 of 1 method passes (**Occlusion**)" in one
    few = fd.sanity_finding(_rows("Breakout", 10, {("occlusion", 5): 0.05}), n_resamples=100)
    assert "Breakout: too few states (n=10) for a verdict for every method" in few


def test_black_screen_finding_uses_the_pre_stated_test():
    rows = _rows("Breakout", 80, {("integrated_gradients", 5): 0.9, ("occlusion", 5): 0.05},
                 untied={("integrated_gradients", 5): 0.1, ("occlusion", 5): 0.06})
    text = fd.black_screen_finding(rows, n_resamples=300)
    assert "On Breakout (80 states" in text and "carries the failure of **Integrated Gradients**" in text
    assert text.endswith("Ms. Pac-Man, Frostbite and Space Invaders: not yet run.")
    assert "not yet run on the stored study" in fd.black_screen_finding(_rows("Breakout", 80, {("occlusion", 5): 0.1}))


def test_the_block_replaces_only_what_lies_between_its_markers():
    doc = f"intro\n\n{fd.START}\n* old\n{fd.END}\n\nrest\n"
    block = f"{fd.START}\n* new\n{fd.END}"
    assert fd.replace_block(doc, block) == f"intro\n\n{block}\n\nrest\n"
    with pytest.raises(ValueError, match="no generated block"):
        fd.replace_block("no markers here", block)


def test_loose_units_are_found(tmp_path):
    (tmp_path / "sweep" / "sanity").mkdir(parents=True)
    (tmp_path / "sweep" / "packs" / "sanity").mkdir(parents=True)
    (tmp_path / "sweep" / "packs" / "sanity" / "a-b.parquet").write_bytes(b"")
    assert fd.loose_unit_files(tmp_path) == []
    (tmp_path / "sweep" / "sanity" / "k.parquet").write_bytes(b"")
    assert [p.name for p in fd.loose_unit_files(tmp_path)] == ["k.parquet"]


def test_insertion_finding_compares_our_order_with_the_papers_per_game():
    from saliency_study import paper

    p = paper.paper_insertion()
    p = p[p["game"] == "Breakout"]
    rng = np.random.default_rng(0)
    rows = []
    for r in p.itertuples():
        for s in range(60):
            rows.append({"experiment": "insertion", "agent": "dqn", "game": "Breakout", "method": r.method,
                         "substrate": r.substrate, "state": s, "step": pd.NA, "measure": f"{r.measure}_auc",
                         "value": r.mean + rng.normal(scale=1e-4), "higher_is_better": True})
    rows = pd.DataFrame(rows)
    text = fd.insertion_finding(rows)
    assert "Breakout (60 states, 8 methods): positive in 4 of 4 settings (ρ from 1.00 to 1.00), significant at 5 % in 4" in text
    assert text.endswith("Ms. Pac-Man, Frostbite and Space Invaders: not yet run.")
    reversed_ = rows.assign(value=-rows["value"])
    assert "positive in 0 of 4 settings (ρ from -1.00 to -1.00)" in fd.insertion_finding(reversed_)
    few = fd.insertion_finding(rows[rows["state"] < 20])
    assert "Breakout: too few states (n=20) for a verdict" in few


def test_insertion_finding_waits_for_every_method_of_the_paper():
    from saliency_study import paper

    p = paper.paper_insertion()
    p = p[(p["game"] == "Breakout") & (p["method"].isin(["occlusion", "rise"]))]
    rows = pd.DataFrame([{"experiment": "insertion", "agent": "dqn", "game": "Breakout", "method": r.method,
                          "substrate": r.substrate, "state": s, "step": pd.NA, "measure": f"{r.measure}_auc",
                          "value": r.mean, "higher_is_better": True} for r in p.itertuples() for s in range(60)])
    assert "Breakout: 2 of the 8 methods stored so far" in fd.insertion_finding(rows)


def _degeneracy(n: int, value_flags: tuple[bool, ...], prob_flags: tuple[bool, ...]) -> pd.DataFrame:
    rows = []
    for meas, flags in (("prob", prob_flags), ("value", value_flags)):
        for i, flag in enumerate(flags):
            rows.append({"agent": f"data/agents/a3c-Breakout-double-s{i}", "substrate": "black", "measure": meas, "n": n,
                         "clean": 3.0 + i, "substrate_value": 2.9 + i - 0.5 * (not flag), "gap_share": 0.01 + 0.1 * i,
                         "peak": 3.5, "random_insertion": 1 if flag else 4, "random_deletion": 6 if flag else 3,
                         "methods": 6, "degenerate": flag})
    return pd.DataFrame(rows)


def test_degeneracy_finding_counts_pairs_flagged_measures_first_and_names_the_closest_substrate():
    text = fd.degeneracy_finding(_degeneracy(50, (True, True), (False, False)))
    assert text.startswith("On 2 agents (a3c-Breakout-double-s0, a3c-Breakout-double-s1), 50 states each: "
                           "the state value V is degenerate on 2 of 2")
    assert "the policy probability is degenerate on 0 of 2" in text
    # the pair whose substrate moves V least (smallest gap share): seed 0, 2.90 against 3.00
    assert "black substrate of a3c-Breakout-double-s0 its mean is 2.90 against 3.00" in text
    assert text.endswith("So no chapter ranks maps on V; its curves and AUCs are shown.")


def test_degeneracy_finding_without_a_flagged_value_and_with_too_few_states():
    text = fd.degeneracy_finding(_degeneracy(50, (False, True), (True, False)))
    assert "state value V is degenerate on 1 of 2" in text and "policy probability is degenerate on 1 of 2" in text
    clean = fd.degeneracy_finding(_degeneracy(50, (False, False), (False, False)))
    assert "ranks maps on V" not in clean and "degenerate on 0 of 2" in clean
    few = fd.degeneracy_finding(_degeneracy(20, (True, True), (False, False)))
    assert "too few states (n=20) for a verdict" in few and "degenerate on" not in few
