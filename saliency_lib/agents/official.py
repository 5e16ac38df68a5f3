"""Loader for the official Mask-A3C checkpoints (Itaya et al. 2021).

The released ``*_best.dat`` files are legacy (pre-1.6, non-zip) PyTorch pickles of
plain state dicts. They are read with ``torch.load(weights_only=True)``, whose
restricted unpickler builds tensors and containers only and refuses any other
global, so no code inside the file runs. The result is then checked to be a flat
``str → Tensor`` mapping with the architecture's names and shapes.

The files are never part of this repository. Their directory is :func:`official_dir`
(``$MASK_A3C_OFFICIAL_DIR``); :func:`fetch_official` fills it (``make fetch-official``).
"""

from __future__ import annotations

import os
import shutil
import urllib.request
from pathlib import Path

import torch

from ._weights import load_state_strict, sha256_file
from .base import ActorCriticAgent
from .mask_a3c import MaskA3CConfig, MaskA3CNet

__all__ = [
    "OFFICIAL_GAMES", "official_dir", "official_path", "load_official", "read_legacy_state_dict", "fetch_official",
    "official_test_log", "official_logged_level", "official_milestones", "FRAMES_PER_STEP", "MILESTONE_STEPS",
]

REPO = "machine-perception-robotics-group/Mask-Attention_A3C"
REPO_COMMIT = "5079eaea1ef4dab33edb21f642ece19a7c87606c"  # the commit that holds code/trained_models/*_best.dat
OFFICIAL_SHA256 = {
    "BeamRider": "c3b033c01b062bc16c93923832d92ba1c17b1a1fe9e2642121e12f183f76485e",
    "Breakout": "8cd99965b5a4db511f2bf35ca4792260a23e4867c9ff3aba4dc79a5993c36de1",
    "FishingDerby": "bde217f814104fc02c6a3d6f6c299595058c9875d0aa6eb3e3e1dc41ca2f4ed9",
    "MsPacman": "a2b6fc058369d423b6f1abbf482f826d7f8a4fe076ece0dc8471533efd338d3d",
    "Seaquest": "e1493bfdc28023feb042253b8edea8c142a32bd8b1dc2cced63e1ab0d1ff59f3",
    "SpaceInvaders": "83e0f63ffdbe4f6f249ffb263d72da05fbed5c892a02c69f2a37adf55ecc4370",
}
OFFICIAL_GAMES = tuple(sorted(OFFICIAL_SHA256))
N_ACTIONS = {"BeamRider": 9, "Breakout": 4, "FishingDerby": 18, "MsPacman": 9, "Seaquest": 18, "SpaceInvaders": 6}


def _file_name(game: str) -> str:
    return f"{game}NoFrameskip-v4_Mask-A3C-double+ConvLSTM_best.dat"


def official_dir() -> Path:
    """The directory that holds the official Mask-A3C checkpoints.

    ``$MASK_A3C_OFFICIAL_DIR``, else ``mask_a3c_official`` in the user's cache directory
    (``$XDG_CACHE_HOME/saliency_lib``, default ``~/.cache/saliency_lib``). The study sets the
    variable to its own copy (:data:`saliency_study.paths.OFFICIAL_DIR`).
    """
    env = os.environ.get("MASK_A3C_OFFICIAL_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "saliency_lib" / "mask_a3c_official"


def official_path(game: str, directory: str | os.PathLike | None = None) -> Path:
    """Path of one official checkpoint (``trained_models/`` or flat layout)."""
    if game not in OFFICIAL_SHA256:
        raise ValueError(f"no official Mask-A3C checkpoint for {game!r}; available: {', '.join(OFFICIAL_GAMES)}")
    base = Path(directory) if directory else official_dir()
    for cand in (base / "trained_models" / _file_name(game), base / _file_name(game)):
        if cand.is_file():
            return cand
    raise FileNotFoundError(
        f"official checkpoint {_file_name(game)} not found under {base}; run 'make fetch-official' "
        "(optionally with MASK_A3C_OFFICIAL_SRC=<dir>) or set MASK_A3C_OFFICIAL_DIR"
    )


def read_legacy_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read a legacy PyTorch state-dict pickle without executing arbitrary code."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # the restricted unpickler raises UnpicklingError/RuntimeError on anything else
        raise ValueError(f"{path} is not a tensors-only PyTorch state dict: {e}") from e
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ValueError(f"{path} does not hold a flat mapping of names to tensors")
    return dict(state)


def load_official(game: str, directory: str | os.PathLike | None = None, *, verify: bool = True) -> ActorCriticAgent:
    """The official double-mask + ConvLSTM agent of ``game`` (preset ``mask_a3c``)."""
    path = official_path(game, directory)
    digest = sha256_file(path)
    if verify and digest != OFFICIAL_SHA256[game]:
        raise ValueError(f"{path} differs from the released file (sha256 {digest[:12]}… ≠ {OFFICIAL_SHA256[game][:12]}…)")
    state = read_legacy_state_dict(path)
    cfg = MaskA3CConfig(n_actions=N_ACTIONS[game], variant="double", convlstm=True)
    net = MaskA3CNet(cfg)
    load_state_strict(net, state, source=str(path))
    meta = {"source": f"official:{game}", "checkpoint": str(path), "sha256": digest, "arch": "MaskA3CNet",
            "config": {"n_actions": cfg.n_actions, "variant": cfg.variant, "convlstm": cfg.convlstm},
            "origin": f"github.com/{REPO} code/trained_models (Apache-2.0)"}
    return ActorCriticAgent(net, game=game, preset="mask_a3c", n_actions=cfg.n_actions, meta=meta)


def fetch_official(dest: str | os.PathLike | None = None, src: str | os.PathLike | None = None) -> list[Path]:
    """Fill ``dest/trained_models`` with the six official checkpoints.

    Copies from ``src`` (or ``$MASK_A3C_OFFICIAL_SRC``) when given, else downloads
    from the public repository. Every file is checked against its released sha256.
    """
    dest = Path(dest) if dest else official_dir()
    src = src or os.environ.get("MASK_A3C_OFFICIAL_SRC")
    out_dir = dest / "trained_models"
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for game in OFFICIAL_GAMES:
        target = out_dir / _file_name(game)
        if target.is_file() and sha256_file(target) == OFFICIAL_SHA256[game]:
            done.append(target)
            continue
        tmp = target.with_suffix(".part")
        if src:
            shutil.copyfile(official_path(game, src), tmp)
        else:
            url = f"https://raw.githubusercontent.com/{REPO}/{REPO_COMMIT}/code/trained_models/{_file_name(game)}"
            try:
                with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
                    shutil.copyfileobj(r, f)
            except OSError as e:
                raise RuntimeError(f"could not download {url} ({e}); set MASK_A3C_OFFICIAL_SRC to a local copy") from e
        if sha256_file(tmp) != OFFICIAL_SHA256[game]:
            tmp.unlink()
            raise ValueError(f"fetched {_file_name(game)} does not match its released sha256")
        os.replace(tmp, target)
        done.append(target)
    if src:  # the logs and crop table travel along when copying locally
        for sub in ("logs", "config.json", "LICENSE"):
            s = Path(src) / sub
            if s.is_dir():
                shutil.copytree(s, dest / sub, dirs_exist_ok=True)
            elif s.is_file():
                shutil.copyfile(s, dest / sub)
    return done


FRAMES_PER_STEP = 4
"""Emulator frames per official ``global_step``: the counter adds 1 per agent step of each worker,
and an agent step repeats its action for 4 raw frames (reference-itaya2021 §2)."""

MILESTONE_STEPS = (5e6, 10e6, 20e6, 30e6, 50e6, 70e6, 100e6)
"""The global steps at which reference-itaya2021 §3.2 reads the official learning curves."""


def official_test_log(game: str, directory: str | os.PathLike | None = None):
    """The official greedy test log of ``game`` as a DataFrame.

    Columns ``global_step, time, length, score, running_mean`` as logged, and ``frames``
    (emulator frames, ``FRAMES_PER_STEP × global_step``), the x-axis on which runs of other
    trainers compare with it.
    """
    import pandas as pd

    if game not in OFFICIAL_SHA256:
        raise ValueError(f"no official Mask-A3C log for {game!r}; available: {', '.join(OFFICIAL_GAMES)}")
    base = Path(directory) if directory else official_dir()
    path = base / "logs" / f"{game}NoFrameskip-v4_Mask-A3C-double+ConvLSTM_test.csv"
    if not path.is_file():
        raise FileNotFoundError(f"official test log {path} not found; run 'make fetch-official' with MASK_A3C_OFFICIAL_SRC set")
    df = pd.read_csv(path)
    df = df.rename(columns={"episode length": "length", "reward_sum": "score", "reward_mean": "running_mean"})
    return df.assign(frames=df["global_step"] * FRAMES_PER_STEP)


def official_logged_level(game: str, directory: str | os.PathLike | None = None, last: int = 100) -> dict:
    """Mean, std (population) and median of the last ``last`` logged test games."""
    s = official_test_log(game, directory)["score"].tail(last)
    return {"game": game, "logged_mean": float(s.mean()), "logged_std": float(s.std(ddof=0)), "logged_median": float(s.median()),
            "logged_games": int(len(s))}


def official_milestones(game: str, directory: str | os.PathLike | None = None, *,
                        steps: tuple[float, ...] = MILESTONE_STEPS, half_window: float = 5e6):
    """The official learning curve's milestones: the mean greedy test score around each of ``steps``.

    A milestone at global step ``m`` is the mean score of the logged test games with
    ``m − half_window < global_step ≤ m + half_window``. With the defaults this is how
    reference-itaya2021 §3.2 reads the released logs (its table is reproduced to the unit
    for all six games; the half-open window leaves out the untrained game logged at step 0).

    Parameters
    ----------
    game : str
        One of :data:`OFFICIAL_GAMES`.
    directory : path, optional
        The official directory (default :func:`official_dir`).
    steps : tuple of float
        Global steps (agent steps of all workers, not frames) of the milestones.
    half_window : float
        Half-width of the window, in global steps.

    Returns
    -------
    DataFrame
        One row per milestone: ``step, frames`` (``FRAMES_PER_STEP × step``), ``mean`` (NaN
        when no test game falls in the window) and ``games`` (how many it averages).

    Raises
    ------
    ValueError
        An unknown game, no steps, a step that is not positive, or a half-window that is not positive.
    FileNotFoundError
        The log is not in ``directory``.
    """
    import pandas as pd

    from ..validation import check_float

    if not steps:
        raise ValueError("steps is empty: give the global steps of at least one milestone")
    steps = [check_float("steps", m, low=0, low_open=True, hint=" (milestone steps must be positive and finite)")
             for m in steps]
    half_window = check_float("half_window", half_window, low=0, low_open=True)
    log = official_test_log(game, directory)
    rows = []
    for m in steps:
        w = log.loc[(log["global_step"] > m - half_window) & (log["global_step"] <= m + half_window), "score"]
        rows.append({"step": m, "frames": m * FRAMES_PER_STEP,
                     "mean": float(w.mean()) if len(w) else float("nan"), "games": int(len(w))})
    return pd.DataFrame(rows, columns=["step", "frames", "mean", "games"])


def official_scores_table(results: dict, directory: str | os.PathLike | None = None):
    """Our re-evaluation (``{game: evaluate() result}``) next to the official logged levels."""
    import pandas as pd

    rows = []
    for game, r in results.items():
        lv = official_logged_level(game, directory)
        rows.append({"game": game, "episodes": len(r["scores"]), "our_mean": r["mean"], "our_std": r["std"],
                     "our_min": min(r["scores"]), "our_max": max(r["scores"]),
                     "our_scores": " ".join(f"{s:g}" for s in r["scores"]), **{k: v for k, v in lv.items() if k != "game"},
                     "ratio_to_logged": r["mean"] / lv["logged_mean"] if lv["logged_mean"] else float("nan")})
    return pd.DataFrame(rows)
