#!/usr/bin/env bash
# Re-evaluate the shipped agents under both evaluation protocols (greedy: 10 games; sticky actions:
# 30 games) and write their rows to data/agents/scores.csv, in the background, one process, under
# nice with one thread (the cores are shared with the trainings of scripts/train_agents.sh).
#   bash scripts/evaluate_agents.sh [AGENT_DIR ...]     # start or resume
#   tail -f runs/evaluate-agents.log
# Finished (agent, protocol) rows are skipped, so the script can be started again after any interruption.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
mkdir -p runs
if [ -f runs/evaluate-agents.pid ] && kill -0 "$(cat runs/evaluate-agents.pid)" 2>/dev/null; then
  echo "already running: pid $(cat runs/evaluate-agents.pid) (runs/evaluate-agents.log)"; exit 1
fi
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nohup nice -n 10 "$PY" scripts/evaluate_agents.py "$@" >> runs/evaluate-agents.log 2>&1 &
echo $! > runs/evaluate-agents.pid
echo "started: pid $! (runs/evaluate-agents.log)"
