"""The writer: multi-row log inserts (every row, in order, whatever the batch size), and
where a failed write's error goes."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from partwire import ids, metrics
from partwire.schema.event import Event, MessagePartDelta, PartDeltaProps
from partwire.storage.postgres import SHARED_SPACING_S
from partwire.storage.writer import (
    COMMIT_SPACING_S,
    LOADED_DELTAS,
    LOADED_SPACING_S,
    Writer,
)
from partwire.storage.writes import DeltaAppend, Write, WriteContext


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


# ---- commits on the loop's own thread -----------------------------------------------------


def _log_db(path: Path) -> sqlite3.Connection:
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE event_log (seq INTEGER PRIMARY KEY, type TEXT, payload TEXT)")
    setup.close()
    return sqlite3.connect(path, check_same_thread=False, isolation_level="DEFERRED")


def _delta(n: int) -> DeltaAppend:
    props = PartDeltaProps(
        session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text", delta=f"w{n} "
    )
    return DeltaAppend(delta=props)


class _Log:
    """What the writer delivered, as a store's ``_deliver`` receives it."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.events: list[Event] = []
        self.arrived = asyncio.Event()

    def deliver(self, batch: list[Write], events: list[Event]) -> None:
        self.ids += [event.id for event in events]
        self.events += events
        for write in batch:
            if write.future is not None and not write.future.done():
                write.future.set_result(None)
        self.arrived.set()

    async def until(self, count: int) -> None:
        while len(self.ids) < count:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 5)


async def _started(path: Path, log: _Log, **options: object) -> Writer:
    """A writer whose thread has connected (it commits one awaited write first)."""
    conn = _log_db(path)
    writer = Writer(lambda: conn, **options)  # type: ignore[arg-type]
    writer.start(asyncio.get_running_loop(), log.deliver, epoch=1, last_seq=0)
    first = Write(future=asyncio.get_running_loop().create_future())
    writer.submit(first)
    assert first.future is not None
    await first.future
    writer.commits_here = 0  # the first went wherever the thread's connection was
    return writer


def _seqs(path: Path) -> list[int]:
    with sqlite3.connect(path) as check:
        rows = [seq for (seq,) in check.execute("SELECT seq FROM event_log ORDER BY seq")]
    check.close()
    return rows


async def test_a_lone_delta_is_committed_and_published_before_submit_returns(
    tmp_path: Path,
) -> None:
    """The writer's thread holds nothing and no delta committed lately: the loop commits
    the delta itself, in the caller's turn (a paced token costs no extra turn of the loop),
    and its event is published as it lands (durable, then visible)."""
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, inline=True)
    writer.submit(_delta(1))
    assert len(log.ids) == 1 and writer.commits_here == 1
    assert _seqs(tmp_path / "log.sqlite") == [1]
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


async def test_deltas_close_together_wait_on_the_loop_for_one_group_commit_in_log_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once deltas come within the spacing of the last commit of deltas, they wait on the
    loop (no hand-over to the thread) and are committed together once the spacing has
    passed; an awaited write takes the waiting deltas with it, ahead of itself."""
    monkeypatch.setattr("partwire.storage.writer.COMMIT_SPACING_S", 0.05)
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, inline=True)
    writer.submit(_delta(1))
    await asyncio.sleep(0)  # committed here: no delta was committed before
    for n in range(2, 4):
        writer.submit(_delta(n))
        await asyncio.sleep(0)
    assert len(log.ids) == 1  # within 50 ms of the first: waiting
    await log.until(3)  # the spacing passed: one commit on the loop for both
    assert writer.commits_here == 2 and writer.batches == 3  # the thread's first, and two
    for n in range(4, 6):
        writer.submit(_delta(n))
    awaited = Write(future=asyncio.get_running_loop().create_future())
    writer.submit(awaited)
    assert awaited.future is not None
    await awaited.future
    assert writer.commits_here == 3  # the awaited write took the deltas along
    assert log.ids == [ids.logged_event_id(1, seq) for seq in range(1, 6)]  # in log order
    assert _seqs(tmp_path / "log.sqlite") == [1, 2, 3, 4, 5]
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


async def test_the_loop_never_waits_for_a_write_lock_held_elsewhere(tmp_path: Path) -> None:
    """Another process holds SQLite's write lock: a commit on the loop's thread fails at
    once (no busy timeout there) and the writes go to the thread, which waits for the lock;
    the loop runs on meanwhile, and the write lands once the lock is let go."""
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, inline=True)
    holder = sqlite3.connect(tmp_path / "log.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    awaited = Write(future=asyncio.get_running_loop().create_future())
    writer.submit(awaited)
    writer.submit(_delta(1))
    started = time.perf_counter()
    await asyncio.sleep(0.2)  # the loop is free: this wakes on time
    assert time.perf_counter() - started < 1.0 and awaited.future is not None
    assert not awaited.future.done() and writer.commits_here == 0
    holder.execute("ROLLBACK")
    holder.close()
    await asyncio.wait_for(awaited.future, 5)
    await log.until(1)
    assert _seqs(tmp_path / "log.sqlite") == [1] and writer.commits_here == 0
    writer.submit(_delta(2))  # the lock is free again: the loop commits
    await log.until(2)
    assert writer.commits_here == 1
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


@pytest.mark.parametrize(
    "spacings", [None, SHARED_SPACING_S], ids=["the default", "a shared log's, given"]
)
async def test_the_spacing_widens_while_commits_carry_many_deltas_and_narrows_after(
    tmp_path: Path, spacings: tuple[float, float] | None
) -> None:
    """A commit of LOADED_DELTAS deltas or more (a busy server) widens the spacing between
    commits of deltas (to LOADED_SPACING_S, or the writer's second spacing); a small one
    brings it back."""
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, spacing_s=spacings)
    narrow, wide = spacings or (COMMIT_SPACING_S, LOADED_SPACING_S)
    assert writer.spacing_s == narrow
    for n in range(LOADED_DELTAS):  # one loop iteration: one hand-over, one commit
        writer.submit(_delta(n))
    await log.until(LOADED_DELTAS)
    assert writer.spacing_s == wide > narrow
    await asyncio.sleep(wide)
    writer.submit(_delta(99))
    await log.until(LOADED_DELTAS + 1)
    assert writer.spacing_s == narrow
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


class _SharedLog:
    """A sequencer as a shared log has one (Postgres): its lock may wait."""

    def begin(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM event_log").fetchone()[0])

    def end(self, ctx: WriteContext, events: list[Event]) -> None:
        ctx.insert_rows()  # the rows not inserted yet are the sequencer's to insert

    def committed(self, events: list[Event]) -> None:
        return None


async def test_a_writer_on_a_shared_log_commits_only_on_its_thread(tmp_path: Path) -> None:
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, inline=True, sequencer=_SharedLog())
    for n in range(3):
        writer.submit(_delta(n))
        await asyncio.sleep(0.01)
    await log.until(3)
    assert writer.commits_here == 0
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


async def test_deltas_due_by_their_timer_commit_on_the_loop_whatever_the_clock_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop may fire a timer a little early (uvloop counts whole milliseconds): deltas
    whose timer fired are due, and are committed on the loop, not handed to the thread."""
    monkeypatch.setattr("partwire.storage.writer.COMMIT_SPACING_S", 0.02)
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, inline=True)
    writer.submit(_delta(1))
    await log.until(1)
    here = writer.commits_here
    stopped = time.monotonic()  # the writer's clock stands still: its timer is "early"
    clock = SimpleNamespace(monotonic=lambda: stopped, perf_counter=time.perf_counter)
    monkeypatch.setattr("partwire.storage.writer.time", clock)
    writer.submit(_delta(2))
    await asyncio.sleep(0)
    assert len(log.ids) == 1  # waiting for the spacing
    await log.until(2)
    assert writer.commits_here == here + 1
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


async def test_a_lone_delta_is_logged_as_a_batch_of_one_would_be(tmp_path: Path) -> None:
    """The loop's short way for a lone delta writes the row, the event and the counts the
    general way writes for it: the payload is the properties' JSON, the event's id is its
    sequence number's, and the commit is counted."""
    log = _Log()
    writer = await _started(tmp_path / "log.sqlite", log, inline=True)
    deltas, batches = metrics.COUNTS.deltas, writer.batches
    write = _delta(1)
    writer.submit(write)
    assert write.delta is not None and writer.commits_here == 1
    ctx = WriteContext(_log_db(tmp_path / "other.sqlite"), 1, 0)
    ctx.log(MessagePartDelta(write.delta))
    assert [(e.id, e.type, e.json) for e in log.events] == [
        (ctx.events[0].id, ctx.events[0].type, ctx.events[0].json)
    ]
    assert log.ids == [ids.logged_event_id(1, 1)] and writer.last_seq == 1
    with sqlite3.connect(tmp_path / "log.sqlite") as check:
        rows = check.execute("SELECT seq, type, payload FROM event_log").fetchall()
    check.close()
    assert rows == [(1, "message.part.delta", write.delta.wire_json())]
    assert metrics.COUNTS.deltas == deltas + 1 and writer.batches == batches + 1
    writer.hand_over()
    await asyncio.to_thread(writer.stop)


async def test_a_lone_delta_the_loop_cannot_commit_goes_the_general_way(tmp_path: Path) -> None:
    """Another process holds SQLite's write lock: the lone delta's commit fails at once on
    the loop and the thread commits it once the lock is free. A delta whose statement
    fails (here a trigger refuses it) is reported to ``lost`` and leaves no gap in the log."""
    path = tmp_path / "log.sqlite"
    conn = _log_db(path)
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON event_log WHEN NEW.payload LIKE '%boom%' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    conn.commit()
    log, lost, reported = _Log(), list[BaseException](), asyncio.Event()

    def report(exc: BaseException) -> None:
        lost.append(exc)
        reported.set()

    writer = Writer(lambda: conn, inline=True)
    writer.start(asyncio.get_running_loop(), log.deliver, epoch=1, last_seq=0, lost=report)
    first = Write(future=asyncio.get_running_loop().create_future())
    writer.submit(first)
    assert first.future is not None
    await first.future
    writer.commits_here = 0
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    writer.submit(_delta(1))
    await asyncio.sleep(0.1)
    assert log.ids == [] and writer.commits_here == 0  # the thread waits for the lock
    holder.execute("ROLLBACK")
    holder.close()
    await log.until(1)
    assert _seqs(path) == [1] and writer.commits_here == 0
    await asyncio.sleep(0.01)  # past the spacing: the next delta is lone again
    props = PartDeltaProps.streamed("ses_1", "msg_1", "prt_1", "boom")
    writer.submit(DeltaAppend(delta=props))
    await asyncio.wait_for(reported.wait(), 5)
    assert "refused" in str(lost[0]) and _seqs(path) == [1]
    await asyncio.sleep(0.01)
    writer.submit(_delta(3))
    await log.until(2)
    assert _seqs(path) == [1, 2] and log.ids[-1] == ids.logged_event_id(1, 2)
    writer.hand_over()
    await asyncio.to_thread(writer.stop)
