"""Pieces shared by the trainers: seeding, atomic checkpoints, CSV logs, periodic evaluation."""

from __future__ import annotations

import csv
import json
import random
import time
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np
import torch

from .._io import atomic_write

__all__ = ["check_resume_args", "seed_everything", "rng_state", "set_rng_state", "save_state", "load_state", "CSVLog", "Timer", "args_to_dict"]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_state(np_rng: np.random.Generator | None = None) -> dict:
    """RNG states as tensors and plain types only (loadable with ``weights_only=True``)."""
    st = {"torch": torch.get_rng_state(), "python": json.dumps(random.getstate()), "numpy": json.dumps(np.random.get_state()[1].tolist())}
    if np_rng is not None:
        st["np_rng"] = json.dumps(np_rng.bit_generator.state)
    return st


def set_rng_state(st: dict, np_rng: np.random.Generator | None = None) -> None:
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
    """Append-only CSV with a fixed header; survives restarts (``--resume`` appends)."""

    def __init__(self, path: Path, header: list[str], resume: bool):
        self.path, self.header = Path(path), header
        if not resume or not self.path.exists():
            with open(self.path, "w", newline="") as f:
                csv.writer(f).writerow(header)

    def write(self, **row) -> None:
        with open(self.path, "a", newline="") as f:
            csv.writer(f).writerow([row.get(h, "") for h in self.header])


class Timer:
    def __init__(self):
        self.t0 = time.time()

    def elapsed(self) -> float:
        return time.time() - self.t0


def args_to_dict(args) -> dict:
    return {f.name: getattr(args, f.name) for f in fields(args)} if not isinstance(args, dict) else dict(args)


def asdict_safe(obj) -> dict:
    return asdict(obj)


def check_resume_args(saved: dict, current: dict, out) -> None:
    """Refuse to resume with different hyper-parameters (fields added since the run take their defaults)."""
    diff = {k: (saved[k], current[k]) for k in saved if k in current and saved[k] != current[k]}
    if diff:
        raise ValueError(f"--resume: arguments differ from the run in {out} (saved vs given): {diff}; pass the same ones")
