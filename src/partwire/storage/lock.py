"""One data dir, one server: an exclusive lock on ``<data dir>/partwire.lock``.

The lock is an ``flock`` on an open file, so the kernel drops it when its process
dies (kill -9 included): a stale lock file never blocks a restart. The holder writes
its PID and, once it listens, its URL into the file, so a second ``partwire serve``
can say who holds the data dir and ``partwire run`` can attach to that server.
Inside one process the lock is shared (counted), so a CLI that took it before its
server started is not refused by that server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from partwire.errors import StorageError

LOCK_NAME = "partwire.lock"


@dataclass(frozen=True)
class Holder:
    pid: int
    url: str | None


class DataDirInUseError(StorageError):
    def __init__(self, data_dir: Path, holder: Holder | None) -> None:
        who = "another partwire process"
        if holder is not None:
            who = f"partwire (PID {holder.pid}" + (f", {holder.url})" if holder.url else ")")
        super().__init__(
            f"the data dir {data_dir} is in use by {who}. Attach to it "
            "(partwire run --attach URL), stop it, or set PARTWIRE_DATA_DIR to another directory."
        )
        self.holder = holder


_held: dict[Path, tuple[int, int]] = {}  # data dir → (fd, count) held by this process
_guard = threading.Lock()


def _read(fd: int) -> Holder | None:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 4096)
    try:
        data = json.loads(raw)
        return Holder(pid=int(data["pid"]), url=data.get("url"))
    except (ValueError, KeyError, TypeError):
        return None


def _write(fd: int, holder: Holder) -> None:
    body = json.dumps({"pid": holder.pid, "url": holder.url}).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, body, 0)


def _open(data_dir: Path) -> int:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        return os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StorageError(
            f"the data dir {data_dir} cannot be used ({exc.strerror or exc}). "
            "Fix its permissions or set PARTWIRE_DATA_DIR to a writable directory."
        ) from None


def acquire(data_dir: Path) -> None:
    """Take the data dir for this process, or raise DataDirInUseError naming the holder."""
    with _guard:
        if data_dir in _held:
            fd, count = _held[data_dir]
            _held[data_dir] = (fd, count + 1)
            return
        fd = _open(data_dir)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            raise DataDirInUseError(data_dir, holder) from None
        _write(fd, Holder(pid=os.getpid(), url=None))
        _held[data_dir] = (fd, 1)


def advertise(data_dir: Path, url: str) -> None:
    """Record where this process's server listens (for ``partwire run`` to attach)."""
    with _guard:
        if data_dir in _held:
            _write(_held[data_dir][0], Holder(pid=os.getpid(), url=url))


def release(data_dir: Path) -> None:
    with _guard:
        if data_dir not in _held:
            return
        fd, count = _held[data_dir]
        if count > 1:
            _held[data_dir] = (fd, count - 1)
            return
        del _held[data_dir]
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor drops the flock


def holder(data_dir: Path) -> Holder | None:
    """Who holds the data dir right now (another process), or None when nobody does."""
    path = data_dir / LOCK_NAME
    if data_dir in _held or not path.exists():
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or Holder(pid=0, url=None)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
