"""The Postgres store: the SQLite store's writes, reads, recovery and migrations on Postgres.

Chosen with ``PARTWIRE_DATABASE_URL=postgresql://…`` (``pip install 'partwire[postgres]'``).
Everything above the connection is the SQLite store's own code: the same writer thread
group-commits (psycopg's blocking calls run there and on the readers' worker threads,
never on the event loop), and the same SQL, migrations included, runs through
``PgConnection``, which speaks sqlite3's API and SQLite's dialect (``pg_sql``).

Several servers share one database: their writers append to one log under one lock, and
each server publishes every server's events in the log's order, told of new rows by
Postgres' NOTIFY or, with ``PARTWIRE_REDIS_URL``, read from a Redis stream
(``storage/redis_log.py``). Leases say which server runs which session (``PgLeases``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from partwire import ids
from partwire.bus import Bus
from partwire.errors import StorageError
from partwire.schema.event import Event, parse_logged
from partwire.storage.connection import Conn, Cursor
from partwire.storage.migrations import LATEST_VERSION, LIFECYCLE, migrate
from partwire.storage.recovery import open_lifecycle, recover_into
from partwire.storage.redis_log import Appender, Keys, Reader
from partwire.storage.sqlite import SqliteStore
from partwire.storage.writer import IdTakenError, Write, WriteContext, Writer

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

# Held by a writer from the first statement of its transaction to its commit: one server
# appends to the log at a time, so the log's order is the order of commits ("pw", then 2).
APPEND_LOCK = 0x707702
SETUP_LOCK = 0x707703  # one server migrates at a time
CHANNEL = "partwire_log"  # NOTIFY'd by every commit; each server's tail LISTENs
COMMANDS = "partwire_commands"  # a server asks the one that holds a run or an ask
TAIL_PAGE = 2_000
TAIL_POLL_S = 1.0  # a tail also looks without a notification this often


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

    def __init__(
        self,
        url: str,
        bus: Bus,
        *,
        retain_events: int = 200_000,
        server_id: str = "server",
        redis_url: str | None = None,
    ) -> None:
        self.url = url
        self.server_id = server_id  # this data dir's server, whichever process serves it
        self.where = redacted(url)
        self.redis_url = redis_url  # events travel through Redis rather than NOTIFY
        self._appender = Appender(redis_url) if redis_url else None
        self._tail: _Tail | Reader | None = None
        self._published = 0  # the newest log row published on this server's bus
        self._ours: dict[int, Event] = {}  # events this server committed, until published
        self._waiting: list[tuple[int, list[Write]]] = []  # (newest seq, batch) in order
        self._on_command: Callable[[dict[str, Any]], object] | None = None
        # the asks and statuses other servers had open when this one started (log rows)
        self._open_at_start: list[tuple[int, str, str]] = []
        super().__init__(path=None, bus=bus, retain_events=retain_events)  # type: ignore[arg-type]

    def _new_writer(self) -> Writer:
        return Writer(
            lambda: connect(self.url), self._storage_error, sequencer=_SharedLog(self._appender)
        )

    def _connect_reader(self) -> Conn:
        return connect(self.url, autocommit=True)

    # a snapshot for the whole read: the messages and the last event id it returns agree
    _BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    def _prepare(self) -> tuple[int, int]:
        import psycopg

        try:
            conn = connect(self.url)
            try:
                return self._set_up(conn)
            finally:
                conn.close()
        except psycopg.Error as exc:
            raise self._explain(exc) from None

    def _set_up(self, conn: PgConnection) -> tuple[int, int]:
        """Migrate (one server at a time), then recover what no live server is running."""
        with conn:
            conn.execute("SELECT pg_advisory_lock(?)", (SETUP_LOCK,))
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
        finally:
            with conn:
                conn.execute("SELECT pg_advisory_unlock(?)", (SETUP_LOCK,))
        row = conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()
        epoch = int(row[0])
        if self._appender is not None:
            self._appender.bind(epoch)
        log_order = _SharedLog(self._appender)
        with conn:
            ctx = WriteContext(conn, epoch, log_order.begin(conn))
            recover_into(ctx, skip=frozenset(others_live_leases(conn, self.server_id)))
            log_order.end(conn)
        if ctx.events:
            log_order.committed(ctx.events)
        asks, working = open_lifecycle(conn)  # what is left open is other servers'
        self._open_at_start = sorted([*asks.values(), *working.values()])
        conn.raw.commit()
        return epoch, ctx.last_seq

    async def open(self) -> None:
        if self.redis_url is not None:
            from partwire.storage import redis_log

            await asyncio.to_thread(redis_log.check, self.redis_url)
        await super().open()
        self._published = self._writer.last_seq  # recovery's rows are published already
        loop = asyncio.get_running_loop()

        def hand(rows: list[tuple[int, str, str]]) -> None:
            loop.call_soon_threadsafe(self._publish, rows)

        def command(payload: str) -> None:
            loop.call_soon_threadsafe(self._command, payload)

        if self.redis_url is not None:
            table = functools.partial(connect, self.url, autocommit=True)
            keys = Keys(self.epoch)
            self._tail = Reader(self.redis_url, keys, table, self._published, hand, command)
        else:
            self._tail = _Tail(self.url, self._published, hand, command)
        self._tail.start()

    async def close(self) -> None:
        await super().close()
        if self._tail is not None:
            await asyncio.to_thread(self._tail.stop)
            self._tail = None
        for _, batch in self._waiting:  # committed; nobody is left to publish them here
            self._settle(batch)
        self._waiting.clear()
        if self._appender is not None:
            self._appender.close()

    def open_elsewhere(self) -> list[Event]:
        """The ``permission.asked``, ``question.asked`` and ``session.status`` events of
        what other servers had open when this one started, in log order."""
        return [parse_logged(self._logged(*row)) for row in self._open_at_start]

    # ---- the log shared by every server on the database ---------------------------------

    def _deliver(self, batch: list[Write], events: list[Event]) -> None:
        """The writer committed ``batch``: its events are published by the tail, in the
        log's order among every server's events; its writers go on once they are."""
        self._backlog -= len(batch)
        for event in events:
            self._ours[self._seq(event.id)] = event
        newest = self._seq(events[-1].id) if events else 0
        if newest <= self._published:
            self._settle(batch)
        else:
            self._waiting.append((newest, batch))
        self._count_delivery()

    def _publish(self, rows: list[tuple[int, str, str]]) -> None:
        """On the loop: the log's next rows, in order; ours as committed, others' parsed."""
        events: list[Event] = []
        for seq, kind, payload in rows:
            if seq <= self._published:
                continue
            ours = self._ours.pop(seq, None)
            events.append(ours or parse_logged(self._logged(seq, kind, payload)))
        if not events:
            return
        self._published = rows[-1][0]
        self.bus.publish_many(events)
        while self._waiting and self._waiting[0][0] <= self._published:
            self._settle(self._waiting.pop(0)[1])

    # ---- commands between servers ---------------------------------------------------------

    def on_command(self, handle: Callable[[dict[str, Any]], object]) -> None:
        """Where another server's commands go (the runtime's)."""
        self._on_command = handle

    def _command(self, payload: str) -> None:
        if self._on_command is not None:
            self._on_command(json.loads(payload))

    async def send_command(self, command: dict[str, Any]) -> None:
        if self.redis_url is not None:
            from partwire.storage import redis_log

            keys = Keys(self.epoch)
            await asyncio.to_thread(redis_log.send_command, self.redis_url, keys, command)
            return

        def send() -> None:
            conn = connect(self.url, autocommit=True)
            try:
                conn.execute("SELECT pg_notify(?, ?)", (COMMANDS, json.dumps(command)))
            finally:
                conn.close()

        await asyncio.to_thread(send)

    async def ask_is_open(self, request_id: str) -> bool:
        """Whether the log shows the permission ask or question as asked and not answered."""

        def query(conn: Conn) -> bool:
            kinds = conn.execute(
                f"SELECT type FROM event_log WHERE type IN {LIFECYCLE} "
                "AND instr(payload, ?) > 0 ORDER BY seq",
                (json.dumps(request_id),),
            ).fetchall()
            return bool(kinds) and kinds[-1][0].endswith(".asked")

        return await self._read(query)

    def _seq(self, event_id: str) -> int:
        seq = ids.logged_event_seq(event_id, self.epoch)
        assert seq is not None, event_id
        return seq

    def _explain(self, exc: BaseException) -> StorageError:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return StorageError(f"the database {self.where} failed: {first}")

    def _storage_error(self, exc: BaseException) -> BaseException:
        import psycopg

        if isinstance(exc, IdTakenError) or not isinstance(exc, psycopg.Error | OSError):
            return exc
        return self._explain(exc)


# Which server runs which session (session_lease, migration 5): a row per session while a
# server runs it, renewed while it runs; a row past its expiry belongs to a server that is
# gone.
LEASE_S = 6.0  # renewed every LEASE_S / 3 while held: a dead server's sessions move on
# within LEASE_S plus one sweep


def _ms() -> int:
    return int(time.time() * 1000)


def others_live_leases(conn: Conn, server_id: str) -> list[str]:
    """The sessions other servers run now. This server's own leases (from before a
    restart: it holds its data dir, so no other process of it is alive) are dropped."""
    mine = f"{server_id}:%"
    conn.execute("DELETE FROM session_lease WHERE owner LIKE ?", (mine,))
    rows = conn.execute(
        "SELECT session_id FROM session_lease WHERE expires_ms > ? AND owner NOT LIKE ?",
        (_ms(), mine),
    )
    return [row[0] for row in rows.fetchall()]


class PgLeases:
    """Session leases in the database, one autocommit connection (used from worker
    threads, one statement at a time)."""

    def __init__(self, url: str, owner: str) -> None:
        self.url = url
        self.owner = owner
        self._conn: PgConnection | None = None
        self._lock = threading.Lock()

    def _execute(self, sql: str, parameters: Sequence[Any]) -> Cursor:
        with self._lock:
            if self._conn is None:
                self._conn = connect(self.url, autocommit=True)
            self._conn._reconnect_if_dropped()  # autocommit: no transaction to lose
            return self._conn.execute(sql, parameters)

    async def acquire(self, session_id: str) -> bool:
        """Take the session's lease unless a live server holds it (ours is renewed)."""
        now = _ms()
        sql = (
            "INSERT INTO session_lease (session_id, owner, expires_ms) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
            "expires_ms = excluded.expires_ms "
            "WHERE session_lease.owner = excluded.owner OR session_lease.expires_ms < ?"
        )
        params = (session_id, self.owner, now + int(LEASE_S * 1000), now)
        cursor = await asyncio.to_thread(self._execute, sql, params)
        return cursor.rowcount == 1

    async def renew(self, session_ids: list[str]) -> None:
        if session_ids:
            sql = "UPDATE session_lease SET expires_ms = ? WHERE owner = ? AND session_id = ANY(?)"
            params = (_ms() + int(LEASE_S * 1000), self.owner, session_ids)
            await asyncio.to_thread(self._execute, sql, params)

    async def release(self, session_id: str) -> None:
        sql = "DELETE FROM session_lease WHERE session_id = ? AND owner = ?"
        await asyncio.to_thread(self._execute, sql, (session_id, self.owner))

    async def held_elsewhere(self, session_id: str) -> bool:
        """Whether another live server runs the session."""
        sql = "SELECT 1 FROM session_lease WHERE session_id = ? AND owner <> ? AND expires_ms > ?"
        cursor = await asyncio.to_thread(self._execute, sql, (session_id, self.owner, _ms()))
        return cursor.fetchone() is not None

    async def expired(self) -> list[str]:
        sql = "SELECT session_id FROM session_lease WHERE expires_ms < ?"
        cursor = await asyncio.to_thread(self._execute, sql, (_ms(),))
        return [row[0] for row in cursor.fetchall()]

    async def mark_no_reply(self, session_id: str, message_id: str) -> None:
        sql = (
            "INSERT INTO prompt_no_reply (message_id, session_id) VALUES (?, ?) "
            "ON CONFLICT DO NOTHING"
        )
        await asyncio.to_thread(self._execute, sql, (message_id, session_id))

    async def no_reply(self, session_id: str) -> set[str]:
        sql = "SELECT message_id FROM prompt_no_reply WHERE session_id = ?"
        cursor = await asyncio.to_thread(self._execute, sql, (session_id,))
        return {row[0] for row in cursor.fetchall()}

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class _SharedLog:
    """Every server's writer appends under one transaction-level lock (the Sequencer), and
    tells the other servers: a NOTIFY, or its events appended to Redis."""

    def __init__(self, appender: Appender | None = None) -> None:
        self._appender = appender

    def begin(self, conn: Conn) -> int:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (APPEND_LOCK,))
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM event_log").fetchone()[0])

    def end(self, conn: Conn) -> None:
        if self._appender is None:
            conn.execute(f"NOTIFY {CHANNEL}")  # delivered at commit, in commit order

    def committed(self, events: list[Event]) -> None:
        if self._appender is not None:
            self._appender.append(events)


class _Tail:
    """A thread that reads the log's new rows, in order, whenever any server commits."""

    def __init__(
        self,
        url: str,
        after: int,
        hand: Callable[[list[tuple[int, str, str]]], object],
        command: Callable[[str], object],
    ) -> None:
        self.url = url
        self.after = after
        self._hand = hand
        self._command = command
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="partwire-tail", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        with contextlib.suppress(Exception):  # wake it now rather than at its next poll
            waker = connect(self.url, autocommit=True)
            waker.execute(f"NOTIFY {CHANNEL}")
            waker.close()
        self._thread.join(TAIL_POLL_S * 5)

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._follow()
            except Exception as exc:  # the database went away: follow again from `after`
                if self._stopping:
                    return
                log.warning("the event log's tail lost its connection (%s); retrying", exc)
                time.sleep(TAIL_POLL_S)

    def _follow(self) -> None:
        conn = connect(self.url, autocommit=True)
        try:
            conn.execute(f"LISTEN {CHANNEL}")
            conn.execute(f"LISTEN {COMMANDS}")
            while not self._stopping:
                self._drain(conn)
                for notice in conn.raw.notifies(timeout=TAIL_POLL_S, stop_after=1):
                    if notice.channel == COMMANDS:
                        self._command(notice.payload)
        finally:
            conn.close()

    def _drain(self, conn: PgConnection) -> None:
        while True:
            rows = conn.execute(
                "SELECT seq, type, payload FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?",
                (self.after, TAIL_PAGE),
            ).fetchall()
            if not rows:
                return
            self.after = rows[-1][0]
            self._hand([tuple(row) for row in rows])
