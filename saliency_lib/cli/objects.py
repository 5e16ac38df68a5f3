"""``saliency-study objects``: do an agent's maps point at the game's objects? One JSON object."""

from __future__ import annotations

import json
import math

__all__ = ["add_objects_parser"]


def _finite(value):
    """JSON without NaN: a NaN becomes null, recursively."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _cmd_objects(args) -> int:
    import torch

    from ..agents import load_agent
    from ..explainers import EXPLAINERS
    from ..objects import objects_report
    from .checks import did_you_mean, method_params

    for m in args.methods:
        if m not in EXPLAINERS:
            raise ValueError(f"unknown method {m!r}{did_you_mean(m, EXPLAINERS)} (valid: {', '.join(EXPLAINERS)})")
    params = method_params(args.params, args.methods)
    torch.set_num_threads(args.threads)
    report = objects_report(load_agent(args.agent), args.methods, n_states=args.states, seed=args.seed, group=args.group,
                            explainer_params=params, progress=not args.json)
    if args.json:
        print(json.dumps(_finite(report)))
        return 0
    for method, r in report["methods"].items():
        print(f"{method:>20}: relevance mass {r['relevance_mass']:.3f} (chance {r['chance']:.3f}), "
              f"pointing game {r['pointing_game']:.2f}, object faithfulness {r['object_faithfulness']:.2f}")
    print(f"{report['n_states']} states, ESS {report['ess']:.1f}")
    return 0


def add_objects_parser(sub) -> None:
    """``saliency-study objects``: localisation and object faithfulness of maps on the game's objects (OCAtari)."""
    from .checks import json_object, non_negative_int, positive_int

    o = sub.add_parser("objects", help="localisation and object faithfulness of maps on the game's objects (JSON)")
    o.add_argument("agent", help="checkpoint directory, official:<Game>, sb3:..., cleanrl:..., keras:...")
    o.add_argument("--states", type=positive_int, default=20, help="states of the agent's evaluation trajectory (default 20)")
    o.add_argument("--methods", nargs="+", default=["occlusion", "random"], help="registry names (default occlusion random)")
    o.add_argument("--group", default="all", help='object group of the headline numbers: all, no_hud, hud or "cls:<Class>"')
    o.add_argument("--params", type=json_object, default={},
                   help='JSON of explainer parameters per method, e.g. {"occlusion": {"patch": 4}}')
    o.add_argument("--seed", type=non_negative_int, default=0)
    o.add_argument("--threads", type=positive_int, default=1)
    o.add_argument("--json", action="store_true", help="print one JSON object")
    o.set_defaults(func=_cmd_objects)
