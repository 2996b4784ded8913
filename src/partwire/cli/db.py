"""``partwire db check`` and ``partwire db backup PATH``: the database, from outside."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rich.console import Console

from partwire.config import Settings
from partwire.errors import StorageError
from partwire.storage.health import backup, explain, problems, refuse_newer, schema_version
from partwire.storage.migrations import LATEST_VERSION


def _open_read_only(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise StorageError(f"there is no database at {path} (it is made at the first start)")
    try:
        return sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise explain(path, exc) from None


def check(settings: Settings, console: Console) -> int:
    """Integrity (SQLite's full integrity_check) and schema version; 0 when both are fine."""
    path = settings.database_path
    conn = _open_read_only(path)
    try:
        found = problems(conn, full=True)
        version = schema_version(conn)
        counts = {
            table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("session", "message", "part")
        }
    except sqlite3.DatabaseError as exc:
        raise explain(path, exc) from None
    finally:
        conn.close()
    if found:
        console.print(f"damaged: {path}")
        for problem in found:
            console.print(f"  {problem}")
        return 1
    refuse_newer(path, version)
    pending = "" if version == LATEST_VERSION else f"; {LATEST_VERSION - version} to migrate"
    console.print(
        f"ok: {path}: integrity ok, schema {version} (this partwire: {LATEST_VERSION}{pending}), "
        f"{counts['session']} sessions, {counts['message']} messages, {counts['part']} parts"
    )
    return 0


def backup_to(settings: Settings, destination: Path, console: Console) -> int:
    """An online copy (SQLite's backup API): safe while a server is using the database."""
    path = settings.database_path
    destination = destination.expanduser().resolve()
    if destination.exists():
        raise StorageError(f"{destination} exists; choose a new file name")
    if destination == path:
        raise StorageError("the backup must go to another file than the database itself")
    conn = _open_read_only(path)
    try:
        backup(conn, destination)
    except sqlite3.DatabaseError as exc:
        destination.unlink(missing_ok=True)
        raise explain(path, exc) from None
    except OSError as exc:
        raise StorageError(f"cannot write {destination}: {exc.strerror or exc}") from None
    finally:
        conn.close()
    console.print(f"backed up {path} to {destination}")
    return 0
