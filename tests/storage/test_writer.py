"""The writer: multi-row log inserts (every row, in order, whatever the batch size), and
where a failed write's error goes."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from partwire import ids
from partwire.schema.event import Event, MessagePartDelta, PartDeltaProps
from partwire.storage.writer import DeltaAppend, Write, WriteContext, Writer


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


class _Failing(Write):
    def apply(self, ctx: WriteContext) -> None:
        raise sqlite3.OperationalError("database or disk is full")


async def test_a_failed_write_nobody_awaits_is_reported_to_lost_and_awaited_ones_raise(
    tmp_path: Path,
) -> None:
    """Deltas carry no future: their failure reaches ``lost`` on the loop, with the
    exception ``describe`` made of it; the other writes of the batch still commit."""
    path = tmp_path / "log.sqlite"
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE event_log (seq INTEGER PRIMARY KEY, type TEXT, payload TEXT)")
    setup.close()
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level="DEFERRED")
    loop = asyncio.get_running_loop()
    lost: list[BaseException] = []
    delivered: list[str] = []
    done = asyncio.Event()

    def deliver(batch: list[Write], events: list[Event]) -> None:  # as the stores settle
        delivered.extend(event.type for event in events)
        for write in batch:
            if write.future is not None and not write.future.done():
                write.future.set_result(None)
        done.set()

    writer = Writer(lambda: conn, describe=lambda exc: RuntimeError(f"described: {exc}"))
    writer.start(loop, deliver, epoch=1, last_seq=0, lost=lost.append)
    awaited = Write(future=loop.create_future())
    awaited_failing = _Failing(future=loop.create_future())
    props = PartDeltaProps(
        session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text", delta="w"
    )
    for write in (awaited, _Failing(), DeltaAppend(delta=props), awaited_failing):
        writer.submit(write)
    await asyncio.wait_for(done.wait(), 5)
    await asyncio.sleep(0)  # the failures' callbacks were queued before the delivery's
    writer.hand_over()
    await asyncio.to_thread(writer.stop)
    assert awaited.future is not None and awaited.future.done()
    with pytest.raises(RuntimeError, match="described: database or disk is full"):
        await awaited_failing.future  # type: ignore[misc]
    assert [str(exc) for exc in lost] == ["described: database or disk is full"]
    assert delivered == ["message.part.delta"]
    with sqlite3.connect(path) as check:  # the writer closed its connection
        assert check.execute("SELECT COUNT(*) FROM event_log").fetchone()[0] == 1  # the delta
    check.close()
