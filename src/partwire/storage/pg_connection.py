"""A psycopg connection that speaks sqlite3's API and SQLite's dialect, so that the SQLite
store's code (writer, readers, recovery, migrations) runs on Postgres unchanged."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from partwire.storage.connection import Cursor

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)


# What of SQLite's dialect the store's SQL and its released migrations use that Postgres
# says otherwise: 64-bit integer columns (an event log's sequence outgrows 32 bits), and
# the one INSERT OR REPLACE left (migration 4's, on meta).
_DIALECT = (
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (
        re.compile(r"INSERT OR REPLACE INTO meta \(key, value\) VALUES \((.*)\)$", re.S),
        r"INSERT INTO meta (key, value) VALUES (\1) "
        r"ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ),
)


@functools.lru_cache(maxsize=512)
def pg_sql(sql: str, parameters: bool = True) -> str:
    """SQL written for sqlite3 as psycopg takes it: Postgres' words for SQLite's (above)
    and, when it has parameters, ``%s`` for ``?`` (a literal ``%`` doubled first). The
    store's SQL has no ``?`` inside string literals."""
    for pattern, replacement in _DIALECT:
        sql = pattern.sub(replacement, sql)
    return sql.replace("%", "%%").replace("?", "%s") if parameters else sql


_INSERT_LOG_ROWS = (
    "INSERT INTO event_log (seq, type, payload) "
    "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[])"
)


class PgConnection:
    """A psycopg connection with sqlite3's API (``Conn``): ``execute`` with ``?``
    parameters, ``with conn:`` commits the statements since the last commit.

    A connection the server dropped (a restart, a failover) is made anew, but only where
    no transaction was open: at ``with conn:`` and at a reader's BEGIN, never in the
    middle of a batch, whose writes then fail whole and are retried by their writers."""

    def __init__(self, conn: psycopg.Connection[Any], url: str, autocommit: bool) -> None:
        self.raw = conn
        self._url, self._autocommit = url, autocommit

    def _reconnect_if_dropped(self) -> None:
        if self.raw.broken or self.raw.closed:
            import psycopg

            log.warning("the database connection was dropped; connecting again")
            self.raw = psycopg.connect(self._url, autocommit=self._autocommit)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        if sql.startswith("BEGIN"):  # a reader's transaction starts: nothing to lose
            return self._begin(sql)
        return self.raw.execute(pg_sql(sql), tuple(parameters))

    def _begin(self, sql: str) -> Cursor:
        import psycopg

        self._reconnect_if_dropped()
        try:
            return self.raw.execute(sql)
        except psycopg.OperationalError:  # dropped since its last use: once more, anew
            self._reconnect_if_dropped()
            return self.raw.execute(sql)

    def insert_log_rows(
        self, rows: Sequence[object], notices: Sequence[tuple[str, str]] = (), /
    ) -> None:
        """Event log rows (seq, type, payload, flattened) in one statement however many
        there are, and with them the NOTIFYs ``notices`` (channel, payload) in order: on
        Postgres every statement is a round trip (WriteContext.insert_rows)."""
        if not notices:
            self.raw.execute(_INSERT_LOG_ROWS, (rows[0::3], rows[1::3], rows[2::3]))
            return
        calls = ", ".join(["pg_notify(%s, %s)"] * len(notices))
        told = [text for notice in notices for text in notice]
        if not rows:
            self.raw.execute(f"SELECT {calls}", told)
            return
        # a data-modifying WITH runs whole whether or not the query reads it
        statement = f"WITH logged AS ({_INSERT_LOG_ROWS}) SELECT {calls}"
        self.raw.execute(statement, (rows[0::3], rows[1::3], rows[2::3], *told))

    def executescript(self, sql_script: str, /) -> Cursor:
        """Several statements, no parameters (Postgres runs them as one simple query)."""
        return self.raw.execute(pg_sql(sql_script, parameters=False))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        cursor = self.raw.cursor()
        cursor.executemany(pg_sql(sql), [tuple(row) for row in parameters])
        return cursor

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> PgConnection:
        self._reconnect_if_dropped()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> None:
        if kind is None:
            self.raw.commit()
        elif not self.raw.broken:  # a dropped connection has rolled back already
            self.raw.rollback()


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str, *, autocommit: bool = False) -> PgConnection:
    import psycopg

    return PgConnection(psycopg.connect(url, autocommit=autocommit), url, autocommit)
