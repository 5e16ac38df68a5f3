"""Pieces shared by the trainers: seeding, atomic checkpoints, CSV logs, periodic evaluation."""

from __future__ import annotations

import csv
import json
import random
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch

from .._io import atomic_write
from ..games import EPISODE_STEP_CAP, game_info

__all__ = ["RunArgs", "check_resume_args", "seed_everything", "rng_state", "set_rng_state", "save_state", "load_state", "CSVLog",
           "read_log", "drop_replayed_rows", "Timer", "args_to_dict"]


@dataclass(frozen=True)
class RunArgs:
    """The settings of one training run that every trainer shares (CleanRL's experiment fields).

    The trainers' argument dataclasses (:class:`~saliency_lib.train.DQNArgs`,
    :class:`~saliency_lib.train.A2CArgs`) add their algorithm's fields after these; the run's
    output directory is an argument of the trainer, not a field.
    """

    game: str = "Breakout"
    """Atari game."""
    frames: int = 10_000_000
    """Emulator frames to train for (agent steps × 4)."""
    seed: int = 0
    """Seed of torch, numpy and the environments."""
    eval_every: int = 500_000
    """Frames between evaluations."""
    eval_episodes: int = 2
    """Greedy games per evaluation (the first with the fixed start); 0 disables evaluation."""
    eval_max_steps: int = EPISODE_STEP_CAP
    """Agent-step cap per evaluation game."""
    checkpoint_minutes: float = 5.0
    """Minutes between atomic training checkpoints."""
    threads: int = 1
    """torch threads."""
    precision: str = "bf16"
    """'bf16' (autocast of the convolutions and linear layers in acting and learning; weights,
    optimiser state and loss stay float32) or 'fp32'. ``benchmarks/training.py`` measured each
    trainer 1.35-1.4x faster in bf16 on this CPU; ``tests/study/test_train.py`` checks that the loss and
    the gradient direction agree with float32."""

    def __post_init__(self):
        game_info(self.game)
        if self.precision not in ("fp32", "bf16"):
            raise ValueError(f"precision must be 'fp32' or 'bf16', got {self.precision!r}")
        if self.frames <= 0:
            raise ValueError(f"frames must be positive, got {self.frames!r}")


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's global and torch's random number generators with ``seed``."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state(np_rng: np.random.Generator | None = None) -> dict:
    """RNG states as tensors and plain types only (loadable with ``weights_only=True``)."""
    st = {"torch": torch.get_rng_state(), "python": json.dumps(random.getstate()),
          "numpy": json.dumps(np.random.get_state()[1].tolist())}
    if np_rng is not None:
        st["np_rng"] = json.dumps(np_rng.bit_generator.state)
    return st


def set_rng_state(st: dict, np_rng: np.random.Generator | None = None) -> None:
    """Restore the RNG states that :func:`rng_state` saved (``np_rng`` too, if given and saved)."""
    torch.set_rng_state(st["torch"])
    py = json.loads(st["python"])
    random.setstate((py[0], tuple(py[1]), py[2]))
    np.random.set_state(("MT19937", np.array(json.loads(st["numpy"]), dtype=np.uint32), 624, 0, 0.0))
    if np_rng is not None and "np_rng" in st:
        np_rng.bit_generator.state = json.loads(st["np_rng"])


def save_state(path: Path, state: dict) -> None:
    """Atomic checkpoint: write to a temporary file, fsync, then rename over the old one."""
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def load_state(path: Path) -> dict:
    """Load a training checkpoint with the tensors-only unpickler."""
    return torch.load(path, map_location="cpu", weights_only=True)


class CSVLog:
    """Append-only CSV with a fixed header; survives restarts (``--resume`` appends).

    On resume from a checkpoint taken at ``upto_step``, the rows written after it (by the
    run that was killed) are dropped first, so that the log and the resumed run agree:
    the steps after the checkpoint are played again and logged once.
    """

    def __init__(self, path: Path, header: list[str], resume: bool, upto_step: int | None = None):
        self.path, self.header = Path(path), header
        if not resume or not self.path.exists():
            with open(self.path, "w", newline="") as f:
                csv.writer(f).writerow(header)
        elif upto_step is not None:
            with open(self.path, newline="") as f:
                rows = list(csv.reader(f))
            keep = [r for r in rows[1:] if r and int(float(r[0])) <= upto_step]
            if len(keep) < len(rows) - 1:
                def write(tmp):
                    with open(tmp, "w", newline="") as f:
                        csv.writer(f).writerows([rows[0], *keep])
                atomic_write(self.path, write)

    def write(self, **row) -> None:
        """Append one row; columns of the header missing from ``row`` are left empty."""
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([row.get(h, "") for h in self.header])


def read_log(path):
    """A trainer's CSV log as a DataFrame, without rows that a resume played again (:func:`drop_replayed_rows`)."""
    import pandas as pd

    return drop_replayed_rows(pd.read_csv(path))


def drop_replayed_rows(log, step: str = "step", unique: bool | None = None):
    """A training log without the rows that a later resume played again.

    A run killed after its last checkpoint has logged steps that the resumed run plays
    (and logs) again; in the file, the step then goes back. For each such resume, the
    earlier rows with a step at or after the resumed run's first logged step are dropped.
    Several rows may share a step (games of different environments ending together), so
    only a step that goes *back* marks a resume, unless ``unique``: in a log with one row
    per step (the evaluation log, the default when it has ``eval_mean``), a repeated step
    is a replay too and the later row is kept. Logs written since :class:`CSVLog`
    truncates on resume have no replayed rows. A log without the ``step`` column is
    ordered by ``frames``, or returned as it is.
    """
    if step not in log.columns:
        if "frames" not in log.columns:
            return log
        step = "frames"
    if unique is None:
        unique = "eval_mean" in log.columns
    steps = log[step].to_numpy()
    keep: list[int] = []
    for i, s in enumerate(steps):
        if keep and (s < steps[keep[-1]] or (unique and s == steps[keep[-1]])):
            while keep and steps[keep[-1]] >= s:
                keep.pop()
        keep.append(i)
    return log.iloc[keep].reset_index(drop=True)


class Timer:
    """A wall-clock stopwatch, started when it is created."""

    def __init__(self):
        self.t0 = time.time()

    def elapsed(self) -> float:
        """Seconds since the timer was created."""
        return time.time() - self.t0


def args_to_dict(args) -> dict:
    """The fields of the args dataclass ``args`` as a dict (a dict is copied)."""
    return {f.name: getattr(args, f.name) for f in fields(args)} if not isinstance(args, dict) else dict(args)


def asdict_safe(obj) -> dict:
    return asdict(obj)


def check_resume_args(saved: dict, current: dict, out) -> None:
    """Refuse to resume with different hyper-parameters (fields added since the run take their defaults)."""
    diff = {k: (saved[k], current[k]) for k in saved if k in current and saved[k] != current[k]}
    if diff:
        raise ValueError(f"--resume: arguments differ from the run in {out} (saved vs given): {diff}; pass the same ones")
