"""Write the generated blocks of book/intro.md and README.md: the study's findings and the agents' scores.

Both documents carry the committed full study's findings; the README also carries the shipped
agents' score tables. Each block sits between its markers.

    saliency-study compact --profile full      # pack the finished units (only packs are committed)
    .venv/bin/python scripts/update_findings.py          # rewrite both documents
    .venv/bin/python scripts/update_findings.py --check  # exit 1 if a document is out of date

The findings come from saliency_book.findings: packed units only (what a commit holds; a run in
progress also leaves loose ones, which are left out), nothing recomputed. The score tables come from
saliency_book.score_tables: data/agents/scores.csv, which `saliency-study ship` writes.
tests/test_docs_claims.py checks the same agreement on every test run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from saliency_book import score_tables
from saliency_book.findings import END, START, findings_block, loose_unit_files, replace_block

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (ROOT / "book" / "intro.md", ROOT / "README.md")
"""The documents with the generated findings; the README also has the generated score tables."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that the documents are up to date")
    args = p.parse_args(argv)
    loose = loose_unit_files()
    if loose:
        print(f"note: {len(loose)} loose units are left out (not packed); `saliency-study compact --profile full` "
              "packs the finished ones", file=sys.stderr)
    found = (findings_block(), START, END)
    scores = (score_tables.scores_block(), score_tables.START, score_tables.END)
    stale = []
    for doc in DOCUMENTS:
        text = new = doc.read_text()
        for block, start, end in [found, scores] if doc.name == "README.md" else [found]:
            new = replace_block(new, block, start, end)
        if new != text:
            stale.append(doc)
            if not args.check:
                doc.write_text(new)
    verb = "out of date" if args.check else "rewritten"
    print("\n".join(f"{d.relative_to(ROOT)}: {verb}" for d in stale) or "findings up to date")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
