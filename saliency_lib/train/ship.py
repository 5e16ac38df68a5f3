"""Turn a finished training run into a shipped agent under ``data/agents/``.

``ship_agent`` copies the final weights and metadata, the training and evaluation
logs, draws the learning curve, evaluates the agent over ``episodes`` greedy games of
the evaluation protocol and updates ``data/agents/scores.csv`` next to random play and,
for DQN agents without an explicit ``published`` score, Nature DQN at 10 M frames
(Pritzel et al. 2017).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import atomic_write
from ..agents import load_agent, save_agent
from ..games import game_info
from .common import read_log

__all__ = ["plot_learning_curve", "ship_agent", "update_scores"]

SCORES_COLUMNS = ["agent", "algo", "game", "variant", "seed", "frames", "episodes", "mean", "std", "scores", "random_score", "ratio_to_random", "published", "published_source"]


def plot_learning_curve(run_dir: str | os.PathLike, path: str | os.PathLike, *, title: str | None = None, window: int = 50) -> Path:
    """Training-game scores (rolling mean over ``window`` games) and greedy evaluations, against frames."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    tr = read_log(run_dir / "train_log.csv")
    games = tr.dropna(subset=["episode_score"])
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    if len(games):
        ax.plot(games["frames"] / 1e6, games["episode_score"].rolling(window, min_periods=1).mean(), lw=1.2, color="#3b528b", label=f"training games (mean of {window})")
    ev_path = run_dir / "eval_log.csv"
    if ev_path.exists():
        ev = read_log(ev_path)
        if len(ev):
            ax.errorbar(ev["frames"] / 1e6, ev["eval_mean"], yerr=ev["eval_std"], fmt="o", ms=3, color="#dd513a", label="greedy evaluation")
    ax.set_xlabel("frames (millions)")
    ax.set_ylabel("game score")
    ax.set_title(title or run_dir.name)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def update_scores(csv_path: str | os.PathLike, row: dict) -> pd.DataFrame:
    """Insert or replace the row of one agent in the scores table (atomic write)."""
    csv_path = Path(csv_path)
    df = pd.read_csv(csv_path) if csv_path.exists() else pd.DataFrame(columns=SCORES_COLUMNS)
    df = df[df["agent"] != row["agent"]]
    df = pd.concat([df, pd.DataFrame([row])[SCORES_COLUMNS]], ignore_index=True).sort_values("agent")
    atomic_write(csv_path, lambda tmp: df.to_csv(tmp, index=False))
    return df


def ship_agent(run_dir: str | os.PathLike, dest: str | os.PathLike, *, episodes: int = 10, seed: int = 0,
               published: float | None = None, published_source: str = "", scores_csv: str | os.PathLike | None = None) -> dict:
    """Copy a run's final agent and logs to ``dest``, evaluate it and record its scores."""
    from ..play import evaluate

    run_dir, dest = Path(run_dir), Path(dest)
    if not (run_dir / "agent" / "meta.json").exists():
        raise FileNotFoundError(f"{run_dir} has no final agent (agent/meta.json); finish or resume the training first")
    agent = load_agent(run_dir / "agent")
    result = evaluate(agent, episodes, seed)
    dest.mkdir(parents=True, exist_ok=True)
    save_agent(agent, dest, eval_score=result["mean"], eval_std=result["std"], eval_episodes=episodes, eval_scores=result["scores"])
    for name in ("train_log.csv", "eval_log.csv"):  # without the rows that a resume played again
        if (run_dir / name).exists():
            log = read_log(run_dir / name)
            atomic_write(dest / name, lambda tmp, log=log: log.to_csv(tmp, index=False))
    if (run_dir / "args.json").exists():
        shutil.copyfile(run_dir / "args.json", dest / "args.json")
    plot_learning_curve(run_dir, dest / "learning_curve.png", title=f"{agent.meta.get('algo', '')} {agent.game} seed {agent.meta.get('seed', '')}")
    if published is None and agent.meta.get("algo") == "dqn":
        from ..games import DQN_10M_NEC, DQN_10M_SOURCE

        published, published_source = DQN_10M_NEC.get(agent.game), DQN_10M_SOURCE if agent.game in DQN_10M_NEC else ""
    rnd = game_info(agent.game).random_score
    row = {"agent": dest.name, "algo": agent.meta.get("algo", ""), "game": agent.game, "variant": agent.meta.get("variant", ""),
           "seed": agent.meta.get("seed", ""), "frames": agent.meta.get("frames", ""), "episodes": episodes,
           "mean": result["mean"], "std": result["std"], "scores": json.dumps(result["scores"]), "random_score": rnd,
           "ratio_to_random": result["mean"] / rnd if rnd else np.nan, "published": published, "published_source": published_source}
    update_scores(Path(scores_csv) if scores_csv else dest.parent / "scores.csv", row)
    return row
