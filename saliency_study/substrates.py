"""How far each insertion substrate lies from what an agent has seen, and a robust Q-ratio aggregate.

Insertion starts from a substrate (black, random noise, blur) and reveals the salient pixels. Its
Q-ratio curve divides by the clean Q(a), so it assumes that the substrate removes what Q(a) follows:
Q(a) on the substrate should lie well below the clean one. Where the substrate is unlike anything the
agent saw in training, nothing guarantees that: on our Breakout agent the noise substrate alone drives
Q(a) far above its clean value, and then the random-substrate rankings say little about the maps
(Blücher et al. 2024 call such inputs out of the model's scope).

* :func:`substrate_scope`: per substrate, Q(a) on the substrate relative to the clean Q(a) over the
  study's states (the median ratio and the ratio of the means), the share of states whose clean Q(a)
  is near zero, and how often the substrate changes the greedy action;
* :func:`robust_q_ratio`: beside the mean of the per-state Q-ratio AUCs (the paper's aggregate), the
  median and the ratio of mean Q's, which states with a near-zero clean Q(a) cannot dominate.

Both read the study's cached states (:func:`saliency_lib.sweep.spec_states`) and cache their table
(:mod:`saliency_study.cache`), so a chapter or the claims page computes nothing twice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .cache import cached_table
from .paths import RESULTS_DIR, repo_path

__all__ = ["NEAR_ZERO", "SUBSTRATES", "substrate_scope", "robust_q_ratio", "clean_q"]

NEAR_ZERO = 0.05
"""A clean Q(a) is near zero when its magnitude is below this share of the median magnitude over the
agent's states: dividing by it multiplies every insertion step, so one such state can outweigh hundreds."""
SUBSTRATES = ("black", "random", "blur")


def _states(agent_spec: str, profile: str, game: str, results_dir):
    from saliency_lib.agents import load_agent
    from saliency_lib.sweep import spec_states

    from .study import profile_specs

    spec = next(s for s in profile_specs(profile, game, agents=[agent_spec], results_dir=results_dir))
    agent = load_agent(agent_spec)
    states, cfg = spec_states(spec, agent=agent, results_dir=repo_path(results_dir))
    return agent, states, cfg


def clean_q(agent_spec: str, *, profile: str = "full", game: str | None = None,
            results_dir=RESULTS_DIR) -> pd.DataFrame:
    """The clean Q(a) of the greedy action on each of the study's states of the agent (cached).

    Columns ``state`` (index in the sweep's state set) and ``q``.
    """
    from saliency_lib.agents import load_agent

    agent = load_agent(agent_spec)
    game = game or agent.game
    config = {"what": "clean_q", "agent": agent_spec, "weights": agent.meta.get("sha256"), "profile": profile}

    def compute() -> pd.DataFrame:
        _, states, _ = _states(agent_spec, profile, game, results_dir)
        q = states.outputs["q"].gather(1, states.actions[:, None])[:, 0].double().numpy()
        return pd.DataFrame({"state": np.arange(len(q)), "q": q})

    return cached_table("clean-q", config, compute, results_dir=results_dir)


def substrate_scope(agent_spec: str, *, profile: str = "full", game: str | None = None, seed: int = 0,
                    results_dir=RESULTS_DIR) -> pd.DataFrame:
    """Per substrate: the agent's Q(a) on the substrate alone against its clean Q(a), over the study's states.

    Returns
    -------
    DataFrame
        One row per substrate: ``agent, game, substrate, n`` (states), ``median_ratio`` (median over
        states of Q_substrate(a) / Q_clean(a), the states with a near-zero clean Q(a) left out),
        ``ratio_of_means`` (mean Q_substrate(a) / mean Q_clean(a)), ``near_zero`` (share of states whose
        clean Q(a) is near zero: :data:`NEAR_ZERO`), ``action_changed`` (share of states where the
        substrate's greedy action differs). A ratio near or above 1 says that the substrate does not
        remove what Q(a) follows.
    """
    from saliency_lib.agents import load_agent
    from saliency_lib.metrics.insertion_deletion import endpoint_outputs

    agent = load_agent(agent_spec)
    game = game or agent.game
    config = {"what": "substrate_scope", "agent": agent_spec, "weights": agent.meta.get("sha256"), "profile": profile,
              "seed": seed, "near_zero": NEAR_ZERO}

    def compute() -> pd.DataFrame:
        agent_, states, _ = _states(agent_spec, profile, game, results_dir)
        a = states.actions
        rows = []
        torch.set_num_threads(1)
        with torch.no_grad():
            for sub in SUBSTRATES:
                out = endpoint_outputs(agent_, states.states, substrate=sub, seed=seed, state_ids=np.arange(len(a)))
                clean = out["clean"]["scores"].gather(1, a[:, None])[:, 0].double().numpy()
                on_sub = out["substrate"]["scores"]
                q_sub = on_sub.gather(1, a[:, None])[:, 0].double().numpy()
                small = np.abs(clean) < NEAR_ZERO * np.median(np.abs(clean))
                rows.append({"agent": agent_spec, "game": game, "substrate": sub, "n": len(clean),
                             "median_ratio": float(np.median(q_sub[~small] / clean[~small])),
                             "ratio_of_means": float(q_sub.mean() / clean.mean()), "near_zero": float(small.mean()),
                             "action_changed": float((on_sub.argmax(1) != a).double().mean())})
        return pd.DataFrame(rows)

    return cached_table("substrate-scope", config, compute, results_dir=results_dir)


def robust_q_ratio(aucs: pd.DataFrame, q: pd.DataFrame) -> pd.DataFrame:
    """Beside the mean per-state Q-ratio AUC, the median and the ratio of mean Q's, per setting.

    The Q-ratio AUC of a state is the mean over the insertion steps of Q_t(a) / Q_clean(a). Its mean
    over states (the paper's aggregate) is dominated by states whose clean Q(a) is near zero. The
    ratio of mean Q's weights each state by its clean Q(a): ``Σ_s AUC_s Q_s / Σ_s Q_s``, the mean
    insertion curve of Q(a) over the mean clean Q(a).

    Parameters
    ----------
    aucs : DataFrame
        Per-state Q-ratio AUCs: ``state, value`` and setting columns (e.g. ``method, substrate``).
    q : DataFrame
        :func:`clean_q` of the same agent: ``state, q``.

    Returns
    -------
    DataFrame
        Per setting: ``mean``, ``median``, ``ratio_of_means``, ``n``, ``near_zero`` (states with a
        near-zero clean Q(a)).
    """
    keys = [c for c in aucs.columns if c not in ("state", "value")]
    t = aucs.merge(q, on="state", how="inner")
    small = np.abs(t["q"]) < NEAR_ZERO * np.median(np.abs(q["q"]))
    t = t.assign(weighted=t["value"] * t["q"], near=small)
    g = t.groupby(keys, sort=False)
    out = g.agg(mean=("value", "mean"), median=("value", "median"), n=("value", "size"), near_zero=("near", "sum"),
                _w=("weighted", "sum"), _q=("q", "sum")).reset_index()
    out["ratio_of_means"] = out["_w"] / out["_q"]
    return out.drop(columns=["_w", "_q"])
