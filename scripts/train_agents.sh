#!/usr/bin/env bash
# Train (or resume) the study's agents under nice: WORKERS background workers (1 or 2, one core
# each) take the runs of PLAN below in order. A worker claims a run with flock on runs/<name>.lock
# before touching it, so two workers never train one run, and a claim dies with its process.
# Each run lives in runs/<name>/ (git-ignored) and resumes from its atomic checkpoint; a finished run
# is shipped to data/agents/<name>/ (weights, metadata, logs, curve, scores under both evaluation
# protocols). Shipped runs are skipped, so the script can be started again after any interruption.
#   bash scripts/train_agents.sh            # two workers (runs/train-w1.log, runs/train-w2.log)
#   bash scripts/train_agents.sh 1          # one worker (the other core runs the study)
#   bash scripts/train_agents.sh --dry-run  # the plan, in order, with each run's state
#   CODE=runs/.code bash scripts/train_agents.sh
#       train with the code of another checkout (a `git worktree` pinned at a commit), so that edits
#       to this tree cannot reach a run that starts or resumes later; shipping uses this tree.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
CODE=${CODE:-$ROOT}
FRAMES=${FRAMES:-10000000}
mkdir -p runs

# The actor-critic runs take the arguments of the lr pilot (data/benchmarks/a2c_lr_pilot): the same
# update lr as the default (1e-4 · √16), written out, and 3 evaluation games. The shipped seed-0
# Mask-A3C run continued the pilot's 4e-4 run from 2 M frames; every other run starts from 0.
A3C_ARGS="--lr 4e-4 --lr-scaling none --eval-episodes 3"

# PLAN: one run a line, "<name> <seed> <train args>", in the order the workers take them.
# Round 1 (seed 0 of every agent) and round 2 (the Itaya issue's seeds 1-2 and the single-mask
# variants) are shipped. Round 3 (the issue "Is it the agent?"): DQN seeds 1 and 2 of the four games,
# and A3C (none) and Mask-A3C (double) to 8 seeds each. DQN and actor-critic runs alternate, so both
# gain agents from the start: the DQN seeds for the sanity and insertion spread, the pairs of
# actor-critic seeds for the power of chapter 5's comparison.
PLAN=$(cat <<EOF
dqn-Breakout-s0 0 dqn --game Breakout
dqn-SpaceInvaders-s0 0 dqn --game SpaceInvaders
dqn-MsPacman-s0 0 dqn --game MsPacman
dqn-Frostbite-s0 0 dqn --game Frostbite
a3c-Breakout-none-s0 0 a3c --game Breakout --variant none $A3C_ARGS
a3c-Breakout-double-s0 0 a3c --game Breakout --variant double $A3C_ARGS
a3c-Breakout-none-s1 1 a3c --game Breakout --variant none $A3C_ARGS
a3c-Breakout-double-s1 1 a3c --game Breakout --variant double $A3C_ARGS
a3c-Breakout-none-s2 2 a3c --game Breakout --variant none $A3C_ARGS
a3c-Breakout-double-s2 2 a3c --game Breakout --variant double $A3C_ARGS
a3c-Breakout-policy-s0 0 a3c --game Breakout --variant policy $A3C_ARGS
a3c-Breakout-value-s0 0 a3c --game Breakout --variant value $A3C_ARGS
dqn-Breakout-s1 1 dqn --game Breakout
a3c-Breakout-none-s3 3 a3c --game Breakout --variant none $A3C_ARGS
dqn-SpaceInvaders-s1 1 dqn --game SpaceInvaders
a3c-Breakout-double-s3 3 a3c --game Breakout --variant double $A3C_ARGS
dqn-MsPacman-s1 1 dqn --game MsPacman
a3c-Breakout-none-s4 4 a3c --game Breakout --variant none $A3C_ARGS
dqn-Frostbite-s1 1 dqn --game Frostbite
a3c-Breakout-double-s4 4 a3c --game Breakout --variant double $A3C_ARGS
dqn-Breakout-s2 2 dqn --game Breakout
a3c-Breakout-none-s5 5 a3c --game Breakout --variant none $A3C_ARGS
dqn-SpaceInvaders-s2 2 dqn --game SpaceInvaders
a3c-Breakout-double-s5 5 a3c --game Breakout --variant double $A3C_ARGS
dqn-MsPacman-s2 2 dqn --game MsPacman
a3c-Breakout-none-s6 6 a3c --game Breakout --variant none $A3C_ARGS
dqn-Frostbite-s2 2 dqn --game Frostbite
a3c-Breakout-double-s6 6 a3c --game Breakout --variant double $A3C_ARGS
a3c-Breakout-none-s7 7 a3c --game Breakout --variant none $A3C_ARGS
a3c-Breakout-double-s7 7 a3c --game Breakout --variant double $A3C_ARGS
EOF
)

state() {  # state <name>: shipped, trained, started or new
  if [ -f "data/agents/$1/meta.json" ]; then echo shipped
  elif [ -f "runs/$1/agent/meta.json" ]; then echo trained
  elif [ -f "runs/$1/state.pt" ]; then echo started
  else echo new; fi
}

train() {  # train <name> <seed> <train args...>: train or resume one run (in $CODE's code)
  local name=$1 seed=$2; shift 2
  local resume=(); [ -f "runs/$name/state.pt" ] && resume=(--resume)
  echo "[$name] training ${resume[*]} ($(date -u +%FT%TZ))"
  (cd "$CODE" && OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib train "$@" --frames "$FRAMES" \
     --seed "$seed" --out "$ROOT/runs/$name" --no-progress "${resume[@]}")
}

ship() {  # ship <name>: two rows in data/agents/scores.csv (10 greedy games, 30 sticky), the masks' units
  local name=$1
  echo "[$name] shipping ($(date -u +%FT%TZ))"
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m saliency_lib ship "runs/$name" --dest "data/agents/$name" \
    --episodes 10 --sticky-episodes 30 --seed 0 || return 1
  explain_masks "$name" || return 1
  # chapter 5's verdict over seeds and the score tables, quoted in book/intro.md and README.md
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

worker() {  # worker: take every run of the plan that no other worker holds, in order
  local name seed args
  while read -r name seed args; do
    [ "$(state "$name")" = shipped ] && continue
    exec 9> "runs/$name.lock"
    if ! flock -n 9; then exec 9>&-; continue; fi  # another worker holds it
    if [ "$(state "$name")" != trained ]; then
      # shellcheck disable=SC2086  # args are words of the plan
      train "$name" "$seed" $args || { echo "[$name] training failed ($(date -u +%FT%TZ))"; exec 9>&-; continue; }
    fi
    # a failed ship leaves the trained run for the next start; the worker trains on
    ship "$name" || echo "[$name] shipping failed ($(date -u +%FT%TZ)); the next start ships it"
    exec 9>&-
  done <<< "$PLAN"
  echo "worker done ($(date -u +%FT%TZ))"
}

WORKERS=2
DRY=0
for a in "$@"; do
  case $a in
    --dry-run) DRY=1 ;;
    1|2) WORKERS=$a ;;
    *) echo "usage: $0 [1|2] [--dry-run]" >&2; exit 2 ;;
  esac
done
if [ "$DRY" = 1 ]; then
  while read -r name seed args; do echo "$(state "$name") $name: train $args --seed $seed"; done <<< "$PLAN"
  exit 0
fi
for w in $(seq 1 "$WORKERS"); do
  worker >> "runs/train-w$w.log" 2>&1 &
  sleep 2  # the first worker claims its run before the second looks
done
echo "$WORKERS worker(s) started: runs/train-w*.log"
