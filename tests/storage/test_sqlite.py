"""The store, SQLite and Postgres alike: group commit, durable-before-visible, streaming
reads, the log, migrations."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest

from partwire.errors import IdConflictError, NotFoundError
from partwire.schema.base import Tokens
from partwire.schema.event import (
    MessageInfo,
    MessageUpdated,
    PartDeltaProps,
    SessionCreated,
    SessionIdle,
    SessionInfo,
    SessionRef,
    SessionUpdated,
)
from partwire.schema.message import AssistantMessage, AssistantTime, MessagePath
from partwire.schema.part import StreamTime, TextPart
from partwire.schema.session import Session, SessionTime
from partwire.session.writer import message_event, part_event
from partwire.storage.base import EventLogGap
from partwire.storage.pg_notify import hand_rows_after
from partwire.storage.postgres import PostgresStore
from partwire.storage.sqlite import SHORT_HISTORY_PARTS, SqliteStore
from partwire.storage.writer import LOADED_SPACING_S
from tests.storage.conftest import MakeStore, independent_read, independent_write
from tests.storage.streaming import append


def _session(sid: str = "ses_1") -> Session:
    return Session(
        id=sid,
        slug="s",
        projectID="p",
        directory="/p",
        title="t",
        version="0",
        time=SessionTime(created=1, updated=1),
    )


def _assistant(mid: str = "msg_2") -> AssistantMessage:
    return AssistantMessage(
        id=mid,
        sessionID="ses_1",
        time=AssistantTime(created=1),
        parentID="msg_1",
        modelID="m",
        providerID="p",
        mode="build",
        agent="build",
        path=MessagePath(cwd="/p", root="/p"),
    )


def _text(pid: str = "prt_1", text: str = "") -> TextPart:
    return TextPart(
        id=pid, sessionID="ses_1", messageID="msg_2", text=text, time=StreamTime(start=1)
    )


def _delta(text: str, pid: str = "prt_1") -> PartDeltaProps:
    return PartDeltaProps(
        sessionID="ses_1", messageID="msg_2", partID=pid, field="text", delta=text
    )


@pytest.fixture
async def store(make_store: MakeStore) -> SqliteStore:
    s = make_store()
    await s.open()
    yield s  # type: ignore[misc]
    await s.close()


async def test_events_are_published_only_after_their_rows_commit(store: SqliteStore) -> None:
    sub = store.bus.subscribe_all()
    session = _session()
    task = asyncio.create_task(
        store.put_session(session, [SessionCreated(SessionInfo(sessionID="ses_1", info=session))])
    )
    event = await asyncio.wait_for(sub.get(), 5)
    assert event is not None and event.type == "session.created"
    # The moment the event is visible, an independent connection sees the row.
    assert independent_read(store, "SELECT COUNT(*) FROM session") == (1,)
    await task


async def test_writes_are_group_committed(store: SqliteStore) -> None:
    await store.put_session(_session(), [])
    await store.put_message(_assistant(), [])
    await store.put_part(_text(), [], streaming=True)
    before = store._writer.batches
    for i in range(2_000):
        await append(store, _delta(f"w{i} "))
    await store.publish([SessionIdle(SessionRef(sessionID="ses_1"))])
    batches = store._writer.batches - before
    assert batches < 200, f"{batches} commits for 2,001 writes"


async def test_a_delta_returns_at_once_and_only_a_writer_far_behind_makes_it_wait(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("partwire.storage.sqlite.BACKLOG_HIGH_WATER", 4)
    sub = store.bus.subscribe("message.part.delta")
    await store.put_session(_session(), [])
    await store.put_part(_text(), [], streaming=True)
    returned = [store.append_delta(_delta(str(i))) for i in range(8)]  # in one turn
    waits = [i for i, waiting in enumerate(returned) if waiting is not None]
    assert waits and waits[0] >= 4  # only once four wait for their commit
    for waiting in returned:
        if waiting is not None:
            await waiting
    assert [e.properties.delta for e in sub.drain()] == [str(i) for i in range(8)]  # type: ignore[attr-defined]


async def test_a_loaded_group_commits_deltas_wait_for_nothing(store: SqliteStore) -> None:
    """The deltas of one loaded group commit (500 sessions at 100 tokens/s over the
    loaded spacing) queue without making their producers wait: a wait wakes the
    producer's task, and at 256 a loaded server crossed the high-water mark every commit."""
    await store.put_session(_session(), [])
    await store.put_part(_text(), [], streaming=True)
    group = int(500 * 100 * LOADED_SPACING_S)
    returned = [store.append_delta(_delta(str(i))) for i in range(group)]  # in one turn
    assert group == 500 and all(waiting is None for waiting in returned)
    await store.publish([SessionIdle(SessionRef(sessionID="ses_1"))])


async def test_event_ids_strictly_increase_in_publish_order(store: SqliteStore) -> None:
    sub = store.bus.subscribe_all()
    await store.put_session(_session(), [])
    await store.put_part(_text(), [], streaming=True)
    for i in range(500):
        await append(store, _delta(str(i)))
    await store.publish([SessionIdle(SessionRef(sessionID="ses_1"))])
    seen = [e.id for e in sub.drain()]
    assert len(seen) == 501
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


async def test_a_streaming_part_reads_as_row_plus_logged_deltas(store: SqliteStore) -> None:
    await store.put_session(_session(), [])
    await store.put_message(_assistant(), [])
    await store.put_part(_text(), [], streaming=True)
    for word in ["a ", "b ", "c"]:
        await append(store, _delta(word))
    await store.publish([])
    [entry] = await store.list_messages("ses_1")
    assert entry.parts[0].text == "a b c"  # type: ignore[union-attr]
    # the row itself was not rewritten per delta
    row = independent_read(store, "SELECT data, delta_seq FROM part")
    assert '"text":""' in row[0] and row[1] is not None
    # a mid-stream flush moves the row forward; later deltas still fold in
    await store.put_part(_text(text="a b c"), [], streaming=True)
    await append(store, _delta(" d"))
    await store.publish([])
    [entry] = await store.list_messages("ses_1")
    assert entry.parts[0].text == "a b c d"  # type: ignore[union-attr]


async def test_a_batch_is_one_commit_and_lands_whole_or_not_at_all(store: SqliteStore) -> None:
    sub = store.bus.subscribe_all()
    await store.put_session(_session(), [])
    before = store._writer.batches
    batch = store.batch()
    batch.put_message(_assistant(), [message_event(_assistant())])
    batch.put_part(_text(text="hi"), [part_event(_text(text="hi"))])
    batch.put_session(_session(), [SessionUpdated(SessionInfo(sessionID="ses_1", info=_session()))])
    batch.add_spend("ses_1", Tokens(input=3, output=2), 0.5)
    await batch.commit()
    assert store._writer.batches - before == 1
    kinds = [event.type for event in sub.drain()]
    # each row's events in the order the rows were added; the spend tells of the session
    assert kinds == [
        "message.updated",
        "message.part.updated",
        "session.updated",
        "session.updated",
    ]
    assert (await store.get_session("ses_1")).cost == 0.5
    # a row whose id another session's message holds: none of the batch is written
    await store.put_session(_session("ses_2"), [])
    taken = _assistant().model_copy(update={"session_id": "ses_2"})
    batch = store.batch()
    batch.put_part(_text("prt_9", "lost"), [])
    batch.put_message(taken, [])
    with pytest.raises(IdConflictError):
        await batch.commit()
    assert independent_read(store, "SELECT COUNT(*) FROM part WHERE id = 'prt_9'") == (0,)
    assert sub.drain() == []
    await batch.commit()  # emptied: commits nothing


async def test_a_short_history_is_read_without_a_thread_a_long_one_with(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.put_session(_session(), [])
    await store.put_message(_assistant(), [])
    for index in range(SHORT_HISTORY_PARTS):
        await store.put_part(_text(f"prt_{index:03}", str(index)), [])
    threaded: list[object] = []
    read = store._readers.read

    async def counted(query: Any) -> Any:
        threaded.append(query)
        return await read(query)

    monkeypatch.setattr(store._readers, "read", counted)
    [short] = await store.list_messages("ses_1")
    on_loop = isinstance(store, PostgresStore) or not threaded
    assert len(short.parts) == SHORT_HISTORY_PARTS and on_loop
    await store.put_part(_text("prt_999", "one more"), [])
    threaded.clear()
    [long] = await store.list_messages("ses_1")
    assert len(long.parts) == SHORT_HISTORY_PARTS + 1 and threaded
    assert long.parts[-1].text == "one more"  # type: ignore[union-attr]


async def test_missing_ids_raise_not_found(store: SqliteStore) -> None:
    with pytest.raises(NotFoundError, match="Session not found: ses_x"):
        await store.get_session("ses_x")
    with pytest.raises(NotFoundError, match="Message not found"):
        await store.get_message("ses_x", "msg_x")


async def test_events_after_replays_in_order_and_reports_a_gap(make_store: MakeStore) -> None:
    store = make_store(retain_events=10)
    await store.open()
    try:
        sub = store.bus.subscribe_all()
        for n in range(30):
            await store.publish([SessionIdle(SessionRef(sessionID=f"ses_{n}"))])
        published = [e.id for e in sub.drain()]
        replay = await store.events_after(published[24])
        assert [e.id for e in replay] == published[25:]
        from partwire.storage.writes import EventPrune

        await store._submit(EventPrune(retain=10))
        with pytest.raises(EventLogGap):
            await store.events_after(published[2])
        assert [e.id for e in await store.events_after(published[-3])] == published[-2:]
    finally:
        await store.close()


async def test_session_delete_removes_rows_and_logs_event(store: SqliteStore) -> None:
    session = _session()
    await store.put_session(session, [])
    await store.put_message(
        _assistant(), [MessageUpdated(MessageInfo(sessionID="ses_1", info=_assistant()))]
    )
    await store.put_part(_text(text="x"), [])
    marks = [("msg_kept", "ses_1"), ("msg_other", "ses_2")]  # noReply marks (shared servers)
    independent_write(
        store, "INSERT INTO prompt_no_reply (message_id, session_id) VALUES (?, ?)", marks
    )
    await store.delete_session("ses_1", [])
    assert await store.list_sessions() == []
    assert await store.list_messages("ses_1") == []
    sql = "SELECT message_id FROM prompt_no_reply"
    assert [tuple(r) for r in independent_read(store, sql, every=True)] == [("msg_other",)]


async def test_migrations_run_once_and_are_recorded(make_store: MakeStore) -> None:
    for _ in range(2):
        store = make_store()
        await store.open()
        await store.close()
    sql = "SELECT version, name FROM schema_version ORDER BY version"
    versions = [tuple(row) for row in independent_read(store, sql, every=True)]
    assert versions == [
        (1, "initial"),
        (2, "todo"),
        (3, "sequence"),
        (4, "event ids from sequence"),
        (5, "sessions shared by servers"),
        (6, "server commands"),
        (7, "users and access"),
        (8, "lifecycle index without an IN list"),
        (9, "streaming parts index"),
    ]
    if not isinstance(store, PostgresStore):
        with sqlite3.connect(store.path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_page_of_messages_reads_only_its_own_rows(store: SqliteStore) -> None:
    await store.put_session(_session(), [])
    for n in range(1, 6):
        await store.put_message(_assistant(f"msg_{n}"), [])
        part = _text(f"prt_{n}", f"text {n}").model_copy(update={"message_id": f"msg_{n}"})
        await store.put_part(part, [])
    newest, _ = await store.snapshot_messages("ses_1", limit=2)
    assert [m.info.id for m in newest] == ["msg_4", "msg_5"]
    assert [[p.text for p in m.parts] for m in newest] == [["text 4"], ["text 5"]]  # type: ignore[union-attr]
    earlier, _ = await store.snapshot_messages("ses_1", limit=2, before="msg_4")
    assert [m.info.id for m in earlier] == ["msg_2", "msg_3"]
    everything, _ = await store.snapshot_messages("ses_1")
    assert len(everything) == 5


async def test_spend_adds_up_in_the_store_and_a_stale_session_never_undoes_it(
    store: SqliteStore,
) -> None:
    stale = _session()
    await store.create_session(stale, [SessionCreated(SessionInfo(sessionID="ses_1", info=stale))])
    usage = Tokens(input=10, output=5, reasoning=2, cache=Tokens.Cache(read=3, write=1))
    await asyncio.gather(*(store.add_spend("ses_1", usage, 0.25) for _ in range(4)))
    sub = store.bus.subscribe_all()
    renamed = stale.model_copy(update={"title": "renamed"})  # read before the answers
    await store.put_session(renamed, [SessionUpdated(SessionInfo(sessionID="ses_1", info=renamed))])
    stored = await store.get_session("ses_1")
    assert stored.title == "renamed" and stored.cost == 1.0
    assert stored.tokens == Tokens(
        input=40, output=20, reasoning=8, cache=Tokens.Cache(read=12, write=4)
    )
    told = await asyncio.wait_for(sub.get(), 5)
    assert told is not None and told.type == "session.updated"
    assert isinstance(told.properties, SessionInfo) and told.properties.info == stored
    await store.add_spend("ses_gone", usage, 1.0)  # a deleted session's answer: nothing


async def test_a_stale_session_write_never_undoes_its_budget(store: SqliteStore) -> None:
    first = _session().model_copy(update={"metadata": {"budget": {"tokens": 40}, "team": "a"}})
    await store.create_session(first, [SessionCreated(SessionInfo(sessionID="ses_1", info=first))])
    stale = await store.get_session("ses_1")
    granted = stale.model_copy(update={"metadata": {"budget": {"tokens": 40, "granted": 1}}})
    await store.put_session(granted, [], sets_budget=True)
    renamed = stale.model_copy(update={"title": "renamed", "metadata": {"team": "b"}})
    await store.put_session(renamed, [])
    stored = await store.get_session("ses_1")
    assert stored.title == "renamed"
    assert stored.metadata == {"team": "b", "budget": {"tokens": 40, "granted": 1}}
    dropped = stored.model_copy(update={"metadata": {"team": "b"}})
    await store.put_session(dropped, [], sets_budget=True)
    assert (await store.get_session("ses_1")).metadata == {"team": "b"}


class _LockedConnection:
    """A connection whose every statement finds the database locked."""

    def execute(self, sql: str, *args: object) -> None:
        raise sqlite3.OperationalError("database is locked")


async def test_point_reads_run_on_the_loop_and_go_to_a_thread_when_locked(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session or a message read by its id needs no worker thread on SQLite (Postgres
    reads on threads); a point read that finds the database locked is read on a thread,
    which waits for the lock as every read did."""
    store = make_store()
    await store.open()
    try:
        await store.put_session(_session(), [])
        await store.put_message(_assistant(), [])
        await store.put_part(_text(text="hello"), [])
        threads: list[object] = []
        real = asyncio.to_thread

        async def counted(func: Any, /, *args: Any) -> Any:
            if func is not hand_rows_after:  # the NOTIFY tail's catch-up, when a second passed
                threads.append(func)
            return await real(func, *args)

        monkeypatch.setattr("partwire.storage.readers.asyncio.to_thread", counted)
        assert (await store.get_session("ses_1")).id == "ses_1"
        message = await store.get_message("ses_1", "msg_2")
        assert [part.text for part in message.parts] == ["hello"]  # type: ignore[union-attr]
        assert len(threads) == (2 if isinstance(store, PostgresStore) else 0)
        if isinstance(store, PostgresStore):
            return
        monkeypatch.setattr(store._readers, "_loop_conn", _LockedConnection())
        assert (await store.get_session("ses_1")).id == "ses_1"  # through a thread
        assert len(threads) == 1
    finally:
        await store.close()
