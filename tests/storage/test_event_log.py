"""The event log: ids from its sequence (migration 4), old logs converted, WAL checkpoints."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from partwire import ids
from partwire.bus import Bus
from partwire.schema.event import MessagePartDelta, SessionIdle, SessionRef
from partwire.storage import sqlite as sqlite_store
from partwire.storage import writer, writes
from partwire.storage.base import EventLogGap
from partwire.storage.migrations import LATEST_VERSION, MIGRATIONS, migrate
from partwire.storage.recovery import OPEN_LIFECYCLE_SQL, open_lifecycle
from partwire.storage.sqlite import PAGE_SIZE, SqliteStore
from tests.storage.conftest import MakeStore, independent_read
from tests.storage.streaming import append
from tests.storage.test_sqlite import _assistant, _delta, _session, _text


def _migrated_to(path: Path, version: int, page_size: int) -> sqlite3.Connection:
    """A new database as partwire left it after migration ``version``."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE schema_version "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for number, name, apply in MIGRATIONS[:version]:
        apply(conn)
        conn.execute("INSERT INTO schema_version VALUES (?, ?, datetime('now'))", (number, name))
    return conn


def _version_3_database(path: Path) -> list[str]:
    """A database as version 3 wrote it (4 KiB pages, random event ids): a part that was
    streaming, its row complete up to its second delta. Returns the old event ids."""
    conn = _migrated_to(path, 3, page_size=4096)
    conn.execute("INSERT INTO session (id, data) VALUES ('ses_1', ?)", (_session().wire_json(),))
    conn.execute(
        "INSERT INTO message (id, session_id, data, seq) VALUES ('msg_2', 'ses_1', ?, 1)",
        (_assistant().wire_json(),),
    )
    old_ids = []
    for word in ["a ", "b ", "c ", "d"]:
        event = MessagePartDelta(_delta(word)).with_id(ids.event_id())
        conn.execute(
            "INSERT INTO event_log (id, session_id, part_id, type, payload) VALUES (?,?,?,?,?)",
            (event.id, "ses_1", "prt_1", event.type, event.json),
        )
        old_ids.append(event.id)
    conn.execute(
        "INSERT INTO part (id, message_id, session_id, data, delta_from, seq) "
        "VALUES ('prt_1', 'msg_2', 'ses_1', ?, ?, 1)",
        (_text(text="a b ").wire_json(), old_ids[1]),
    )
    conn.close()
    return old_ids


async def test_a_version_3_log_gets_sequence_ids_and_keeps_its_streaming_part(
    tmp_path: Path,
) -> None:
    path = tmp_path / "partwire.db"
    old_ids = _version_3_database(path)
    store = SqliteStore(path, Bus())
    await store.open()
    try:
        [message] = await store.list_messages("ses_1")
        logged = await store.events_after(None)
        with pytest.raises(EventLogGap):  # an id of the old scheme cannot be resumed from
            await store.events_after(old_ids[1])
        await append(store, _delta("!"))
        await store.publish([])
        [newest] = (await store.events_after(logged[-1].id))[-1:]
    finally:
        await store.close()
    # recovery closed the part: the row's text plus the deltas logged after its mark
    assert message.parts[0].text == "a b c d"  # type: ignore[union-attr]
    new_ids = [e.id for e in logged[:4]]
    assert new_ids == sorted(new_ids) and min(new_ids) > max(old_ids)
    assert [json.loads(e.json)["id"] for e in logged[:4]] == new_ids  # payloads renamed
    assert newest.id > logged[-1].id
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
        columns = [row[1] for row in conn.execute("PRAGMA table_info(event_log)")]
        indexes = [row[1] for row in conn.execute("PRAGMA index_list(event_log)")]
    conn.close()
    assert "id" not in columns and indexes == ["event_log_lifecycle"]


async def test_a_logged_event_reads_back_whole_and_a_foreign_id_is_a_gap(tmp_path: Path) -> None:
    bus = Bus()
    store = SqliteStore(tmp_path / "partwire.db", bus)
    await store.open()
    try:
        published = bus.subscribe_all()
        await store.publish([MessagePartDelta(_delta("x"))])
        [event] = await store.events_after(None)
        assert event.json == (await published.get()).json  # the stored form reads back whole
        assert await store.events_after(event.id) == []
        other_log = ids.logged_event_id(store.epoch + 1, 1)
        beyond = ids.logged_event_id(store.epoch, 2)
        for unknown in (other_log, beyond, "evt_made-up"):
            with pytest.raises(EventLogGap) as gap:
                await store.events_after(unknown)
            assert gap.value.oldest == event.id
    finally:
        await store.close()


async def test_the_wal_is_checkpointed_off_the_writer_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "CHECKPOINT_PAGES", 20)
    path = tmp_path / "partwire.db"
    store = SqliteStore(path, Bus())
    await store.open()
    try:
        before = path.stat().st_size
        for n in range(60):  # each its own commit, as a paced stream's deltas are
            await store.publish([MessagePartDelta(_delta(f"w{n} "))])
        checkpointer = store._writer.checkpointer
        for _ in range(200):
            if checkpointer.runs and path.stat().st_size > before:
                break
            await asyncio.sleep(0.01)
        assert checkpointer.runs >= 1
        assert path.stat().st_size > before  # pages reached the database file itself
        assert len(await store.events_after(None)) == 60
    finally:
        await store.close()


def _version_7_database(path: Path) -> None:
    """A database as version 7 left it: the lifecycle index on an IN list, an ask still
    open and a session working, both logged."""
    conn = _migrated_to(path, 7, page_size=PAGE_SIZE)
    rows = [
        (1, "session.status", '{"sessionID":"ses_1","status":{"type":"busy"}}'),
        (2, "message.part.delta", '{"sessionID":"ses_1","delta":"a"}'),
        (3, "question.asked", '{"id":"que_1","sessionID":"ses_1","questions":[]}'),
    ]
    conn.executemany("INSERT INTO event_log (seq, type, payload) VALUES (?,?,?)", rows)
    conn.close()


def test_appending_to_the_log_builds_no_temporary_table_and_recovery_uses_its_index(
    tmp_path: Path,
) -> None:
    """SQLite checks the lifecycle index's condition on every row appended; written as an
    IN list it built a temporary B-tree of the six types each time (migration 8)."""
    path = tmp_path / "partwire.db"
    _version_7_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert migrate(conn) == LATEST_VERSION
        for size, statement in writes._INSERT.items():
            program = conn.execute(f"EXPLAIN {statement}", [1, "t", "{}"] * size).fetchall()
            assert "OpenEphemeral" not in [row[1] for row in program], size
        plan = conn.execute(f"EXPLAIN QUERY PLAN {OPEN_LIFECYCLE_SQL}").fetchall()
        assert "USING INDEX event_log_lifecycle" in " ".join(row[3] for row in plan)
        asks, working = open_lifecycle(conn)  # rows logged before the migration still count
        assert list(asks) == ["que_1"] and list(working) == ["ses_1"]
    finally:
        conn.close()


async def _idle_events(store: SqliteStore, count: int) -> list[str]:
    """``count`` events logged one commit each; their ids."""
    subscription = store.bus.subscribe_all()
    for n in range(count):
        await store.publish([SessionIdle(SessionRef(sessionID=f"ses_{n}"))])
    return [event.id for event in subscription.drain()]


async def _holds_newest(store: SqliteStore, published: list[str], count: int) -> None:
    """The log holds ``count`` rows: the newest of ``published`` (a resume from the oldest
    of them goes on)."""
    assert independent_read(store, "SELECT COUNT(*) FROM event_log") == (count,)
    assert [e.id for e in await store.events_after(published[-count])] == published[1 - count :]


async def test_a_prune_drops_at_most_its_bound_oldest_first(make_store: MakeStore) -> None:
    """One prune of everything past the retention held a loaded server's commits for about
    100 ms; each drops at most ``most`` rows now, and a few reach the retention."""
    store = make_store()
    await store.open()
    try:
        published = await _idle_events(store, 100)
        for kept in (70, 40, 11, 11):  # 30 at a time, then down to the newest retain + 1
            await store._submit(writes.EventPrune(retain=10, most=30))
            await _holds_newest(store, published, kept)
        with pytest.raises(EventLogGap):
            await store.events_after(published[-12])
    finally:
        await store.close()


async def test_a_prune_keeps_the_deltas_a_streaming_parts_row_needs(
    make_store: MakeStore,
) -> None:
    store = make_store()
    await store.open()
    try:
        before = await _idle_events(store, 10)
        await store.put_session(_session(), [])
        await store.put_message(_assistant(), [])
        await store.put_part(_text(), [], streaming=True)
        for word in ["a ", "b ", "c"]:
            await append(store, _delta(word))
        after = await _idle_events(store, 50)
        await store._submit(writes.EventPrune(retain=5, most=1_000))
        [entry] = await store.list_messages("ses_1")
        assert entry.parts[0].text == "a b c"  # type: ignore[union-attr]
        # what was logged before the row went; its three deltas and what followed stay
        assert independent_read(store, "SELECT COUNT(*) FROM event_log") == (53,)
        with pytest.raises(EventLogGap):
            await store.events_after(before[-1])
        assert [e.id for e in await store.events_after(after[0])] == after[1:]
    finally:
        await store.close()


async def test_the_log_is_pruned_a_little_at_a_time_as_it_grows(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "PRUNE_EVERY_EVENTS", 20)
    store = make_store(retain_events=10)
    await store.open()
    try:
        published = await _idle_events(store, 95)
        await store.publish([])  # a commit after the last prune asked for
        await _holds_newest(store, published, 26)  # pruned after the 80th event, to 11
    finally:
        await store.close()


def test_the_prunes_queries_read_indexes_not_tables(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "partwire.db", isolation_level=None)
    try:
        migrate(conn)
        for sql, table, reads in [
            (writes.LOG_BOUNDS_SQL, "event_log", "SEARCH event_log"),  # the seq B-tree's ends
            (writes.STREAMING_FLOOR_SQL, "part", "INDEX part_streaming"),
        ]:
            plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert reads in plan and f"SCAN {table}" not in plan, plan
    finally:
        conn.close()
