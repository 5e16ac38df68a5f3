"""Command-line entry points of the metrics: ``sanity`` and ``insertion``.

Wire them into a parser with :func:`add_metrics_parsers`::

    sub = parser.add_subparsers(dest="command", required=True)
    add_metrics_parsers(sub)
    args = parser.parse_args()
    args.func(args)

Both commands are thin front-ends to the study's unit engine and result store
(:mod:`saliency_lib.experiments`), the same ones that ``saliency-study run`` and the
book use: the agent's greedy trajectory (:func:`~saliency_lib.sweep._units.study_states`)
is explained with each method for the agent's own action, one unit per method and
chunk of states, each stored as ``OUT/sweep/<experiment>/<unit key>.parquet``. A re-run
skips finished units and an interrupted run resumes. The combined table, a summary
and a figure are then written to ``OUT``.

Outputs of ``sanity AGENT --out OUT``:

* ``OUT/sanity.parquet`` — all rows (schema of :mod:`saliency_lib.results`);
* ``OUT/sanity_summary.csv`` — mean, std, effective sample size and block-bootstrap 95 % CI per method, level and measure;
* ``OUT/sanity.png`` — similarity per randomised layer with CIs.

Outputs of ``insertion AGENT --mode M --substrate S --out OUT``:

* ``OUT/<M>_<S>.parquet`` — the AUCs per state (the store keeps curves as per-step summaries, not per state);
* ``OUT/<M>_<S>_curves.csv`` — the mean curve of every measure per method and step, with its 95 % band
  (:func:`saliency_study.cache.mean_curves`);
* ``OUT/<M>_<S>_summary.csv`` — AUC mean ± std and CI per method;
* ``OUT/<M>_<S>_ranking_<measure>.csv`` — ranking with Holm-corrected paired block-bootstrap tests (the states
  are consecutive, see :mod:`saliency_lib.metrics.dependence`);
* ``OUT/<M>_<S>.png`` — mean curves of the first measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..games import BENCHMARK_STATES
from ..metrics.similarity import SIMILARITIES
from ..sweep import EXECUTORS, SANITY_SIMILARITIES

__all__ = ["add_metrics_parsers", "run_sanity", "run_insertion"]


def _common(p: argparse.ArgumentParser, default_methods: list[str]) -> None:
    p.add_argument("agent", help="checkpoint directory, or official:<Game>")
    p.add_argument("--methods", nargs="+", default=default_methods, help="explainer names (see saliency_lib.explainers)")
    p.add_argument("--states", type=int, default=BENCHMARK_STATES,
                   help=f"number of states of the greedy trajectory (default {BENCHMARK_STATES}, the paper's)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=0, help="seed of the metric (randomisation, random maps and substrates)")
    p.add_argument("--state-seed", type=int, default=0, help="seed of the environment that produces the states")
    p.add_argument("--batch-size", type=int, default=None,
                   help="network input rows per forward call (default: the agent's inference batch, "
                        "256 for the DQN, 16 for Mask-A3C)")
    p.add_argument("--chunk", type=int, default=25, help="states per cached chunk file")
    p.add_argument("--params", default="{}",
                   help='JSON of explainer parameters per method, e.g. \'{"ns_original": {"radius": 4}}\'')
    p.add_argument("--threads", type=int, default=1,
                   help="CPU cores: units run one torch thread each, in this many worker processes")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="executor of the units (default: local, or processes with --threads > 1)")
    p.add_argument("--ray-address", default=None, help="existing Ray cluster (--executor ray)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_metrics_parsers(subparsers) -> None:
    """Add the ``sanity`` and ``insertion`` commands to an ``argparse`` subparsers object.

    Each parser's ``func`` default is the function that runs it (returns an exit code).
    """
    s = subparsers.add_parser("sanity", help="cascading parameter-randomisation sanity checks (Huber et al. §5)")
    _common(s, ["ns_original", "ns_chosen"])
    s.add_argument("--levels", type=int, default=None,
                   help="randomise only the first N layer groups (1 = output layer(s)); default all")
    s.add_argument("--init", choices=("glorot", "default"), default="glorot",
                   help="re-initialisation (default Glorot-uniform, zero bias)")
    s.add_argument("--order", choices=("cascading", "independent"), default="cascading")
    s.add_argument("--similarities", nargs="+", choices=list(SIMILARITIES), default=list(SANITY_SIMILARITIES),
                   help="similarity measures (default: the study's, so the units are the sweep's)")
    s.set_defaults(func=run_sanity)

    i = subparsers.add_parser("insertion", help="insertion / deletion metric (Huber et al. §6)")
    _common(i, ["occlusion", "ns_original", "rise"])
    i.add_argument("--substrate", choices=("black", "random", "blur"), default="black")
    i.add_argument("--mode", choices=("insertion", "deletion"), default="insertion")
    i.add_argument("--pixels-per-step", type=int, default=84)
    i.add_argument("--blur-sigma", type=float, default=5.0, help="σ of the blur substrate, per frame")
    i.add_argument("--no-random-baseline", action="store_true", help="do not add the uniform-random map baseline")
    i.set_defaults(func=run_insertion)


# -- shared machinery -----------------------------------------------------------------
def _spec(args, experiments: tuple[str, ...], methods: list[str], **kw):
    """The command's sweep: one agent, its first ``--states`` states, the chosen methods and options."""
    from ..sweep import SweepSpec
    from .checks import directory, method_params

    for name in ("threads", "states", "chunk", "batch_size", "levels", "pixels_per_step"):
        if getattr(args, name, None) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("seed", "state_seed"):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if getattr(args, "blur_sigma", None) is not None and not args.blur_sigma > 0:
        raise ValueError(f"--blur-sigma must be > 0, got {args.blur_sigma}")
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as e:
        raise ValueError(f"--params must be a JSON object mapping method names to parameter objects: {e}") from e
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise ValueError(f"--params must map method names to parameter objects, got {args.params!r}")
    unknown = sorted(set(params) - set(methods))
    if unknown:
        raise ValueError(f"--params names methods {unknown} that are not in --methods {methods}")
    try:
        directory(args.out)
    except argparse.ArgumentTypeError as e:
        raise ValueError(f"--out: {e}") from None
    SweepSpec(agents=(str(args.agent),), methods=tuple(methods), experiments=experiments)  # the names first
    method_params(params, methods)  # then the parameters against the methods' signatures
    spec = SweepSpec(agents=(str(args.agent),), methods=tuple(methods), experiments=experiments, n_states=args.states,
                     chunk=args.chunk, seed=args.seed, state_seed=args.state_seed, params=params,
                     batch_size=args.batch_size, **kw)
    return spec


def _run(spec, args):
    """Run the units of ``spec`` (stored under ``--out``) and return the sweep's report."""
    from ..sweep import run_sweep

    executor = args.executor or ("processes" if args.threads > 1 else "local")
    return run_sweep(spec, executor=executor, results_dir=Path(args.out), workers=args.threads,
                     ray_address=args.ray_address, progress=not args.quiet)


def _print(obj) -> None:
    print(json.dumps(obj, default=str))
    sys.stdout.flush()


# -- sanity ------------------------------------------------------------------------------
def run_sanity(args) -> int:
    """Run the ``sanity`` command (see the module docstring for its outputs)."""
    import pandas as pd

    from ..agents import load_agent
    from ..metrics.plots import plot_randomisation
    from ..metrics.statistics import summarise
    from ..results import write_table

    methods = list(dict.fromkeys(args.methods))
    spec = _spec(args, ("sanity",), methods, metric={"order": args.order, "init": args.init,
                                                      "similarities": list(args.similarities), "levels": args.levels})
    groups = load_agent(args.agent).layer_groups()
    if args.levels is not None and args.levels > len(groups):
        raise ValueError(f"--levels {args.levels} exceeds the agent's {len(groups)} layer groups {[n for n, _ in groups]}")
    table = _run(spec, args).table
    out = Path(args.out)
    write_table(table, out / "sanity.parquet")
    summ = summarise(table, by=["method", "level", "layer", "measure"], seed=args.seed)
    summ.to_csv(out / "sanity_summary.csv", index=False)
    plot_randomisation(table, out / "sanity.png", seed=args.seed,
                       title=f"{args.agent}: cascading randomisation ({args.states} states)")
    for r in summ[summ["measure"] == "spearman"].itertuples():
        _print({"method": r.method, "level": None if pd.isna(r.level) else int(r.level), "layer": r.layer,
                "spearman_mean": round(r.mean, 4), "ci95": [round(r.ci_low, 4), round(r.ci_high, 4)], "n": r.n})
    return 0


# -- insertion ---------------------------------------------------------------------------
def run_insertion(args) -> int:
    """Run the ``insertion`` command (see the module docstring for its outputs)."""
    from ..agents import load_agent
    from ..metrics.insertion_deletion import Deletion, Insertion
    from ..metrics.plots import plot_curves
    from ..metrics.statistics import ranking_table, summarise
    from ..results import write_table

    methods = list(dict.fromkeys(args.methods))
    spec = _spec(args, (args.mode,), methods, substrates=(args.substrate,), random_baseline=not args.no_random_baseline,
                 metric={"pixels_per_step": args.pixels_per_step, "blur_sigma": args.blur_sigma})
    report = _run(spec, args)
    table, curves = report.table, report.curves()
    out = Path(args.out)
    stem = f"{args.mode}_{args.substrate}"
    write_table(table, out / f"{stem}.parquet")
    curves.to_csv(out / f"{stem}_curves.csv", index=False)
    metric = (Insertion if args.mode == "insertion" else Deletion)(substrate=args.substrate)
    aucs = table[table["step"].isna()]
    summ = summarise(aucs, by=["method", "measure"], seed=args.seed)
    summ.to_csv(out / f"{stem}_summary.csv", index=False)
    for measure in sorted(set(aucs["measure"])):
        sub = aucs[aucs["measure"] == measure]
        ranking_table(sub, higher_is_better=metric.higher_is_better, seed=args.seed).to_csv(
            out / f"{stem}_ranking_{measure}.csv", index=False)
    first = metric.measures_for(load_agent(args.agent))[0]
    plot_curves(curves.rename(columns={"mean": "value"}), out / f"{stem}.png", measure=first,
                title=f"{args.agent}: {args.mode}, {args.substrate} substrate")
    for r in summ.itertuples():
        _print({"method": r.method, "measure": r.measure, "mean": round(r.mean, 4), "std": round(r.std, 4),
                "ci95": [round(r.ci_low, 4), round(r.ci_high, 4)], "n": r.n})
    return 0
