"""Atomic file writes, shared by checkpoints, result tables, caches and plots."""

from __future__ import annotations

import os
import re
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "TMP_PREFIX", "host_name", "temporary_owner"]

TMP_PREFIX = ".tmp-"
"""Name prefix of the temporary files that :func:`atomic_write` fills before moving them into place."""


def host_name() -> str:
    """The host name of this machine, safe to use as a field of a temporary file's name.

    Every character outside ``[A-Za-z0-9_-]`` is replaced by ``-``, so that it never holds the ``.``
    that separates the fields of a temporary file's name.
    """
    return re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname()) or "unknown"


def temporary_owner(path: str | os.PathLike) -> tuple[str, int] | None:
    """``(host, pid)`` of the process that created a temporary file of :func:`atomic_write`.

    Its name is ``.tmp-<name>.<host>.<pid>.<random><suffix>``; ``None`` for a name without
    the owner (written before the owner was recorded) or not of this form.
    """
    name = Path(path).name
    if not name.startswith(TMP_PREFIX):
        return None
    stem = name[: -len(Path(name).suffix)] if Path(name).suffix else name
    parts = stem.rsplit(".", 3)
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], *, fsync: bool = True) -> Path:
    """Write ``path`` so that readers see either the old file or the complete new one.

    ``write(tmp)`` fills a temporary file in the same directory (keeping the
    suffix, so writers that infer the format from it work); the file is flushed
    to disk, made world-readable and moved over ``path`` with ``os.replace``. On
    any error the temporary file is removed and ``path`` is left untouched.

    The temporary file's name starts with :data:`TMP_PREFIX` and records the host and
    process that write it (:func:`temporary_owner`), so that one left behind by a killed
    process can be told from one still being written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TMP_PREFIX}{path.name}.{host_name()}.{os.getpid()}.",
                               suffix=path.suffix)
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
