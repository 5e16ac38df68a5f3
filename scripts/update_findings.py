"""Write the generated blocks of book/intro.md and README.md: the claims table and the agents' scores.

Both documents carry the claims table (one line per claim, its verdict and what it rests on); the
README also carries the shipped agents' score tables. Each block sits between its markers.

    saliency-study compact --profile full                 # pack the finished units (only packs are committed)
    .venv/bin/python scripts/update_findings.py           # rewrite both documents
    .venv/bin/python scripts/update_findings.py --check   # exit 1 if a document is out of date

The claims come from saliency_study.claims (packed units only, cached by what they are computed
from; a first run after new results takes a few minutes). The score tables come from
saliency_book.score_tables: data/agents/scores.csv, which `saliency-study ship` writes.
tests/book/test_claims.py checks the same agreement on every test run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from saliency_book import score_tables
from saliency_book.claims_page import END, START, claims_block, replace_block
from saliency_study.claims import cached_claims

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = {ROOT / "book" / "intro.md": "chapters/{name}.ipynb", ROOT / "README.md": "notebooks/{name}.py"}
"""The documents with the generated claims (and how each links to a chapter); the README also has
the generated score tables."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that the documents are up to date")
    args = p.parse_args(argv)
    table = cached_claims()
    scores = (score_tables.scores_block(), score_tables.START, score_tables.END)
    stale = []
    for doc, root in DOCUMENTS.items():
        text = new = doc.read_text()
        blocks = [(claims_block(table, link=root), START, END)] + ([scores] if doc.name == "README.md" else [])
        for block, start, end in blocks:
            new = replace_block(new, block, start, end)
        if new != text:
            stale.append(doc)
            if not args.check:
                doc.write_text(new)
    verb = "out of date" if args.check else "rewritten"
    print("\n".join(f"{d.relative_to(ROOT)}: {verb}" for d in stale) or "claims up to date")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
