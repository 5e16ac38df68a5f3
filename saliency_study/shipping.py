"""Turn a finished training run into a shipped agent under ``data/agents/``.

``ship_agent`` copies the final weights and metadata, the training and evaluation
logs, draws the learning curve, evaluates the agent under both evaluation protocols
(:data:`saliency_lib.play.PROTOCOLS`: ``episodes`` greedy games as in the papers, and
``sticky_episodes`` games with sticky actions) and writes one row per protocol to
``data/agents/scores.csv`` (:mod:`saliency_lib.train.scores`) next to random play and,
for DQN agents without an explicit ``published`` score, Nature DQN at 10 M frames
(Pritzel et al. 2017).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from saliency_lib._io import atomic_write
from saliency_lib.agents import load_agent, save_agent
from saliency_lib.train.common import read_log
from saliency_lib.train.scores import evaluate_protocols, scores_row, update_scores

__all__ = ["plot_learning_curve", "ship_agent", "update_scores"]


def plot_learning_curve(run_dir: str | os.PathLike, path: str | os.PathLike, *, title: str | None = None,
                        window: int = 50) -> Path:
    """Training-game scores (rolling mean over ``window`` games) and greedy evaluations, against frames."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    tr = read_log(run_dir / "train_log.csv")
    games = tr.dropna(subset=["episode_score"])
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    if len(games):
        ax.plot(games["frames"] / 1e6, games["episode_score"].rolling(window, min_periods=1).mean(), lw=1.2, color="#3b528b",
                label=f"training games (mean of {window})")
    ev_path = run_dir / "eval_log.csv"
    if ev_path.exists():
        ev = read_log(ev_path)
        if len(ev):
            ax.errorbar(ev["frames"] / 1e6, ev["eval_mean"], yerr=ev["eval_std"], fmt="o", ms=3, color="#dd513a",
                        label="greedy evaluation")
    ax.set_xlabel("frames (millions)")
    ax.set_ylabel("game score")
    ax.set_title(title or run_dir.name)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def ship_agent(run_dir: str | os.PathLike, dest: str | os.PathLike, *, episodes: int = 10, seed: int = 0,
               sticky_episodes: int = 30, published: float | None = None, published_source: str = "",
               scores_csv: str | os.PathLike | None = None, progress: bool = True) -> dict:
    """Copy a run's final agent and logs to ``dest``, evaluate it under both protocols and record its scores.

    ``episodes`` greedy games (the papers' protocol; their mean goes to ``meta.json`` as
    ``eval_score``, as before) and ``sticky_episodes`` games with sticky actions (0: none).
    Each evaluation's row is written to the scores table as soon as it ends. Returns the
    greedy row.
    """
    run_dir, dest = Path(run_dir), Path(dest)
    if episodes < 1 or sticky_episodes < 0:
        raise ValueError(f"episodes must be >= 1 and sticky_episodes >= 0, got {episodes} and {sticky_episodes}")
    if not (run_dir / "agent" / "meta.json").exists():
        raise FileNotFoundError(f"{run_dir} has no final agent (agent/meta.json); finish or resume the training first")
    agent = load_agent(run_dir / "agent")
    csv = Path(scores_csv) if scores_csv else dest.parent / "scores.csv"
    if published is None and agent.meta.get("algo") == "dqn":
        from saliency_lib.games import DQN_10M_NEC, DQN_10M_SOURCE

        published, published_source = DQN_10M_NEC.get(agent.game), DQN_10M_SOURCE if agent.game in DQN_10M_NEC else ""
    rows = {}

    def record(protocol: str, result: dict) -> None:
        rows[protocol] = scores_row(dest.name, agent.meta, agent.game, result, published=published,
                                    published_source=published_source)
        if protocol == "greedy":  # the agent's files first, so that a row never names an agent that is not there
            _copy_run(run_dir, dest, agent, result, episodes)
        update_scores(csv, rows[protocol])

    evaluate_protocols(agent, {"greedy": episodes, "sticky": sticky_episodes}, seed=seed, progress=progress, on_result=record)
    return rows["greedy"]


def _copy_run(run_dir: Path, dest: Path, agent, result: dict, episodes: int) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    save_agent(agent, dest, eval_score=result["mean"], eval_std=result["std"], eval_episodes=episodes,
               eval_scores=result["scores"])
    for name in ("train_log.csv", "eval_log.csv"):  # without the rows that a resume played again
        if (run_dir / name).exists():
            log = read_log(run_dir / name)
            atomic_write(dest / name, lambda tmp, log=log: log.to_csv(tmp, index=False))
    if (run_dir / "args.json").exists():
        shutil.copyfile(run_dir / "args.json", dest / "args.json")
    plot_learning_curve(run_dir, dest / "learning_curve.png",
                        title=f"{agent.meta.get('algo', '')} {agent.game} seed {agent.meta.get('seed', '')}")
