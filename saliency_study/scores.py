"""Our agents' scores beside random play, the human tester and published DQN: chapter 1's score tables.

* :func:`score_table`: one row per shipped agent (``data/agents/scores.csv``), with the published
  references of its game and the human-normalised score;
* :func:`times_random`, :func:`beats_random`: the agents against random play;
* :func:`evaluate_agent`: greedy games of any agent, cached by its weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_lib.games import published_scores

from .cache import cached_json
from .catalog import load_spec, shipped_agents
from .paths import AGENTS_DIR, repo_path

__all__ = ["score_table", "times_random", "beats_random", "evaluate_agent"]


def score_table(agents_dir: str | os.PathLike = AGENTS_DIR, scores_csv: str | os.PathLike | None = "", *,
                games: list[str] | None = None, extra: list[dict] | None = None) -> pd.DataFrame:
    """Shipped agents (:func:`~saliency_study.catalog.shipped_agents`) with their scores, next to random play,
    the human tester and published DQN (:func:`~saliency_lib.games.published_scores`), one row per agent.

    ``scores_csv`` (default ``<agents_dir>/scores.csv``; None: none) has the columns ``agent`` (directory
    name or path) and ``mean``, optionally ``episodes``, ``std`` (``our_*``, ``score_*`` and ``eval_*`` are
    accepted) and ``protocol`` (its ``greedy`` rows are used); agents it lacks fall back to ``eval_score``
    in their ``meta.json``. ``extra`` rows (e.g. the official Mask-A3C re-evaluation) are appended, or
    fill the missing values of the agent they name. ``normalised`` is the human-normalised score
    ``100 (mean − random) / (human − random)`` (Mnih et al. 2015).
    """
    if scores_csv == "":
        scores_csv = repo_path(agents_dir) / "scores.csv"
    df = shipped_agents(agents_dir)[["agent", "path", "algo", "game", "variant", "frames"]].copy()
    df["episodes"], df["mean"], df["std"], df["score_source"] = np.nan, np.nan, np.nan, ""
    if scores_csv is not None and repo_path(scores_csv).is_file():
        sc = pd.read_csv(repo_path(scores_csv))
        for a, b in (("our", "mean"), ("score", "mean"), ("eval", "mean"), ("our", "std"), ("score", "std"), ("eval", "std")):
            if f"{a}_{b}" in sc.columns and b not in sc.columns:
                sc = sc.rename(columns={f"{a}_{b}": b})
        if "agent" not in sc.columns or "mean" not in sc.columns:
            raise ValueError(f"{scores_csv} must have the columns 'agent' and 'mean' (got {list(sc.columns)})")
        if "protocol" in sc.columns:  # one row per agent: the greedy one
            sc = sc[sc["protocol"].fillna("greedy") == "greedy"]
        for s in sc.to_dict("records"):
            hit = df["agent"] == Path(str(s["agent"]).rstrip("/")).name
            df.loc[hit, ["mean", "std", "episodes", "score_source"]] = [
                s["mean"], s.get("std", np.nan), s.get("episodes", np.nan), Path(scores_csv).name]
    for i, row in df[df["mean"].isna()].iterrows():
        meta = json.loads((repo_path(row["path"]) / "meta.json").read_text())
        if meta.get("eval_score") is not None:
            df.loc[i, ["mean", "score_source"]] = [float(meta["eval_score"]), "meta.json (eval_score)"]
    for row in extra or []:
        hit = df["agent"] == row.get("agent")
        if not hit.any():
            df = pd.concat([df, pd.DataFrame([row])], ignore_index=True)
            continue
        for k, v in row.items():
            if k in df.columns and (pd.isna(df.loc[hit, k]).all() or df.loc[hit, k].eq("").all()):
                df.loc[hit, k] = v
    if games is not None:
        df = df[df["game"].isin(games)]
    pub = pd.DataFrame([{"game": g, **published_scores(g)} for g in sorted(set(df["game"].dropna()))],
                       columns=["game", "random", "human", "dqn_nature", "dqn_nature_sd", "dqn_10m", "dqn_10m_dopamine"])
    df = df.merge(pub, on="game", how="left")
    df["normalised"] = 100 * (df["mean"] - df["random"]) / (df["human"] - df["random"])
    return df[["agent", "algo", "game", "variant", "frames", "episodes", "mean", "std", "score_source", "random", "human",
               "dqn_nature", "dqn_10m", "dqn_10m_dopamine", "normalised", "path"]].reset_index(drop=True)


def times_random(table: pd.DataFrame) -> pd.Series:
    """Score ÷ random play's score where random play scores above zero (NaN elsewhere: a ratio to a
    negative score, as in Pong, has no meaning). ``table`` has ``mean`` and ``random`` (:func:`score_table`)."""
    return table["mean"] / table["random"].where(table["random"] > 0)


def beats_random(table: pd.DataFrame | None, factor: float = 3.0) -> dict[str, int]:
    """Counts of the DQN agents of :func:`score_table` with a score: ``scored``, ``judged`` (random play scores
    above zero) and ``beat`` (at least ``factor`` × random play); zeros without a table."""
    if not isinstance(table, pd.DataFrame):
        return {"scored": 0, "judged": 0, "beat": 0}
    ratio = times_random(table[(table["algo"] == "dqn") & table["mean"].notna()])
    return {"scored": len(ratio), "judged": int(ratio.notna().sum()), "beat": int((ratio >= factor).sum())}


def evaluate_agent(spec: str, *, episodes: int, seed: int, max_steps: int | None, results_dir,
                   device: str = "cpu") -> dict:
    """Greedy scores of ``spec`` (:func:`saliency_lib.play.evaluate`), cached by weights hash and protocol:
    ``episodes, seed, max_steps, scores, mean, std, steps``."""
    import torch

    from saliency_lib.play import evaluate

    agent = load_spec(spec, device)
    config = {"what": "evaluate", "agent": spec, "sha256": agent.meta.get("sha256"), "game": agent.game,
              "preset": agent.preset, "episodes": episodes, "seed": seed, "max_steps": max_steps}

    def compute():
        torch.set_num_threads(1)
        r = evaluate(agent, episodes, seed, max_steps=max_steps, progress=False)
        return {"scores": r["scores"], "mean": r["mean"], "std": r["std"], "steps": r["steps"]}

    return {"episodes": episodes, "seed": seed, "max_steps": max_steps,
            **cached_json("evaluate", config, compute, results_dir=results_dir)}
