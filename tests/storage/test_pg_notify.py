"""The shared log's notifications: a commit's rows travel in its NOTIFY when they fit, and
a tail hands them on only where they follow what it handed on last (else it reads the
table)."""

from __future__ import annotations

import asyncio
import threading

from partwire import ids
from partwire.bus import Bus
from partwire.schema.event import (
    Event,
    MessagePartDelta,
    PartDeltaProps,
    SessionIdle,
    SessionRef,
)
from partwire.storage.pg_connection import connect
from partwire.storage.pg_notify import (
    CHANNEL,
    COMMANDS,
    NOTIFY_PAYLOAD_BYTES,
    NotifyTail,
    Row,
    notices_of,
    rows_of,
)
from partwire.storage.postgres import PostgresStore
from partwire.storage.writes import WriteContext
from tests.postgres_server import PostgresServer
from tests.storage.test_sqlite import _session


def _logged(texts: list[str], last_seq: int = 0) -> list[Event]:
    ctx = WriteContext(conn=None, epoch=3, last_seq=last_seq)  # type: ignore[arg-type]
    for text in texts:
        props = PartDeltaProps(
            session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text", delta=text
        )
        ctx.log(MessagePartDelta(props))
    return ctx.events


def test_a_commits_rows_make_a_notice_and_come_back_from_it_whole() -> None:
    events = _logged(["one ", "two\nlines ", 'a "quote" and ünïcode '], last_seq=41)
    notices = notices_of(events, 44)
    assert len(notices) == 1
    rows = rows_of(notices[0])
    assert [seq for seq, _, _ in rows] == [42, 43, 44]
    assert {kind for _, kind, _ in rows} == {"message.part.delta"}
    assert [row[2] for row in rows] == [event.properties_json for event in events]


def test_a_commit_too_large_for_one_notice_is_split_in_order() -> None:
    """A loaded server's group commit: many deltas, more bytes than one payload holds."""
    texts = [f"word {n} " * 10 for n in range(120)]
    events = _logged(texts, last_seq=99)
    notices = notices_of(events, 219)
    assert len(notices) > 1
    assert all(0 < len(n.encode()) < NOTIFY_PAYLOAD_BYTES for n in notices)
    rows = [row for notice in notices for row in rows_of(notice)]
    assert [seq for seq, _, _ in rows] == list(range(100, 220))
    assert [row[2] for row in rows] == [event.properties_json for event in events]


def test_rows_too_large_for_a_notification_make_an_empty_one() -> None:
    events = _logged(["é" * (NOTIFY_PAYLOAD_BYTES // 2)])  # fewer characters than bytes
    assert len(events[0].properties_json) < NOTIFY_PAYLOAD_BYTES
    assert notices_of(events, 1) == [""]
    assert notices_of([], 5) == []
    # a row too large between two that fit: the empty notice stands in its place, and
    # the tail that gets it reads the table (from before it, so nothing is skipped)
    events = _logged(["a", "é" * NOTIFY_PAYLOAD_BYTES, "é" * NOTIFY_PAYLOAD_BYTES, "b"], 10)
    notices = notices_of(events, 14)
    assert [rows_of(n) and [r[0] for r in rows_of(n)] for n in notices] == [[11], [], [14]]


def test_a_notice_that_holds_no_rows_gives_none() -> None:
    for notice in ["", "hello", "12 message.part.delta", "x type {}", '7 t {"a":1}\nbad']:
        assert rows_of(notice) == []


def _tail(after: int) -> tuple[NotifyTail, list[list[Row]]]:
    handed: list[list[Row]] = []
    return NotifyTail("postgresql://unused", after, handed.append, lambda _: None), handed


def test_a_tail_hands_on_rows_that_follow_its_last_and_refuses_a_gap() -> None:
    tail, handed = _tail(after=10)
    assert tail._take([(11, "t", "{}"), (12, "t", "{}")])
    assert tail.after == 12 and handed == [[(11, "t", "{}"), (12, "t", "{}")]]
    assert not tail._take([(14, "t", "{}")])  # 13 is missing: read the table
    assert not tail._take([])  # a notification without rows: read the table
    assert tail._take([(12, "t", "{}")])  # read already (the table was read since)
    assert tail._take([(12, "t", "{}"), (13, "t", "{}")])  # only what is new
    assert tail.after == 13 and handed[-1] == [(13, "t", "{}")] and len(handed) == 2


async def test_a_commit_notifies_its_rows_to_every_listener(postgres: PostgresServer) -> None:
    """A commit's rows reach a listener in its notification (no tail reads them back); a
    commit that logged nothing notifies nobody."""
    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    listener = await asyncio.to_thread(connect, url, autocommit=True)

    def notified() -> list[str]:
        return [n.payload for n in listener.raw.notifies(timeout=0.5, stop_after=1)]

    try:
        await asyncio.to_thread(listener.execute, f"LISTEN {CHANNEL}")
        seen = store.bus.subscribe_all()
        await store.put_session(_session("ses_n"), [])  # no event logged
        assert await asyncio.to_thread(notified) == []
        await store.publish([SessionIdle(SessionRef(sessionID="ses_n"))])
        payloads = await asyncio.to_thread(notified)
        rows = rows_of(payloads[0]) if payloads else []
        published = seen.drain()
        assert [e.type for e in published] == ["session.idle"]
        assert [ids.logged_event_id(store.epoch, row[0]) for row in rows] == [published[0].id]
        assert rows[0][1:] == ("session.idle", published[0].properties_json)
        # one commit too large for a payload: several, delivered in order, nothing missing
        await store.publish([SessionIdle(SessionRef(sessionID=f"ses_{n}")) for n in range(400)])
        payloads = await asyncio.to_thread(
            lambda: [n.payload for n in listener.raw.notifies(timeout=0.5)]
        )
        rows = [row for payload in payloads for row in rows_of(payload)]
        assert len(payloads) > 1
        assert [row[0] for row in rows] == list(range(rows[0][0], rows[0][0] + 400))
        assert [row[2] for row in rows] == [e.properties_json for e in seen.drain()]
    finally:
        listener.close()
        await store.close()


async def _following(url: str, after: int) -> tuple[NotifyTail, list[object]]:
    """A tail on a database, noting what it hands on and obeys in one trace, in order."""
    trace: list[object] = []

    def obey(payload: str) -> None:
        if payload == "bad":
            raise ValueError("not a command")
        trace.append(f"do {payload}")

    tail = NotifyTail(url, after, trace.append, obey)
    tail.start()
    return tail, trace


async def _until(trace: list[object], length: int) -> None:
    for _ in range(200):
        if len(trace) >= length:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the tail handed on {trace}")


async def test_a_tail_follows_on_the_event_loop_in_the_order_notified(
    postgres: PostgresServer,
) -> None:
    """No thread wakes for a notification: the loop reads the LISTEN socket itself, and
    hands rows on and obeys commands in the order they were notified. A command that
    cannot be obeyed is logged and passed over."""
    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    sender = await asyncio.to_thread(connect, url, autocommit=True)
    tail, trace = await _following(url, store._published)
    try:
        await asyncio.sleep(0.2)  # listening
        assert "partwire-tail" not in {t.name for t in threading.enumerate()}
        await store.publish([SessionIdle(SessionRef(sessionID="ses_1"))])
        await asyncio.to_thread(sender.execute, "SELECT pg_notify(?, 'bad')", (COMMANDS,))
        await asyncio.to_thread(sender.execute, "SELECT pg_notify(?, ?)", (COMMANDS, "one"))
        await store.publish([SessionIdle(SessionRef(sessionID=f"ses_{n}")) for n in (2, 3)])
        await _until(trace, 3)
        seq = store._published
        assert trace[1] == "do one"
        assert [[row[0] for row in rows] for rows in trace[::2]] == [[seq - 2], [seq - 1, seq]]
        assert tail.after == seq
    finally:
        await tail.close()
        sender.close()
        await store.close()


async def test_what_is_notified_while_the_tail_reads_the_table_waits_its_turn(
    postgres: PostgresServer,
) -> None:
    """A commit that notifies no rows sends the tail to the table; a command notified
    after it is obeyed only once the table's rows are handed on."""
    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    await store.publish([SessionIdle(SessionRef(sessionID="ses_1"))])
    sender = await asyncio.to_thread(connect, url, autocommit=True)
    tail, trace = await _following(url, store._published)
    try:
        await asyncio.sleep(0.2)
        seq = store._published + 1

        def commit_unannounced_row() -> None:
            with sender.raw.transaction():
                sender.execute(
                    "INSERT INTO event_log (seq, type, payload) VALUES (?, ?, ?)",
                    (seq, "session.idle", '{"sessionID":"ses_2"}'),
                )
                sender.execute("SELECT pg_notify(?, ''), pg_notify(?, 'next')", (CHANNEL, COMMANDS))

        await asyncio.to_thread(commit_unannounced_row)
        await _until(trace, 2)
        assert trace == [[(seq, "session.idle", '{"sessionID":"ses_2"}')], "do next"]
        # rows that skip one it has not seen: refused, the table read (which has none)
        await asyncio.to_thread(
            sender.execute, "SELECT pg_notify(?, ?)", (CHANNEL, f"{seq + 2} t {{}}")
        )
        await asyncio.to_thread(sender.execute, "SELECT pg_notify(?, 'last')", (COMMANDS,))
        await _until(trace, 3)
        assert trace[2] == "do last" and tail.after == seq
    finally:
        await tail.close()
        sender.close()
        await store.close()
