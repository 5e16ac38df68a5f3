"""Owned files: the claims on units, the compaction lock, and who left a temporary file behind.

Several sweeps may share one results directory: processes on one machine, machines on a
shared disk, Ray workers. Before a sweep computes a unit it **claims** it, by creating
``<results_dir>/sweep/claims/<unit key>.claim``; a unit claimed by a live owner is left to
that owner, so each unit is computed once. The compaction lock
(``<results_dir>/sweep/packs/.compact.lock``) is the same kind of file.

What an owned file holds
------------------------
One JSON object, its owner: ``{"host", "pid", "start", "time"}``: the host name, the
process id, the process's start time (clock ticks after boot, from ``/proc``; ``null``
where there is no ``/proc``) and when the file was taken. It is written **atomically**:
a temporary file is filled and then hard-linked to the owned name, which fails if the name
exists, so the file appears with its owner already in it. (Where the filesystem has no hard
links, the name is created exclusively and then written: a reader may then see it empty
for an instant, and judges it stale only once it is older than :data:`EMPTY_GRACE`.)

When an owned file is stale
---------------------------
* it is **empty or garbled** (not an owner; a bare process id, as the compaction lock held
  before owners were recorded, is read as an owner on this host);
* its owner is on **this host** and its process is gone, or the process id now belongs to
  a process with another start time (a reused id);
* its owner is on **another host** and the file was not refreshed for ``timeout`` seconds
  (default :data:`CLAIM_TIMEOUT`): a holder refreshes the modification time of everything it
  holds every :data:`HEARTBEAT` seconds, from a background thread, so a live sweep on
  another machine keeps its claims however long a unit takes. Processes on one host are
  told apart by their host name: containers that share a disk must have distinct ones.

A stale file is **taken over** with a one-line :class:`StoreWarning` naming it and the
reason. The take-over first moves the stale file aside under a unique name and checks that
what it moved is what it judged stale; if another process took the file in between, it is
put back.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from .._io import TMP_PREFIX, host_name, temporary_owner

__all__ = ["StoreWarning", "Owner", "OwnedFile", "Claims", "claims_dir", "stale_temporary", "CLAIM_TIMEOUT",
           "HEARTBEAT", "EMPTY_GRACE"]

CLAIM_TIMEOUT = 900.0
"""Seconds after which a claim or lock of another host that was not refreshed is stale."""
HEARTBEAT = 60.0
"""Seconds between two refreshes of the files a process holds (well under :data:`CLAIM_TIMEOUT`)."""
EMPTY_GRACE = 10.0
"""Seconds an empty owned file is given to receive its owner (filesystems without hard links only)."""


class StoreWarning(UserWarning):
    """The unit store repaired something.

    A damaged unit or pack was quarantined, or a stale claim, lock or temporary file taken over or
    removed. The message is one line naming the file and the reason.
    """


def _start_time(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks after boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # the command name (field 2) is in parentheses and may hold spaces: split after it
        return int(text[text.rindex(")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:  # os.kill(0, 0) signals the own process group and succeeds: never a live owner
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


@dataclass(frozen=True)
class Owner:
    """Who holds an owned file: host, process id and the process's start time."""

    host: str
    pid: int
    start: int | None = None
    time: float = 0.0

    @classmethod
    def me(cls) -> Owner:
        return cls(host_name(), os.getpid(), _start_time(os.getpid()), time.time())

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def parse(cls, data: bytes) -> Owner | None:
        """The owner recorded in ``data``, or None where it is empty or garbled."""
        text = data.decode("utf-8", "replace").strip()
        if text.isdigit():  # a lock from before owners were recorded: a process id on this host
            return cls(host_name(), int(text))
        try:
            d = json.loads(text)
            owner = cls(str(d["host"]), int(d["pid"]), None if d.get("start") is None else int(d["start"]),
                        float(d.get("time", 0.0)))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return owner

    def dead_reason(self) -> str | None:
        """Why this owner is gone, or None while it may be alive (always None for another host)."""
        if self.host != host_name():
            return None
        if not _pid_alive(self.pid):
            return f"its process {self.pid} on {self.host} is gone"
        start = _start_time(self.pid)
        if self.start is not None and start is not None and start != self.start:
            return f"process id {self.pid} on {self.host} now belongs to another process"
        return None


def stale_temporary(path: Path, *, timeout: float = CLAIM_TIMEOUT) -> str | None:
    """Why a temporary file (``.tmp-*``) is left over and not being written, or None.

    Its name records its writer (:func:`saliency_lib._io.temporary_owner`): on this host it is
    stale when the writer is gone; on another host, or for a name without its writer, when it
    was not modified for ``timeout`` seconds.
    """
    owner = temporary_owner(path)
    if owner is not None and owner[0] == host_name():
        return None if _pid_alive(owner[1]) else f"its writer, process {owner[1]}, is gone"
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None
    if age > timeout:
        who = f"its writer is on {owner[0]}" if owner else "it names no writer"
        return f"{who} and it was not modified for {age:.0f} s"
    return None


class OwnedFile:
    """A file that at most one live owner holds: a unit's claim or the compaction lock.

    Parameters
    ----------
    path : path
        The owned file.
    timeout : float
        Seconds after which the file of an owner on another host, not refreshed, is stale.
    """

    def __init__(self, path, *, timeout: float = CLAIM_TIMEOUT):
        self.path = Path(path)
        self.timeout = float(timeout)
        self._mine: bytes | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the file."""
        return self._mine is not None

    def _create(self, data: bytes) -> bool:
        """Create the file holding ``data`` unless it exists (atomically where hard links work)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{TMP_PREFIX}{self.path.name}.{host_name()}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        tmp.write_bytes(data)
        try:
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        except OSError:  # no hard links here: exclusive creation, then the owner (see EMPTY_GRACE)
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def stale_reason(self, data: bytes | None = None) -> str | None:
        """Why the file as it is now (or holding ``data``) is stale, or None while its owner may live."""
        try:
            if data is None:
                data = self.path.read_bytes()
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return None
        owner = Owner.parse(data)
        if owner is None:
            if not data.strip() and age < EMPTY_GRACE:
                return None  # being written by an owner on a filesystem without hard links
            return "it is empty" if not data.strip() else "it names no owner"
        dead = owner.dead_reason()
        if dead:
            return dead
        if owner.host != host_name() and age > self.timeout:
            return f"its owner on {owner.host} has not refreshed it for {age:.0f} s"
        return None

    def holder(self) -> Owner | None:
        """The live owner of the file, or None when it is free or stale."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return None if self.stale_reason(data) else Owner.parse(data)

    def try_take(self, *, what: str = "claim") -> bool:
        """Take the file: True when this process holds it now, False when a live owner does.

        A stale file is taken over with a :class:`StoreWarning` naming it and the reason.
        """
        if self.held:
            return True
        mine = Owner.me().to_bytes()
        for _ in range(3):
            if self._create(mine):
                self._mine = mine
                return True
            try:
                seen = self.path.read_bytes()
            except FileNotFoundError:
                continue  # released meanwhile: try again
            reason = self.stale_reason(seen)
            if reason is None:
                return False
            if self._break(seen):
                warnings.warn(f"taking over the stale {what} {self.path}: {reason}", StoreWarning, stacklevel=3)
        return False

    def _break(self, seen: bytes) -> bool:
        """Remove the file if it still holds ``seen``; put back whatever else it held meanwhile."""
        aside = self.path.with_name(f"{self.path.name}.stale-{host_name()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return False
        try:
            if aside.read_bytes() == seen:
                return True
            try:  # another process took it between our read and the rename: give it back
                os.link(aside, self.path)
            except OSError:
                pass
            return False
        finally:
            aside.unlink(missing_ok=True)

    def refresh(self) -> None:
        """Mark the file as still held (its modification time), for owners on other hosts."""
        if self.held:
            try:
                os.utime(self.path)
            except FileNotFoundError:
                pass

    def release(self) -> None:
        """Give the file up, if this object still holds it (a file taken over by another is left)."""
        if not self.held:
            return
        try:
            if self.path.read_bytes() == self._mine:
                self.path.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        self._mine = None


class Heartbeat:
    """Refreshes a set of owned files every ``interval`` seconds from a daemon thread."""

    def __init__(self, interval: float):
        self.interval = interval
        self.files: dict[Path, OwnedFile] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, f: OwnedFile) -> None:
        with self._lock:
            self.files[f.path] = f
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="saliency-heartbeat", daemon=True)
                self._thread.start()

    def discard(self, f: OwnedFile) -> None:
        with self._lock:
            self.files.pop(f.path, None)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                held = list(self.files.values())
            for f in held:
                f.refresh()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def claims_dir(results_dir) -> Path:
    """Where the claims on the units of ``results_dir`` are: ``<results_dir>/sweep/claims``."""
    return Path(results_dir) / "sweep" / "claims"


class Claims:
    """The claims of one sweep on its units, refreshed while held, all released at the end.

    Use as a context manager; :meth:`take` claims a unit (by key) and :meth:`release` gives it
    up once its result is stored.
    """

    def __init__(self, results_dir, *, timeout: float = CLAIM_TIMEOUT, heartbeat: float = HEARTBEAT):
        self.dir = claims_dir(results_dir)
        self.timeout = timeout
        self._held: dict[str, OwnedFile] = {}
        self._beat = Heartbeat(heartbeat)

    def _file(self, key: str) -> OwnedFile:
        return OwnedFile(self.dir / f"{key}.claim", timeout=self.timeout)

    def take(self, key: str) -> bool:
        """Claim the unit ``key``: True when this sweep holds it (also when it already did)."""
        if key in self._held:
            return True
        f = self._file(key)
        if not f.try_take(what="claim on unit"):
            return False
        self._held[key] = f
        self._beat.add(f)
        return True

    def held_elsewhere(self, key: str) -> bool:
        """Whether another live owner claims the unit ``key``."""
        return key not in self._held and self._file(key).holder() is not None

    def release(self, key: str) -> None:
        f = self._held.pop(key, None)
        if f is not None:
            self._beat.discard(f)
            f.release()

    def __enter__(self) -> Claims:
        return self

    def __exit__(self, *exc) -> None:
        self._beat.stop()
        for key in list(self._held):
            self.release(key)
