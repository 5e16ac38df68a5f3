"""Write the committed full study's findings into book/intro.md and README.md, between their markers.

    saliency-study compact --profile full      # pack the finished units (only packs are committed)
    .venv/bin/python scripts/update_findings.py          # rewrite both documents
    .venv/bin/python scripts/update_findings.py --check  # exit 1 if a document is out of date

The findings come from saliency_book.findings: packed units only (what a commit holds; a run in
progress also leaves loose ones, which are left out), nothing recomputed. tests/test_docs_claims.py
checks the same agreement on every test run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from saliency_book.findings import findings_block, loose_unit_files, replace_block

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (ROOT / "book" / "intro.md", ROOT / "README.md")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that the documents are up to date")
    args = p.parse_args(argv)
    loose = loose_unit_files()
    if loose:
        print(f"note: {len(loose)} loose units are left out (not packed); `saliency-study compact --profile full` "
              "packs the finished ones", file=sys.stderr)
    block = findings_block()
    stale = []
    for doc in DOCUMENTS:
        text = doc.read_text()
        new = replace_block(text, block)
        if new != text:
            stale.append(doc)
            if not args.check:
                doc.write_text(new)
    verb = "out of date" if args.check else "rewritten"
    print("\n".join(f"{d.relative_to(ROOT)}: {verb}" for d in stale) or "findings up to date")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
