"""Command-line entry points of the metrics: ``sanity`` and ``insertion``.

Wire them into a parser with :func:`add_metrics_parsers`::

    sub = parser.add_subparsers(dest="command", required=True)
    add_metrics_parsers(sub)
    args = parser.parse_args()
    args.func(args)

Both commands collect the agent's greedy trajectory (:func:`saliency_lib.states.collect_states`),
explain every state with each method for the agent's own action, and store one
tidy table per method in a config-hash cache under ``OUT/cache/`` (one file per
chunk of states), so a re-run skips finished work and an interrupted run resumes.
The combined table, a summary and a figure are then written to ``OUT``.

Outputs of ``sanity AGENT --out OUT``:

* ``OUT/sanity.parquet`` — all rows (schema of :mod:`saliency_lib.results`);
* ``OUT/sanity_summary.csv`` — mean, std and bootstrap 95 % CI per method, level and measure;
* ``OUT/sanity.png`` — similarity per randomised layer with CIs.

Outputs of ``insertion AGENT --mode M --substrate S --out OUT``:

* ``OUT/<M>_<S>.parquet`` — curves, AUCs and raw outputs;
* ``OUT/<M>_<S>_summary.csv`` — AUC mean ± std and CI per method;
* ``OUT/<M>_<S>_ranking_<measure>.csv`` — ranking with Holm-corrected paired Wilcoxon tests;
* ``OUT/<M>_<S>.png`` — mean curves of the first measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["add_metrics_parsers", "run_sanity", "run_insertion", "RANDOM_BASELINE"]

#: Method name of the uniform-random saliency map (the paper's ``rnd_baseline``).
RANDOM_BASELINE = "random"


def _common(p: argparse.ArgumentParser, default_methods: list[str]) -> None:
    p.add_argument("agent", help="checkpoint directory, or official:<Game>")
    p.add_argument("--methods", nargs="+", default=default_methods, help="explainer names (see saliency_lib.explainers)")
    p.add_argument("--states", type=int, default=997, help="number of states of the greedy trajectory (default 997, the paper's)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, default=0, help="seed of the metric (randomisation, random maps and substrates)")
    p.add_argument("--state-seed", type=int, default=0, help="seed of the environment that produces the states")
    p.add_argument("--batch-size", type=int, default=256, help="network input rows per forward call")
    p.add_argument("--chunk", type=int, default=25, help="states per cached chunk file")
    p.add_argument("--params", default="{}", help='JSON of explainer parameters per method, e.g. \'{"ns_original": {"radius": 4}}\'')
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def add_metrics_parsers(subparsers) -> None:
    """Add the ``sanity`` and ``insertion`` commands to an ``argparse`` subparsers object.

    Each parser's ``func`` default is the function that runs it (returns an exit code).
    """
    s = subparsers.add_parser("sanity", help="cascading parameter-randomisation sanity checks (Huber et al. §5)")
    _common(s, ["ns_original", "ns_chosen"])
    s.add_argument("--levels", type=int, default=None, help="randomise only the first N layer groups (1 = output layer(s)); default all")
    s.add_argument("--init", choices=("glorot", "default"), default="glorot", help="re-initialisation (default Glorot-uniform, zero bias)")
    s.add_argument("--order", choices=("cascading", "independent"), default="cascading")
    s.add_argument("--similarities", nargs="+", default=["spearman", "ssim", "ssim_2d", "hog_pearson"])
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
def _setup(args):
    import torch

    from ..agents import load_agent
    from ..results import config_hash
    from ..states import StateSet, collect_states

    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    if args.states < 1:
        raise ValueError(f"--states must be >= 1, got {args.states}")
    if args.chunk < 1:
        raise ValueError(f"--chunk must be >= 1, got {args.chunk}")
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as e:
        raise ValueError(f"--params must be a JSON object mapping method names to parameter objects: {e}") from e
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise ValueError(f"--params must map method names to parameter objects, got {args.params!r}")
    unknown = sorted(set(params) - set(args.methods))
    if unknown:
        raise ValueError(f"--params names methods {unknown} that are not in --methods {args.methods}")
    torch.set_num_threads(args.threads)
    agent = load_agent(args.agent)
    out = Path(args.out)
    cache = out / "cache"
    state_cfg = {"agent": str(args.agent), "weights": agent.meta.get("sha256"), "n": args.states, "seed": args.state_seed}
    spath = cache / f"states-{config_hash(state_cfg)}.pt"
    if spath.exists():
        states = StateSet.load(spath)
    else:
        states = collect_states(agent, args.states, seed=args.state_seed, progress=not args.quiet)
        states.save(spath)
    return agent, states, params, cache, state_cfg


def _explainer(name: str, agent, params: dict, batch_size: int):
    from ..explainers import get_explainer

    kw = dict(params.get(name, {}))
    kw.setdefault("batch_size", batch_size)
    return get_explainer(name, agent, **kw)


def _explainer_key(explainer) -> dict:
    """The explainer's configuration for the cache key: no batch size, tensors as their SHA-256."""
    import hashlib

    import numpy as np
    import torch

    key = {}
    for k, v in dict(explainer.config).items():
        if k == "batch_size":
            continue
        if isinstance(v, (torch.Tensor, np.ndarray)):
            arr = v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v
            v = "sha256:" + hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
        key[k] = v
    return key


def _hidden(states, ids):
    import torch

    if states.hidden is None:
        return None
    idx = torch.as_tensor(ids)
    return tuple(h[idx] for h in states.hidden)


def _run_method(store, states, compute, args):
    from ..results import run_chunked

    return run_chunked(store, range(len(states)), compute, chunk=args.chunk, progress=not args.quiet)


def _write_outputs(table, out: Path, stem: str):
    from ..results import write_table

    write_table(table, out / f"{stem}.parquet")


def _print(obj) -> None:
    print(json.dumps(obj, default=str))
    sys.stdout.flush()


# -- sanity ------------------------------------------------------------------------------
def run_sanity(args) -> int:
    """Run the ``sanity`` command (see the module docstring for its outputs)."""
    import pandas as pd

    from .. import __version__
    from ..results import ResultStore
    from .plots import plot_randomisation
    from .randomisation import RandomisationTest
    from .statistics import summarise

    test = RandomisationTest(order=args.order, init=args.init, similarities=tuple(args.similarities), levels=args.levels, seed=args.seed)
    agent, states, params, cache, state_cfg = _setup(args)
    if args.levels is not None and args.levels > len(agent.layer_groups()):
        raise ValueError(f"--levels {args.levels} exceeds the agent's {len(agent.layer_groups())} layer groups {[n for n, _ in agent.layer_groups()]}")
    out = Path(args.out)
    tables = []
    for method in args.methods:
        explainer = _explainer(method, agent, params, args.batch_size)
        cfg = {"experiment": "sanity", "states": state_cfg, "method": method, "explainer": _explainer_key(explainer),
               "metric": test.config, "version": __version__}
        store = ResultStore(cache, cfg, name=f"sanity-{method}")

        def compute(ids, explainer=explainer, method=method):
            return test.evaluate(agent, states.states[ids], explainer=explainer, hidden=_hidden(states, ids),
                                 target=states.actions[ids], state_ids=ids, method=method, agent_name=str(args.agent))

        tables.append(_run_method(store, states, compute, args))
    table = pd.concat(tables, ignore_index=True)
    _write_outputs(table, out, "sanity")
    summ = summarise(table, by=["method", "level", "layer", "measure"], seed=args.seed)
    summ.to_csv(out / "sanity_summary.csv", index=False)
    plot_randomisation(table, out / "sanity.png", seed=args.seed,
                       title=f"{args.agent}: cascading randomisation ({len(states)} states)")
    for r in summ[summ["measure"] == "spearman"].itertuples():
        _print({"method": r.method, "level": None if pd.isna(r.level) else int(r.level), "layer": r.layer,
                "spearman_mean": round(r.mean, 4), "ci95": [round(r.ci_low, 4), round(r.ci_high, 4)], "n": r.n})
    return 0


# -- insertion ---------------------------------------------------------------------------
def run_insertion(args) -> int:
    """Run the ``insertion`` command (see the module docstring for its outputs)."""
    import pandas as pd

    from .. import __version__
    from ..results import ResultStore
    from .insertion_deletion import Deletion, Insertion, random_saliency
    from .plots import plot_curves
    from .statistics import ranking_table, summarise

    cls = Insertion if args.mode == "insertion" else Deletion
    metric = cls(substrate=args.substrate, pixels_per_step=args.pixels_per_step, blur_sigma=args.blur_sigma,
                 batch_size=args.batch_size, seed=args.seed)
    agent, states, params, cache, state_cfg = _setup(args)
    out = Path(args.out)
    methods = list(dict.fromkeys(args.methods))
    if not args.no_random_baseline and RANDOM_BASELINE not in methods:
        methods.append(RANDOM_BASELINE)
    hw = tuple(states.states.shape[2:])
    tables = []
    for method in methods:
        if method == RANDOM_BASELINE:
            explainer, ecfg = None, {"method": RANDOM_BASELINE, "kind": "uniform per state", "seed": args.seed}
        else:
            explainer = _explainer(method, agent, params, args.batch_size)
            ecfg = _explainer_key(explainer)
        cfg = {"experiment": args.mode, "states": state_cfg, "method": method, "explainer": ecfg,
               "metric": metric.config, "version": __version__}
        store = ResultStore(cache, cfg, name=f"{args.mode}-{args.substrate}-{method}")

        def compute(ids, explainer=explainer, method=method):
            x, hid, tgt = states.states[ids], _hidden(states, ids), states.actions[ids]
            if explainer is None:
                maps = random_saliency(len(ids), hw, seed=args.seed, state_ids=ids)
            else:
                maps = explainer.attribute(x, target=tgt, hidden=hid).maps
            return metric.evaluate(agent, x, saliency=maps, hidden=hid, target=tgt, state_ids=ids,
                                   method=method, agent_name=str(args.agent))

        tables.append(_run_method(store, states, compute, args))
    table = pd.concat(tables, ignore_index=True)
    stem = f"{args.mode}_{args.substrate}"
    _write_outputs(table, out, stem)
    aucs = table[table["step"].isna()]
    summ = summarise(aucs, by=["method", "measure"], seed=args.seed)
    summ.to_csv(out / f"{stem}_summary.csv", index=False)
    for measure in sorted(set(aucs["measure"])):
        sub = aucs[aucs["measure"] == measure]
        ranking_table(sub, higher_is_better=metric.higher_is_better, seed=args.seed).to_csv(out / f"{stem}_ranking_{measure}.csv", index=False)
    first = metric._measures_for(agent)[0]
    plot_curves(table, out / f"{stem}.png", measure=first, title=f"{args.agent}: {args.mode}, {args.substrate} substrate")
    for r in summ.itertuples():
        _print({"method": r.method, "measure": r.measure, "mean": round(r.mean, 4), "std": round(r.std, 4),
                "ci95": [round(r.ci_low, 4), round(r.ci_high, 4)], "n": r.n})
    return 0
