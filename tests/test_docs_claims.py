"""Sentences in the README and the book's introduction that must come from the committed numbers."""

from pathlib import Path

from saliency_lib.train.scores import read_scores
from saliency_study.variants import compare_variants

ROOT = Path(__file__).resolve().parents[1]


def test_intro_and_readme_quote_the_mask_a3c_verdict():
    """Chapter 5's seed-level verdict (greedy protocol): its verdict, difference and CI are quoted; a new
    shipped seed changes them."""
    c = compare_variants(read_scores(ROOT / "data" / "agents" / "scores.csv"), protocol="greedy")
    d = c.difference
    quoted = (c.verdict, f"{d['diff']:+,.1f}", f"{d['ci_low']:+,.1f} to {d['ci_high']:+,.1f}")
    for doc in (ROOT / "README.md", ROOT / "book" / "intro.md"):
        text = " ".join(doc.read_text().split())
        assert all(q in text for q in quoted), f"{doc.name} does not quote chapter 5's verdict: {quoted}"


def test_intro_and_readme_carry_the_findings_of_the_committed_full_study(official_available):
    """The generated findings block (saliency_book.findings) is what the packed (committed) units give.

    The official agents' finding plans their units, which loads the checkpoints: without them the
    test skips (fails under SALIENCY_REQUIRE_OFFICIAL=1)."""
    from saliency_book.findings import findings_block

    block = findings_block()
    for doc in (ROOT / "README.md", ROOT / "book" / "intro.md"):
        assert block in doc.read_text(), f"{doc.name}: run scripts/update_findings.py (after compacting the study)"


def test_intro_quotes_the_dqn_agents_scores_of_scores_csv():
    """The introduction's hand-written sentence on our DQN agents' greedy scores matches data/agents/scores.csv."""
    from saliency_study.paper import GAME_LABELS

    greedy = read_scores(ROOT / "data" / "agents" / "scores.csv", protocol="greedy")
    dqn = greedy[greedy["algo"] == "dqn"].set_index("game")
    games = ["Breakout", "MsPacman", "SpaceInvaders", "Frostbite"]
    ours = ", ".join(f"{GAME_LABELS[g]} {dqn.loc[g, 'mean']:.4g}" for g in games[:-1]) + f" and {GAME_LABELS[games[-1]]} {dqn.loc[games[-1], 'mean']:.4g}"
    ratios = dqn.loc[games, "ratio_to_random"]
    nature = [f"{x:.3g}" if x < 100 else f"{x:.0f}" for x in dqn.loc[games, "published"]]
    text = " ".join((ROOT / "book" / "intro.md").read_text().split())
    assert f"10 greedy games: {ours}," in text
    assert f"{ratios.min():.1f} to {ratios.max():.0f} times random play" in text
    assert f"Nature DQN at the same budget scored {', '.join(nature[:-1])} and {nature[-1]}" in text
