"""``saliency-study claims``: the claims of the two papers and ours, with their verdicts."""

from __future__ import annotations

import json
import math

from ..paths import RESULTS_DIR
from ..profiles import PROFILE_NAMES

__all__ = ["add_claims_parser"]


def _clean(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def _cmd_claims(args) -> int:
    from ..claims import JSON_FIELDS, cached_claims

    t = cached_claims(profile=args.profile, results_dir=args.results_dir)
    rows = [{k: _clean(r[k]) for k in JSON_FIELDS} for r in t.to_dict("records")]
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False))
        return 0
    for r in rows:
        ess = "–" if r["ess"] is None else f"{r['ess']:.0f}"
        print(f"{r['verdict']:>13}  {r['claim']}  [{r['source']}; {r['n_states']} states, ESS {ess}]")
    return 0


def add_claims_parser(subparsers) -> None:
    """``saliency-study claims``: one row per claim, computed from the committed study (cached)."""
    from saliency_lib.cli.checks import directory

    p = subparsers.add_parser("claims", help="the papers' claims and ours, each with its verdict and what it rests on")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="full", help="the stored study it reads (default full)")
    p.add_argument("--results-dir", type=directory, default=str(RESULTS_DIR))
    p.set_defaults(func=_cmd_claims)
