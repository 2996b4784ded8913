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
import functools
import json
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from partwire import ids
from partwire.bus import Bus
from partwire.clock import now_ms
from partwire.errors import StorageError
from partwire.schema.event import Event, parse_logged
from partwire.storage.connection import Conn
from partwire.storage.migrations import LATEST_VERSION, LIFECYCLE, migrate
from partwire.storage.pg_connection import PgConnection, connect, redacted
from partwire.storage.pg_leases import others_live_leases
from partwire.storage.pg_notify import (
    CHANNEL,
    COMMANDS,
    NOTIFY_PAYLOAD_BYTES,
    NotifyTail,
    notices_of,
)
from partwire.storage.recovery import open_lifecycle, recover_into
from partwire.storage.redis_log import Appender, Keys, Reader
from partwire.storage.sqlite import SqliteStore
from partwire.storage.writer import Writer
from partwire.storage.writes import IdTakenError, Write, WriteContext

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

# Held by a writer from the first statement of its transaction to its commit: one server
# appends to the log at a time, so the log's order is the order of commits ("pw", then 2).
APPEND_LOCK = 0x707702
SETUP_LOCK = 0x707703  # one server migrates at a time
# A commit here is a handful of round trips to the database under the log's lock, and
# every server's tail is told of it: tens of times a SQLite commit's CPU, spread over the
# server and Postgres. Deltas are spaced wider than the writer's SQLite default (2, 5 ms).
SHARED_SPACING_S = (0.005, 0.010)
COMMAND_ROW = "commandRow"  # a NOTIFY that names the server_command row holding a command
COMMAND_ROW_MS = 10 * 60 * 1000  # how long such a row is kept


# SQLite's functions that the store's SQL and migrations use, made in Postgres first
_SQLITE_FUNCTIONS = (
    "CREATE OR REPLACE FUNCTION instr(text, text) RETURNS integer "
    "AS 'SELECT strpos($1, $2)' LANGUAGE SQL IMMUTABLE",
    "CREATE OR REPLACE FUNCTION datetime(text) RETURNS text "
    "AS $$SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')$$ LANGUAGE SQL",
)
# A writer's first statement: the log's lock, then its newest row, in one round trip (a
# volatile function's queries each take a fresh snapshot: the MAX sees every commit made
# before the lock was granted).
_LOG_LOCK = (
    "CREATE OR REPLACE FUNCTION partwire_log_lock(key bigint) RETURNS bigint AS $$ "
    "BEGIN PERFORM pg_advisory_xact_lock(key); "
    "RETURN (SELECT COALESCE(MAX(seq), 0) FROM event_log); END $$ LANGUAGE plpgsql VOLATILE"
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
        self._tail: NotifyTail | Reader | None = None
        self._published = 0  # the newest log row published on this server's bus
        self._ours: dict[int, Event] = {}  # events this server committed, until published
        self._waiting: list[tuple[int, list[Write]]] = []  # (newest seq, batch) in order
        self._reading_commands: set[asyncio.Task[None]] = set()
        self._on_command: Callable[[dict[str, Any]], object] | None = None
        # the asks and statuses other servers had open when this one started (log rows)
        self._open_at_start: list[tuple[int, str, str]] = []
        super().__init__(path=None, bus=bus, retain_events=retain_events)  # type: ignore[arg-type]

    def _new_writer(self) -> Writer:
        return Writer(
            lambda: connect(self.url),
            self._storage_error,
            sequencer=_SharedLog(self._appender),
            spacing_s=SHARED_SPACING_S,
        )

    def _connect_reader(self) -> Conn:
        return connect(self.url, autocommit=True)

    # a snapshot for the whole read: the messages and the last event id it returns agree
    _BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
    _POINT_READS_ON_LOOP = False

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
                for statement in (*_SQLITE_FUNCTIONS, _LOG_LOCK):
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
            log_order.end(ctx, ctx.events)
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
        if self.redis_url is None:  # on the loop itself: no hand-over
            self._tail = NotifyTail(self.url, self._published, self._publish, self._command)
        else:
            self._tail = self._redis_reader(self.redis_url)
        self._tail.start()

    def _redis_reader(self, redis_url: str) -> Reader:
        """The thread that follows the Redis stream, handing rows and commands to the loop."""
        loop = asyncio.get_running_loop()

        def hand(rows: list[tuple[int, str, str]]) -> None:
            loop.call_soon_threadsafe(self._publish, rows)

        def command(payload: str) -> None:
            loop.call_soon_threadsafe(self._command, payload)

        table = functools.partial(connect, self.url, autocommit=True)
        return Reader(redis_url, Keys(self.epoch), table, self._published, hand, command)

    async def close(self) -> None:
        await super().close()
        if self._tail is not None:
            await self._tail.close()
            self._tail = None
        for task in self._reading_commands:
            task.cancel()
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
        for event in events:  # unless the tail was first and published its row already
            if (seq := self._seq(event.id)) > self._published:
                self._ours[seq] = event
        newest = self._seq(events[-1].id) if events else 0
        if newest <= self._published:
            self._settle(batch)
        else:
            self._waiting.append((newest, batch))
        self._count_logged(len(events))

    def _publish(self, rows: list[tuple[int, str, str]]) -> None:
        """On the loop: the log's next rows, in order; ours as committed, others' parsed,
        unless nothing here subscribes to their type and session (a server nobody follows
        parses no other server's deltas; one whose clients each watch a session of their
        own parses only those sessions' deltas)."""
        if not rows or rows[-1][0] <= self._published:
            return
        takes = self.bus.takes
        events: list[Event] = []
        for seq, kind, payload in rows:
            if seq <= self._published:
                continue
            ours = self._ours.pop(seq, None)
            if ours is not None:
                events.append(ours)
            elif takes(kind, _session_of_row(payload)):
                events.append(parse_logged(self._logged(seq, kind, payload)))
        self._published = rows[-1][0]
        self.bus.publish_many(events)
        while self._waiting and self._waiting[0][0] <= self._published:
            self._settle(self._waiting.pop(0)[1])

    # ---- commands between servers ---------------------------------------------------------

    def on_command(self, handle: Callable[[dict[str, Any]], object]) -> None:
        """Where another server's commands go (the runtime's)."""
        self._on_command = handle

    def _command(self, payload: str) -> None:
        """On the loop: another server's command, in the NOTIFY payload, or in a row the
        payload names (a command too large for NOTIFY; read by a reader, not here)."""
        if self._on_command is None:
            return
        command = json.loads(payload)
        if isinstance(command, dict) and set(command) == {COMMAND_ROW}:
            task = asyncio.get_running_loop().create_task(self._command_in_row(command))
            self._reading_commands.add(task)
            task.add_done_callback(self._reading_commands.discard)
            return
        self._on_command(command)

    async def _command_in_row(self, command: dict[str, Any]) -> None:
        row = await self._readers.read(
            lambda conn: conn.execute(
                "SELECT payload FROM server_command WHERE id = ?", (command[COMMAND_ROW],)
            ).fetchone()
        )
        if row is not None and self._on_command is not None:
            self._on_command(json.loads(row[0]))

    async def send_command(self, command: dict[str, Any]) -> None:
        if self.redis_url is not None:
            from partwire.storage import redis_log

            keys = Keys(self.epoch)
            await asyncio.to_thread(redis_log.send_command, self.redis_url, keys, command)
            return

        payload = json.dumps(command)

        def send() -> None:
            conn = connect(self.url, autocommit=True)
            try:
                conn.execute("SELECT pg_notify(?, ?)", (COMMANDS, self._by_row(conn, payload)))
            finally:
                conn.close()

        await asyncio.to_thread(send)

    @staticmethod
    def _by_row(conn: Conn, payload: str) -> str:
        """What NOTIFY carries: the command, or when it is too large for a NOTIFY payload
        (8,000 bytes), the id of a row holding it (rows are kept a while, for every
        server to read, then cleared by later sends)."""
        if len(payload.encode()) <= NOTIFY_PAYLOAD_BYTES:
            return payload
        now = now_ms()
        row_id = secrets.token_hex(12)
        conn.execute("DELETE FROM server_command WHERE created_ms < ?", (now - COMMAND_ROW_MS,))
        conn.execute("INSERT INTO server_command VALUES (?, ?, ?)", (row_id, payload, now))
        return json.dumps({COMMAND_ROW: row_id})

    async def ask_is_open(self, request_id: str) -> bool:
        """Whether the log shows the permission ask or question as asked and not answered."""

        def query(conn: Conn) -> bool:
            kinds = conn.execute(
                f"SELECT type FROM event_log WHERE {LIFECYCLE} "
                "AND instr(payload, ?) > 0 ORDER BY seq",
                (json.dumps(request_id),),
            ).fetchall()
            return bool(kinds) and kinds[-1][0].endswith(".asked")

        return await self._readers.read(query)

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


class _SharedLog:
    """Every server's writer appends under one transaction-level lock (the Sequencer), and
    tells the other servers: a NOTIFY, or its events appended to Redis."""

    def __init__(self, appender: Appender | None = None) -> None:
        self._appender = appender

    def begin(self, conn: Conn) -> int:
        return int(conn.execute("SELECT partwire_log_lock(?)", (APPEND_LOCK,)).fetchone()[0])

    def end(self, ctx: WriteContext, events: list[Event]) -> None:
        """Insert the transaction's last rows and, in the same statement, tell the other
        servers' tails (at commit, in commit order) the rows themselves, in as many
        notifications as they take (one round trip; a transaction's notifications are
        delivered in the order sent), so that no tail reads them back (but a row too large
        for one). A commit that logged nothing tells nobody."""
        if self._appender is not None or not events:
            ctx.insert_rows()
            return
        ctx.insert_rows([(CHANNEL, notice) for notice in notices_of(events, ctx.last_seq)])

    def committed(self, events: list[Event]) -> None:
        if self._appender is not None:
            self._appender.append(events)


_SESSION_HEAD = '{"sessionID":"'
_SESSION_AT = len(_SESSION_HEAD)


def _session_of_row(payload: str) -> str | None:
    """The session a logged event's properties name first (deltas, statuses: read without
    parsing the JSON); None when they don't start with it."""
    if not payload.startswith(_SESSION_HEAD):
        return None
    end = payload.find('"', _SESSION_AT)
    if end < 0 or "\\" in payload[_SESSION_AT:end]:  # escaped: not worth reading
        return None
    return payload[_SESSION_AT:end]
