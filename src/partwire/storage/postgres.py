"""The Postgres store: the SQLite store's writes, reads and recovery on a Postgres database.

Chosen with ``PARTWIRE_DATABASE_URL=postgresql://…`` (``pip install 'partwire[postgres]'``).
Everything above the connection is the SQLite store's own code: the same writer thread
group-commits (psycopg's blocking calls run there and on the readers' worker threads,
never on the event loop), the same SQL runs through ``PgConnection``, which speaks
sqlite3's API, and the numbered migrations are the Postgres versions of SQLite's.

One server per database for now: the store holds a session-level advisory lock for as
long as it is open, and a second server on the same database is refused with a clear
error. Several instances sharing one database (leases, fan-out) come next (issue 17).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from partwire import ids
from partwire.bus import Bus
from partwire.errors import StorageError
from partwire.storage.connection import Conn, Cursor
from partwire.storage.migrations import LIFECYCLE, _properties
from partwire.storage.recovery import recover
from partwire.storage.sqlite import SqliteStore
from partwire.storage.writer import IdTakenError, Writer

if TYPE_CHECKING:
    import psycopg

# pg_try_advisory_lock's key: one partwire server per database ("pw" in ASCII, then 1)
LOCK_KEY = 0x707701


@functools.lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """sqlite3's ``?`` parameters as psycopg's ``%s`` (a literal ``%`` doubled first).
    The store's SQL has no ``?`` inside string literals."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """A psycopg connection with sqlite3's API (``Conn``): ``execute`` with ``?``
    parameters, ``with conn:`` commits the statements since the last commit."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return self.raw.execute(pg_sql(sql), tuple(parameters))

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


# ---- migrations: the numbers and names of storage/migrations.py, in Postgres' SQL ---------


def _001_initial(conn: PgConnection) -> None:
    for statement in (
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, data TEXT NOT NULL)",
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)",
        "CREATE INDEX message_session ON message (session_id, id)",
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, "
        "session_id TEXT NOT NULL, data TEXT NOT NULL, delta_from TEXT)",
        "CREATE INDEX part_session ON part (session_id, message_id, id)",
        "CREATE TABLE event_log (seq BIGINT PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
        "session_id TEXT, part_id TEXT, type TEXT NOT NULL, payload TEXT NOT NULL)",
        "CREATE INDEX event_log_part ON event_log (part_id, id) WHERE part_id IS NOT NULL",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        # SQLite's instr(), which the store's queries use
        "CREATE OR REPLACE FUNCTION instr(text, text) RETURNS integer "
        "AS 'SELECT strpos($1, $2)' LANGUAGE SQL IMMUTABLE",
    ):
        conn.execute(statement)


def _002_todo(conn: PgConnection) -> None:
    conn.execute("CREATE TABLE todo (session_id TEXT PRIMARY KEY, data TEXT NOT NULL)")


def _003_sequence(conn: PgConnection) -> None:
    for table in ("message", "part"):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN seq BIGINT")
        conn.execute(
            f"UPDATE {table} SET seq = o.n FROM "
            f"(SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM {table}) AS o "
            f"WHERE o.id = {table}.id"
        )
    for statement in (
        "CREATE UNIQUE INDEX message_seq ON message (seq)",
        "CREATE INDEX message_session_seq ON message (session_id, seq)",
        "DROP INDEX message_session",
        "CREATE UNIQUE INDEX part_seq ON part (seq)",
        "CREATE INDEX part_message_seq ON part (message_id, seq)",
        f"CREATE INDEX event_log_lifecycle ON event_log (session_id) WHERE type IN {LIFECYCLE}",
    ):
        conn.execute(statement)


def _004_event_ids_from_sequence(conn: PgConnection) -> None:
    newest = conn.execute("SELECT id FROM event_log ORDER BY seq DESC LIMIT 1").fetchone()
    epoch = ids.log_epoch(after=newest[0] if newest else None)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('event_epoch', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(epoch),),
    )
    conn.execute("ALTER TABLE part ADD COLUMN delta_seq BIGINT")
    conn.execute(
        "UPDATE part SET delta_seq = COALESCE("
        "(SELECT e.seq FROM event_log e WHERE e.id = part.delta_from), 0) "
        "WHERE delta_from IS NOT NULL"
    )
    conn.execute("ALTER TABLE part DROP COLUMN delta_from")
    conn.execute(
        "CREATE TABLE event_log_v4 "
        "(seq BIGINT PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL)"
    )
    rows = conn.execute("SELECT seq, id, type, payload FROM event_log ORDER BY seq").fetchall()
    conn.executemany(
        "INSERT INTO event_log_v4 VALUES (?, ?, ?)",
        ((seq, kind, _properties(payload, old, kind)) for seq, old, kind, payload in rows),
    )
    conn.execute("DROP TABLE event_log")
    conn.execute("ALTER TABLE event_log_v4 RENAME TO event_log")
    conn.execute("ALTER INDEX event_log_v4_pkey RENAME TO event_log_pkey")
    conn.execute(f"CREATE INDEX event_log_lifecycle ON event_log (type) WHERE type IN {LIFECYCLE}")


MIGRATIONS = [
    (1, "initial", _001_initial),
    (2, "todo", _002_todo),
    (3, "sequence", _003_sequence),
    (4, "event ids from sequence", _004_event_ids_from_sequence),
]
LATEST_VERSION = MIGRATIONS[-1][0]


def schema_version(conn: PgConnection) -> int:
    found = conn.execute("SELECT to_regclass('schema_version')").fetchone()[0]
    if found is None:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])


def migrate(conn: PgConnection) -> int:
    """Bring the database to the newest version, each migration in its own transaction."""
    with conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    version = schema_version(conn)
    for number, name, apply in MIGRATIONS:
        if number <= version:
            continue
        with conn:
            apply(conn)
            conn.execute(  # the text SQLite's datetime('now') gives
                "INSERT INTO schema_version (version, name, applied_at) VALUES "
                "(?, ?, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))",
                (number, name),
            )
        version = number
    return version


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
