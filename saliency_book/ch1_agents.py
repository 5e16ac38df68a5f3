"""Chapter 1 (Agents): which agents the study explains, how well they play, how they learned.

The score tables and the evaluations are :mod:`saliency_study.scores`'. A function that needs a missing input (no
trained agent yet, official checkpoints not fetched) returns a :class:`~saliency_book.common.Note` that says what is
missing and how to get it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.common import Note, figure_image, png_tabs
from saliency_book.config import ChapterConfig, as_bool, as_int, as_optional
from saliency_lib.games import EPISODE_STEP_CAP, published_scores
from saliency_study.cache import cached_file
from saliency_study.catalog import (
    load_spec,
    official_available,
    recorded_study_agent,
    rel_path,
    study_agent,
    train_study_agent,
)
from saliency_study.paths import AGENTS_DIR, OFFICIAL_SCORES_CSV, RUNS_DIR, repo_path
from saliency_study.profiles import profile_settings
from saliency_study.scores import evaluate_agent, score_table, times_random

__all__ = ["AgentsChapter", "AgentChoice", "choose_agent", "evaluated", "chapter_scores", "all_scores", "show_scores",
           "find_logs", "learning_curves", "agent_gif", "official_scores", "show_official", "official_curve",
           "official_curves_tabs"]

_MISSING_OFFICIAL = ("The official Mask-A3C checkpoints and logs are not available (looked in `$MASK_A3C_OFFICIAL_DIR`, "
                     "default `data/external/mask_a3c_official`). Run `make fetch-official`, with "
                     "`MASK_A3C_OFFICIAL_SRC=<dir>` to copy a local copy including the logs.")


@dataclass(frozen=True)
class AgentsChapter(ChapterConfig):
    """Chapter 1's configuration: the base's fields, then whether to train an agent and for how long."""

    train: bool = False
    """Train a DQN agent in the chapter instead of loading one (then recorded for the study)."""
    frames: int | None = None
    """Frames to train for when ``train``; None: the profile's ``train_frames``."""
    agents_dir: str = AGENTS_DIR
    """Shipped agents."""

    USED = ("episodes", "eval_max_steps", "gif_steps", "official_games", "official_episodes", "official_max_steps",
            "train_frames")

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "train", as_bool("train", self.train))
        frames = as_optional(self.frames)
        object.__setattr__(self, "frames", None if frames is None else as_int("frames", frames, minimum=1))
        object.__setattr__(self, "settings", profile_settings(self.profile, train_frames=self.frames))

    @property
    def official_games(self) -> list[str]:
        """Official Mask-A3C games of the chapter (the chapter's game first)."""
        from saliency_lib.agents.official import OFFICIAL_GAMES

        if self.settings["official_games"] == "game":
            return [self.game] if self.game in OFFICIAL_GAMES else []
        return sorted(OFFICIAL_GAMES, key=lambda g: (g != self.game, g))


@dataclass(frozen=True)
class AgentChoice:
    """The agent a chapter explains: its spec (None: none yet) and where it came from."""

    game: str
    spec: str | None
    how: str
    detail: str = ""

    def __bool__(self) -> bool:
        return self.spec is not None

    def _repr_markdown_(self) -> str:
        if self.spec is None:
            return Note(self.detail, kind="warning", title=f"No trained agent for {self.game} yet")._repr_markdown_()
        return f"**Agent for {self.game}:** `{self.spec}` ({self.how}). {self.detail}"


def _meta(spec: str | None) -> dict:
    return json.loads(p.read_text()) if spec and (p := repo_path(spec) / "meta.json").is_file() else {}


def _describe(spec: str) -> str:
    """E.g. "DQN; 10 M frames; double, dueling." from the agent's ``meta.json``."""
    meta = _meta(spec)
    parts = [meta.get("algo", meta.get("arch", "")).upper(), meta.get("frames") and f"{meta['frames'] / 1e6:.3g} M frames",
             ", ".join(meta.get("improvements", []))]
    return "; ".join(p for p in parts if p) + "." if meta else ""


def choose_agent(cfg: AgentsChapter) -> AgentChoice:
    """The chapter's agent: the ``agent`` parameter, a freshly trained one (``train``), or the study's."""
    if cfg.agent:
        return AgentChoice(cfg.game, cfg.agent, "given as the `agent` parameter", _describe(cfg.agent))
    if cfg.train:
        spec = train_study_agent(cfg.game, cfg.settings["train_frames"], seed=cfg.seed, results_dir=cfg.results_dir,
                                 eval_max_steps=cfg.settings["eval_max_steps"] or EPISODE_STEP_CAP)
        return AgentChoice(cfg.game, spec, "trained in this chapter and recorded for the study", _describe(spec))
    spec = study_agent(cfg.game, results_dir=cfg.results_dir, agents_dir=cfg.agents_dir)
    if spec is None:
        return AgentChoice(cfg.game, None, "missing", (
            f"No DQN agent for {cfg.game} is shipped in `{rel_path(repo_path(cfg.agents_dir))}` and none was trained for "
            "the study. The sections on our agent are left empty; the official Mask-A3C agent is shown below. To train "
            f"one here, run this chapter with `papermill notebooks/01_agents.ipynb out.ipynb -p game {cfg.game} "
            "-p train true -p frames 2000000`; later chapters then use it."))
    how = "recorded for the study" if recorded_study_agent(cfg.game, cfg.results_dir) else "shipped"
    return AgentChoice(cfg.game, spec, how, _describe(spec))


# -- scores -----------------------------------------------------------------------------------

def evaluated(spec: str, cfg: AgentsChapter, *, episodes: int, max_steps: int | None) -> dict:
    """:func:`saliency_study.scores.evaluate_agent` (cached), with ``source``: where its scores come from, for a
    table cell."""
    r = evaluate_agent(spec, episodes=episodes, seed=cfg.seed, max_steps=max_steps, results_dir=cfg.results_dir,
                       device=cfg.device)
    cap = f", ≤ {max_steps:,} steps" if max_steps else ""
    return {**r, "source": f"here ({episodes} game{'s' * (episodes != 1)}{cap})"}


def chapter_scores(cfg: AgentsChapter, choice: AgentChoice, official: pd.DataFrame | Note | None = None) -> pd.DataFrame | Note:
    """:func:`~saliency_study.scores.score_table` for the chapter's game: shipped agents, the chapter's agent
    (evaluated here when no score is shipped) and the official Mask-A3C agent."""
    extra = []
    if choice:
        meta, p = _meta(choice.spec), Path(choice.spec)
        name = (p.parent.name if p.name == "agent" else p.name) if meta else choice.spec
        base = score_table(cfg.agents_dir, games=[cfg.game])
        if base.loc[base["agent"] == name, "mean"].isna().all():
            r = evaluated(choice.spec, cfg, episodes=cfg.settings["episodes"], max_steps=cfg.settings["eval_max_steps"])
            extra.append({"agent": name, "algo": meta.get("algo", "?"), "game": cfg.game, "frames": meta.get("frames"),
                          "episodes": r["episodes"], "mean": r["mean"], "std": r["std"], "score_source": r["source"],
                          "path": choice.spec})
    if isinstance(official, pd.DataFrame):
        for o in official[official["game"] == cfg.game].itertuples():
            source = str(getattr(o, "source", ""))
            extra.append({"agent": f"official:{cfg.game}", "algo": "mask-a3c", "game": cfg.game,
                          "variant": "double+ConvLSTM", "frames": np.nan, "episodes": o.episodes, "mean": o.our_mean,
                          "std": o.our_std, "score_source": Path(source).name if source.endswith(".csv") else source,
                          "path": f"official:{cfg.game}"})
    table = score_table(cfg.agents_dir, games=[cfg.game], extra=extra)
    if table.empty:
        return Note(f"No scores for {cfg.game}: no agent is shipped or trained for it and the official "
                    "checkpoints are not fetched (`make fetch-official`).", kind="warning", title="No agents")
    return table


def all_scores(cfg: AgentsChapter) -> pd.DataFrame | Note:
    """:func:`~saliency_study.scores.score_table` of every shipped agent, all games (``<agents_dir>/scores.csv``)."""
    table = score_table(cfg.agents_dir)
    if table.empty:
        return Note(f"No agent is shipped in `{cfg.agents_dir}` yet; `bash scripts/train_agents.sh` trains and ships "
                    "them.", kind="warning", title="No shipped agents")
    return table


def show_scores(table: pd.DataFrame | Note, caption: str):
    """A score table as a captioned, formatted pandas Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    pm = [("–" if pd.isna(m) else f"{m:,.1f}" + (f" ± {s:,.1f}" if pd.notna(s) else ""))
          for m, s in zip(table["mean"], table["std"])]
    t = pd.DataFrame({
        "Agent": table["agent"], "Game": table["game"], "Frames (M)": table["frames"].astype(float) / 1e6,
        "Score (mean ± sd)": pm, "Games": table["episodes"], "× random": times_random(table),
        "Human-normalised (%)": table["normalised"], "Random": table["random"], "Human": table["human"],
        "Nature DQN (200M)": table["dqn_nature"], "DQN 10M (NEC)": table["dqn_10m"],
        "DQN 10M (Dopamine)": table["dqn_10m_dopamine"], "Score from": table["score_source"]})
    fmt = {"Frames (M)": "{:.3g}", "Games": "{:.0f}", "× random": "{:.1f}", "Human-normalised (%)": "{:.0f}",
           **dict.fromkeys(("Random", "Human", "Nature DQN (200M)", "DQN 10M (NEC)", "DQN 10M (Dopamine)"), "{:,.1f}")}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


# -- learning curves ----------------------------------------------------------------------------

def find_logs(spec: str | None, game: str, *, algo: str = "dqn", seed: int = 0) -> Path | None:
    """Directory with ``train_log.csv`` for an agent: the checkpoint itself, its run
    directory (``<run>/agent``), or the run in progress ``runs/<algo>-<game>-s<seed>``."""
    cands = []
    if spec and not spec.startswith("official:"):
        p = repo_path(spec)
        cands += [p, p.parent]
        if m := re.search(r"\((.+)\)$", _meta(spec).get("source", "")):
            cands.append(repo_path(m.group(1)))
    cands.append(repo_path(RUNS_DIR) / f"{algo}-{game}-s{seed}")
    return next((c for c in cands if (c / "train_log.csv").is_file()), None)


def learning_curves(cfg: AgentsChapter, choice: AgentChoice):
    """Learning curve of the chapter's agent (or of the run in progress for the game) as an image, or a Note."""
    from saliency_book.learning_curves import plot_learning_curves
    from saliency_lib.train.common import read_log

    logs = find_logs(choice.spec, cfg.game, seed=cfg.seed)
    if logs is None:
        return Note(f"No training logs for {cfg.game}: neither the agent's directory nor `runs/dqn-{cfg.game}-s{cfg.seed}` "
                    "holds a `train_log.csv`.", title="No learning curve")
    evals = read_log(logs / "eval_log.csv") if (logs / "eval_log.csv").is_file() else None
    planned = json.loads((logs / "args.json").read_text()).get("frames") if (logs / "args.json").is_file() else None
    pub = published_scores(cfg.game)
    return figure_image(plot_learning_curves(
        read_log(logs / "train_log.csv"), evals, title=f"DQN on {cfg.game}: learning curve ({rel_path(logs)})",
        references={"random": pub["random"], "Nature DQN (200M frames)": pub["dqn_nature"],
                    "DQN at 10M frames (NEC)": pub["dqn_10m"]}, planned_frames=planned))


def agent_gif(spec: str | None, cfg: AgentsChapter, *, every: int = 3):
    """A GIF of ``spec`` playing greedily (Mask-A3C: masks overlaid), cached under ``<results_dir>/_local/media``."""
    from IPython.display import Image

    if spec is None:
        return Note(f"No agent for {cfg.game} to show.", title="No GIF")
    if spec.startswith("official:") and not official_available(spec.partition(":")[2]):
        return Note("The official Mask-A3C checkpoints are not fetched; run `make fetch-official` "
                    "(with `MASK_A3C_OFFICIAL_SRC=<dir>` for a local copy).", title="Official agent not available")
    import torch

    from saliency_lib.game_video import write_gif

    agent = load_spec(spec, cfg.device)
    steps = cfg.settings["gif_steps"]
    config = {"what": "gif", "agent": spec, "sha256": agent.meta.get("sha256"), "seed": cfg.seed, "max_steps": steps,
              "every": every}

    def make(path):
        torch.set_num_threads(1)
        write_gif(agent, path, seed=cfg.seed, max_steps=steps, every=every)

    return Image(filename=str(cached_file("gif", config, ".gif", make, results_dir=cfg.results_dir)))


# -- official Mask-A3C ---------------------------------------------------------------------------

def official_scores(cfg: AgentsChapter) -> pd.DataFrame | Note:
    """Our re-evaluation of the official checkpoints next to their logged level.

    Games present in ``data/official_scores.csv`` (``saliency-study official-scores``) are read from
    it; the others are evaluated here with the profile's episodes and step cap (cached). Column
    ``source`` says which.
    """
    from saliency_lib.agents.official import official_scores_table

    games = [g for g in cfg.official_games if official_available(g, logs=True)]
    parts = []
    if games and (csv := repo_path(OFFICIAL_SCORES_CSV)).is_file():
        shipped = pd.read_csv(csv)
        parts.append(shipped[shipped["game"].isin(games)].assign(source=OFFICIAL_SCORES_CSV))
        games = [g for g in games if g not in set(parts[0]["game"])]
    s = cfg.settings
    for g in (g for g in games if official_available(g)):
        r = evaluated(f"official:{g}", cfg, episodes=s["official_episodes"], max_steps=s["official_max_steps"])
        parts.append(official_scores_table({g: r}).assign(max_steps=r["max_steps"], source=r["source"]))
    if not parts:
        return Note(_MISSING_OFFICIAL, title="Official agents not available")
    order = {g: i for i, g in enumerate(cfg.official_games)}
    return pd.concat(parts, ignore_index=True).sort_values("game", key=lambda c: c.map(order)).reset_index(drop=True)


def show_official(table: pd.DataFrame | Note, caption: str):
    """The official re-evaluation table as a captioned Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    cols = {"game": "Game", "episodes": "Games", "our_mean": "Ours (mean)", "our_std": "Ours (sd)",
            "logged_mean": "Logged (mean of last 100)", "logged_std": "Logged (sd)", "ratio_to_logged": "Ours / logged",
            "source": "Ours from"}
    t = table[[c for c in cols if c in table.columns]].rename(columns=cols)
    fmt = {"Games": "{:.0f}", "Ours / logged": "{:.2f}", **dict.fromkeys(
        ("Ours (mean)", "Ours (sd)", "Logged (mean of last 100)", "Logged (sd)"), "{:,.1f}")}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


def _official_figure(game: str, *, window: int):
    from saliency_book.learning_curves import plot_official_curve
    from saliency_lib.agents.official import official_logged_level, official_test_log

    return plot_official_curve(official_test_log(game), game=game, level=official_logged_level(game)["logged_mean"],
                               window=window)


def official_curve(game: str, *, window: int = 100):
    """The official test log of ``game`` (greedy test games during training) as an image, or a Note."""
    if not official_available(game, logs=True):
        return Note(_MISSING_OFFICIAL, title="Official logs not available")
    return figure_image(_official_figure(game, window=window))


def official_curves_tabs(games: list[str], *, window: int = 100, dpi: int = 80):
    """A ``Tab`` with the official learning curve of each game (PNG, saved with the notebook), or a Note."""
    games = [g for g in games if official_available(g, logs=True)]
    if not games:
        return Note(_MISSING_OFFICIAL, title="Official logs not available")
    return png_tabs({g: _official_figure(g, window=window) for g in games}, dpi=dpi)
