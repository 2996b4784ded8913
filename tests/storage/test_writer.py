"""The writer's multi-row log inserts: every row, in order, whatever the batch size."""

from __future__ import annotations

import sqlite3

import pytest

from partwire import ids
from partwire.schema.event import MessagePartDelta, PartDeltaProps
from partwire.storage.writer import WriteContext


@pytest.mark.parametrize("count", [0, 1, 3, 4, 5, 63, 64, 65, 150])
def test_logged_rows_all_land_in_sequence(count: int) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE event_log (seq INTEGER PRIMARY KEY, type TEXT, payload TEXT)")
    ctx = WriteContext(conn, epoch=7, last_seq=10)
    for n in range(count):
        props = PartDeltaProps(
            session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text", delta=f"w{n} "
        )
        ctx.log(MessagePartDelta(props))
    ctx.insert_rows()
    assert ctx.rows == []
    rows = conn.execute("SELECT seq, payload FROM event_log ORDER BY seq").fetchall()
    assert [seq for seq, _ in rows] == list(range(11, 11 + count))
    assert all(f'"delta":"w{n} "' in payload for n, (_, payload) in enumerate(rows))
    assert [e.id for e in ctx.events] == [ids.logged_event_id(7, s) for s in range(11, 11 + count)]
