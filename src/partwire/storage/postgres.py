"""The Postgres store: the SQLite store's writes, reads, recovery and migrations on Postgres.

Chosen with ``PARTWIRE_DATABASE_URL=postgresql://…`` (``pip install 'partwire[postgres]'``).
Everything above the connection is the SQLite store's own code: the same writer thread
group-commits (psycopg's blocking calls run there and on the readers' worker threads,
never on the event loop), and the same SQL, migrations included, runs through
``PgConnection``, which speaks sqlite3's API and SQLite's dialect (``pg_sql``).

One server per database for now: the store holds a session-level advisory lock for as
long as it is open, and a second server on the same database is refused with a clear
error. Several instances sharing one database (leases, fan-out) come next (issue 17).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from partwire.bus import Bus
from partwire.errors import StorageError
from partwire.storage.connection import Conn, Cursor
from partwire.storage.migrations import LATEST_VERSION, migrate
from partwire.storage.recovery import recover
from partwire.storage.sqlite import SqliteStore
from partwire.storage.writer import IdTakenError, Writer

if TYPE_CHECKING:
    import psycopg

# pg_try_advisory_lock's key: one partwire server per database ("pw" in ASCII, then 1)
LOCK_KEY = 0x707701


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


class PgConnection:
    """A psycopg connection with sqlite3's API (``Conn``): ``execute`` with ``?``
    parameters, ``with conn:`` commits the statements since the last commit."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return self.raw.execute(pg_sql(sql), tuple(parameters))

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
        else:
            self.raw.rollback()


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str, *, autocommit: bool = False) -> PgConnection:
    import psycopg

    return PgConnection(psycopg.connect(url, autocommit=autocommit))


# SQLite's functions that the store's SQL and migrations use, made in Postgres first
_SQLITE_FUNCTIONS = (
    "CREATE OR REPLACE FUNCTION instr(text, text) RETURNS integer "
    "AS 'SELECT strpos($1, $2)' LANGUAGE SQL IMMUTABLE",
    "CREATE OR REPLACE FUNCTION datetime(text) RETURNS text "
    "AS $$SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')$$ LANGUAGE SQL",
)


def schema_version(conn: PgConnection) -> int:
    found = conn.execute("SELECT to_regclass('schema_version')").fetchone()[0]
    if found is None:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])


class PostgresStore(SqliteStore):
    """The store on Postgres; see the module's docstring."""

    def __init__(self, url: str, bus: Bus, *, retain_events: int = 200_000) -> None:
        self.url = url
        self.where = redacted(url)
        self._lock: PgConnection | None = None
        super().__init__(path=None, bus=bus, retain_events=retain_events)  # type: ignore[arg-type]

    def _new_writer(self) -> Writer:
        return Writer(lambda: connect(self.url), self._storage_error)

    def _connect_reader(self) -> Conn:
        return connect(self.url, autocommit=True)

    # a snapshot for the whole read: the messages and the last event id it returns agree
    _BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    def _prepare(self) -> tuple[int, int]:
        import psycopg

        try:
            self._lock = self._take_lock()
            conn = connect(self.url)
            try:
                version = schema_version(conn)
                conn.raw.commit()
                if version > LATEST_VERSION:
                    raise StorageError(
                        f"the database {self.where} has schema version {version}, newer than "
                        f"this partwire knows ({LATEST_VERSION}); upgrade partwire"
                    )
                with conn:
                    for statement in _SQLITE_FUNCTIONS:
                        conn.execute(statement)
                migrate(conn)
                row = conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()
                last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM event_log").fetchone()[0]
                conn.raw.commit()
                return int(row[0]), recover(conn, int(row[0]), int(last))
            finally:
                conn.close()
        except psycopg.Error as exc:
            self._release_lock()
            raise self._explain(exc) from None
        except BaseException:
            self._release_lock()
            raise

    def _take_lock(self) -> PgConnection:
        lock = connect(self.url, autocommit=True)
        taken = lock.execute("SELECT pg_try_advisory_lock(?)", (LOCK_KEY,)).fetchone()[0]
        if not taken:
            lock.close()
            raise StorageError(
                f"another partwire server uses the database {self.where}; one server per "
                "database for now (stop the other, or give this one its own database)"
            )
        return lock

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.close()  # the session-level advisory lock goes with its connection
            self._lock = None

    async def close(self) -> None:
        opened = self._open
        await super().close()
        if opened:
            self._release_lock()

    def _explain(self, exc: BaseException) -> StorageError:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return StorageError(f"the database {self.where} failed: {first}")

    def _storage_error(self, exc: BaseException) -> BaseException:
        import psycopg

        if isinstance(exc, IdTakenError) or not isinstance(exc, psycopg.Error | OSError):
            return exc
        return self._explain(exc)
