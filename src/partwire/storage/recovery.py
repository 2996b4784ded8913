"""Crash recovery, run at open before the writer starts.

Anything a crash left unfinished is brought to a terminal state: streaming parts
get their logged deltas folded in and an end time, open tool parts become
``error`` (their error text is the tool result the model sees, so no tool call is
left without a result), and unfinished assistant messages end with
MessageAbortedError. Asks nobody answered are rejected and sessions that were
working go idle. Each change is logged as the event a live client would have seen,
so a client that resumes with Last-Event-ID converges with nothing special.
"""

from __future__ import annotations

import json

from partwire.clock import now_ms as _now
from partwire.schema.event import (
    Draft,
    MessagePartUpdated,
    MessageUpdated,
    PartUpdatedProps,
    PermissionReplied,
    PermissionRepliedProps,
    QuestionRef,
    QuestionRejected,
    SessionIdle,
    SessionRef,
    SessionStatusChanged,
    SessionStatusProps,
)
from partwire.schema.event import MessageInfo as MessageInfoProps
from partwire.schema.message import (
    RESTART_INTERRUPTED,
    TOOL_RESTART_INTERRUPTED,
    AssistantMessage,
    aborted_error,
    message_adapter,
)
from partwire.schema.part import Part
from partwire.schema.session import StatusIdle
from partwire.storage.connection import Conn
from partwire.storage.migrations import LIFECYCLE
from partwire.storage.reading import materialize
from partwire.storage.writes import Write, WriteContext


def _closed_parts(open_parts: list[Part], now: int) -> dict[str, Part]:
    """The terminal forms of parts a crash left open (part id → part), closed by the
    builder as a live message's are: streaming text gets its end time, an open tool call
    ends in error with a text the model sees as its result."""
    from partwire.builder import StreamingMessageBuilder  # only when a crash left parts open

    by_message: dict[str, list[Part]] = {}
    for part in open_parts:
        by_message.setdefault(part.message_id, []).append(part)
    closed: dict[str, Part] = {}
    for message_id, parts in by_message.items():
        builder = StreamingMessageBuilder.resume(message_id, parts, clock=lambda: now)
        for frame in builder.close_open(TOOL_RESTART_INTERRUPTED):
            if frame.type == "part_complete":
                closed[frame.part.id] = frame.part
    return closed


def recover(conn: Conn, epoch: int, last_seq: int) -> int:
    """Finish what a crash interrupted; returns the newest event's sequence number after."""
    ctx = WriteContext(conn, epoch, last_seq)
    with conn:
        recover_into(ctx)
    return ctx.last_seq


def recover_into(
    ctx: WriteContext, only: str | None = None, skip: frozenset[str] = frozenset()
) -> None:
    """Recovery's changes in ``ctx``'s open transaction: for every session, or ``only``
    one, never those in ``skip`` (sessions another server is running)."""

    def wanted(session_id: str) -> bool:
        return (only is None or session_id == only) and session_id not in skip

    conn, now = ctx.conn, _now()
    rows = conn.execute(
        "SELECT id, data, delta_seq, session_id FROM part WHERE delta_seq IS NOT NULL "
        'OR data LIKE \'%"status":"pending"%\' OR data LIKE \'%"status":"running"%\''
    ).fetchall()
    found = [
        materialize(conn, part_id, data, delta_seq)
        for part_id, data, delta_seq, session_id in rows
        if wanted(session_id)
    ]
    closed = _closed_parts(found, now)
    for part in found:
        ended = closed.get(part.id, part)
        conn.execute(
            "UPDATE part SET data = ?, delta_seq = NULL WHERE id = ?",
            (ended.wire_json(), part.id),
        )
        if ended is not part:
            ctx.log(
                MessagePartUpdated(
                    PartUpdatedProps(session_id=ended.session_id, part=ended, time=now)
                )
            )
    for message_id, data, session_id in conn.execute(
        'SELECT id, data, session_id FROM message WHERE data LIKE \'%"role":"assistant"%\' '
        "AND data NOT LIKE '%\"completed\":%'"
    ).fetchall():
        if not wanted(session_id):
            continue
        message = message_adapter.validate_json(data)
        if not isinstance(message, AssistantMessage) or message.time.completed is not None:
            continue
        finished = message.model_copy(
            update={
                "error": aborted_error(RESTART_INTERRUPTED),
                "time": message.time.model_copy(update={"completed": now}),
            }
        )
        conn.execute("UPDATE message SET data = ? WHERE id = ?", (finished.wire_json(), message_id))
        ctx.log(MessageUpdated(MessageInfoProps(session_id=finished.session_id, info=finished)))
    ctx.insert_rows()  # the closers read the log
    for draft in _lifecycle_closers(conn):
        if draft.session_id is None or wanted(draft.session_id):
            ctx.log(draft)
    ctx.insert_rows()


class SessionRecovery(Write):
    """Recovery of one session, as a write: another server that ran it is gone (its lease
    expired), and this one finishes what it left, as a restart would."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    def apply(self, ctx: WriteContext) -> None:
        recover_into(ctx, only=self.session_id)


Row = tuple[int, str, str]  # seq, type, payload
OPEN_LIFECYCLE_SQL = f"SELECT seq, type, payload FROM event_log WHERE {LIFECYCLE} ORDER BY seq"


def open_lifecycle(conn: Conn) -> tuple[dict[str, Row], dict[str, Row]]:
    """What the log shows still open: each ask not yet answered (request id → its asked
    row) and each session's status that is not idle (session id → its status row)."""
    asks: dict[str, Row] = {}
    working: dict[str, Row] = {}
    rows = conn.execute(OPEN_LIFECYCLE_SQL).fetchall()
    for seq, kind, payload in rows:
        props = json.loads(payload)
        if kind == "session.status":
            if props["status"]["type"] == "idle":
                working.pop(props["sessionID"], None)
            else:
                working[props["sessionID"]] = (seq, kind, payload)
        elif kind in ("permission.asked", "question.asked"):
            asks[props["id"]] = (seq, kind, payload)
        else:
            asks.pop(props["requestID"], None)
    return asks, working


def _lifecycle_closers(conn: Conn) -> list[Draft]:
    """Reject the asks nobody answered and idle the sessions that were working."""
    asks, working = open_lifecycle(conn)
    closers: list[Draft] = []
    for _, kind, payload in asks.values():
        props = json.loads(payload)
        if kind == "permission.asked":
            reply = PermissionRepliedProps(
                session_id=props["sessionID"], request_id=props["id"], reply="reject"
            )
            closers.append(PermissionReplied(reply))
        else:
            ref = QuestionRef(session_id=props["sessionID"], request_id=props["id"])
            closers.append(QuestionRejected(ref))
    for session_id in working:
        props_ = SessionStatusProps(session_id=session_id, status=StatusIdle())
        closers.append(SessionStatusChanged(props_))
        closers.append(SessionIdle(SessionRef(session_id=session_id)))
    return closers
