"""``saliency-study run``: the study's sweep (a profile) or a custom one, under any executor."""

from __future__ import annotations

import dataclasses
import json
import sys

from saliency_lib.sweep import EXECUTORS, EXPERIMENTS, STATE_SELECTIONS, SUBSTRATES, SweepSpec, compact, run_sweep

from ..catalog import STUDY_METHODS
from ..paths import RESULTS_DIR, repo_path
from ..profiles import PROFILE_NAMES, get_profile, sweep_sizes
from ..study import profile_specs, seed_specs
from .compact import default_games

__all__ = ["add_run_parser"]


def add_run_parser(subparsers) -> None:
    """``saliency-study run``: the study's sweep (profile) or a custom one, under any executor."""
    p = subparsers.add_parser("run", help="run the study's sweep (sanity checks, insertion, deletion) under an executor")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="quick", help="sizes of the study (default quick)")
    p.add_argument("--games", nargs="+", default=None, help="games (default: Breakout for tiny/quick, the four for full)")
    p.add_argument("--agents", nargs="+", default=None, help="agent specs (default: the study's agents of each game)")
    p.add_argument("--methods", nargs="+", default=None, help="with --agents: explainers (default: the study's)")
    p.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, default=list(EXPERIMENTS))
    p.add_argument("--substrates", nargs="+", choices=SUBSTRATES, default=list(SUBSTRATES))
    p.add_argument("--n-states", type=int, default=None, help="with --agents: states per agent")
    p.add_argument("--chunk", type=int, default=None, help="with --agents: states per unit")
    p.add_argument("--params", default="{}", help="with --agents: JSON of explainer parameters per method")
    p.add_argument("--selection", choices=STATE_SELECTIONS, default=None,
                   help="with --agents: the first n states of the greedy play (default) or n spread over one game")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--ray-address", default=None, help="existing Ray cluster (default: $RAY_ADDRESS, else a local Ray)")
    p.add_argument("--workers", type=int, default=None, help="worker processes / CPUs of a local Ray")
    p.add_argument("--results-dir", default=str(RESULTS_DIR))
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--status", action="store_true",
                   help="print one JSON object: units done and total, states and stored bytes per agent and game; computes nothing")
    p.add_argument("--seeds", action="store_true",
                   help="instead of the profile's agents: every shipped masked Mask-A3C agent of --games (any seed or "
                        "variant), its masks and the gradient baselines, on the profile's actor-critic states")
    p.add_argument("--compact", action="store_true",
                   help="after each agent's sweep, pack its units into one file per experiment (saliency-study compact)")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args) -> int:
    progress = not args.no_progress
    args.results_dir = str(repo_path(args.results_dir))  # the repository's results, wherever the command runs

    def report(done, total, eta):
        if progress:
            print(f"units {done}/{total}, ETA {eta:.0f} s", file=sys.stderr, flush=True)

    seeds = None
    if args.seeds:
        if args.agents is not None:
            raise SystemExit("--seeds plans the shipped Mask-A3C agents itself; drop --agents")
        seeds = [s for g in (args.games or ["Breakout"]) for s in seed_specs(args.profile, g, seed=args.seed)]
    if args.status:
        from ..study import study_status

        print(json.dumps(study_status(args.profile, default_games(args.profile, args.games), agents=args.agents,
                                      seed=args.seed, results_dir=args.results_dir, specs=seeds)))
        return 0
    custom = args.methods is not None or args.n_states is not None or args.chunk is not None or args.selection is not None
    if custom and seeds is not None:
        raise SystemExit("--seeds plans its own methods, states and selection; drop --methods, --n-states, --chunk and --selection")
    if custom and args.agents is None:
        raise SystemExit("--methods, --n-states, --chunk and --selection describe a custom sweep and need --agents")
    if custom:
        dqn = sweep_sizes(args.profile, "dqn")
        specs = [SweepSpec(agents=tuple(args.agents), methods=tuple(args.methods or STUDY_METHODS),
                           experiments=tuple(args.experiments), substrates=tuple(args.substrates),
                           n_states=args.n_states or dqn[0], chunk=args.chunk or dqn[1], seed=args.seed,
                           params=json.loads(args.params), state_selection=args.selection or "first",
                           episode_cap=get_profile(args.profile).episode_cap())]
    else:
        planned = seeds if seeds is not None else [
            s for g in default_games(args.profile, args.games)
            for s in profile_specs(args.profile, g, agents=args.agents, seed=args.seed, results_dir=args.results_dir)]
        specs = [dataclasses.replace(s, experiments=tuple(args.experiments), substrates=tuple(args.substrates)) for s in planned]
    total = computed = 0
    for spec in specs:
        rep = run_sweep(spec, executor=args.executor, results_dir=args.results_dir, workers=args.workers,
                        ray_address=args.ray_address, progress=progress, on_unit=report)
        total, computed = total + rep.total, computed + rep.computed
        line = {"agents": list(spec.agents), "units": rep.total, "computed": rep.computed, "rows": len(rep.table),
                "seconds": round(rep.seconds, 1)}
        if args.compact:
            line["compact"] = compact(rep.units, results_dir=args.results_dir)
        print(json.dumps(line), flush=True)
    print(f"units: {computed} computed, {total - computed} skipped of {total}", flush=True)
    return 0
