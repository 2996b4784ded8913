"""Reading messages and parts, folding in the deltas of parts that are still streaming."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from partwire.schema.message import MessageWithParts, message_adapter
from partwire.schema.part import Part, part_adapter


def load_messages(
    conn: sqlite3.Connection,
    session_id: str,
    message_id: str | None,
    *,
    limit: int | None = None,
    before: str | None = None,
) -> list[MessageWithParts]:
    """One message, or the session's messages in order: the newest ``limit`` before ``before``."""
    if message_id is None:
        messages = conn.execute(
            "SELECT id, data FROM (SELECT id, data FROM message WHERE session_id = ? "
            "AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?) ORDER BY id",
            (session_id, before, before, -1 if limit is None else limit),
        ).fetchall()
        oldest = messages[0][0] if messages else ""
        parts = conn.execute(
            "SELECT id, message_id, data, delta_from FROM part WHERE session_id = ? "
            "AND message_id >= ? ORDER BY message_id, id",
            (session_id, oldest),
        ).fetchall()
    else:
        messages = conn.execute(
            "SELECT id, data FROM message WHERE session_id = ? AND id = ?", (session_id, message_id)
        ).fetchall()
        parts = conn.execute(
            "SELECT id, message_id, data, delta_from FROM part WHERE session_id = ? "
            "AND message_id = ? ORDER BY id",
            (session_id, message_id),
        ).fetchall()
    by_message: dict[str, list[Part]] = {row[0]: [] for row in messages}
    for part_id, owner, data, delta_from in parts:
        if owner in by_message:
            by_message[owner].append(materialize(conn, part_id, data, delta_from))
    return [
        MessageWithParts(info=message_adapter.validate_json(data), parts=by_message[mid])
        for mid, data in messages
    ]


def materialize(conn: sqlite3.Connection, part_id: str, data: str, delta_from: str | None) -> Part:
    """A part row plus the deltas logged after it (only while the part streams)."""
    if delta_from is None:
        return part_adapter.validate_json(data)
    body: dict[str, Any] = json.loads(data)
    for (payload,) in conn.execute(
        "SELECT payload FROM event_log WHERE part_id = ? AND id > ? ORDER BY id",
        (part_id, delta_from),
    ):
        props = json.loads(payload)["properties"]
        body[props["field"]] = body.get(props["field"], "") + props["delta"]
    return part_adapter.validate_python(body)
