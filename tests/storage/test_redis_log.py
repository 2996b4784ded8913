"""Event fan-out through Redis Streams: each commit is appended once, after it commits;
readers hand rows on in the log's order and read the table where the stream is silent or
has a hole; an unreachable Redis at start is refused."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from partwire.bus import Bus
from partwire.errors import StorageError
from partwire.schema.event import Event, SessionIdle, SessionRef
from partwire.storage import redis_log
from partwire.storage.pg_connection import connect
from partwire.storage.postgres import PostgresStore
from partwire.storage.redis_log import Keys, Reader, Row, entries, rows_of
from tests.postgres_server import PostgresServer, _free_port
from tests.redis_server import RedisServer
from tests.redis_server import server_path as redis_server_path
from tests.storage.test_sqlite import _session


@pytest.fixture
async def stores(
    postgres: PostgresServer, redis_server: RedisServer
) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two servers' stores on one database, sharing events through Redis."""
    url = postgres.new_database()
    first = PostgresStore(url, Bus(), redis_url=redis_server.url())
    second = PostgresStore(url, Bus(), redis_url=redis_server.url())
    await first.open()
    await second.open()
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


def _idle(sid: str, seq: int, epoch: int) -> Event:
    from partwire import ids

    draft = SessionIdle(SessionRef(sessionID=sid))
    return draft.with_id(ids.logged_event_id(epoch, seq))


def test_an_entry_holds_a_run_of_consecutive_events() -> None:
    events = [_idle("ses_a", seq, 7) for seq in (4, 5, 6, 9, 10)]
    made = entries(events, 7)
    assert [entry["s"] for entry in made] == [4, 9]
    rows = [
        row
        for entry in made
        for row in rows_of({k.encode(): str(v).encode() for k, v in entry.items()})
    ]
    assert rows == [
        (e_seq, e.type, e.properties_json)
        for e_seq, e in zip((4, 5, 6, 9, 10), events, strict=True)
    ]


async def test_each_commit_is_appended_to_the_stream_once_in_log_order(
    stores: tuple[PostgresStore, PostgresStore], redis_server: RedisServer
) -> None:
    first, second = stores
    await first.put_session(_session("ses_a"), [])
    await second.put_session(_session("ses_b"), [])
    for index in range(20):
        store = first if index % 2 else second
        await store.publish([SessionIdle(SessionRef(sessionID="ses_a"))])
    logged = [
        (row[0], row[1], row[2])
        for row in await first.read_with(
            lambda conn: conn.execute(
                "SELECT seq, type, payload FROM event_log ORDER BY seq"
            ).fetchall()
        )
    ]
    stream = redis_log.client(redis_server.url())
    try:
        found = stream.xrange(Keys(first.epoch).log)
    finally:
        stream.close()
    appended = [row for _, fields in found for row in rows_of(fields)]  # type: ignore[union-attr]
    assert sorted(appended) == logged  # every committed row, once (two writers: any order)
    assert len(appended) == len({row[0] for row in appended})


async def _collect(reader_rows: list[Row], count: int) -> None:
    for _ in range(200):
        if len(reader_rows) >= count:
            return
        await asyncio.sleep(0.01)


async def test_a_reader_hands_rows_in_log_order_and_reads_a_missing_one_from_the_table(
    stores: tuple[PostgresStore, PostgresStore], redis_server: RedisServer
) -> None:
    store = stores[0]
    after = store._writer.last_seq
    handed: list[Row] = []
    lock = threading.Lock()

    def hand(rows: list[Row]) -> None:
        with lock:
            handed.extend(rows)

    keys = Keys(store.epoch)
    reader = Reader(
        redis_server.url(), keys, lambda: connect(store.url, autocommit=True), after, hand,
        lambda _: None,
    )  # fmt: skip
    reader.start()
    stream = redis_log.client(redis_server.url())
    try:
        await asyncio.sleep(0.2)  # the reader is waiting on the stream
        # two servers' appends raced: n+2 is in the stream before n+1
        late, early = (_idle("ses_x", after + n, store.epoch) for n in (1, 2))
        pipe = stream.pipeline(transaction=False)
        for event in (early, late):
            pipe.xadd(keys.log, entries([event], store.epoch)[0])  # type: ignore[arg-type]
        pipe.execute()
        await _collect(handed, 2)
        assert [row[0] for row in handed] == [after + 1, after + 2]
        # n+3 is committed but its append was lost; n+4's arrives: n+3 comes from the table
        conn = connect(store.url, autocommit=True)
        lost, arrived = (_idle("ses_x", after + n, store.epoch) for n in (3, 4))
        for seq, event in ((after + 3, lost), (after + 4, arrived)):
            conn.execute(
                "INSERT INTO event_log (seq, type, payload) VALUES (?, ?, ?)",
                (seq, event.type, event.properties_json),
            )
        conn.close()
        stream.xadd(keys.log, entries([arrived], store.epoch)[0])  # type: ignore[arg-type]
        await _collect(handed, 4)
        assert [row[0] for row in handed] == [after + n for n in (1, 2, 3, 4)]
        assert handed[2] == (after + 3, lost.type, lost.properties_json)
    finally:
        stream.close()
        await reader.close()


async def test_commits_reach_the_other_server_when_appends_to_redis_fail(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    assert second._appender is not None
    second._appender.close()
    second._appender.url = f"redis://127.0.0.1:{_free_port()}/0"  # Redis went away
    watching = first.bus.subscribe_all()
    await second.put_session(_session("ses_b"), [])
    await second.publish([SessionIdle(SessionRef(sessionID="ses_b"))])
    seen: list[Event] = []
    for _ in range(300):  # the reader's poll of the table finds them within about a second
        seen += watching.drain()
        if any(event.type == "session.idle" for event in seen):
            break
        await asyncio.sleep(0.01)
    assert [event.type for event in seen][-1] == "session.idle"
    assert [event.id for event in seen] == [e.id for e in await first.events_after(None)][
        -len(seen) :
    ]


async def test_a_redis_that_cannot_be_reached_is_refused_at_start_without_its_password(
    postgres: PostgresServer,
) -> None:
    url = f"redis://:hunter2@127.0.0.1:{_free_port()}/0"
    store = PostgresStore(postgres.new_database(), Bus(), redis_url=url)
    with pytest.raises(StorageError) as raised:
        await store.open()
    assert "Redis at redis://:***@127.0.0.1" in raised.value.message
    assert "hunter2" not in raised.value.message


async def test_while_redis_is_away_the_servers_read_the_table_and_then_the_stream_again(
    postgres: PostgresServer,
) -> None:
    own = RedisServer(redis_server_path())  # this case stops its own Redis
    own.start()
    url = postgres.new_database()
    first = PostgresStore(url, Bus(), redis_url=own.url())
    second = PostgresStore(url, Bus(), redis_url=own.url())
    await first.open()
    await second.open()
    watching = second.bus.subscribe("session.idle")

    async def reaches_second(sid: str) -> float:
        started = asyncio.get_running_loop().time()
        await first.publish([SessionIdle(SessionRef(sessionID=sid))])
        for _ in range(400):
            if any(e.session_id == sid for e in watching.drain()):
                return asyncio.get_running_loop().time() - started
            await asyncio.sleep(0.01)
        raise AssertionError(f"{sid} never reached the other server")

    try:
        assert await reaches_second("ses_before") < 0.5
        own.kill()
        for n in range(3):  # Redis is away: the other server reads the table
            await reaches_second(f"ses_away_{n}")
        own.start()  # back on its port
        await asyncio.sleep(2.5)  # the writer's pause and the reader's retry pass
        assert await reaches_second("ses_back") < 0.5  # through the stream again
        stream = redis_log.client(own.url())
        appended = [
            row for _, fields in stream.xrange(Keys(first.epoch).log) for row in rows_of(fields)
        ]  # type: ignore[union-attr]
        stream.close()
        assert any('"ses_back"' in payload for _, _, payload in appended)
    finally:
        await first.close()
        await second.close()
        own.stop()
