"""The embedded SQLite store (default): WAL, one group-committing writer, pooled readers."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter

from partwire import ids
from partwire.bus import Bus
from partwire.errors import IdConflictError, NotFoundError, StorageError
from partwire.private import private_database
from partwire.schema.base import Tokens
from partwire.schema.event import (
    Draft,
    Empty,
    Event,
    PartDeltaProps,
    event_json,
    parse_logged,
)
from partwire.schema.message import Message, MessageWithParts
from partwire.schema.part import Part
from partwire.schema.permission import Todo
from partwire.schema.session import Session
from partwire.storage import health
from partwire.storage.base import EventLogGap
from partwire.storage.batch import Batch
from partwire.storage.connection import Conn
from partwire.storage.health import (
    backup,
    explain,
    keep_reserve,
    keep_reserve_file,
    migration_backup_path,
    problems,
    refuse_newer,
    schema_version,
)
from partwire.storage.migrations import LATEST_VERSION, migrate
from partwire.storage.readers import Readers
from partwire.storage.reading import load_messages
from partwire.storage.recovery import SessionRecovery, recover
from partwire.storage.writer import Writer
from partwire.storage.writes import (
    LOG_BOUNDS_SQL,
    PRUNE_EVERY_EVENTS,
    DeltaAppend,
    EventPrune,
    HistoryPut,
    IdTakenError,
    MessageDelete,
    MessagePut,
    PartDelete,
    PartPut,
    RowsChange,
    SessionDelete,
    SessionPut,
    SpendAdd,
    TodoPut,
    Write,
)

T = TypeVar("T")
_todo_list: TypeAdapter[list[Todo]] = TypeAdapter(list[Todo])

# Above this many queued writes append_delta waits for its own commit: the writer is
# behind. Well above one loaded group commit (LOADED_SPACING_S of deltas: 300 at 300
# sessions), since a waiting delta wakes its producer's task (at 256 every loaded commit
# crossed it). Bounds the queue, and latency behind a slow writer at ~4096 / throughput.
BACKLOG_HIGH_WATER = 4096


# A paced stream commits each delta alone, and a WAL commit writes every page it changed
# whole: with 1 KiB pages, appending one delta to the log costs about 1 KiB on disk, where
# the default 4 KiB pages cost four times that (bench/stream.py --delay-ms).
PAGE_SIZE = 1024


# A history of at most this many parts, none of them streaming, is read on the loop's
# thread (a point read: tens of microseconds, where a worker thread's hand-over and back
# costs more); a longer one, or one whose streaming part needs the log's tail, on a thread.
SHORT_HISTORY_PARTS = 64


def _short_history(conn: Conn, session_id: str) -> list[MessageWithParts] | None:
    parts, streaming = conn.execute(
        "SELECT count(*), count(delta_seq) FROM "
        "(SELECT delta_seq FROM part WHERE session_id = ? LIMIT ?)",
        (session_id, SHORT_HISTORY_PARTS + 1),
    ).fetchone()
    if parts > SHORT_HISTORY_PARTS or streaming:
        return None
    return load_messages(conn, session_id, None)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # takes effect on a new database only
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={health.BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    # Python's sqlite3 in autocommit mode; `with conn` needs a manual BEGIN.
    conn.isolation_level = "DEFERRED"
    return conn


def _connect_writer(path: Path) -> sqlite3.Connection:
    conn = _connect(path)
    conn.execute("PRAGMA wal_autocheckpoint=0")  # the Checkpointer's job (storage/checkpoint.py)
    return conn


class SqliteStore:
    def __init__(self, path: Path, bus: Bus, *, retain_events: int = 200_000) -> None:
        self.path = path
        self.bus = bus
        self.retain_events = retain_events
        self._writer = self._new_writer()
        self._readers = Readers(
            self._connect_reader, self._BEGIN_READ, on_loop=self._POINT_READS_ON_LOOP
        )
        self._backlog = 0
        self._unpruned = 0  # events logged since the last prune
        # the last delta write that failed (disk full, I/O error), until clear_failure():
        # the next delta raises it instead of queueing writes that cannot land
        self.failure: StorageError | None = None
        self.epoch = 0  # the event log's (ids.logged_event_id); read at open
        self._loop: asyncio.AbstractEventLoop | None = None  # the writer's; set at open
        self._open = False

    def _new_writer(self) -> Writer:
        return Writer(
            lambda: _connect_writer(self.path),
            self._storage_error,
            checkpoints=lambda: _connect(self.path),
            inline=True,
        )

    # ---- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        """Check, back up (before a migration), migrate and recover the database, then
        start the writer. Any problem is a StorageError naming the file; a database
        found damaged or too new is not changed."""
        self.epoch, last_seq = await asyncio.to_thread(self._prepare)
        await self._readers.open()
        self._loop = asyncio.get_running_loop()
        self._writer.start(self._loop, self._deliver, self.epoch, last_seq, self._delta_lost)
        self._open = True

    def _prepare(self) -> tuple[int, int]:
        try:
            private_database(self.path)
            conn = _connect(self.path)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise explain(self.path, exc) from None
        try:
            return self._check_and_upgrade(conn)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise explain(self.path, exc) from None
        finally:
            conn.close()

    def _check_and_upgrade(self, conn: sqlite3.Connection) -> tuple[int, int]:
        found = problems(conn)
        if found:
            raise StorageError(
                f"the database {self.path} is damaged ({found[0]}). Move it away and restore "
                "a backup; `partwire db check` lists the problems"
            )
        version = schema_version(conn)
        refuse_newer(self.path, version)
        if 0 < version < LATEST_VERSION:
            backup(conn, migration_backup_path(self.path, version))
        migrate(conn)
        _use_small_pages(conn)
        keep_reserve(conn)
        keep_reserve_file(self.path)
        epoch = int(conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()[0])
        last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM event_log").fetchone()[0]
        return epoch, recover(conn, epoch, int(last))

    async def close(self) -> None:
        if not self._open:
            return
        self._open = False
        self._writer.hand_over()
        await asyncio.to_thread(self._writer.stop)
        self._readers.close()

    def _storage_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, IdTakenError) or not isinstance(exc, sqlite3.DatabaseError | OSError):
            return exc
        return explain(self.path, exc)

    def clear_failure(self) -> None:
        """Forget the last delta failure: a new model call tries the disk again."""
        self.failure = None

    def _delta_lost(self, exc: BaseException) -> None:
        """Nobody awaits a delta's write unless the writer is behind: its failure is kept
        in ``failure`` so that the next delta raises it."""
        if isinstance(exc, StorageError):
            self.failure = exc

    @property
    def backlog(self) -> int:
        return self._backlog

    # ---- writes --------------------------------------------------------------------------

    def _submit(self, write: Write) -> asyncio.Future[None]:
        assert self._loop is not None, "the store is not open"
        write.future = self._loop.create_future()
        self._queue(write)
        return write.future

    def _queue(self, write: Write) -> None:
        self._backlog += 1
        self._writer.submit(write)

    def _deliver(self, batch: list[Write], events: list[Event]) -> None:
        """On the loop, once the writer committed ``batch``: publish its events, then let
        its writers go on."""
        self._backlog -= len(batch)
        self.bus.publish_many(events)
        self._settle(batch)
        self._count_logged(len(events))

    @staticmethod
    def _settle(batch: list[Write]) -> None:
        for write in batch:
            if write.future is not None and not write.future.done():
                write.future.set_result(None)

    def _count_logged(self, events: int) -> None:
        self._unpruned += events
        if self._unpruned >= PRUNE_EVERY_EVENTS:
            self._unpruned = 0
            self._submit(EventPrune(retain=self.retain_events))

    async def put_session(
        self, session: Session, events: list[Draft], *, sets_budget: bool = False
    ) -> None:
        await self._submit(SessionPut(events=events, session=session, sets_budget=sets_budget))

    async def create_session(
        self, session: Session, events: list[Draft], *, owner: str | None = None
    ) -> None:
        try:
            await self._submit(SessionPut(events=events, session=session, new=True, owner=owner))
        except IdTakenError:
            raise IdConflictError("sessionID", session.id) from None

    async def delete_session(self, session_id: str, events: list[Draft]) -> None:
        await self._submit(SessionDelete(events=events, session_id=session_id))

    async def put_message(self, message: Message, events: list[Draft]) -> None:
        try:
            await self._submit(MessagePut(events=events, message=message))
        except IdTakenError:
            raise IdConflictError("messageID", message.id) from None

    async def put_part(self, part: Part, events: list[Draft], *, streaming: bool = False) -> None:
        try:
            await self._submit(PartPut(events=events, part=part, streaming=streaming))
        except IdTakenError:
            raise IdConflictError("partID", part.id) from None

    async def put_history(self, messages: list[MessageWithParts], events: list[Draft]) -> None:
        try:
            await self._submit(HistoryPut(events=events, messages=messages))
        except IdTakenError as exc:
            raise IdConflictError(exc.field, exc.identifier) from None

    def batch(self) -> Batch:
        return Batch(self._submit)

    async def add_spend(self, session_id: str, tokens: Tokens, cost: float) -> None:
        await self._submit(SpendAdd(session_id=session_id, tokens=tokens, cost=cost))

    async def delete_message(self, message_id: str, events: list[Draft]) -> None:
        await self._submit(MessageDelete(events=events, message_id=message_id))

    async def delete_part(self, part_id: str, events: list[Draft]) -> None:
        await self._submit(PartDelete(events=events, part_id=part_id))

    async def put_todos(self, session_id: str, todos: list[Todo], events: list[Draft]) -> None:
        body = "[" + ",".join(todo.wire_json() for todo in todos) + "]"
        await self._submit(TodoPut(events=events, session_id=session_id, todos_json=body))

    async def get_todos(self, session_id: str) -> list[Todo]:
        row = await self._readers.read(
            lambda c: c.execute(
                "SELECT data FROM todo WHERE session_id = ?", (session_id,)
            ).fetchone()
        )
        return [] if row is None else _todo_list.validate_json(row[0])

    def append_delta(self, delta: PartDeltaProps) -> Awaitable[None] | None:
        if self.failure is not None:
            raise self.failure
        write = DeltaAppend(delta=delta)
        if self._backlog >= BACKLOG_HIGH_WATER:
            return self._submit(write)
        self._queue(write)  # not awaited: a failure comes back through _delta_lost
        return None

    async def publish(self, events: list[Draft]) -> None:
        await self._submit(Write(events=events))

    def announce(self, events: list[Draft]) -> None:
        self.bus.publish_many([draft.announced(ids.event_id()) for draft in events])

    async def recover_session(self, session_id: str) -> None:
        """Finish what the server that ran this session left unfinished (it is gone)."""
        await self._submit(SessionRecovery(session_id))

    # ---- reads ---------------------------------------------------------------------------

    def _connect_reader(self) -> Conn:
        return _connect(self.path)

    # one transaction per read: its statements see one state of the database
    _BEGIN_READ = "BEGIN"
    _POINT_READS_ON_LOOP = True  # storage/readers.py

    async def read_with(self, query: Callable[[Conn], T]) -> T:
        """``query`` on a read connection, in one transaction (storage/accounts.py's)."""
        return await self._readers.read(query)

    async def write_with(self, change: Callable[[Conn], T], events: list[Draft]) -> T:
        """``change`` in the writer's transaction, logging ``events`` with it."""
        write = RowsChange(events=events, change=change)
        await self._submit(write)
        return write.result  # type: ignore[return-value]

    async def ids_in_use(self, message_ids: list[str], part_ids: list[str]) -> set[str]:
        def query(conn: Conn) -> set[str]:
            found: set[str] = set()
            for table, wanted in (("message", message_ids), ("part", part_ids)):
                for identifier in wanted:
                    sql = f"SELECT 1 FROM {table} WHERE id = ?"
                    if conn.execute(sql, (identifier,)).fetchone() is not None:
                        found.add(identifier)
            return found

        if not message_ids and not part_ids:
            return set()
        return await self._readers.read_point(query)

    async def get_session(self, session_id: str) -> Session:
        row = await self._readers.read_point(
            lambda c: c.execute("SELECT data FROM session WHERE id = ?", (session_id,)).fetchone()
        )
        if row is None:
            raise NotFoundError("Session", session_id)
        return Session.model_validate_json(row[0])

    async def list_sessions(self) -> list[Session]:
        rows = await self._readers.read(
            lambda c: c.execute("SELECT data FROM session ORDER BY id").fetchall()
        )
        return [Session.model_validate_json(row[0]) for row in rows]

    async def get_message(self, session_id: str, message_id: str) -> MessageWithParts:
        found = await self._readers.read_point(lambda c: load_messages(c, session_id, message_id))
        if not found:
            raise NotFoundError("Message", message_id)
        return found[0]

    async def list_messages(self, session_id: str) -> list[MessageWithParts]:
        short = await self._readers.read_point_if(lambda c: _short_history(c, session_id))
        if short is not None:
            return short
        return await self._readers.read(lambda c: load_messages(c, session_id, None))

    async def snapshot_messages(
        self, session_id: str, *, limit: int | None = None, before: str | None = None
    ) -> tuple[list[MessageWithParts], str | None]:
        """The messages and the newest logged event they reflect, read in one transaction.

        A client that loads this and then resumes the event stream from that id sees
        every later change exactly once. ``limit`` keeps the newest (before ``before``).
        """

        def query(conn: Conn) -> tuple[list[MessageWithParts], str | None]:
            last = conn.execute("SELECT MAX(seq) FROM event_log").fetchone()[0]
            found = load_messages(conn, session_id, None, limit=limit, before=before)
            return found, None if last is None else ids.logged_event_id(self.epoch, last)

        return await self._readers.read(query)

    async def last_event_id(self) -> str | None:
        def query(conn: Conn) -> str | None:
            last = conn.execute("SELECT MAX(seq) FROM event_log").fetchone()[0]
            return None if last is None else ids.logged_event_id(self.epoch, last)

        return await self._readers.read(query)

    def _seq_of(self, conn: Conn, event_id: str | None) -> int:
        """The sequence number to resume after; EventLogGap when the log cannot say what
        followed ``event_id``: pruned since, never ours (another data dir, a made-up id),
        or None (from the start) after the start was pruned."""
        oldest, newest = conn.execute(LOG_BOUNDS_SQL).fetchone()
        if event_id is None:
            pruned = conn.execute("SELECT 1 FROM meta WHERE key='pruned'").fetchone()
            seq: int | None = None if pruned else 0
        else:
            seq = ids.logged_event_seq(event_id, self.epoch)
            if seq is not None and (seq > (newest or 0) or (oldest is not None and seq < oldest)):
                seq = None
        if seq is None:
            raise EventLogGap(None if oldest is None else ids.logged_event_id(self.epoch, oldest))
        return seq

    async def events_behind(self, event_id: str) -> int:
        """How many logged events follow ``event_id``; EventLogGap if the log lacks it."""

        def query(conn: Conn) -> int:
            seq = self._seq_of(conn, event_id)
            sql = "SELECT COUNT(*) FROM event_log WHERE seq > ?"
            return int(conn.execute(sql, (seq,)).fetchone()[0])

        return await self._readers.read(query)

    async def log_page(self, event_id: str, limit: int) -> list[Event]:
        """Up to ``limit`` logged events after ``event_id``, unparsed (for replay)."""

        def query(conn: Conn) -> list[Event]:
            seq = self._seq_of(conn, event_id)
            rows = conn.execute(
                "SELECT seq, type, payload FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?",
                (seq, limit),
            ).fetchall()
            return [self._logged(n, kind, body) for n, kind, body in rows]

        return await self._readers.read(query)

    def _logged(self, seq: int, kind: str, properties: str) -> Event:
        """A logged event for framing only: its wire JSON, not parsed again."""
        event_id = ids.logged_event_id(self.epoch, seq)
        return Event(event_id, kind, _UNPARSED, json=event_json(event_id, kind, properties))

    async def session_page(
        self,
        session_id: str | Sequence[str],
        types: list[str],
        *,
        after: str | None,
        through: str,
        limit: int,
    ) -> list[Event]:
        sessions = [session_id] if isinstance(session_id, str) else list(session_id)

        def query(conn: Conn) -> list[Event]:
            upper = self._seq_of(conn, through)
            lower = 0 if after is None else self._seq_of(conn, after)
            marks = ",".join("?" * len(types))
            named = " OR ".join(["instr(payload, ?) > 0"] * len(sessions))
            rows = conn.execute(
                f"SELECT seq, type, payload FROM event_log WHERE seq > ? AND seq <= ? "
                f"AND type IN ({marks}) AND ({named}) ORDER BY seq LIMIT ?",
                (lower, upper, *types, *(f'"sessionID":"{s}"' for s in sessions), limit),
            ).fetchall()
            return [parse_logged(self._logged(*row)) for row in rows]

        return await self._readers.read(query)

    async def events_after(self, event_id: str | None) -> list[Event]:
        def query(conn: Conn) -> list[Event]:
            seq = self._seq_of(conn, event_id)
            rows = conn.execute(
                "SELECT seq, type, payload FROM event_log WHERE seq > ? ORDER BY seq", (seq,)
            ).fetchall()
            return [parse_logged(self._logged(*row)) for row in rows]

        return await self._readers.read(query)


def _use_small_pages(conn: sqlite3.Connection) -> None:
    """Rewrite a database made with larger pages (before 0.x: 4 KiB) once, to PAGE_SIZE."""
    if conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE:
        return
    conn.execute("PRAGMA journal_mode=DELETE")  # the page size of a WAL database is fixed
    conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
    conn.execute("VACUUM")
    conn.execute("PRAGMA journal_mode=WAL")


_UNPARSED = Empty()


def prepare(path: Path) -> None:
    """Make or migrate the database file as a server's start does, starting nothing
    (``partwire users`` and ``token`` before any server ran)."""
    SqliteStore(path, Bus())._prepare()
