"""Reading messages and parts, folding in the deltas of parts that are still streaming."""

from __future__ import annotations

import json
from typing import Any

from partwire.errors import NotFoundError
from partwire.schema.message import MessageWithParts, message_adapter
from partwire.schema.part import Part, part_adapter
from partwire.storage.connection import Conn

# LIMIT for "no limit" that SQLite and Postgres both take (SQLite's -1 is refused by Postgres)
NO_LIMIT = 2**62


def load_messages(
    conn: Conn,
    session_id: str,
    message_id: str | None,
    *,
    limit: int | None = None,
    before: str | None = None,
) -> list[MessageWithParts]:
    """One message, or the session's messages in history order (the order they were first
    stored, never id order): the newest ``limit`` before the message ``before``."""
    if message_id is None:
        bound = None
        if before is not None:
            row = conn.execute(
                "SELECT seq FROM message WHERE session_id = ? AND id = ?", (session_id, before)
            ).fetchone()
            if row is None:
                raise NotFoundError("Message", before)
            bound = row[0]
        rows = conn.execute(
            "SELECT id, data, seq FROM (SELECT id, data, seq FROM message WHERE session_id = ? "
            "AND (CAST(? AS BIGINT) IS NULL OR seq < ?) ORDER BY seq DESC LIMIT ?) AS recent "
            "ORDER BY seq",
            (session_id, bound, bound, NO_LIMIT if limit is None else limit),
        ).fetchall()
        messages = [(mid, data) for mid, data, _ in rows]
        oldest = rows[0][2] if rows else 0
        parts = conn.execute(
            "SELECT p.id, p.message_id, p.data, p.delta_seq FROM part p "
            "JOIN message m ON m.id = p.message_id "
            "WHERE m.session_id = ? AND m.seq >= ? ORDER BY p.seq",
            (session_id, oldest),
        ).fetchall()
    else:
        messages = conn.execute(
            "SELECT id, data FROM message WHERE session_id = ? AND id = ?", (session_id, message_id)
        ).fetchall()
        parts = conn.execute(
            "SELECT id, message_id, data, delta_seq FROM part WHERE session_id = ? "
            "AND message_id = ? ORDER BY seq",
            (session_id, message_id),
        ).fetchall()
    by_message: dict[str, list[Part]] = {row[0]: [] for row in messages}
    for part_id, owner, data, delta_seq in parts:
        if owner in by_message:
            by_message[owner].append(materialize(conn, part_id, data, delta_seq))
    return [
        MessageWithParts(info=message_adapter.validate_json(data), parts=by_message[mid])
        for mid, data in messages
    ]


def materialize(conn: Conn, part_id: str, data: str, delta_seq: int | None) -> Part:
    """A part row plus the deltas logged after it (only while the part streams).

    The log has no index by part (a delta's insert touches one page): this reads the
    log's tail from the row's sequence number on, which the processor's doubling flushes
    keep within about the part's own length plus what other sessions logged meanwhile."""
    if delta_seq is None:
        return part_adapter.validate_json(data)
    body: dict[str, Any] = json.loads(data)
    needle = f'"partID":"{part_id}"'
    for (payload,) in conn.execute(
        "SELECT payload FROM event_log WHERE seq > ? AND type = 'message.part.delta' "
        "AND instr(payload, ?) > 0 ORDER BY seq",
        (delta_seq, needle),
    ):
        props = json.loads(payload)
        if props["partID"] != part_id:
            continue
        body[props["field"]] = body.get(props["field"], "") + props["delta"]
    return part_adapter.validate_python(body)
