"""The store suite runs against both stores: ``make_store`` gives a test its own database
(a SQLite file, or a fresh Postgres database) and opens a store on it each time it is
called, so a test can reopen the same database as a restarted server would."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from partwire.bus import Bus
from partwire.storage.sqlite import SqliteStore

MakeStore = Callable[..., SqliteStore]


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    if request.param == "sqlite":
        path = tmp_path / "db.sqlite"

        def sqlite(bus: Bus | None = None, *, retain_events: int = 200_000) -> SqliteStore:
            return SqliteStore(path, bus or Bus(), retain_events=retain_events)

        return sqlite
    from partwire.storage.postgres import PostgresStore

    url = request.getfixturevalue("postgres").new_database()

    def postgres(bus: Bus | None = None, *, retain_events: int = 200_000) -> SqliteStore:
        return PostgresStore(url, bus or Bus(), retain_events=retain_events)

    return postgres


def independent_read(store: SqliteStore, sql: str, *, every: bool = False) -> Any:
    """``sql``'s first row (or every row) read on a connection of its own, not the store's."""
    from partwire.storage.pg_connection import connect
    from partwire.storage.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        conn = connect(store.url, autocommit=True)
        try:
            cursor = conn.execute(sql)
            return cursor.fetchall() if every else cursor.fetchone()
        finally:
            conn.close()
    with sqlite3.connect(store.path) as other:
        cursor = other.execute(sql)
        return cursor.fetchall() if every else cursor.fetchone()


def independent_write(store: SqliteStore, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """``sql`` run for each row and committed on a connection of its own."""
    from partwire.storage.pg_connection import connect
    from partwire.storage.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        conn = connect(store.url, autocommit=True)
        try:
            for row in rows:
                conn.execute(sql, row)
        finally:
            conn.close()
        return
    with sqlite3.connect(store.path) as other:
        other.executemany(sql, rows)
