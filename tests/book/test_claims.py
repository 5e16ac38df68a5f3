"""The claims page (saliency_study.claims, saliency_book.claims_page, saliency-study claims)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from saliency_book.claims_page import END, START, claims_block, replace_block
from saliency_study import claims as cl
from saliency_study.evidence import MIN_ESS

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {"ns-original", "ns-chosen", "sanity-Breakout", "sanity-MsPacman", "sanity-SpaceInvaders",
            "sanity-Frostbite", "insertion-order-black", "insertion-order-random", "ablation", "itaya-score"}
VERDICTS = {"reproduced", "differs", "inconclusive", "withheld", "not tested", "holds", "does not hold"}


@pytest.mark.parametrize(("verdicts", "expected"), [
    (["reproduced"] * 3 + ["inconclusive"], "reproduced"),  # 75 % reproduced
    (["reproduced"] * 2 + ["inconclusive"] * 2, "inconclusive"),
    (["reproduced"] * 5 + ["differs"] * 2 + ["inconclusive"], "differs"),  # 25 % differ, 62 % reproduced
    (["withheld", "withheld"], "withheld"),
    (["not yet run"], "not tested"),
    (["reproduced"] * 3 + ["inconclusive", "withheld", "withheld"], "reproduced"),  # withheld cells are not judged
])
def test_a_claim_of_many_comparisons_follows_the_stated_shares(verdicts, expected):
    assert cl._share_verdict(pd.Series(verdicts)) == expected


@pytest.fixture(scope="module")
def committed():
    """The claims of the committed study, as `saliency-study claims --json` prints them."""
    out = subprocess.run([sys.executable, "-m", "saliency_lib", "claims", "--json"], capture_output=True, text=True,
                         cwd=ROOT, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_the_json_lists_every_claim_with_its_verdict_and_evidence(committed):
    assert len(committed) >= 12 and REQUIRED <= {r["id"] for r in committed}
    for r in committed:
        assert set(cl.JSON_FIELDS) <= set(r) and r["verdict"] in VERDICTS
        assert r["source"] in ("huber2021", "itaya2021", "ours") and isinstance(r["n_states"], int)


def test_no_reproduced_rests_on_too_few_effective_states(committed):
    for r in committed:
        if r["verdict"] == "reproduced" and r["ess"] is not None:
            assert r["ess"] >= MIN_ESS, r


def test_readme_and_intro_carry_the_generated_claims(committed):
    table = pd.DataFrame(committed)
    for doc, link in ((ROOT / "README.md", "notebooks/{name}.py"), (ROOT / "book" / "intro.md", "chapters/{name}.ipynb")):
        assert claims_block(table, link=link) in doc.read_text(), f"{doc.name}: run scripts/update_findings.py"


def test_the_block_replaces_only_what_lies_between_its_markers():
    doc = f"before\n{START}\nold\n{END}\nafter\n"
    assert replace_block(doc, f"{START}\nnew\n{END}") == f"before\n{START}\nnew\n{END}\nafter\n"
    with pytest.raises(ValueError, match="no generated block"):
        replace_block("no markers", "x")
