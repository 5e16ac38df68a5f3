"""Where the study keeps its inputs and outputs, relative to the repository root.

Relative paths given to study functions are resolved against the repository
root, not the working directory, so a chapter gives the same answer whether
papermill runs it from the root, from ``notebooks/`` or from a temporary
directory.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO_ROOT", "repo_path", "AGENTS_DIR", "RESULTS_DIR", "RUNS_DIR", "OFFICIAL_SCORES_CSV", "AGENT_SCORES_CSV",
           "OFFICIAL_DIR"]

REPO_ROOT = Path(__file__).resolve().parents[1]
AGENTS_DIR = "data/agents"
"""Shipped agents, one checkpoint directory per agent: ``<algo>-<game>[-<variant>]-s<seed>``."""
AGENT_SCORES_CSV = "data/agents/scores.csv"
"""Evaluation scores of the shipped agents (optional): ``agent,episodes,mean,std[,…]``."""
RESULTS_DIR = "data/results"
"""Cached results, one directory per configuration hash."""
RUNS_DIR = "runs"
"""Training runs in progress (git-ignored)."""
OFFICIAL_SCORES_CSV = "data/official_scores.csv"
"""Re-evaluation of the official Mask-A3C checkpoints (``saliency-study official-scores``)."""
OFFICIAL_DIR = "data/external/mask_a3c_official"
"""The study's copy of the official Mask-A3C checkpoints (``make fetch-official``; never committed).
Importing the study makes it the library's default (``$MASK_A3C_OFFICIAL_DIR``) unless that is set."""


def repo_path(path: str | os.PathLike) -> Path:
    """``path`` if absolute, else ``path`` under the repository root (``~`` expanded)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else REPO_ROOT / p


os.environ.setdefault("MASK_A3C_OFFICIAL_DIR", str(repo_path(OFFICIAL_DIR)))
