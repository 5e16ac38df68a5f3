"""Atomic file writes, shared by checkpoints, result tables, caches and plots."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], *, fsync: bool = True) -> Path:
    """Write ``path`` so that readers see either the old file or the complete new one.

    ``write(tmp)`` fills a temporary file in the same directory (keeping the
    suffix, so writers that infer the format from it work); the file is flushed
    to disk, made world-readable and moved over ``path`` with ``os.replace``. On
    any error the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
