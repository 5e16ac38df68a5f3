#!/usr/bin/env bash
# Train (or resume) the study's agents in two background queues, one per core, under nice.
# Each run lives in runs/<name>/ (git-ignored) and resumes from its atomic checkpoint; a
# finished run is shipped to data/agents/<name>/ (weights, metadata, logs, curve, scores under both
# evaluation protocols; scripts/evaluate_agents.sh re-evaluates agents shipped before the sticky protocol).
#   bash scripts/train_agents.sh            # start or resume both queues
#   bash scripts/train_agents.sh 1          # one queue, every run in turn (the other core runs the study)
#   bash scripts/train_agents.sh --dry-run  # list the runs; combine with 1 for the one-queue order
#   tail -f runs/queue-a.log runs/queue-b.log
# Shipped agents are skipped, so the script can be started again after any interruption.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FRAMES=${FRAMES:-10000000}
mkdir -p runs

run() {  # run <name> <seed> <train args...>
  local name=$1 seed=$2; shift 2
  if [ -f "data/agents/$name/meta.json" ]; then echo "[$name] already shipped"; return 0; fi
  if [ ! -f "runs/$name/agent/meta.json" ]; then
    local resume=(); [ -f "runs/$name/state.pt" ] && resume=(--resume)
    echo "[$name] training ${resume[*]} ($(date -u +%FT%TZ))"
    OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib train "$@" --frames "$FRAMES" --seed "$seed" --out "runs/$name" --no-progress "${resume[@]}" || return 1
  fi
  echo "[$name] shipping ($(date -u +%FT%TZ))"
  # two rows in data/agents/scores.csv: 10 greedy games (the papers' protocol) and 30 with sticky actions
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib ship "runs/$name" --dest "data/agents/$name" --episodes 10 --sticky-episodes 30 --seed 0 || return 1
  explain_masks "$name" || return 1
  # chapter 5's verdict over seeds, quoted in the generated findings of book/intro.md and README.md
  OMP_NUM_THREADS=1 nice -n 10 "$PY" scripts/update_findings.py || echo "[$name] update_findings.py failed" >&2
  echo "[$name] shipped ($(date -u +%FT%TZ)): commit data/agents/$name, data/agents/scores.csv, data/results/sweep/packs, book/intro.md and README.md"
}

explain_masks() {  # explain_masks <name>: the units chapter 5 needs of a shipped masked Mask-A3C agent
  local name=$1 game
  case $name in
    a3c-*-double-s*|a3c-*-policy-s*|a3c-*-value-s*) ;;
    *) return 0 ;;
  esac
  game=$(echo "$name" | cut -d- -f2)
  echo "[$name] explaining its masks ($(date -u +%FT%TZ))"
  # chapter 5 ranks every method on every shipped masked agent (quick profile, 5 states): packed here,
  # `make book` reuses them instead of computing them (about 2.5 minutes per agent)
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib run --profile quick --games "$game" --agents "data/agents/$name" --compact --no-progress || return 1
  # the seed sweep (masks and gradient baselines, 50 states spread over a game) that compares the masks' ranks across seeds
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib run --profile full --seeds --games "$game" --compact --no-progress || return 1
}

# The actor-critic runs take the arguments of the lr pilot (data/benchmarks/a2c_lr_pilot): the same
# update lr as the default (1e-4 · √16), written out, and 3 evaluation games. The shipped seed-0
# Mask-A3C run continued the pilot's 4e-4 run from 2 M frames; every other run starts from 0.
A3C_ARGS=(--lr 4e-4 --lr-scaling none --eval-episodes 3)
ac() {  # ac <variant> <seed>
  run "a3c-Breakout-$1-s$2" "$2" a3c --game Breakout --variant "$1" "${A3C_ARGS[@]}"
}

# Round 1 (seed 0): the four DQN agents and the two Breakout actor-critic agents, all shipped.
# Round 2 (issue "Itaya et al.'s claim at an honest budget"): seeds 1 and 2 of A3C (none) and
# Mask-A3C (double), and seed 0 of the policy-only and value-only variants. The queues go seed by
# seed, so that the comparison of none and double gains a seed pair as early as possible.
queue_a() {
  run dqn-Breakout-s0 0 dqn --game Breakout &&
  run dqn-SpaceInvaders-s0 0 dqn --game SpaceInvaders &&
  ac none 0 && ac none 1 && ac none 2 && ac policy 0
}
queue_b() {
  run dqn-MsPacman-s0 0 dqn --game MsPacman &&
  run dqn-Frostbite-s0 0 dqn --game Frostbite &&
  ac double 0 && ac double 1 && ac double 2 && ac value 0
}
# One queue: the pairs of seeds in turn, then the two single-mask variants.
queue_one() {
  queue_a_round1 && queue_b_round1 &&
  ac none 1 && ac double 1 && ac none 2 && ac double 2 && ac policy 0 && ac value 0
}
queue_a_round1() { run dqn-Breakout-s0 0 dqn --game Breakout && run dqn-SpaceInvaders-s0 0 dqn --game SpaceInvaders && ac none 0; }
queue_b_round1() { run dqn-MsPacman-s0 0 dqn --game MsPacman && run dqn-Frostbite-s0 0 dqn --game Frostbite && ac double 0; }

QUEUES=2
DRY=0
for a in "$@"; do
  case $a in
    --dry-run) DRY=1 ;;
    1|2) QUEUES=$a ;;
    *) echo "usage: $0 [1|2] [--dry-run]" >&2; exit 2 ;;
  esac
done
if [ "$DRY" = 1 ]; then
  run() { echo "would run: $*"; }
  if [ "$QUEUES" = 1 ]; then queue_one; else queue_a; queue_b; fi
  exit 0
fi
if [ "$QUEUES" = 1 ]; then
  queue_one >> runs/queue-a.log 2>&1 &
  echo "one queue started: runs/queue-a.log"
else
  queue_a >> runs/queue-a.log 2>&1 &
  queue_b >> runs/queue-b.log 2>&1 &
  echo "queues started: runs/queue-a.log runs/queue-b.log"
fi
