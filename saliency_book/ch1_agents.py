"""Chapter 1 (Agents): which agents the study explains, how well they play, how they learned.

The chapter's notebook (``notebooks/01_agents.py``) only calls these functions.

* :class:`AgentsChapter`: the chapter's frozen configuration, built from the
  notebook's ``parameters`` cell and the execution profile.
* :func:`study_agent`: the agent the study explains for a game. Later chapters call
  it too, so an agent trained in chapter 1 (``-p train true``) is used everywhere.
* :func:`score_table`: shipped agents (``data/agents/*/meta.json``) with their scores
  (``data/agents/scores.csv``) next to random play, the human tester and Nature DQN.
* :func:`learning_curves`, :func:`agent_gif`, :func:`official_scores`,
  :func:`official_curve`, :func:`official_curves_tabs`: the chapter's figures and tables.

Functions that need a missing input (no trained agent yet, official checkpoints not
fetched) return a :class:`~saliency_book.common.Note` that says what is
missing and how to get it, instead of raising.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.common import Note, figure_image, here, score_table
from saliency_lib.games import EPISODE_STEP_CAP, game_info, published_scores
from saliency_study.cache import cached_file, cached_json
from saliency_study.catalog import (
    official_available,
    record_study_agent,
    recorded_study_agent,
    rel_path,
    shipped_agents,
    study_agent,
    train_study_agent,
)
from saliency_study.paths import AGENTS_DIR, OFFICIAL_SCORES_CSV, RESULTS_DIR, RUNS_DIR, repo_path
from saliency_study.profiles import profile_settings

__all__ = [
    "AgentsChapter", "AgentChoice", "shipped_agents", "study_agent", "record_study_agent", "train_study_agent",
    "choose_agent", "evaluate_agent", "chapter_scores", "all_scores", "beats_random_sentence", "style_scores",
    "find_logs", "learning_curves",
    "agent_gif", "official_available", "official_scores", "style_official", "official_curve", "official_curves_tabs",
]


def _as_bool(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise TypeError(f"{name} must be true or false, got {value!r}")


# -- configuration ---------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentsChapter:
    """Configuration of chapter 1; every field is a parameter of the notebook."""

    game: str = "Breakout"
    """Atari game of the chapter."""
    agent: str | None = None
    """Agent spec (checkpoint directory, ``official:<Game>``, ``sb3:…``); None: :func:`study_agent`."""
    train: bool = False
    """Train a DQN agent in the chapter instead of loading one (then recorded for the study)."""
    frames: int | None = None
    """Frames to train for when ``train``; None: the profile's ``train_frames``."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full`` (:mod:`saliency_study.profiles`)."""
    seed: int = 0
    """Seed of evaluations, GIFs and training."""
    device: str = "cpu"
    """Torch device of the agents."""
    results_dir: str = RESULTS_DIR
    """Cache of results (relative paths are under the repository root)."""
    agents_dir: str = AGENTS_DIR
    """Shipped agents."""
    settings: dict = field(init=False, repr=False, compare=False)
    """The profile's settings (episodes, GIF length, …), with ``frames`` applied."""

    def __post_init__(self):
        game_info(self.game)
        # papermill's ``-p train true`` passes the string "true"; ``-p frames 2e6`` a float.
        object.__setattr__(self, "train", _as_bool(self.train, "train"))
        if isinstance(self.frames, float) and self.frames.is_integer():
            object.__setattr__(self, "frames", int(self.frames))
        if self.frames is not None and (not isinstance(self.frames, int) or isinstance(self.frames, bool) or self.frames <= 0):
            raise ValueError(f"frames must be a positive integer or None, got {self.frames!r}")
        if self.agent in ("", "None"):
            object.__setattr__(self, "agent", None)
        object.__setattr__(self, "settings", profile_settings(self.profile, train_frames=self.frames))

    USED = ("episodes", "eval_max_steps", "gif_steps", "official_games", "official_episodes", "official_max_steps",
            "train_frames")
    """Profile settings this chapter uses."""

    def _repr_markdown_(self) -> str:
        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.name != "settings")
        used = ", ".join(f"`{k}={self.settings[k]!r}`" for k in self.USED)
        return f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** {used}.\n"

    @property
    def official_games(self) -> list[str]:
        """Official Mask-A3C games of the chapter (the chapter's game first)."""
        from saliency_lib.agents.official import OFFICIAL_GAMES

        if self.settings["official_games"] == "game":
            return [self.game] if self.game in OFFICIAL_GAMES else []
        return sorted(OFFICIAL_GAMES, key=lambda g: (g != self.game, g))


# -- shipped and recorded agents ------------------------------------------------------------


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


def _describe(spec: str) -> str:
    meta_path = repo_path(spec) / "meta.json"
    if not meta_path.is_file():
        return ""
    meta = json.loads(meta_path.read_text())
    parts = [meta.get("algo", meta.get("arch", "")).upper()]
    if meta.get("frames"):
        parts.append(f"{meta['frames'] / 1e6:.3g} M frames")
    if meta.get("improvements"):
        parts.append(", ".join(meta["improvements"]))
    return "; ".join(p for p in parts if p) + "."


def choose_agent(cfg: AgentsChapter) -> AgentChoice:
    """The chapter's agent: the ``agent`` parameter, a freshly trained one (``train``), or :func:`study_agent`."""
    if cfg.agent:
        return AgentChoice(cfg.game, cfg.agent, "given as the `agent` parameter", _describe(cfg.agent))
    if cfg.train:
        spec = train_study_agent(cfg.game, cfg.settings["train_frames"], seed=cfg.seed, results_dir=cfg.results_dir,
                                 eval_max_steps=cfg.settings["eval_max_steps"] or EPISODE_STEP_CAP)
        return AgentChoice(cfg.game, spec, "trained in this chapter and recorded for the study", _describe(spec))
    spec = study_agent(cfg.game, results_dir=cfg.results_dir, agents_dir=cfg.agents_dir)
    if spec is None:
        return AgentChoice(cfg.game, None, "missing", (
            f"No DQN agent for {cfg.game} is shipped in `{rel_path(repo_path(cfg.agents_dir))}` and none was trained for the study. "
            "The sections on our agent are left empty; the official Mask-A3C agent is shown below. "
            f"To train one here, run this chapter with `papermill notebooks/01_agents.ipynb out.ipynb -p game {cfg.game} "
            "-p train true -p frames 2000000`; later chapters then use it."))
    how = "recorded for the study" if recorded_study_agent(cfg.game, cfg.results_dir) else "shipped"
    return AgentChoice(cfg.game, spec, how, _describe(spec))


# -- scores -----------------------------------------------------------------------------------

def evaluate_agent(spec: str, *, episodes: int, seed: int, max_steps: int | None, results_dir=RESULTS_DIR,
                   device: str = "cpu") -> dict:
    """Greedy scores of ``spec`` (:func:`saliency_lib.play.evaluate`), cached by weights hash and protocol."""
    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.play import evaluate

    agent = load_agent(repo_path(spec) if (repo_path(spec) / "meta.json").is_file() else spec, device=device)
    config = {"what": "evaluate", "agent": spec, "sha256": agent.meta.get("sha256"), "game": agent.game,
              "preset": agent.preset, "episodes": episodes, "seed": seed, "max_steps": max_steps}

    def compute():
        torch.set_num_threads(1)
        r = evaluate(agent, episodes, seed, max_steps=max_steps, progress=False)
        return {"scores": r["scores"], "mean": r["mean"], "std": r["std"], "steps": r["steps"]}

    r = cached_json("evaluate", config, compute, results_dir=results_dir)
    return {"episodes": episodes, "seed": seed, "max_steps": max_steps, **r}


def chapter_scores(cfg: AgentsChapter, choice: AgentChoice, official: pd.DataFrame | Note | None = None) -> pd.DataFrame | Note:
    """:func:`score_table` for the chapter's game: shipped agents, the chapter's agent
    (evaluated here when no score is shipped) and the official Mask-A3C agent."""
    extra = []
    if choice:
        p = Path(choice.spec)
        name = (p.parent.name if p.name == "agent" else p.name) if (repo_path(choice.spec) / "meta.json").is_file() else choice.spec
        base = score_table(cfg.agents_dir, games=[cfg.game])
        known = base.loc[base["agent"] == name, "mean"]
        if known.empty or known.isna().all():
            s = cfg.settings
            r = evaluate_agent(choice.spec, episodes=s["episodes"], seed=cfg.seed, max_steps=s["eval_max_steps"],
                               results_dir=cfg.results_dir, device=cfg.device)
            meta_path = repo_path(choice.spec) / "meta.json"
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
            extra.append({"agent": name, "algo": meta.get("algo", "?"), "game": cfg.game, "frames": meta.get("frames"),
                          "episodes": r["episodes"], "mean": r["mean"], "std": r["std"],
                          "score_source": here(r), "path": choice.spec})
    if isinstance(official, pd.DataFrame):
        for _, o in official[official["game"] == cfg.game].iterrows():
            extra.append({"agent": f"official:{cfg.game}", "algo": "mask-a3c", "game": cfg.game, "variant": "double+ConvLSTM",
                          "frames": np.nan,
                          "episodes": o["episodes"], "mean": o["our_mean"], "std": o["our_std"],
                          "score_source": Path(o.get("source", OFFICIAL_SCORES_CSV)).name if str(o.get("source", "")).endswith(".csv")
                          else o.get("source"), "path": f"official:{cfg.game}"})
    table = score_table(cfg.agents_dir, games=[cfg.game], extra=extra)
    if table.empty:
        return Note(f"No scores for {cfg.game}: no agent is shipped or trained for it and the official "
                    "checkpoints are not fetched (`make fetch-official`).", kind="warning", title="No agents")
    return table


def all_scores(cfg: AgentsChapter) -> pd.DataFrame | Note:
    """:func:`score_table` of every shipped agent, all games (scores from ``<agents_dir>/scores.csv``)."""
    table = score_table(cfg.agents_dir)
    if table.empty:
        return Note(f"No agent is shipped in `{cfg.agents_dir}` yet; `bash scripts/train_agents.sh` trains and ships "
                    "them.", kind="warning", title="No shipped agents")
    return table


def _times_random(table: pd.DataFrame) -> pd.Series:
    """Score ÷ random play's score, where random play scores above zero (NaN elsewhere: a
    ratio to a negative score, as in Pong, has no meaning)."""
    rnd = table["random"].where(table["random"] > 0)
    return table["mean"] / rnd


def beats_random_sentence(table: pd.DataFrame | Note, factor: float = 3.0):
    """Markdown: which shipped DQN agents score at least ``factor`` × random play (generated from the table)."""
    from IPython.display import Markdown

    if isinstance(table, Note):
        return None
    dqn = table[(table["algo"] == "dqn") & table["mean"].notna()].assign(ratio=_times_random)
    if dqn.empty:
        return Markdown("No DQN agent has a score yet.")
    judged = dqn[dqn["ratio"].notna()]
    ok = [f"{r.agent} ({r.ratio:.1f}×)" for r in judged.itertuples() if r.ratio >= factor]
    low = [f"{r.agent} ({r.ratio:.1f}×)" for r in judged.itertuples() if r.ratio < factor]
    text = []
    if ok:
        text.append(f"{len(ok)} of {len(judged)} DQN agents score at least {factor:g} times random play: {', '.join(ok)}.")
    if low:
        text.append(f"Below {factor:g} times random play: {', '.join(low)}.")
    unjudged = dqn[dqn["ratio"].isna()]
    if len(unjudged):
        text.append(f"Not judged (random play does not score above zero): {', '.join(unjudged['agent'])}.")
    return Markdown(" ".join(text))


def style_scores(table: pd.DataFrame, caption: str):
    """The score table as a captioned, formatted pandas Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table

    def pm(row):
        if pd.isna(row["mean"]):
            return "–"
        return f"{row['mean']:,.1f}" + (f" ± {row['std']:,.1f}" if pd.notna(row["std"]) else "")

    t = pd.DataFrame({
        "Agent": table["agent"], "Game": table["game"], "Frames (M)": table["frames"].astype(float) / 1e6,
        "Score (mean ± sd)": table.apply(pm, axis=1), "Games": table["episodes"],
        "× random": _times_random(table),
        "Human-normalised (%)": table["normalised"], "Random": table["random"], "Human": table["human"],
        "Nature DQN (200M)": table["dqn_nature"], "DQN 10M (NEC)": table["dqn_10m"],
        "DQN 10M (Dopamine)": table["dqn_10m_dopamine"], "Score from": table["score_source"]})
    fmt = {"Frames (M)": "{:.3g}", "Games": "{:.0f}", "× random": "{:.1f}", "Random": "{:,.1f}", "Human": "{:,.1f}", "Nature DQN (200M)": "{:,.1f}",
           "DQN 10M (NEC)": "{:,.1f}", "DQN 10M (Dopamine)": "{:,.1f}", "Human-normalised (%)": "{:.0f}"}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


# -- learning curves --------------------------------------------------------------------------

def find_logs(spec: str | None, game: str, *, algo: str = "dqn", seed: int = 0) -> Path | None:
    """Directory with ``train_log.csv`` for an agent: the checkpoint itself, its run
    directory (``<run>/agent``), or the run in progress ``runs/<algo>-<game>-s<seed>``."""
    cands = []
    if spec and not spec.startswith("official:"):
        p = repo_path(spec)
        cands += [p, p.parent]
        meta = p / "meta.json"
        if meta.is_file():
            m = re.search(r"\((.+)\)$", json.loads(meta.read_text()).get("source", ""))
            if m:
                cands.append(repo_path(m.group(1)))
    cands.append(repo_path(RUNS_DIR) / f"{algo}-{game}-s{seed}")
    for c in cands:
        if (c / "train_log.csv").is_file():
            return c
    return None


def learning_curves(cfg: AgentsChapter, choice: AgentChoice):
    """Learning curve of the chapter's agent (or of the run in progress for the game) as an image, or a Note."""
    from saliency_book.learning_curves import plot_learning_curves

    logs = find_logs(choice.spec, cfg.game, seed=cfg.seed)
    if logs is None:
        return Note(f"No training logs for {cfg.game}: neither the agent's directory nor `runs/dqn-{cfg.game}-s{cfg.seed}` "
                    "holds a `train_log.csv`.", title="No learning curve")
    from saliency_lib.train.common import read_log

    train = read_log(logs / "train_log.csv")
    evals = read_log(logs / "eval_log.csv") if (logs / "eval_log.csv").is_file() else None
    planned = json.loads((logs / "args.json").read_text()).get("frames") if (logs / "args.json").is_file() else None
    pub = published_scores(cfg.game)
    fig = plot_learning_curves(train, evals, title=f"DQN on {cfg.game}: learning curve ({rel_path(logs)})",
                               references={"random": pub["random"], "Nature DQN (200M frames)": pub["dqn_nature"],
                                           "DQN at 10M frames (NEC)": pub["dqn_10m"]},
                               planned_frames=planned)
    return figure_image(fig)


# -- GIFs ---------------------------------------------------------------------------------------

def agent_gif(spec: str | None, cfg: AgentsChapter, *, every: int = 3):
    """A GIF of ``spec`` playing greedily (Mask-A3C: masks overlaid), cached under ``<results_dir>/_local/media``."""
    from IPython.display import Image

    if spec is None:
        return Note(f"No agent for {cfg.game} to show.", title="No GIF")
    if spec.startswith("official:") and not official_available(spec.partition(":")[2]):
        return Note("The official Mask-A3C checkpoints are not fetched; run `make fetch-official` "
                    "(with `MASK_A3C_OFFICIAL_SRC=<dir>` for a local copy).", title="Official agent not available")
    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.game_video import write_gif

    agent = load_agent(repo_path(spec) if (repo_path(spec) / "meta.json").is_file() else spec, device=cfg.device)
    steps = cfg.settings["gif_steps"]
    config = {"what": "gif", "agent": spec, "sha256": agent.meta.get("sha256"), "seed": cfg.seed, "max_steps": steps, "every": every}

    def make(path):
        torch.set_num_threads(1)
        write_gif(agent, path, seed=cfg.seed, max_steps=steps, every=every)

    path = cached_file("gif", config, ".gif", make, results_dir=cfg.results_dir)
    return Image(filename=str(path))


# -- official Mask-A3C ---------------------------------------------------------------------------


_MISSING_OFFICIAL = ("The official Mask-A3C checkpoints and logs are not available (looked in `$MASK_A3C_OFFICIAL_DIR`, "
                     "default `data/external/mask_a3c_official`). Run `make fetch-official`, with "
                     "`MASK_A3C_OFFICIAL_SRC=<dir>` to copy a local copy including the logs.")


def official_scores(cfg: AgentsChapter) -> pd.DataFrame | Note:
    """Our re-evaluation of the official checkpoints next to their logged level.

    Games present in ``data/official_scores.csv`` (``saliency-study official-scores``)
    are read from it; the others are evaluated here with the profile's episodes and
    step cap, cached under ``<results_dir>/official_scores-<hash>/``. Column ``source``
    says which.
    """
    from saliency_lib.agents.official import official_scores_table

    games = [g for g in cfg.official_games if official_available(g, logs=True)]
    if not games:
        return Note(_MISSING_OFFICIAL, title="Official agents not available")
    parts = []
    csv = repo_path(OFFICIAL_SCORES_CSV)
    if csv.is_file():
        shipped = pd.read_csv(csv)
        shipped = shipped[shipped["game"].isin(games)].assign(source=OFFICIAL_SCORES_CSV)
        parts.append(shipped)
        games = [g for g in games if g not in set(shipped["game"])]
    s = cfg.settings
    for g in games:
        if not official_available(g):
            continue
        r = evaluate_agent(f"official:{g}", episodes=s["official_episodes"], seed=cfg.seed, max_steps=s["official_max_steps"],
                           results_dir=cfg.results_dir, device=cfg.device)
        row = official_scores_table({g: r}).assign(max_steps=r["max_steps"], source=here(r))
        parts.append(row)
    if not parts:
        return Note(_MISSING_OFFICIAL, title="Official agents not available")
    df = pd.concat(parts, ignore_index=True)
    order = {g: i for i, g in enumerate(cfg.official_games)}
    return df.sort_values("game", key=lambda c: c.map(order)).reset_index(drop=True)


def style_official(table: pd.DataFrame, caption: str):
    """The official re-evaluation table as a captioned Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    cols = {"game": "Game", "episodes": "Games", "our_mean": "Ours (mean)", "our_std": "Ours (sd)",
            "logged_mean": "Logged (mean of last 100)", "logged_std": "Logged (sd)", "ratio_to_logged": "Ours / logged",
            "source": "Ours from"}
    t = table[[c for c in cols if c in table.columns]].rename(columns=cols)
    fmt = {"Games": "{:.0f}", "Ours (mean)": "{:,.1f}", "Ours (sd)": "{:,.1f}", "Logged (mean of last 100)": "{:,.1f}",
           "Logged (sd)": "{:,.1f}", "Ours / logged": "{:.2f}"}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


def _official_figure(game: str, *, window: int, ax=None):
    from saliency_book.learning_curves import plot_official_curve
    from saliency_lib.agents.official import official_logged_level, official_test_log

    return plot_official_curve(official_test_log(game), game=game, level=official_logged_level(game)["logged_mean"],
                               window=window, ax=ax)


def official_curve(game: str, *, window: int = 100):
    """The official test log of ``game`` (greedy test games during training) as an image, or a Note."""
    if not official_available(game, logs=True):
        return Note(_MISSING_OFFICIAL, title="Official logs not available")
    return figure_image(_official_figure(game, window=window))


def official_curves_tabs(games: list[str], *, window: int = 100, dpi: int = 80):
    """An ipywidgets ``Tab`` with the official learning curve of each game, or a Note.

    The widget's state (PNG bytes) is saved with the notebook, so the tabs work in
    the static book without a kernel.
    """
    import ipywidgets as w

    games = [g for g in games if official_available(g, logs=True)]
    if not games:
        return Note(_MISSING_OFFICIAL, title="Official logs not available")
    children = []
    for g in games:
        buf = io.BytesIO()
        _official_figure(g, window=window).savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        children.append(w.Image(value=buf.getvalue(), format="png", layout=w.Layout(max_width="100%")))
    tabs = w.Tab(children=children)
    for i, g in enumerate(games):
        tabs.set_title(i, g)
    return tabs
