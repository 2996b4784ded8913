"""The single SQLite writer: a thread that group-commits queued writes.

Callers on the event loop enqueue :class:`Write` objects. The thread takes the
first one, then everything else already queued, applies the batch in one
transaction, commits, and only then hands the batch's events back to the loop to
be published. Event ids are given inside the thread, in commit order, from the log's
sequence (``ids.logged_event_id``), so they are strictly increasing in publish order.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from partwire import ids
from partwire.schema.base import Tokens
from partwire.schema.event import (
    Draft,
    Event,
    MessagePartDelta,
    PartDeltaProps,
    SessionInfo,
    SessionUpdated,
)
from partwire.schema.message import Message, MessageWithParts
from partwire.schema.part import Part
from partwire.schema.session import Session
from partwire.storage.checkpoint import Checkpointer
from partwire.storage.connection import Conn
from partwire.storage.cpu import CpuFollower
from partwire.storage.health import release_reserve

log = logging.getLogger(__name__)

MAX_BATCH = 5_000
# The writer never copies the WAL into the database itself (its connection has
# wal_autocheckpoint=0): copying ~8 MB takes tens of milliseconds, and every session's next
# delta would wait behind it. It counts the pages it appended and, past this many, wakes
# the Checkpointer, whose PASSIVE checkpoints run on their own connection and never block a
# writer. Fewer, larger checkpoints copy a page the log keeps appending to about once.
CHECKPOINT_PAGES = 8_000
# Commits of deltas are spaced at least this far apart: deltas that arrive meanwhile join
# the next commit, a group commit shared by all sessions. Fifty sessions at 100 tokens/s
# then commit every 2 ms instead of a delta or two at a time, and their clients get fewer,
# larger writes; a lone stream paced slower than this (a live model) still commits each
# delta the moment it arrives. Only deltas wait: nobody awaits them, whereas a batch with
# any other write (a part being created, say, which the processor awaits) commits at once.
# A delta waits at most this long; a burst batches by itself (writes queue during a commit).
COMMIT_SPACING_S = 0.002
_EMPTY = object()


# Log rows go in with multi-row INSERTs of these sizes (largest first). Each statement is
# one step, and Python's sqlite3 lets go of the GIL at every step: a row at a time, a
# batch of 100 deltas handed the GIL to the loop's thread and back 100 times. A few fixed
# sizes keep the statements in sqlite3's cache.
_ROW_CHUNKS = (64, 16, 4, 1)
_INSERT = {
    n: "INSERT INTO event_log (seq, type, payload) VALUES " + ",".join(["(?,?,?)"] * n)
    for n in _ROW_CHUNKS
}


class WriteContext:
    """What a write sees inside the writer's transaction."""

    def __init__(self, conn: Conn, epoch: int, last_seq: int) -> None:
        self.conn = conn
        self.epoch = epoch
        self.last_seq = last_seq  # the newest logged event's sequence number (0: none)
        self.events: list[Event] = []
        self.rows: list[object] = []  # (seq, type, payload) flattened, not yet inserted

    def log(self, draft: Draft) -> None:
        """Log the event as its type and its properties' JSON: its id is its sequence
        number's (ids.logged_event_id). A delta's row is then small enough that five share
        a 1 KiB page, so a paced stream's commit mostly rewrites one page. The row is
        inserted by ``insert_rows``, before the transaction commits."""
        seq = self.last_seq + 1
        event = draft.with_id(ids.logged_event_id(self.epoch, seq))
        self.rows += (seq, event.type, event.properties_json)
        self.last_seq = seq
        self.events.append(event)

    def insert_rows(self) -> None:
        rows, start = self.rows, 0
        self.rows = []
        for size in _ROW_CHUNKS:
            width = size * 3
            while len(rows) - start >= width:
                self.conn.execute(_INSERT[size], rows[start : start + width])
                start += width


@dataclass
class Write:
    """One queued write; subclasses say which rows it touches."""

    events: list[Draft] = field(default_factory=list)
    future: asyncio.Future[None] | None = None

    def apply(self, ctx: WriteContext) -> None:
        self.apply_rows(ctx)
        for draft in self.events:
            ctx.log(draft)

    def apply_rows(self, ctx: WriteContext) -> None:
        return None


def _stored_spend(conn: Conn, session: Session) -> Session:
    """``session`` with the spend its stored row holds: ``SpendAdd`` alone changes it,
    so a session read before an answer completed never writes an older total back."""
    row = conn.execute("SELECT data FROM session WHERE id = ?", (session.id,)).fetchone()
    if row is None:
        return session
    stored = Session.model_validate_json(row[0])
    return session.model_copy(update={"cost": stored.cost, "tokens": stored.tokens})


def _about(draft: Draft, session: Session) -> Draft:
    """``draft``, telling of ``session`` as it is written, when it is about that session."""
    props = draft.properties
    if isinstance(props, SessionInfo) and props.info.id == session.id:
        return Draft(draft.type, SessionInfo(session_id=session.id, info=session))
    return draft


@dataclass
class SessionPut(Write):
    session: Session | None = None
    new: bool = False  # claim the id: fail (IdTakenError) if a session holds it already

    def apply_rows(self, ctx: WriteContext) -> None:
        assert self.session is not None
        if not self.new:
            self.session = _stored_spend(ctx.conn, self.session)
            self.events = [_about(draft, self.session) for draft in self.events]
        on_conflict = (
            "DO NOTHING"
            if self.new
            else "DO UPDATE SET parent_id = excluded.parent_id, data = excluded.data"
        )
        changed = ctx.conn.execute(
            "INSERT INTO session (id, parent_id, data) VALUES (?,?,?) "
            f"ON CONFLICT (id) {on_conflict}",
            (self.session.id, self.session.parent_id, self.session.wire_json()),
        ).rowcount
        if self.new and changed == 0:
            raise IdTakenError(f"session id {self.session.id} is taken")


@dataclass
class SpendAdd(Write):
    """An answer's usage added to its session's totals, read and written in the one
    transaction, and told as the session's update."""

    session_id: str = ""
    tokens: Tokens = field(default_factory=Tokens)
    cost: float = 0.0

    def apply(self, ctx: WriteContext) -> None:
        query = "SELECT data FROM session WHERE id = ?"
        row = ctx.conn.execute(query, (self.session_id,)).fetchone()
        if row is None:  # deleted meanwhile
            return
        session = Session.model_validate_json(row[0])
        total = (session.tokens or Tokens()).plus(self.tokens).model_copy(update={"total": None})
        spent = session.model_copy(
            update={"tokens": total, "cost": (session.cost or 0) + self.cost}
        )
        ctx.conn.execute(
            "UPDATE session SET data = ? WHERE id = ?", (spent.wire_json(), self.session_id)
        )
        ctx.log(SessionUpdated(SessionInfo(session_id=self.session_id, info=spent)))


@dataclass
class SessionDelete(Write):
    session_id: str = ""

    def apply_rows(self, ctx: WriteContext) -> None:
        for table in ("todo", "prompt_no_reply"):
            ctx.conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (self.session_id,))
        for table in ("part", "message"):
            ctx.conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (self.session_id,))
        ctx.conn.execute("DELETE FROM session WHERE id = ?", (self.session_id,))


class IdTakenError(sqlite3.IntegrityError):
    """A row id is already used by another session's message (or another message's part)."""

    def __init__(self, message: str, field: str = "", identifier: str = "") -> None:
        super().__init__(message)
        self.field = field  # the wire field that named the id: messageID, partID
        self.identifier = identifier


@dataclass
class MessagePut(Write):
    """Insert a message at the end of history, or update it in place (it keeps its seq)."""

    message: Message | None = None

    def apply_rows(self, ctx: WriteContext) -> None:
        assert self.message is not None
        changed = ctx.conn.execute(
            "INSERT INTO message (id, session_id, data, seq) "
            "VALUES (?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM message)) "
            "ON CONFLICT (id) DO UPDATE SET data = excluded.data "
            "WHERE message.session_id = excluded.session_id",
            (self.message.id, self.message.session_id, self.message.wire_json()),
        ).rowcount
        if changed == 0:
            raise IdTakenError(
                f"message id {self.message.id} belongs to another session",
                "messageID",
                self.message.id,
            )


@dataclass
class PartPut(Write):
    part: Part | None = None
    streaming: bool = False

    def apply_rows(self, ctx: WriteContext) -> None:
        assert self.part is not None
        delta_seq = ctx.last_seq if self.streaming else None
        changed = ctx.conn.execute(
            "INSERT INTO part (id, message_id, session_id, data, delta_seq, seq) "
            "VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM part)) "
            "ON CONFLICT (id) DO UPDATE SET data = excluded.data, delta_seq = excluded.delta_seq "
            "WHERE part.message_id = excluded.message_id",
            (
                self.part.id,
                self.part.message_id,
                self.part.session_id,
                self.part.wire_json(),
                delta_seq,
            ),
        ).rowcount
        if changed == 0:
            raise IdTakenError(
                f"part id {self.part.id} belongs to another message", "partID", self.part.id
            )


@dataclass
class HistoryPut(Write):
    """Whole messages with their parts, appended in order in one transaction (a fork, an
    import): one commit however long the history."""

    messages: list[MessageWithParts] = field(default_factory=list)

    def apply_rows(self, ctx: WriteContext) -> None:
        for entry in self.messages:
            MessagePut(message=entry.info).apply_rows(ctx)
            for part in entry.parts:
                PartPut(part=part).apply_rows(ctx)


@dataclass
class MessageDelete(Write):
    message_id: str = ""

    def apply_rows(self, ctx: WriteContext) -> None:
        ctx.conn.execute("DELETE FROM part WHERE message_id = ?", (self.message_id,))
        ctx.conn.execute("DELETE FROM message WHERE id = ?", (self.message_id,))


@dataclass
class PartDelete(Write):
    part_id: str = ""

    def apply_rows(self, ctx: WriteContext) -> None:
        ctx.conn.execute("DELETE FROM part WHERE id = ?", (self.part_id,))


@dataclass
class TodoPut(Write):
    session_id: str = ""
    todos_json: str = "[]"

    def apply_rows(self, ctx: WriteContext) -> None:
        ctx.conn.execute(
            "INSERT INTO todo (session_id, data) VALUES (?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data",
            (self.session_id, self.todos_json),
        )


@dataclass
class DeltaAppend(Write):
    delta: PartDeltaProps | None = None

    def apply(self, ctx: WriteContext) -> None:
        assert self.delta is not None
        ctx.log(MessagePartDelta(self.delta))


Deliver = Callable[[list[Write], list[Event]], None]
# told (on the loop) why a write that nobody awaits (a delta) failed
Lost = Callable[[BaseException], None]


class Sequencer(Protocol):
    """Where several writers share one log (Postgres, several servers): ``begin`` runs
    first in every transaction and returns the log's newest sequence number once no other
    writer can append (its lock is held until commit), ``end`` runs last in it, and
    ``committed`` is told the events once they are durable (on the writer's thread)."""

    def begin(self, conn: Conn) -> int: ...
    def end(self, conn: Conn) -> None: ...
    def committed(self, events: list[Event]) -> None: ...


class Writer:
    """Owns the write connection and the thread that group-commits."""

    def __init__(
        self,
        connect: Callable[[], Conn],
        describe: Callable[[BaseException], BaseException] = lambda exc: exc,
        checkpoints: Callable[[], Conn] | None = None,
        sequencer: Sequencer | None = None,
        inline: bool = False,
    ) -> None:
        self._connect = connect
        self._inline = inline and sequencer is None  # a shared log's lock may wait: never
        self._conn: Conn | None = None  # the thread's connection, once it is open
        self._lock = threading.Lock()  # held by whoever commits on the connection
        self._in_thread = 0  # writes handed to the thread and not yet delivered
        self.commits_here = 0  # batches committed on the loop's thread
        self._sequencer = sequencer
        self._describe = describe  # turns a failed write's exception into what callers see
        # lists of writes, handed over once per loop iteration; None = stop
        self._queue: queue.SimpleQueue[list[Write] | None] = queue.SimpleQueue()
        self._pending: list[Write] = []
        self._thread: threading.Thread | None = None
        self._deliver: Deliver | None = None
        self._lost: Lost | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # SQLite's WAL is copied back by its own thread (checkpoints: its connections)
        self.checkpointer = Checkpointer(checkpoints) if checkpoints is not None else None
        self.cpu = CpuFollower()  # the thread stays on the loop's CPU (storage/cpu.py)
        self._pages_since_checkpoint = 0
        self._last_delta_commit = 0.0
        self.epoch = 0
        self.last_seq = 0
        self.batches = 0

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        deliver: Deliver,
        epoch: int,
        last_seq: int,
        lost: Lost | None = None,
    ) -> None:
        self._loop, self._deliver, self._lost = loop, deliver, lost
        self.epoch, self.last_seq = epoch, last_seq
        if self.checkpointer is not None:
            self.checkpointer.start()
        self._thread = threading.Thread(target=self._run, name="partwire-writer", daemon=True)
        self._thread.start()

    def submit(self, write: Write) -> None:
        """Queue a write (on the loop's thread). The writes of one loop iteration reach the
        thread together: many sessions' deltas cost one wake-up of the writer, not one each."""
        self._pending.append(write)
        if len(self._pending) == 1:
            assert self._loop is not None
            self._loop.call_soon(self.hand_over)

    def hand_over(self) -> None:
        if not self._pending:
            return
        writes, self._pending = self._pending, []
        if self._may_commit_here(writes) and self._lock.acquire(blocking=False):
            try:
                assert self._conn is not None
                self.commits_here += 1
                self._commit(self._conn, writes, here=True)
            finally:
                self._lock.release()
            return
        self._in_thread += len(writes)
        self.cpu.note()
        self._queue.put(writes)

    def _may_commit_here(self, writes: list[Write]) -> bool:
        """Whether the loop's thread commits ``writes`` itself (SQLite only: a commit there
        appends to the WAL without an fsync, tens of microseconds, less than the two thread
        hand-overs a commit on the writer's thread costs; bench/floor.py's "inline commit"
        against "writer follows"). Only while the thread holds nothing, so the log's order
        is kept, and while deltas are not due to join a group: under load the thread still
        takes the group commits, and the loop's thread does not do every session's
        writing."""
        if not self._inline or self._in_thread or self._conn is None:
            return False
        if time.monotonic() - self._last_delta_commit >= COMMIT_SPACING_S:
            return True
        return not all(isinstance(write, DeltaAppend) for write in writes)

    def stop(self) -> None:
        """Stop after the writes already handed over (call ``hand_over`` first on the loop)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self.checkpointer is not None:
            self.checkpointer.stop()

    def _run(self) -> None:
        conn = self._connect()
        self._conn = conn
        try:
            stopping = False
            while not stopping:
                batch, stopping = self._next_batch()
                if batch:
                    self.cpu.follow()
                    with self._lock:
                        self._commit(conn, batch, here=False)
        finally:
            with self._lock:
                self._conn = None
                conn.close()

    def _deliver_from_thread(self, batch: list[Write], events: list[Event]) -> None:
        """On the loop: the thread's batch is delivered, and the thread holds that less."""
        self._in_thread -= len(batch)
        assert self._deliver is not None
        self._deliver(batch, events)

    def _next_batch(self) -> tuple[list[Write], bool]:
        """The first writes, then whatever else arrives until COMMIT_SPACING_S has passed
        since the last commit of deltas, while the batch holds only deltas (group commit)."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch = first
        spaced = self._last_delta_commit + COMMIT_SPACING_S
        awaited = not all(isinstance(write, DeltaAppend) for write in batch)
        while len(batch) < MAX_BATCH:
            item = self._take(0.0 if awaited else spaced)
            if item is _EMPTY:
                break
            if item is None:
                return batch, True
            more: list[Write] = item  # type: ignore[assignment]
            batch.extend(more)
            awaited = awaited or not all(isinstance(write, DeltaAppend) for write in more)
        return batch, False

    def _take(self, deadline: float) -> list[Write] | object | None:
        try:
            return self._queue.get_nowait()  # the fast path while writes are queued
        except queue.Empty:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _EMPTY
        try:
            return self._queue.get(timeout=remaining)
        except queue.Empty:
            return _EMPTY

    def _count_pages(self, events: list[Event]) -> None:
        if self.checkpointer is None:
            return
        self._pages_since_checkpoint += _pages(events)
        if self._pages_since_checkpoint >= CHECKPOINT_PAGES:
            self._pages_since_checkpoint = 0
            self.checkpointer.request()

    def _apply(self, conn: Conn, ctx: WriteContext, writes: list[Write]) -> None:
        """The writes in the open transaction, their log rows last."""
        if self._sequencer is not None:
            ctx.last_seq = self._sequencer.begin(conn)
        for write in writes:
            write.apply(ctx)
        ctx.insert_rows()
        if self._sequencer is not None:
            self._sequencer.end(conn)

    def _commit(self, conn: Conn, batch: list[Write], *, here: bool) -> None:
        """Commit ``batch`` on the caller's thread: the loop's own (``here``) or the
        writer's."""
        ctx = WriteContext(conn, self.epoch, self.last_seq)
        try:
            with conn:
                self._apply(conn, ctx, batch)
        except Exception as exc:
            if _locked(exc):  # each write alone would wait the busy timeout again
                log.error("batch of %d writes failed: %s", len(batch), exc)
                self._finish(
                    WriteContext(conn, self.epoch, self.last_seq),
                    batch,
                    [(write, exc) for write in batch],
                    here=here,
                )
                return
            log.exception("batch of %d writes failed; retrying one by one", len(batch))
            self._commit_one_by_one(conn, batch, here=here)
            return
        self._finish(ctx, batch, [], here=here)

    def _commit_one_by_one(self, conn: Conn, batch: list[Write], *, here: bool) -> None:
        ctx = WriteContext(conn, self.epoch, self.last_seq)
        failed: list[tuple[Write, BaseException]] = []
        for write in batch:
            before, seq_before = len(ctx.events), ctx.last_seq
            try:
                with conn:
                    self._apply(conn, ctx, [write])
            except Exception as exc:
                ctx.rows = []
                del ctx.events[before:]
                ctx.last_seq = seq_before
                failed.append((write, exc))
                full = isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)
                if full and isinstance(conn, sqlite3.Connection):
                    release_reserve(conn)  # room for the writes that end the message
        self._finish(ctx, batch, failed, here=here)

    def _finish(
        self,
        ctx: WriteContext,
        batch: list[Write],
        failed: list[tuple[Write, BaseException]],
        *,
        here: bool,
    ) -> None:
        self.last_seq = ctx.last_seq
        self.batches += 1
        if any(isinstance(write, DeltaAppend) for write in batch):
            self._last_delta_commit = time.monotonic()
        self._count_pages(ctx.events)
        assert self._loop is not None and self._deliver is not None
        call = _call_now if here else self._loop.call_soon_threadsafe
        for write, exc in failed:
            if write.future is not None:
                call(_fail, write.future, self._describe(exc))
            elif self._lost is not None:
                call(self._lost, self._describe(exc))
        call(self._deliver if here else self._deliver_from_thread, batch, ctx.events)
        if self._sequencer is not None and ctx.events:  # after: our clients need not wait
            self._sequencer.committed(ctx.events)


def _call_now(callback: Callable[..., object], *args: object) -> None:
    """What follows a commit made on the loop's own thread runs at once."""
    callback(*args)


def _locked(exc: BaseException) -> bool:
    """Another connection held the write lock past the busy timeout."""
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _pages(events: list[Event]) -> int:
    """About how many 1 KiB WAL pages a commit of these events appended (at least one)."""
    return 1 + sum(len(event.json) for event in events) // 1000


def _fail(future: asyncio.Future[None], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
