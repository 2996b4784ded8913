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
from typing import Protocol

from partwire import metrics
from partwire.schema.event import Event, MessagePartDelta, PartDeltaProps
from partwire.storage.checkpoint import Checkpointer
from partwire.storage.connection import Conn
from partwire.storage.cpu import CpuFollower
from partwire.storage.health import release_reserve
from partwire.storage.writes import (
    ONE_ROW_INSERT,
    DeltaAppend,
    Write,
    WriteContext,
    logged_event,
)

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
# Under load (a commit of deltas held at least LOADED_DELTAS of them: a hundred sessions
# streaming at 100 tokens/s make twenty every 2 ms) the spacing widens to this, so that each
# commit, hand-over and client write carries more deltas for the same cost; it narrows again
# once commits are small. Only a busy server's deltas wait the few ms more. 10 ms rather
# than 5: 7 % less CPU per delta with 60 sessions a server (bench/pair.py, both builds at
# once, median of six rounds, p99 within the rounds' noise).
LOADED_SPACING_S = 0.010
LOADED_DELTAS = 16
_EMPTY = object()


Deliver = Callable[[list[Write], list[Event]], None]
# told (on the loop) why a write that nobody awaits (a delta) failed
Lost = Callable[[BaseException], None]


class Sequencer(Protocol):
    """Where several writers share one log (Postgres, several servers): ``begin`` runs
    first in every transaction and returns the log's newest sequence number once no other
    writer can append (its lock is held until commit), ``end`` runs last in it and inserts
    the transaction's rows not inserted yet (``ctx.insert_rows``, with what it tells the
    other writers, in one statement), and ``committed`` is told the events once they are
    durable (on the writer's thread)."""

    def begin(self, conn: Conn) -> int: ...
    def end(self, ctx: WriteContext, events: list[Event]) -> None: ...
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
        spacing_s: tuple[float, float] | None = None,
    ) -> None:
        """``spacing_s``: between commits of deltas, and under load (COMMIT_SPACING_S and
        LOADED_SPACING_S unless given)."""
        self._connect = connect
        self._inline = inline and sequencer is None  # a shared log's lock may wait: never
        self._conn: Conn | None = None  # the thread's connection, once it is open
        self._lock = threading.Lock()  # held by whoever commits on the connection
        self._in_thread = 0  # writes handed to the thread and not yet delivered
        self.commits_here = 0  # batches committed on the loop's thread
        self._busy_timeout_ms = 0  # the connection's own, read once it is open
        # (callback, args) the thread's last commit tells the loop, once its lock is free
        self._told: list[tuple[Callable[..., object], tuple[object, ...]]] = []
        self._sequencer = sequencer
        self._describe = describe  # turns a failed write's exception into what callers see
        # lists of writes, handed over once per loop iteration; None = stop
        self._queue: queue.SimpleQueue[list[Write] | None] = queue.SimpleQueue()
        self._pending: list[Write] = []
        self._soon = False  # a hand-over is queued for this loop iteration
        self._due: asyncio.TimerHandle | None = None  # … or timed: deltas' group commit
        self._thread: threading.Thread | None = None
        self._deliver: Deliver | None = None
        self._lost: Lost | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # SQLite's WAL is copied back by its own thread (checkpoints: its connections)
        self.checkpointer = Checkpointer(checkpoints) if checkpoints is not None else None
        self.cpu = CpuFollower()  # the thread stays on the loop's CPU (storage/cpu.py)
        self._pages_since_checkpoint = 0
        self._last_delta_commit = 0.0
        self._spacings = spacing_s or (COMMIT_SPACING_S, LOADED_SPACING_S)
        self.spacing_s = self._spacings[0]  # between commits of deltas, by the load
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
        thread together: many sessions' deltas cost one wake-up of the writer, not one each.
        Where the loop may commit (SQLite), a delta waits on the loop instead, until the
        spacing since the last commit of deltas has passed: the group commit is then one
        timer and one commit on the loop's thread, with no hand-over to the thread and
        back. A delta after a quiet spell (the spacing has passed, the thread holds nothing)
        is committed at once, in its caller's turn: a paced stream's token takes one turn
        of the loop, not two."""
        self._pending.append(write)
        if self._soon:
            return
        assert self._loop is not None
        if type(write) is DeltaAppend and self._inline and self._conn is not None:
            if self._due is not None:
                return
            wait = self._last_delta_commit + self.spacing_s - time.monotonic()
            if wait > 0:
                self._due = self._loop.call_later(wait, self._hand_over_due)
                return
            if not self._in_thread:  # a delta after a quiet spell: committed now, no turn
                self._commit_lone_delta(write)
                return
        self._soon = True
        self._loop.call_soon(self.hand_over)

    def _commit_lone_delta(self, write: DeltaAppend) -> None:
        """Commit ``write``, the only write pending, on the loop's thread at once: what
        ``hand_over`` and ``_commit`` do for a batch of one delta, in fewer steps (a paced
        stream's every token comes here, and each step costs most with the CPU's caches
        cold). Whatever is unusual (another write pending, the lock held elsewhere, a
        statement that fails) takes the general way instead, which finds it again and
        deals with it."""
        assert self._conn is not None and write.delta is not None
        if len(self._pending) != 1 or not self._lock.acquire(blocking=False):
            self.hand_over()
            return
        try:
            event = self._commit_delta(write.delta)
            if event is not None:
                self._pending = []
                self.commits_here += 1
        finally:
            self._lock.release()
        if event is None:
            self.hand_over()  # rolled back: the general way commits it or says why not
            return
        assert self._deliver is not None
        self._deliver([write], [event])

    def _commit_delta(self, delta: PartDeltaProps) -> Event | None:
        """One delta's row inserted and committed (the caller holds the lock): its
        event, or None when that failed (nothing was written). BEGIN and COMMIT are
        statements of their own, which sqlite3 keeps prepared: the BEGIN it issues by
        itself before an INSERT, and the COMMIT of ``with conn``, are parsed anew each
        time, tens of µs more a commit with the CPU's caches cold (bench/log_append.py's
        "implicit BEGIN")."""
        assert self._conn is not None
        seq = self.last_seq + 1
        body, event = logged_event(self.epoch, seq, MessagePartDelta.type, delta)
        started = time.perf_counter()
        conn = self._conn
        try:
            with conn:  # rolls back what a failed statement left open; else nothing to do
                conn.execute("BEGIN")
                conn.execute(ONE_ROW_INSERT, (seq, event.type, body))
                conn.execute("COMMIT")
        except Exception:
            return None
        self.last_seq = seq
        metrics.count_commit(1, 1, time.perf_counter() - started)
        self._note_commit(1, len(event.json))
        return event

    def _hand_over_due(self) -> None:
        """The deltas' timer: their spacing has passed (the loop's clock may fire a timer a
        fraction of a millisecond early, which must not send the group to the thread)."""
        self._due = None
        self._last_delta_commit = 0.0
        self.hand_over()

    def hand_over(self) -> None:
        self._soon = False
        if self._due is not None:
            self._due.cancel()
            self._due = None
        if not self._pending:
            return
        writes, self._pending = self._pending, []
        if self._may_commit_here(writes) and self._lock.acquire(blocking=False):
            try:
                if self._commit_here(writes):
                    return
            finally:
                self._lock.release()
        self._in_thread += len(writes)
        self.cpu.note()
        self._queue.put(writes)

    def _commit_here(self, writes: list[Write]) -> bool:
        """Commit ``writes`` on the loop's thread, which never waits for SQLite's write lock
        (the connection's busy timeout is 0 but for the thread's commits): held by another
        connection (another process), False, and they go to the thread, which waits."""
        assert self._conn is not None
        committed = self._commit(self._conn, writes, here=True)
        self.commits_here += committed
        return committed

    def _commit_waiting(self, conn: Conn, batch: list[Write]) -> None:
        """Commit ``batch`` on the writer's thread, waiting the busy timeout for the lock."""
        if not self._inline:
            self._commit(conn, batch, here=False)
            return
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        try:
            self._commit(conn, batch, here=False)
        finally:
            conn.execute("PRAGMA busy_timeout = 0")

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
        spaced = time.monotonic() - self._last_delta_commit >= self.spacing_s
        return spaced or not _only_deltas(writes)

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
        if self._inline:  # the loop's commits wait for no lock; the thread's, this long
            self._busy_timeout_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
            conn.execute("PRAGMA busy_timeout = 0")
        self._conn = conn
        try:
            stopping = False
            while not stopping:
                batch, stopping = self._next_batch()
                if batch:
                    self.cpu.follow()
                    with self._lock:
                        self._commit_waiting(conn, batch)
                    self._tell_loop()  # once the lock is free: the loop may commit at once
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
        """The first writes, then whatever else arrives until the spacing has passed since
        the last commit of deltas, while the batch holds only deltas (group commit)."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch = first
        spaced = self._last_delta_commit + self.spacing_s
        awaited = not _only_deltas(batch)
        while len(batch) < MAX_BATCH:
            item = self._take(0.0 if awaited else spaced)
            if item is _EMPTY:
                break
            if item is None:
                return batch, True
            more: list[Write] = item  # type: ignore[assignment]
            batch.extend(more)
            awaited = awaited or not _only_deltas(more)
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

    def _note_commit(self, deltas: int, json_chars: int) -> None:
        """A batch committed, with ``deltas`` deltas, its events' JSON this long: about a
        1 KiB WAL page per 1,000 characters (at least one)."""
        self.batches += 1
        if deltas:
            self._last_delta_commit = time.monotonic()
            self.spacing_s = self._spacings[deltas >= LOADED_DELTAS]
        if self.checkpointer is None:
            return
        self._pages_since_checkpoint += 1 + json_chars // 1000
        if self._pages_since_checkpoint >= CHECKPOINT_PAGES:
            self._pages_since_checkpoint = 0
            self.checkpointer.request()

    def _apply(self, conn: Conn, ctx: WriteContext, writes: list[Write]) -> None:
        """The writes in the open transaction, their log rows last."""
        first = len(ctx.events)  # this transaction's events (one by one: several)
        if self._sequencer is not None:
            ctx.last_seq = self._sequencer.begin(conn)
        for write in writes:
            write.apply(ctx)
        if self._sequencer is not None:
            self._sequencer.end(ctx, ctx.events[first:])
        else:
            ctx.insert_rows()

    def _commit(self, conn: Conn, batch: list[Write], *, here: bool) -> bool:
        """Commit ``batch`` on the caller's thread: the loop's own (``here``) or the
        writer's. False only ``here`` when the write lock is held elsewhere: nothing was
        written or told."""
        ctx = WriteContext(conn, self.epoch, self.last_seq)
        started = time.perf_counter()
        try:
            with conn:
                self._apply(conn, ctx, batch)
        except Exception as exc:
            if locked(exc):  # each write alone would wait the busy timeout again
                if here:
                    return False  # the thread takes them, and waits for the lock
                log.error("batch of %d writes failed: %s", len(batch), exc)
                self._finish(
                    WriteContext(conn, self.epoch, self.last_seq),
                    batch,
                    [(write, exc) for write in batch],
                    here=here,
                )
                return True
            log.exception("batch of %d writes failed; retrying one by one", len(batch))
            self._commit_one_by_one(conn, batch, here=here)
            return True
        metrics.count_commit(len(batch), _deltas(batch), time.perf_counter() - started)
        self._finish(ctx, batch, [], here=here)
        return True

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
        self._note_commit(_deltas(batch), sum([len(event.json) for event in ctx.events]))
        assert self._loop is not None and self._deliver is not None
        call = _call_now if here else self._to_tell
        for write, exc in failed:
            if write.future is not None:
                call(_fail, write.future, self._describe(exc))
            elif self._lost is not None:
                call(self._lost, self._describe(exc))
        call(self._deliver if here else self._deliver_from_thread, batch, ctx.events)
        if self._sequencer is not None and ctx.events:  # after: our clients need not wait
            self._sequencer.committed(ctx.events)

    def _to_tell(self, callback: Callable[..., object], *args: object) -> None:
        """On the writer's thread: what the loop is told after this commit."""
        self._told.append((callback, args))

    def _tell_loop(self) -> None:
        assert self._loop is not None
        told, self._told = self._told, []
        for callback, args in told:
            self._loop.call_soon_threadsafe(callback, *args)


def _deltas(batch: list[Write]) -> int:
    return [type(write) for write in batch].count(DeltaAppend)  # no generator step each


def _only_deltas(writes: list[Write]) -> bool:
    return {type(write) for write in writes} <= {DeltaAppend}


def _call_now(callback: Callable[..., object], *args: object) -> None:
    """What follows a commit made on the loop's own thread runs at once."""
    callback(*args)


def locked(exc: BaseException) -> bool:
    """Another connection held SQLite's lock past the busy timeout."""
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _fail(future: asyncio.Future[None], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
