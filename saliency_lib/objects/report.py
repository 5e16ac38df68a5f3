"""Do the maps point at what matters? Localisation and object faithfulness of several methods on one agent.

:func:`objects_report` plays the agent's evaluation trajectory (or takes a recorded one), reads
the objects of every state (:mod:`.extraction`), removes each object of play in turn
(:mod:`.interventions`), explains the states with every method, and summarises per method:

* localisation (:mod:`saliency_lib.metrics.localisation`) against one object group (default all
  objects), as the mean over the states, with the chance level (the boxes' mean area fraction);
* object faithfulness: the mean over the states of the per-state rank correlation between the
  map's saliency of each object and the object's removal effect;
* how often removing the most salient object changes the action, against a random object.

Intervals are 95 % moving-block bootstrap intervals over the trajectory's states, and ``ess``
is the effective sample size of the per-state relevance mass (:mod:`saliency_lib.metrics.dependence`),
as in the rest of the study. The result is a JSON-able dict (NaN as ``None``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["objects_report"]


def _num(v) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v


def _mean(values) -> float | None:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return _num(v.mean()) if v.size else None


def _ci(values) -> list[float | None]:
    from ..metrics.dependence import block_bootstrap_ci

    return [_num(x) for x in block_bootstrap_ci(np.asarray(values, dtype=np.float64))]


def objects_report(agent, methods: Sequence[str], *, n_states: int | None = None, states=None, seed: int = 0,
                   group: str = "all", baseline: str = "median", explainer_params: dict | None = None,
                   progress: bool = False) -> dict:
    """Localisation and object faithfulness of ``methods`` on ``n_states`` states of the agent's evaluation trajectory.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        Of a game of :data:`~saliency_lib.objects.OBJECT_GAMES`.
    methods : sequence of str
        Registry names (:data:`saliency_lib.explainers.EXPLAINERS`), e.g. ``["occlusion", "random"]``.
    n_states : int, optional
        States to play: the first ``n_states`` of the greedy trajectory from the fixed start
        (:func:`saliency_lib.states.collect_states` with ``seed``). Give this or ``states``.
    states : StateSet, optional
        States recorded with ``rams=True`` instead.
    seed : int, optional
        Seed of the trajectory (default 0).
    group : str, optional
        Object group of the headline localisation numbers: ``"all"`` (default), ``"no_hud"``,
        ``"hud"`` or ``"cls:<Class>"`` (:func:`~saliency_lib.metrics.localisation.object_masks`);
        every group is reported under ``"groups"``.
    baseline : str, optional
        Level above which a map's mass counts (:mod:`saliency_lib.metrics.localisation`).
    explainer_params : dict of str to dict, optional
        Keyword parameters per method, e.g. ``{"occlusion": {"patch": 4}}``.
    progress : bool, optional
        Show progress bars.

    Returns
    -------
    dict
        ``{"methods": {method: {"relevance_mass", "relevance_rank", "pointing_game",
        "object_faithfulness", "chance", "relevance_mass_ci", "object_faithfulness_ci",
        "top_object_action_change", "random_object_action_change", "n_faithfulness_states", "ess",
        "groups": {group: {measure: mean, "chance": mean, "n_states": n}}}}, "n_states": N,
        "ess": min over methods, "game", "preset", "group", "baseline", "n_objects_removed",
        "ocatari"}``.

    Raises
    ------
    ValueError
        Neither or both of ``n_states`` and ``states``; an unknown method or group.
    """
    from ..explainers import EXPLAINERS, get_explainer
    from ..metrics.dependence import effective_sample_size
    from ..metrics.localisation import LOCALISATION_MEASURES, localisation_table
    from ..states import collect_states
    from .extraction import ocatari_version, state_objects
    from .interventions import object_effects, object_faithfulness

    if (n_states is None) == (states is None):
        raise ValueError("give exactly one of n_states (play the trajectory) and states (a StateSet recorded with rams=True)")
    methods = list(methods)
    if not methods:
        raise ValueError(f"methods must name at least one explainer of: {', '.join(EXPLAINERS)}")
    for m in methods:
        if m not in EXPLAINERS:
            raise ValueError(f"unknown method {m!r}; valid names are: {', '.join(EXPLAINERS)}")
    if group not in ("all", "no_hud", "hud") and not group.startswith("cls:"):
        raise ValueError(f"unknown group {group!r}; valid groups are 'all', 'no_hud', 'hud' and 'cls:<Class>'")
    params = dict(explainer_params or {})
    if states is None:
        states = collect_states(agent, n_states, seed=seed, rams=True, progress=progress)
    n = len(states)
    objects = state_objects(states, progress=progress)
    effects = object_effects(agent, states.states, objects, hidden=states.hidden, progress=progress)
    out: dict = {"methods": {}, "n_states": n, "game": states.game, "preset": states.preset, "group": group,
                 "baseline": baseline, "n_objects_removed": int(len(effects)), "ocatari": ocatari_version()}
    for m in methods:
        maps = get_explainer(m, agent, **params.get(m, {})).attribute(states.states, hidden=states.hidden).maps.cpu()
        loc = localisation_table(maps, objects, baseline=baseline)
        faith = object_faithfulness(maps, objects, effects, baseline=baseline)
        head = loc[loc["group"] == group]
        per_state = head.pivot_table(index="state", columns="measure", values="value", aggfunc="first")
        mass = per_state["relevance_mass"].reindex(range(n)).to_numpy() if "relevance_mass" in per_state else np.full(n, np.nan)
        res = {meas: _mean(head.loc[head["measure"] == meas, "value"]) for meas in LOCALISATION_MEASURES}
        res["object_faithfulness"] = _mean(faith["faithfulness"])
        res["chance"] = _mean(head.drop_duplicates("state")["chance"])
        res["relevance_mass_ci"] = _ci(mass)
        res["object_faithfulness_ci"] = _ci(faith["faithfulness"])
        res["top_object_action_change"] = _mean(faith["top_changes"])
        res["random_object_action_change"] = _mean(faith["random_changes"])
        res["n_faithfulness_states"] = int(np.isfinite(faith["faithfulness"].to_numpy(dtype=np.float64)).sum())
        res["ess"] = _num(effective_sample_size(mass))
        res["groups"] = {
            g: {**{meas: _mean(d.loc[d["measure"] == meas, "value"]) for meas in LOCALISATION_MEASURES},
                "chance": _mean(d.drop_duplicates("state")["chance"]), "n_states": int(d["state"].nunique())}
            for g, d in loc.groupby("group", sort=True)
        }
        out["methods"][m] = res
    ess = [r["ess"] for r in out["methods"].values() if r["ess"] is not None]
    out["ess"] = min(ess) if ess else None
    return out
