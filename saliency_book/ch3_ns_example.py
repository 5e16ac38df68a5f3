"""Chapter 3: Huber et al.'s Noise Sensitivity example, NS original and NS chosen on one state of the sweep.

* :class:`NSExample`, :func:`ns_example`: the two variants' maps of one state for the original,
  the output-randomised and the fully randomised model (the sweep's models and parameters,
  so the similarities equal the sweep's rows; each map is cached).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from saliency_book.ch3_sanity import NS_METHODS, SanityChapter, model_at, sweep_specs
from saliency_book.common import ExplainedAgent, Note, load
from saliency_lib.results import config_hash
from saliency_study.cache import cached_file

__all__ = ["NSExample", "ns_example"]


@dataclass
class NSExample:
    """NS original and NS chosen maps of one state for the original and randomised models."""

    agent: ExplainedAgent
    preset: str
    frame: np.ndarray
    """Raw RGB frame of the state."""
    state: int
    """Index of the state in the sweep's state set (the ``state`` column)."""
    step: int
    action: int
    levels: list[tuple[int, str]]
    """``(level, name)`` of the models shown: 0 (original), 1 (output randomised), the last level."""
    maps: dict[tuple[str, int], np.ndarray]
    """``(method, level)`` → map at the agent's input resolution."""
    spearman: dict[tuple[str, int], float]
    """``(method, level)`` → Spearman similarity with the original model's map (sign-invariant, as the sweep)."""


def _median_state(table: pd.DataFrame) -> int:
    """The state whose NS-original Spearman similarity after the first level is the (lower) median."""
    t = table[(table["method"] == "ns_original") & (table["level"] == 1) & (table["measure"] == "spearman")]
    t = t.dropna(subset=["value"]).sort_values(["value", "state"], kind="stable")
    if t.empty:
        return int(table["state"].min())
    return int(t["state"].iloc[(len(t) - 1) // 2])


def ns_example(cfg: SanityChapter, who: ExplainedAgent, table: pd.DataFrame | Note, *,
               state: int | None = None) -> NSExample | Note:
    """NS original and NS chosen maps of one sweep state: original, output-randomised and fully randomised model.

    The models are the sweep's (:func:`~saliency_lib.metrics.randomised_models`, cascading,
    Glorot, seed ``cfg.seed``) and the explainers use the sweep's parameters for the agent,
    so the similarities equal the table's rows for that state. ``state`` defaults to the
    state with the median NS-original similarity after the first level. Each map is
    cached as ``.npy`` under ``<results_dir>/_local/media``.
    """
    import torch

    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import ConstantMapWarning
    from saliency_lib.metrics.similarity import spearman
    from saliency_lib.sweep import spec_states

    if isinstance(table, Note):
        return table
    if not who:
        return who.note()
    torch.set_num_threads(1)
    agent = load(who.spec, cfg.device)
    spec = sweep_specs(cfg, who.spec)[0]
    states, scfg = spec_states(spec, who.spec, results_dir=cfg.results_dir)  # the sweep's own states and selection
    i = _median_state(table) if state is None else int(state)
    if not 0 <= i < len(states):
        raise ValueError(f"state must index the {len(states)} sweep states, got {state!r}")
    groups = agent.layer_groups()
    levels = [(0, "original"), (1, groups[0][0]), (len(groups), groups[-1][0])]
    target = int(states.actions[i])
    hidden = None if states.hidden is None else tuple(h[i:i + 1].to(agent.device) for h in states.hidden)
    x = states.states[i:i + 1].to(agent.device)
    maps: dict[tuple[str, int], np.ndarray] = {}
    for method in NS_METHODS:
        params = dict(spec.params.get(method, {}))
        explainer_config = {k: v for k, v in get_explainer(method, agent, **params).config.items() if k != "batch_size"}
        for level, _ in levels:
            config = {"what": "sanity_ns_map", "agent": who.spec, "sha256": agent.meta.get("sha256"),
                      "states": config_hash(scfg), "state": i, "explainer": explainer_config, "target": target,
                      "level": level, "order": "cascading", "init": "glorot", "seed": cfg.seed}

            def make(path, method=method, level=level, params=params):
                model = model_at(agent, level, cfg.seed)
                res = get_explainer(method, model, **params).attribute(x, target=torch.tensor([target]), hidden=hidden)
                with open(path, "wb") as f:
                    np.save(f, res.maps[0].detach().cpu().numpy().astype(np.float32))

            maps[(method, level)] = np.load(cached_file("sanity_ns_map", config, ".npy", make,
                                                        results_dir=cfg.results_dir))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantMapWarning)
        rho = {(m, lv): spearman(maps[(m, 0)], maps[(m, lv)], sign_invariant=True) for m in NS_METHODS for lv, _ in levels}
    return NSExample(who, agent.preset, states.frames[i], i, int(states.steps[i]), target, levels, maps, rho)
