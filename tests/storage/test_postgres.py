"""What only the Postgres store does: one log shared by every server on the database,
errors that name the database without its password, SQLite's dialect translated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from partwire.bus import Bus
from partwire.errors import StorageError
from partwire.schema.event import (
    Event,
    SessionIdle,
    SessionRef,
    SessionStatusChanged,
    SessionStatusProps,
    parse_logged,
)
from partwire.schema.session import StatusBusy
from partwire.storage.pg_connection import pg_sql, redacted
from partwire.storage.postgres import PostgresStore
from tests.postgres_server import PostgresServer
from tests.storage.test_sqlite import _session


@pytest.mark.parametrize("fanout", ["notify", "redis"])
async def test_servers_sharing_a_database_see_one_log_in_one_order(
    postgres: PostgresServer, fanout: str, request: pytest.FixtureRequest
) -> None:
    """Two stores on one database (two servers): every event either commits reaches both
    buses, in the same order, with the same strictly increasing ids, whether the servers
    learn of each other's commits by NOTIFY or through Redis."""
    url = postgres.new_database()
    redis_url = request.getfixturevalue("redis_server").url() if fanout == "redis" else None
    first = PostgresStore(url, Bus(), redis_url=redis_url)
    second = PostgresStore(url, Bus(), redis_url=redis_url)
    await first.open()
    await second.open()
    try:
        seen = [first.bus.subscribe_all(), second.bus.subscribe_all()]
        await first.put_session(_session("ses_a"), [])
        await second.put_session(_session("ses_b"), [])

        async def publish(store: PostgresStore, sid: str) -> None:
            for _ in range(40):
                await store.publish([SessionIdle(SessionRef(sessionID=sid))])

        await asyncio.gather(publish(first, "ses_a"), publish(second, "ses_b"))
        # an awaited write returns once its event is published on its own server
        ids = [[e.id for e in sub.drain()] for sub in seen]
        for _ in range(100):
            if len(ids[0]) == len(ids[1]) == 80:
                break
            await asyncio.sleep(0.02)
            ids = [a + [e.id for e in sub.drain()] for a, sub in zip(ids, seen, strict=True)]
        assert len(ids[0]) == 80 and ids[0] == ids[1]
        assert ids[0] == sorted(ids[0]) and len(set(ids[0])) == 80
        assert [e.id for e in await second.events_after(None)][-80:] == ids[0]
    finally:
        await first.close()
        await second.close()


@asynccontextmanager
async def _two_servers(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch, parsed: list[Event]
) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on a fresh database; every event either of them parses from a row is noted."""
    from partwire.storage import postgres as module

    def counted(framed: Event) -> Event:
        event = parse_logged(framed)
        parsed.append(event)
        return event

    monkeypatch.setattr(module, "parse_logged", counted)
    url = postgres.new_database()
    first, second = PostgresStore(url, Bus()), PostgresStore(url, Bus())
    await first.open()
    await second.open()
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


async def test_a_server_parses_only_the_other_servers_events_something_here_takes(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed_events: list[Event] = []
    async with _two_servers(postgres, monkeypatch, parsed_events) as (first, second):
        idle_only = second.bus.subscribe("session.idle")
        await first.put_session(_session("ses_a"), [])
        for _ in range(5):
            await first.publish(
                [SessionStatusChanged(SessionStatusProps(sessionID="ses_a", status=StatusBusy()))]
            )
            await first.publish([SessionIdle(SessionRef(sessionID="ses_a"))])
        await second.publish([SessionIdle(SessionRef(sessionID="ses_b"))])  # settles: published
        seen = idle_only.drain()
        assert [e.session_id for e in seen] == ["ses_a"] * 5 + ["ses_b"]
        # not the statuses nobody here takes (its own idle is parsed too if the tail reads
        # its row before the writer hands it over)
        parsed = [event.type for event in parsed_events]
        assert parsed[:5] == ["session.idle"] * 5 and "session.status" not in parsed
        assert second._published == second._writer.last_seq  # the skipped rows count as seen
        assert not second._ours  # nothing kept of what was published
        everything = second.bus.subscribe_all()  # now every type is taken: parsed again
        await first.publish(
            [SessionStatusChanged(SessionStatusProps(sessionID="ses_a", status=StatusBusy()))]
        )
        for _ in range(100):
            if everything.drain():
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the other server's event never came")


async def test_a_server_parses_only_the_sessions_its_scoped_subscribers_watch(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose clients each watch one session (part frames, the hub, AI SDK
    streams) parses the other servers' rows of those sessions only: the session is read
    from the row's head, not from parsed JSON."""
    parsed_events: list[Event] = []
    async with _two_servers(postgres, monkeypatch, parsed_events) as (first, second):
        watched = second.bus.subscribe("session.idle", session_id="ses_a")
        for sid in ("ses_a", "ses_b", "ses_c", "ses_a"):
            await first.publish([SessionIdle(SessionRef(sessionID=sid))])
        await second.publish([SessionIdle(SessionRef(sessionID="ses_a"))])  # settles: published
        assert [e.session_id for e in watched.drain()] == ["ses_a"] * 3
        parsed = [event.session_id for event in parsed_events]
        assert "ses_b" not in parsed and "ses_c" not in parsed
        assert parsed.count("ses_a") >= 2  # the other server's two (ours may be parsed too)


def test_the_session_of_a_row_is_read_from_its_head_or_left_unknown() -> None:
    from partwire.storage.postgres import _session_of_row

    delta = '{"sessionID":"ses_1","messageID":"msg_1","partID":"prt_1","field":"text","delta":"x"}'
    assert _session_of_row(delta) == "ses_1"
    assert _session_of_row('{"sessionID":null,"error":{}}') is None
    assert _session_of_row('{"info":{"sessionID":"ses_1"}}') is None
    assert _session_of_row('{"sessionID":"ses_\\"x","a":1}') is None  # escaped: unknown
    assert _session_of_row('{"sessionID":"ses_1') is None  # cut short


async def test_a_database_that_cannot_be_reached_is_named_without_its_password(
    postgres: PostgresServer,
) -> None:
    url = f"postgresql://partwire:hunter2@127.0.0.1:{postgres.port}/no_such_database"
    store = PostgresStore(url, Bus())
    with pytest.raises(StorageError) as raised:
        await store.open()
    message = raised.value.message
    assert "partwire:***@127.0.0.1" in message and "no_such_database" in message
    assert "hunter2" not in message


def test_urls_lose_only_their_password() -> None:
    assert (
        redacted("postgresql://u:secret@db.example:5433/pw")
        == "postgresql://u:***@db.example:5433/pw"
    )
    assert redacted("postgresql://u@db/pw") == "postgresql://u@db/pw"


def test_sqlite_parameters_become_psycopg_ones_and_percent_signs_stay_literal() -> None:
    sql = "SELECT id FROM message WHERE data LIKE '%\"role\"%' AND session_id = ? AND seq > ?"
    assert pg_sql(sql) == (
        "SELECT id FROM message WHERE data LIKE '%%\"role\"%%' AND session_id = %s AND seq > %s"
    )


async def test_the_sqlite_migrations_make_64_bit_sequences_in_postgres(
    postgres: PostgresServer,
) -> None:
    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    await store.close()
    from partwire.storage.pg_connection import connect

    conn = connect(url, autocommit=True)
    try:
        types = dict(
            conn.execute(
                "SELECT table_name, data_type FROM information_schema.columns "
                "WHERE column_name = 'seq' ORDER BY table_name"
            ).fetchall()
        )
        epoch = conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()[0]
    finally:
        conn.close()
    assert types == {"event_log": "bigint", "message": "bigint", "part": "bigint"}
    assert int(epoch) == store.epoch > 0


async def test_a_dropped_connection_is_made_anew_and_nothing_is_lost(
    postgres: PostgresServer,
) -> None:
    """The database drops every connection (a restart, a failover): the next writes,
    reads and the published stream go on."""
    from partwire.storage.pg_connection import connect

    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    try:
        seen = store.bus.subscribe_all()
        await store.put_session(_session("ses_a"), [])
        await store.list_sessions()  # a reader connection exists
        admin = connect(url, autocommit=True)
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        admin.close()
        await asyncio.sleep(0.2)
        for n in range(3):  # the first may fail with the dropped connection
            try:
                await store.publish([SessionIdle(SessionRef(sessionID="ses_a"))])
                break
            except StorageError:
                assert n == 0
        assert [s.id for s in await store.list_sessions()] == ["ses_a"]
        for _ in range(100):
            if any(e.type == "session.idle" for e in seen.drain()):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the tail did not come back")
    finally:
        await store.close()


class _Counting:
    """A psycopg connection that notes the statements it is sent."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.statements = raw, list[str]()

    def execute(self, sql: str, params: Any = None) -> Any:
        self.statements.append(sql)
        return self.raw.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


@pytest.mark.parametrize("count", [0, 1, 3, 70])
async def test_a_commits_log_rows_and_notices_go_in_one_statement(
    postgres: PostgresServer, count: int
) -> None:
    """Postgres takes a commit's log rows in one INSERT (a round trip each would cost),
    every row, in order, with its text as given, and in the same statement the NOTIFYs
    that tell the other servers, delivered at commit in the order given."""
    from partwire import ids
    from partwire.schema.event import MessagePartDelta, PartDeltaProps
    from partwire.storage.pg_connection import connect
    from partwire.storage.pg_notify import CHANNEL
    from partwire.storage.writes import WriteContext

    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    await store.close()
    conn, listener = connect(url), connect(url, autocommit=True)
    try:
        listener.execute(f"LISTEN {CHANNEL}")
        with conn:
            last = conn.execute("SELECT partwire_log_lock(?)", (1,)).fetchone()[0]
            ctx = WriteContext(conn, epoch=store.epoch, last_seq=last)
            for n in range(count):
                delta = f"w{n} 'é\"\n"
                props = PartDeltaProps(
                    session_id="ses_1", message_id="msg_1", part_id="prt_1", field="text",
                    delta=delta,
                )  # fmt: skip
                ctx.log(MessagePartDelta(props))
            conn.raw = counting = _Counting(conn.raw)  # type: ignore[assignment]
            ctx.insert_rows([(CHANNEL, "first 'é\""), (CHANNEL, "second")])
            conn.raw = counting.raw
        told = [n.payload for n in listener.raw.notifies(timeout=1, stop_after=2)]
        rows = conn.execute(
            "SELECT seq, payload FROM event_log WHERE seq > ? ORDER BY seq", (last,)
        ).fetchall()
    finally:
        conn.close()
        listener.close()
    assert len(counting.statements) == 1
    assert told == ["first 'é\"", "second"]
    assert [seq for seq, _ in rows] == list(range(last + 1, last + 1 + count))
    assert [payload for _, payload in rows] == [e.properties_json for e in ctx.events]
    assert [e.id for e in ctx.events] == [ids.logged_event_id(store.epoch, seq) for seq, _ in rows]
