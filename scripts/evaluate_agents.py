"""Re-evaluate shipped agents under both evaluation protocols and write their rows to the scores table.

For each agent directory (default: every ``data/agents/*/meta.json``) and each protocol of
:data:`saliency_lib.play.PROTOCOLS` ("greedy": 10 games, "sticky": 30 games), play the
evaluation with :func:`saliency_lib.play.evaluate` (batched) and replace the agent's row of
that protocol in ``data/agents/scores.csv`` (:func:`saliency_lib.train.scores.update_scores`),
as soon as the evaluation ends. A (agent, protocol) row that already has ``distinct_games``
and the asked number of games is skipped, so the script resumes after any interruption
(``--force`` plays it again). A greedy re-evaluation is checked against the scores the row
held before: the batched evaluation plays the games of the sequential one.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python scripts/evaluate_agents.py [AGENT_DIR ...]

``scripts/evaluate_agents.sh`` runs it in the background with a log under ``runs/``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("agents", nargs="*", help="agent directories (default: every data/agents/*/meta.json)")
    p.add_argument("--scores-csv", default=None, help="default: <agents' parent>/scores.csv")
    p.add_argument("--greedy-episodes", type=int, default=10)
    p.add_argument("--sticky-episodes", type=int, default=30)
    p.add_argument("--protocols", nargs="+", default=["greedy", "sticky"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--force", action="store_true", help="evaluate again rows that are already complete")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)

    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.play import evaluate, get_protocol
    from saliency_lib.train.scores import read_scores, scores_row, update_scores

    torch.set_num_threads(args.threads)
    dirs = [Path(a) for a in args.agents] or sorted(d.parent for d in (ROOT / "data" / "agents").glob("*/meta.json"))
    episodes = {"greedy": args.greedy_episodes, "sticky": args.sticky_episodes}
    for proto in args.protocols:
        get_protocol(proto)
    for d in dirs:
        csv = Path(args.scores_csv) if args.scores_csv else d.parent / "scores.csv"
        for proto in args.protocols:
            n = episodes[proto]
            old = read_scores(csv) if csv.exists() else None
            row = old[(old["agent"] == d.name) & (old["protocol"] == proto)] if old is not None else None
            if (not args.force and row is not None and len(row) and row["distinct_games"].notna().all()
                    and (row["episodes"] == n).all()):
                print(f"[{d.name}] {proto}: done ({row['mean'].iloc[0]:.1f}, "
                      f"{int(row['distinct_games'].iloc[0])} distinct of {n})", flush=True)
                continue
            agent = load_agent(d)
            greedy = old[(old["agent"] == d.name) & (old["protocol"] == "greedy")] if old is not None else None
            pub = greedy.iloc[0] if greedy is not None and len(greedy) else None
            print(f"[{d.name}] {proto}: {n} games ({_now()})", flush=True)
            t0, c0 = time.time(), time.process_time()
            r = evaluate(agent, n, args.seed, protocol=proto, progress=not args.no_progress)
            wall, cpu = time.time() - t0, time.process_time() - c0
            published = None if pub is None or str(pub["published"]) in ("", "nan") else float(pub["published"])
            source = "" if pub is None or str(pub["published_source"]) in ("", "nan") else str(pub["published_source"])
            if published is None and agent.meta.get("algo") == "dqn":
                from saliency_study.catalog import DQN_10M_NEC, DQN_10M_SOURCE

                published, source = DQN_10M_NEC.get(agent.game), DQN_10M_SOURCE if agent.game in DQN_10M_NEC else ""
            update_scores(csv, scores_row(d.name, agent.meta, agent.game, r, published=published, published_source=source))
            same = ""
            if row is not None and len(row) and isinstance(row["scores"].iloc[0], str) and int(row["episodes"].iloc[0]) == n:
                same = f", equal to the recorded scores: {json.loads(row['scores'].iloc[0]) == r['scores']}"
            print(f"[{d.name}] {proto}: mean {r['mean']:.1f} ± {r['std']:.1f}, {r['distinct_games']} distinct of {n}, "
                  f"{r['capped']} capped, {r['steps']} steps, {r['near_ties']} near ties, {wall / 60:.1f} min wall, "
                  f"{cpu / 60:.1f} min CPU{same}; scores {r['scores']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
