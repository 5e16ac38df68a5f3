"""Toy inputs of the study's chapter-5 modules, shared by their tests in ``tests/study`` and chapter 5's in
``tests/book``: tiny untrained actor-critic agents, a mask play, a table of per-state scores to rank, and a
shipped training run. Nothing here is trained or read from ``data/``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import torch

import saliency_study.masks as mk


def save_ac(agents_dir, variant: str, seed: int = 0, game: str = "Breakout"):
    """A tiny untrained actor-critic agent of ``variant``, saved as ``a3c-<game>-<variant>-s<seed>``."""
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(seed)
    agent = build_agent("MaskA3CNet", {"n_actions": 4, "variant": variant}, game=game, preset="mask_a3c")
    return save_agent(agent, agents_dir / f"a3c-{game}-{variant}-s{seed}", algo="a3c-sync", variant=variant,
                      seed=seed, frames=4_000)


def save_acs(agents_dir, variants=("double", "policy", "none")):
    """:func:`save_ac` of seed 0 of each of ``variants``; returns ``agents_dir``."""
    for v in variants:
        save_ac(agents_dir, v)
    return agents_dir


def toy_play(masks: dict, n: int = 5, label: str = "toy agent") -> mk.MaskPlay:
    """A :class:`MaskPlay` of ``n`` steps with the given masks, as if played by a 4-action Breakout agent."""
    return mk.MaskPlay(spec="toy", label=label, game="Breakout", steps=np.arange(n), episode=np.zeros(n, int),
                       actions=np.zeros(n, int), value=np.linspace(0, 1, n), reset=np.r_[True, np.zeros(n - 1, bool)],
                       masks=masks, frames={0: np.zeros((210, 160, 3), np.uint8), n - 1: np.zeros((210, 160, 3), np.uint8)},
                       n_actions=4)


def _rows(experiment, measure, values: dict, *, substrate=pd.NA, level=pd.NA, layer=pd.NA, agent="official:Breakout"):
    return [{"experiment": experiment, "agent": agent, "game": "Breakout", "method": m, "substrate": substrate,
             "state": s, "level": level, "layer": layer, "step": pd.NA, "measure": measure, "value": v}
            for m, vs in values.items() for s, v in enumerate(vs)]


def toy_rank_table(agent="official:Breakout") -> pd.DataFrame:
    """Tidy rows of one agent on 8 states: Occlusion best on insertion, the policy mask second, the random map
    last; deletion flips the order; the policy mask changes most under full randomisation."""
    ins = {"occlusion": [0.9, 0.8, 0.85, 0.95, 0.9, 0.88, 0.83, 0.97],
           "mask_policy": [0.5, 0.6, 0.55, 0.52, 0.58, 0.51, 0.57, 0.53],
           "random": [0.1, 0.2, 0.15, 0.12, 0.11, 0.13, 0.16, 0.14]}
    rows = _rows("insertion", "prob_auc", ins, substrate="black", agent=agent)
    rows += _rows("insertion", "prob_auc", {k: [1 - x for x in v] for k, v in ins.items()}, substrate="random", agent=agent)
    rows += _rows("deletion", "prob_auc", ins, substrate="black", agent=agent)  # lower is better: order flips
    sanity_full = {"occlusion": [0.2] * 8, "mask_policy": [0.05, 0.1, 0.08, 0.07, 0.06, 0.09, 0.04, 0.03]}
    rows += _rows("sanity", "spearman", sanity_full, level=6, layer="conv1", agent=agent)
    rows += _rows("sanity", "spearman", {"occlusion": [0.0] * 8, "mask_policy": [1.0] * 8}, level=1, layer="heads", agent=agent)
    rows += _rows("sanity", "spearman", {"occlusion": [0.9] * 8, "mask_policy": [0.9] * 8}, layer="random_uniform", agent=agent)
    df = pd.DataFrame(rows)
    per_step = df.iloc[:3].assign(step=1, value=99.0)  # curve rows are ignored
    return pd.concat([df, per_step], ignore_index=True)


def ship_fake_run(agents_dir, variant, seed, score, frames=2_000_000, logs=True, evals=None):
    """A shipped actor-critic agent folder (``meta.json`` with ``eval_score``) with a training log rising to
    ``score`` and an evaluation log (``evals``: the checkpoints' means; default half the score, then the score)."""
    d = agents_dir / f"a3c-Breakout-{variant}-s{seed}"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"algo": "a3c-sync", "game": "Breakout", "variant": variant, "seed": seed,
                                             "frames": frames, "eval_score": score, "arch": "MaskA3CNet"}))
    if logs:
        f = np.arange(1, 11) * frames / 10
        log = pd.DataFrame({"step": f / 4, "frames": f, "episode_score": np.linspace(0, score, 10)})
        log.to_csv(d / "train_log.csv", index=False)
        means = [score / 2, score] if evals is None else list(evals)
        fe = np.linspace(frames / len(means), frames, len(means))
        pd.DataFrame({"step": fe / 4, "frames": fe, "eval_mean": means, "eval_std": 0.0,
                      "eval_scores": [json.dumps([m] * 3) for m in means]}).to_csv(d / "eval_log.csv", index=False)
    return d
