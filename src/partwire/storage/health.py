"""Checking a database before use, naming what is wrong, and online backups.

Every problem becomes a :class:`StorageError` whose one-line message names the file
and what to do; nothing here changes a database it finds wrong.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

from partwire.errors import StorageError
from partwire.storage.migrations import LATEST_VERSION

# how long a write waits for another connection's write lock before it fails
BUSY_TIMEOUT_MS = 5000


def explain(path: Path, exc: BaseException) -> StorageError:
    """A sqlite3 or OS error met while using ``path``, as an error a person can act on."""
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and "full" in text:
        advice = "the disk (or the database's size limit) is full: free space, then retry"
    elif isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text
    ):
        advice = (
            f"it is damaged ({text}). Move it away and restore a backup "
            "(`partwire db backup PATH` makes one; migrations leave `*.bak-v*` copies)"
        )
    elif isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        advice = (
            "it is locked by another process, which held its write lock longer than "
            f"{BUSY_TIMEOUT_MS / 1000:g} s (an sqlite3 shell or a backup tool?): let it go, "
            "then retry"
        )
    elif isinstance(exc, sqlite3.DatabaseError) and "readonly" in text:
        advice = "it is read-only: fix its permissions or set PARTWIRE_DATA_DIR elsewhere"
    elif isinstance(exc, OSError):
        advice = (
            f"{exc.strerror or exc}: fix the data dir's permissions or set "
            "PARTWIRE_DATA_DIR to a writable directory"
        )
    else:
        advice = f"{text}; `partwire db check` shows the details"
    return StorageError(f"cannot use the database {path}: {advice}")


# Pages kept in reserve inside the database file: when the disk fills up, the writer
# frees them so the writes that end the interrupted message (its error, its closed
# parts) still fit. Put back at the next start.
RESERVE_BYTES = 256 * 1024


def keep_reserve(conn: sqlite3.Connection) -> None:
    """Make sure the reserve row exists (skipped quietly when there is no room for it)."""
    try:
        with conn:
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('reserve', zeroblob(?))",
                (RESERVE_BYTES,),
            )
    except sqlite3.OperationalError as exc:
        if "full" not in str(exc):
            raise


# ... and a file beside it: freeing pages inside the database frees no disk, and a full
# file system refuses the WAL the ending writes append to. Deleting this file does.
RESERVE_FILE_BYTES = 1024 * 1024
RESERVE_FILE_SUFFIX = "-reserve"


def reserve_file(path: Path) -> Path:
    return path.with_name(path.name + RESERVE_FILE_SUFFIX)


def keep_reserve_file(path: Path) -> None:
    """Write the reserve file beside the database (skipped quietly when there is no room)."""
    target = reserve_file(path)
    if target.exists():
        return
    try:
        with target.open("wb") as out:
            out.write(b"\0" * RESERVE_FILE_BYTES)
    except OSError:
        target.unlink(missing_ok=True)


def release_reserve(conn: sqlite3.Connection) -> bool:
    """Free the reserve for the writes that follow: its pages in the database and its file
    on the disk; False when both are gone."""
    released = False
    with contextlib.suppress(sqlite3.Error, OSError, IndexError, TypeError):
        database = conn.execute("PRAGMA database_list").fetchone()[2]
        if database:
            found = reserve_file(Path(database))
            released = found.exists()
            found.unlink(missing_ok=True)
    try:
        with conn:
            return conn.execute("DELETE FROM meta WHERE key = 'reserve'").rowcount > 0 or released
    except sqlite3.OperationalError:
        return released


def schema_version(conn: sqlite3.Connection) -> int:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if found is None:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])


def refuse_newer(path: Path, version: int) -> None:
    if version > LATEST_VERSION:
        raise StorageError(
            f"the database {path} has schema version {version}, newer than this partwire "
            f"knows ({LATEST_VERSION}): upgrade partwire, or set PARTWIRE_DATA_DIR to "
            "another directory"
        )


def problems(conn: sqlite3.Connection, *, full: bool = False) -> list[str]:
    """What SQLite's own check finds wrong ([] when the file is sound). ``full`` runs
    integrity_check (also checks indexes against tables); otherwise quick_check."""
    pragma = "integrity_check" if full else "quick_check"
    rows = [row[0] for row in conn.execute(f"PRAGMA {pragma}(20)").fetchall()]
    return [] if rows == ["ok"] else rows


def backup(conn: sqlite3.Connection, destination: Path) -> None:
    """A consistent copy of the open database, taken online (readers and the writer go on)."""
    target = sqlite3.connect(destination)
    try:
        conn.backup(target)
    finally:
        target.close()


def migration_backup_path(path: Path, version: int) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return path.with_name(f"{path.name}.bak-v{version}-{stamp}")
