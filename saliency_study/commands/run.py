"""``saliency-study run``: the study's sweep (a profile) or a custom one, under any executor.

Every argument is checked before any work (games case-insensitive, with a suggestion; counts
positive; ``--params`` against the explainers' signatures; ``--results-dir`` a directory),
and the agents are loaded once to check them. ``--status`` reports on exactly the sweeps that
the same flags would run (:func:`plan_specs`); ``--verify`` checks the whole store and
quarantines what is damaged, computing nothing.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from saliency_lib.cli.checks import game_name, json_object, method_params, non_negative_int, positive_int
from saliency_lib.sweep import EXECUTORS, EXPERIMENTS, STATE_SELECTIONS, SUBSTRATES, SweepSpec, compact, run_sweep

from ..catalog import STUDY_METHODS
from ..paths import RESULTS_DIR, repo_path
from ..profiles import PROFILE_NAMES, get_profile, sweep_sizes
from ..study import profile_specs, seed_specs
from .compact import default_games, results_dir

__all__ = ["add_run_parser", "plan_specs"]


def add_run_parser(subparsers) -> None:
    """``saliency-study run``: the study's sweep (profile) or a custom one, under any executor."""
    p = subparsers.add_parser("run", help="run the study's sweep (sanity checks, insertion, deletion) under an executor")
    p.add_argument("--profile", choices=PROFILE_NAMES, default="quick", help="sizes of the study (default quick)")
    p.add_argument("--games", nargs="+", type=game_name, default=None,
                   help="games, any case (default: Breakout for tiny/quick, the four for full)")
    p.add_argument("--agents", nargs="+", default=None, help="agent specs (default: the study's agents of each game)")
    p.add_argument("--methods", nargs="+", default=None, help="with --agents: explainers (default: the study's)")
    p.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, default=list(EXPERIMENTS))
    p.add_argument("--substrates", nargs="+", choices=SUBSTRATES, default=list(SUBSTRATES))
    p.add_argument("--n-states", type=positive_int, default=None, help="with --agents: states per agent")
    p.add_argument("--chunk", type=positive_int, default=None, help="with --agents: states per unit")
    p.add_argument("--params", type=json_object, default={}, help="with --agents: JSON of explainer parameters per method")
    p.add_argument("--selection", choices=STATE_SELECTIONS, default=None,
                   help="with --agents: the first n states of the greedy play (default) or n spread over one game")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--ray-address", default=None, help="existing Ray cluster (default: $RAY_ADDRESS, else a local Ray)")
    p.add_argument("--workers", type=positive_int, default=None, help="worker processes / CPUs of a local Ray")
    p.add_argument("--results-dir", type=results_dir, default=str(RESULTS_DIR),
                   help="the store (default data/results; a relative path is under the repository root)")
    p.add_argument("--no-progress", action="store_true")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--status", action="store_true",
                      help="print one JSON object: units done and total, states and stored bytes per agent and game, "
                           "for exactly the sweeps these flags would run; computes nothing")
    what.add_argument("--verify", action="store_true",
                      help="check every stored unit, pack and state set of --results-dir, quarantine the damaged ones "
                           "and print one JSON object (units checked, quarantined with reasons, bytes in quarantine); "
                           "computes nothing")
    p.add_argument("--seeds", action="store_true",
                   help="instead of the profile's agents: every shipped masked Mask-A3C agent of --games (any seed or "
                        "variant), its masks and the gradient baselines, on the profile's actor-critic states")
    p.add_argument("--compact", action="store_true",
                   help="after each agent's sweep, pack its units into one file per experiment (saliency-study compact)")
    p.set_defaults(func=_cmd_run)


def plan_specs(args) -> list[SweepSpec]:
    """The sweeps that ``run`` with ``args`` runs (and that ``run --status`` reports on), checked, computing nothing.

    Raises
    ------
    ValueError
        Flags that contradict each other, a custom sweep's bad methods or parameters, or an
        agent that does not load (the message names it).
    """
    custom = args.methods is not None or args.n_states is not None or args.chunk is not None or args.selection is not None
    if args.params and not custom:
        custom = True  # --params describes a custom sweep as much as --methods does
    if args.seeds:
        if args.agents is not None:
            raise ValueError("--seeds plans the shipped Mask-A3C agents itself; drop --agents")
        if custom:
            raise ValueError("--seeds plans its own methods, states and selection; drop --methods, --n-states, --chunk, "
                             "--params and --selection")
    if custom and args.agents is None:
        raise ValueError("--methods, --n-states, --chunk, --params and --selection describe a custom sweep and need --agents")
    if args.agents is not None:
        _load_agents(args.agents, args.games)
    if args.seeds:
        planned = [s for g in (args.games or ["Breakout"]) for s in seed_specs(args.profile, g, seed=args.seed)]
    elif custom:
        methods = tuple(args.methods or STUDY_METHODS)
        SweepSpec(agents=tuple(args.agents), methods=methods)  # the method names first, with a suggestion
        method_params(args.params, methods)
        dqn = sweep_sizes(args.profile, "dqn")
        n_states = args.n_states if args.n_states is not None else dqn[0]
        chunk = args.chunk if args.chunk is not None else dqn[1]
        planned = [SweepSpec(agents=tuple(args.agents), methods=methods, n_states=n_states, chunk=chunk, seed=args.seed,
                             params=args.params, state_selection=args.selection or "first",
                             episode_cap=get_profile(args.profile).episode_cap())]
    else:
        planned = [s for g in default_games(args.profile, args.games)
                   for s in profile_specs(args.profile, g, agents=args.agents, seed=args.seed, results_dir=args.results_dir)]
    return [dataclasses.replace(s, experiments=tuple(args.experiments), substrates=tuple(args.substrates)) for s in planned]


def _load_agents(agents: list[str], games: list[str] | None) -> None:
    """Load every agent once, before any work: a missing or damaged one fails here, naming itself."""
    from saliency_lib.agents import load_agent

    for a in agents:
        try:
            agent = load_agent(a)
        except (ValueError, TypeError) as e:  # a missing checkpoint's FileNotFoundError names its path itself
            raise ValueError(f"--agents {a}: {e}") from e
        if games and agent.game not in games:
            raise ValueError(f"--agents {a} plays {agent.game}, which is not among --games {games}; drop --games or the agent")


def _cmd_run(args) -> int:
    progress = not args.no_progress
    args.results_dir = str(repo_path(args.results_dir))  # the repository's results, wherever the command runs
    if args.verify:
        from saliency_lib.sweep import verify_store

        print(json.dumps(verify_store(args.results_dir)))
        return 0
    specs = plan_specs(args)
    if args.status:
        from ..study import study_status

        print(json.dumps(study_status(args.profile, default_games(args.profile, args.games), seed=args.seed,
                                      results_dir=args.results_dir, specs=specs)))
        return 0
    if not specs:
        raise ValueError(f"profile {args.profile!r} has no agents for {default_games(args.profile, args.games)}; "
                         "pass --agents")

    def report(done, total, eta):
        if progress:
            print(f"units {done}/{total}, ETA {eta:.0f} s", file=sys.stderr, flush=True)

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
