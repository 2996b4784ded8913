"""Files only their owner may read: the data dir is 0700, and what in it holds
conversations or keys (the database with its -wal and -shm, auth.json) is 0600 from the
moment it exists."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def private_dir(path: Path) -> None:
    """Make ``path`` (and its missing parents) and keep it 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)


def private_database(path: Path) -> None:
    """Create the SQLite file 0600 before SQLite opens it (SQLite gives its -wal and -shm
    the database's own mode), and take group and other access from files made earlier."""
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    for suffix in DATABASE_SUFFIXES:
        found = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            if not found.is_symlink() and found.stat().st_mode & 0o077:
                found.chmod(0o600)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` through a fresh file of its own (O_EXCL, 0600 from
    creation, never a file someone left there), moved into place."""
    private_dir(path.parent)
    descriptor, fresh = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(fresh, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(fresh)
        raise
