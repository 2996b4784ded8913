"""The writes the writer applies, one transaction a batch: each says which rows it
touches and logs the events that tell of it (storage/writer.py runs them)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from partwire import ids
from partwire.schema.base import Tokens, WireModel
from partwire.schema.event import (
    Draft,
    Event,
    MessagePartDelta,
    PartDeltaProps,
    SessionInfo,
    SessionUpdated,
    event_json,
)
from partwire.schema.message import Message, MessageWithParts
from partwire.schema.part import Part
from partwire.schema.session import Session
from partwire.storage.connection import Conn

# Log rows go in with multi-row INSERTs of these sizes (largest first). Each statement is
# one step, and Python's sqlite3 lets go of the GIL at every step: a row at a time, a
# batch of 100 deltas handed the GIL to the loop's thread and back 100 times. A few fixed
# sizes keep the statements in sqlite3's cache.
_ROW_CHUNKS = (64, 16, 4, 1)
_INSERT = {
    n: "INSERT INTO event_log (seq, type, payload) VALUES " + ",".join(["(?,?,?)"] * n)
    for n in _ROW_CHUNKS
}
ONE_ROW_INSERT = _INSERT[1]

# The log's retention is kept by prunes of at most this many of its oldest rows (a few ms
# of SQLite's work on a small VM, about 0.6 µs a row): deltas committed with a prune wait
# for it. One prune of everything past the retention, every 500 commits, held a loaded
# server's commit for about 100 ms (125,000 rows) every five seconds.
PRUNE_MOST_ROWS = 8_000
# A prune follows every this many events logged (storage/sqlite.py counts them), so the
# log is pruned as fast as it grows, a little at a time.
PRUNE_EVERY_EVENTS = 2_000
# the log's oldest and newest seq, in two subqueries: SQLite reads a MIN or a MAX off the
# index only when it is alone in its query
LOG_BOUNDS_SQL = "SELECT (SELECT MIN(seq) FROM event_log), (SELECT MAX(seq) FROM event_log)"
# the oldest delta a streaming part's row still needs; the condition lets the partial
# index part_streaming (migration 9) serve it
STREAMING_FLOOR_SQL = "SELECT MIN(delta_seq) FROM part WHERE delta_seq IS NOT NULL"


def logged_event(epoch: int, seq: int, event_type: str, properties: WireModel) -> tuple[str, Event]:
    """The event logged as the log's row ``seq`` (its id is that sequence number's), and
    the row's payload: the properties' JSON."""
    event_id = ids.logged_event_id(epoch, seq)
    body = properties.wire_json()
    return body, Event(event_id, event_type, properties, event_json(event_id, event_type, body))


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
        body, event = logged_event(self.epoch, seq, draft.type, draft.properties)
        self.rows += (seq, draft.type, body)
        self.last_seq = seq
        self.events.append(event)

    def insert_rows(self, notices: Sequence[tuple[str, str]] = ()) -> None:
        """The rows logged since the last call; on Postgres in one statement, which also
        sends ``notices`` (channel, payload: NOTIFY's, delivered at commit)."""
        rows, start = self.rows, 0
        self.rows, end = [], len(rows)
        in_one = getattr(self.conn, "insert_log_rows", None)  # Postgres: one round trip
        if in_one is not None:
            if rows or notices:
                in_one(rows, notices)
            return
        assert not notices, "NOTIFY is Postgres'"
        for size in _ROW_CHUNKS:
            width = size * 3
            while end - start >= width:
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


def _with_owned(conn: Conn, session: Session, sets_budget: bool) -> Session:
    """``session`` with what only dedicated writes change kept as its stored row holds
    it: the spend (``SpendAdd``) and, unless this write sets it, ``metadata.budget``. A
    session read before an answer completed, or before a budget ask was answered, never
    writes an older total or budget back."""
    row = conn.execute("SELECT data FROM session WHERE id = ?", (session.id,)).fetchone()
    if row is None:
        return session
    stored = Session.model_validate_json(row[0])
    update: dict[str, object] = {"cost": stored.cost, "tokens": stored.tokens}
    if not sets_budget:
        metadata = {k: v for k, v in (session.metadata or {}).items() if k != "budget"}
        if stored.metadata and "budget" in stored.metadata:
            metadata["budget"] = stored.metadata["budget"]
        update["metadata"] = metadata if metadata or session.metadata is not None else None
    return session.model_copy(update=update)


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
    sets_budget: bool = False  # this write decides metadata.budget (else the row's stays)
    owner: str | None = None  # a new session's owning user (partwire/access.py)

    def apply_rows(self, ctx: WriteContext) -> None:
        assert self.session is not None
        if not self.new:
            self.session = _with_owned(ctx.conn, self.session, self.sets_budget)
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
        if self.new and self.owner is not None:
            ctx.conn.execute(
                "INSERT INTO session_grant (session_id, user_name, role) VALUES (?, ?, 'owner')",
                (self.session.id, self.owner),
            )


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
        for table in ("todo", "prompt_no_reply", "session_grant"):
            ctx.conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (self.session_id,))
        for table in ("part", "message"):
            ctx.conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (self.session_id,))
        ctx.conn.execute("DELETE FROM session WHERE id = ?", (self.session_id,))


@dataclass
class RowsChange(Write):
    """A change of rows no other write knows (users, tokens, grants), with the events it
    logs; ``result`` is what ``change`` returned."""

    change: Callable[[Conn], object] | None = None
    result: object = None

    def apply_rows(self, ctx: WriteContext) -> None:
        assert self.change is not None
        self.result = self.change(ctx.conn)


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


@dataclass
class EventPrune(Write):
    """Drop the oldest events beyond the retention count, at most ``most`` of them, never
    a streaming part's deltas. It commits with whatever deltas wait, so its size is their
    wait: a log far past the retention is worked off over several prunes."""

    retain: int = 0
    most: int = PRUNE_MOST_ROWS

    def apply(self, ctx: WriteContext) -> None:
        conn = ctx.conn
        ctx.insert_rows()  # this batch's rows so far count too
        oldest, newest = conn.execute(LOG_BOUNDS_SQL).fetchone()
        if newest is None or newest <= self.retain:
            return
        cutoff = min(newest - self.retain, oldest + self.most)
        floor = conn.execute(STREAMING_FLOOR_SQL).fetchone()[0]
        if floor is not None:  # a streaming part's row needs the deltas logged after it
            cutoff = min(cutoff, floor + 1)
        if cutoff <= oldest:
            return
        deleted = conn.execute("DELETE FROM event_log WHERE seq < ?", (cutoff,)).rowcount
        if deleted:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('pruned', '1') "
                "ON CONFLICT (key) DO NOTHING"  # set once: a prune every 2,000 events
            )
