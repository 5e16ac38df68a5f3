"""The study's catalogue: which agents it explains for each game and with which methods.

* :data:`STUDY_METHODS`: the explainers of the study;
* :func:`study_agent`, :func:`study_agents`: the agents the study explains for a game (our DQN
  agent, recorded or shipped, and the official Mask-A3C agent where it is fetched);
* :func:`shipped_agents`: every agent under ``data/agents/``;
* :func:`load`, :func:`agent_preset`: an agent of a spec or a checkpoint directory, and its kind.

The published scores they are compared with are per-game facts: :mod:`saliency_lib.games`.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
import warnings
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from saliency_lib._io import atomic_write
from saliency_lib.games import EPISODE_STEP_CAP, game_info

from .cache import LOCAL
from .paths import AGENTS_DIR, REPO_ROOT, RESULTS_DIR, repo_path

__all__ = [
    "STUDY_METHODS", "ABLATION_METHODS", "SEED_METHODS", "STUDY_AGENTS_JSON", "rel_path", "shipped_agents", "record_study_agent",
    "study_agent", "train_study_agent", "recorded_study_agent", "study_agents", "official_available", "load_spec", "agent_preset",
]


STUDY_AGENTS_JSON = f"{LOCAL}/study_agents.json"


_NAME = re.compile(r"^(?P<algo>[a-z0-9_]+(?:-sync)?)-(?P<game>[A-Za-z]+)(?:-(?P<variant>[a-z0-9_]+))?-s(?P<seed>\d+)$")


def rel_path(path: str | os.PathLike) -> str:
    """``path`` relative to the repository root when inside it (for tables and cache keys)."""
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return p.as_posix()


def shipped_agents(agents_dir: str | os.PathLike = AGENTS_DIR) -> pd.DataFrame:
    """One row per checkpoint directory in ``agents_dir`` (read from its ``meta.json``).

    Columns: ``agent`` (directory name), ``path``, ``algo``, ``game``, ``variant``,
    ``seed``, ``frames``, ``improvements``, ``sha256``.
    """
    cols = ["agent", "path", "algo", "game", "variant", "seed", "frames", "improvements", "sha256"]
    rows = []
    base = repo_path(agents_dir)
    for meta_path in sorted(base.glob("*/meta.json")) if base.is_dir() else []:
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as e:
            warnings.warn(f"skipping {meta_path}: not valid JSON ({e})", stacklevel=2)
            continue
        m = _NAME.match(meta_path.parent.name)
        parsed = m.groupdict() if m else {}
        variant = meta.get("variant") or (meta.get("config") or {}).get("variant") or parsed.get("variant")
        rows.append({
            "agent": meta_path.parent.name, "path": rel_path(meta_path.parent),
            "algo": meta.get("algo") or parsed.get("algo") or meta.get("arch", "?"),
            "game": meta.get("game") or parsed.get("game"), "variant": variant,
            "seed": meta.get("seed", int(parsed["seed"]) if parsed.get("seed") else None),
            "frames": meta.get("frames"), "improvements": ", ".join(meta.get("improvements", [])),
            "sha256": meta.get("sha256"),
        })
    return pd.DataFrame(rows, columns=cols)


def _record_path(results_dir) -> Path:
    return repo_path(results_dir) / STUDY_AGENTS_JSON


def record_study_agent(game: str, path: str | os.PathLike, *, results_dir: str | os.PathLike = RESULTS_DIR, **info) -> Path:
    """Make ``path`` the study's agent for ``game`` (``<results_dir>/_local/study_agents.json``)."""
    game_info(game)
    f = _record_path(results_dir)
    data = json.loads(f.read_text()) if f.is_file() else {}
    data[game] = {"path": rel_path(path), "recorded": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **info}
    atomic_write(f, lambda tmp: Path(tmp).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n"))
    return f


def recorded_study_agent(game: str, results_dir) -> str | None:
    f = _record_path(results_dir)
    if not f.is_file():
        return None
    entry = json.loads(f.read_text()).get(game)
    if not entry:
        return None
    if not (repo_path(entry["path"]) / "meta.json").is_file():
        warnings.warn(f"{f} records {entry['path']} for {game}, which no longer exists; ignoring it", stacklevel=3)
        return None
    return entry["path"]


def study_agent(game: str, *, results_dir: str | os.PathLike = RESULTS_DIR, agents_dir: str | os.PathLike = AGENTS_DIR,
                algo: str = "dqn") -> str | None:
    """The agent the study explains for ``game``, or None when there is none yet.

    In order: the agent recorded by :func:`record_study_agent` (chapter 1 with
    ``train=True``), then the shipped agent ``<algo>-<game>-s<seed>`` in ``agents_dir``
    with the lowest seed and no variant. Returns a path relative to the repository root.
    """
    rec = recorded_study_agent(game, results_dir)
    if rec:
        return rec
    df = shipped_agents(agents_dir)
    df = df[(df["game"] == game) & (df["algo"] == algo)]
    if df.empty:
        return None
    df = df.assign(_v=df["variant"].notna(), _s=df["seed"].fillna(1e9)).sort_values(["_v", "_s", "agent"])
    return df["path"].iloc[0]


def train_study_agent(game: str, frames: int, *, seed: int = 0, results_dir: str | os.PathLike = RESULTS_DIR,
                      out: str | os.PathLike | None = None, eval_max_steps: int = EPISODE_STEP_CAP,
                      progress: bool = False) -> str:
    """Train a DQN agent with :func:`saliency_lib.train.train_dqn` and record it for the study.

    The run goes to ``out`` (default ``<results_dir>/_local/runs/study-dqn-<game>-s<seed>-<frames>``,
    not committed); the agent is ``out/agent``. A finished run with the same arguments is reused, not
    retrained. Short runs scale the replay buffer, the warm-up and the evaluation
    interval down with ``frames``; every other hyper-parameter is
    :class:`~saliency_lib.train.DQNArgs`' default.
    """
    from saliency_lib.train import DQNArgs, train_dqn

    out = repo_path(out) if out else repo_path(results_dir) / LOCAL / "runs" / f"study-dqn-{game}-s{seed}-{frames}"
    defaults = DQNArgs()
    args = DQNArgs(
        game=game, frames=frames, seed=seed,
        buffer_size=min(defaults.buffer_size, max(10_000, frames // 4)),
        learning_starts=min(defaults.learning_starts, max(1_000, frames // 40)),
        eval_every=min(defaults.eval_every, max(frames // 5, 4 * defaults.num_envs)),
        eval_episodes=1, eval_max_steps=eval_max_steps,
    )
    agent_dir = out / "agent"
    done = ((agent_dir / "meta.json").is_file()
            and json.loads((agent_dir / "meta.json").read_text()).get("train_args") == json.loads(json.dumps(asdict(args))))
    if not done:
        train_dqn(args, out, progress=progress)
    record_study_agent(game, agent_dir, results_dir=results_dir, source="trained in chapter 1", frames=frames, seed=seed)
    return rel_path(agent_dir)


def load_spec(spec: str | os.PathLike, device: str = "cpu"):
    """:func:`saliency_lib.agents.load_agent` on a checkpoint directory (relative to the repository) or a spec."""
    from saliency_lib.agents import load_agent

    path = repo_path(spec)
    return load_agent(path if (path / "meta.json").is_file() else spec, device=device)


def official_available(game: str | None = None, *, logs: bool = False) -> bool:
    """Whether the official checkpoint (or, with ``logs``, the test log) of ``game`` is present."""
    from saliency_lib.agents.official import OFFICIAL_GAMES, official_dir, official_path

    games = [game] if game else list(OFFICIAL_GAMES)
    try:
        for g in games:
            if logs:
                if not (official_dir() / "logs" / f"{g}NoFrameskip-v4_Mask-A3C-double+ConvLSTM_test.csv").is_file():
                    return False
            else:
                official_path(g)
    except (FileNotFoundError, ValueError):
        return False
    return True


#: The explainers of the study: Huber et al.'s five with their three LIME segmentations and
#: the three NS variants, the gradient baselines, and the Mask-A3C masks where the agent has them.
#: The random baseline joins the degradation units by itself.
STUDY_METHODS = ("occlusion", "ns_original", "ns_chosen", "ns_black", "sarfa", "rise", "lime_slic", "lime_quickshift",
                 "lime_felzenszwalb", "gradient", "integrated_gradients", "gradcam", "mask_policy", "mask_value")

#: What the study explains on every shipped Mask-A3C seed (issue "Itaya et al.'s claim at an honest
#: budget", part 4): the masks, and the methods chapter 5 compares them with that a seed can afford
#: (one backward pass or a few: a Mask-A3C state costs minutes with the perturbation methods).
SEED_METHODS = ("mask_policy", "mask_value", "gradient", "integrated_gradients", "gradcam")

#: Huber et al.'s §6.2 ablation, judged by insertion only: gray occlusion and SARFA with blurred
#: disks. The study runs it on the DQN agents (the paper's), in the insertion/deletion units.
ABLATION_METHODS = ("occlusion_gray", "sarfa_blur")


def study_agents(game: str, *, results_dir=RESULTS_DIR) -> list[str]:
    """The agents the study explains for ``game``: our DQN agent (if any) and the official Mask-A3C one."""
    from saliency_lib.agents.official import OFFICIAL_GAMES

    agents = [a for a in [study_agent(game, results_dir=results_dir)] if a]
    if game in OFFICIAL_GAMES and official_available(game):
        agents.append(f"official:{game}")
    return agents


@functools.lru_cache(maxsize=64)
def agent_preset(spec: str) -> str:
    """The preprocessing preset (the kind: ``"dqn"``, ``"mask_a3c"``…) of the agent ``spec``, loaded once."""
    return load_spec(str(spec)).preset
