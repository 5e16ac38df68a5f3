#!/usr/bin/env bash
# Run the paper-scale study (profile full) in the background under nice, game by game, packing
# each game's units as it finishes so that a finished game can be committed while the rest runs;
# after each game the generated findings of book/intro.md and README.md are rewritten from the packs.
#   bash scripts/run_full_study.sh          # one queue: the four DQN agents, then each game's Mask-A3C agents and the seeds
#   bash scripts/run_full_study.sh 2        # two queues (only when no training holds a core)
#   bash scripts/run_full_study.sh --dry-run
#   tail -f runs/full-study-*.log           # progress; `saliency-study run --profile full --status` counts units
# The sweep resumes from its stored units, so the script can be started again after any interruption.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
QUEUES=1
DRY=0
for a in "$@"; do
  case $a in
    --dry-run) DRY=1 ;;
    1|2) QUEUES=$a ;;
    *) echo "usage: $0 [1|2] [--dry-run]" >&2; exit 2 ;;
  esac
done
mkdir -p runs

study() {  # study <args...>: one sweep, one torch thread, packed when done
  if [ "$DRY" = 1 ]; then echo "would run: saliency-study run --profile full $*"; return 0; fi
  echo "[$*] start ($(date -u +%FT%TZ))"
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib run --profile full "$@" --compact --no-progress || return 1
  # the introduction's and the README's findings, from the packs just written
  OMP_NUM_THREADS=1 nice -n 10 "$PY" scripts/update_findings.py || echo "[$*] update_findings.py failed" >&2
  echo "[$*] done ($(date -u +%FT%TZ)): commit data/results/sweep/packs/, book/intro.md and README.md"
}

# The four DQN agents first (about 3 core hours per game): every finding about them rests on all 997
# states of every game, and they are Huber et al.'s study proper. Then each game again, which adds its
# Mask-A3C agents (official, and on Breakout our two actor-critic agents; the DQN units are found
# stored and skipped), then the seed sweep of the masked agents.
dqn() { study --games "$1" --agents "data/agents/dqn-$1-s0"; }
queue_a() { dqn Breakout && dqn SpaceInvaders && study --games Breakout && study --games SpaceInvaders && study --seeds; }
queue_b() { dqn MsPacman && dqn Frostbite && study --games MsPacman && study --games Frostbite; }
one_queue() {
  dqn Breakout && dqn SpaceInvaders && dqn MsPacman && dqn Frostbite &&
  study --games Breakout && study --games SpaceInvaders && study --seeds && study --games MsPacman && study --games Frostbite
}
if [ "$DRY" = 1 ]; then if [ "$QUEUES" = 2 ]; then queue_a; queue_b; else one_queue; fi; exit 0; fi
if [ "$QUEUES" = 2 ]; then
  queue_a >> runs/full-study-a.log 2>&1 &
  queue_b >> runs/full-study-b.log 2>&1 &
  echo "two queues started: runs/full-study-a.log runs/full-study-b.log"
else
  one_queue >> runs/full-study-a.log 2>&1 &
  echo "one queue started: runs/full-study-a.log"
fi
