from __future__ import annotations

import asyncio

import pytest

from partwire.bus import Bus
from partwire.schema.event import (
    Empty,
    Event,
    MessagePartDelta,
    PartDeltaProps,
    ServerHeartbeat,
    SessionIdle,
    SessionRef,
)


def _idle(n: int) -> object:
    return SessionIdle(SessionRef(sessionID=f"ses_{n}")).with_id(f"evt_{n:04d}")


async def test_subscribe_filters_by_type_and_subscribe_all_gets_everything() -> None:
    bus = Bus()
    idle_only = bus.subscribe("session.idle")
    everything = bus.subscribe_all()
    bus.publish(ServerHeartbeat(Empty()).with_id("evt_0001"))
    bus.publish(_idle(2))  # type: ignore[arg-type]
    assert [e.type for e in idle_only.drain()] == ["session.idle"]
    assert [e.id for e in everything.drain()] == ["evt_0001", "evt_0002"]


async def test_close_ends_iteration_and_unsubscribes() -> None:
    bus = Bus()
    sub = bus.subscribe_all()
    bus.publish(_idle(1))  # type: ignore[arg-type]
    bus.close()
    seen = [e.id async for e in sub]
    assert seen == ["evt_0001"]
    bus.publish(_idle(2))  # type: ignore[arg-type]
    assert sub.drain() == []


async def test_a_slow_subscriber_overflows_without_blocking_the_publisher() -> None:
    bus = Bus(queue_limit=3)
    slow = bus.subscribe_all()
    fast = bus.subscribe_all()
    for n in range(10):
        bus.publish(_idle(n))  # type: ignore[arg-type]
        fast.drain()
    assert slow.overflowed and slow.closed
    assert not fast.overflowed
    assert len(slow.drain()) == 3


def test_event_json_is_the_wire_envelope() -> None:
    event = SessionIdle(SessionRef(sessionID="ses_1")).with_id("evt_1")
    assert event.json == '{"id":"evt_1","type":"session.idle","properties":{"sessionID":"ses_1"}}'


def _delta(n: int, text: str, part: str = "prt_1") -> object:
    props = PartDeltaProps(
        session_id="ses_1", message_id="msg_1", part_id=part, field="text", delta=text
    )
    return MessagePartDelta(props).with_id(f"evt_{n:05d}")


async def test_a_lagging_subscriber_gets_merged_deltas_with_the_same_text() -> None:
    bus = Bus(queue_limit=10)
    sub = bus.subscribe_all()
    for n in range(1_000):
        bus.publish(_delta(n, f"w{n} "))  # type: ignore[arg-type]
    events = sub.drain()
    assert len(events) == 5  # four single deltas, then one that holds the rest
    assert "".join(e.properties.delta for e in events) == "".join(f"w{n} " for n in range(1_000))  # type: ignore[attr-defined]
    assert events[-1].id == "evt_00999" and not sub.overflowed and sub.peak <= 10


async def test_merging_stops_at_its_cap_and_the_subscriber_is_sent_to_reload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from partwire import bus as bus_module

    monkeypatch.setattr(bus_module, "MAX_MERGED_CHARS", 100)
    bus = Bus(queue_limit=10)
    sub = bus.subscribe_all()
    for n in range(1_000):
        bus.publish(_delta(n, "0123456789"))  # type: ignore[arg-type]
    assert sub.overflowed and sub.closed
    assert sum(len(e.properties.delta) for e in sub.drain()) <= 10 * 100  # type: ignore[attr-defined]


async def test_batches_yield_a_heartbeat_only_after_quiet() -> None:
    bus = Bus()
    subscription = bus.subscribe_all()
    seen: list[str | None] = []

    async def consume() -> None:
        async for batch in subscription.batches(0.3):
            seen.extend(None if batch is None else e.type for e in batch or [None])

    task = asyncio.create_task(consume())
    for n in range(6):  # events 0.05 s apart: never quiet for 0.3 s
        bus.publish(_delta(n, "x"))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
    assert None not in seen
    await asyncio.sleep(0.75)  # quiet: heartbeats at about 0.3 and 0.6 s
    assert seen.count(None) == 2
    subscription.close()
    await asyncio.wait_for(task, 1)
    assert seen[:6] == ["message.part.delta"] * 6


def _session_delta(session: str, n: int) -> Event:
    props = PartDeltaProps(
        session_id=session, message_id="msg_1", part_id="prt_1", field="text", delta=f"w{n}"
    )
    return MessagePartDelta(props).with_id(f"evt_{n:04d}")


async def test_a_session_scoped_subscription_gets_only_that_sessions_events() -> None:
    bus = Bus()
    mine = bus.subscribe("message.part.delta", "session.idle", session_id="ses_a")
    deltas_of_b = bus.subscribe("message.part.delta", session_id="ses_b")
    everything = bus.subscribe_all()
    bus.publish(_session_delta("ses_a", 1))
    bus.publish(_session_delta("ses_b", 2))
    bus.publish(SessionIdle(SessionRef(sessionID="ses_a")).with_id("evt_0003"))
    bus.publish(ServerHeartbeat(Empty()).with_id("evt_0004"))  # no session: scoped ones skip it
    assert [e.id for e in mine.drain()] == ["evt_0001", "evt_0003"]
    assert [e.id for e in deltas_of_b.drain()] == ["evt_0002"]
    assert [e.id for e in everything.drain()] == ["evt_0001", "evt_0002", "evt_0003", "evt_0004"]


async def test_takes_answers_for_a_type_and_session_and_forgets_closed_subscriptions() -> None:
    bus = Bus()
    assert not bus.takes("message.part.delta", "ses_a")
    scoped = bus.subscribe("message.part.delta", session_id="ses_a")
    assert bus.takes("message.part.delta", "ses_a")
    assert not bus.takes("message.part.delta", "ses_b")
    assert not bus.takes("session.idle", "ses_a")
    assert bus.takes("message.part.delta", None)  # session not known: some subscriber takes it
    statuses = bus.subscribe("session.status")
    assert bus.takes("session.status", "ses_z")
    assert not bus.takes("message.part.delta", "ses_b")
    scoped.close()
    statuses.close()
    assert not bus.takes("message.part.delta", "ses_a")
    assert not bus.takes("session.status", "ses_z")
    bus.publish(_session_delta("ses_a", 5))  # nobody left: nothing to offer, nothing raised
    assert scoped.drain() == []
    everything = bus.subscribe_all()
    assert bus.takes("anything.at.all", None)
    everything.close()


async def test_a_commits_events_are_pushed_once_before_publish_many_returns() -> None:
    """publish_many (one commit's events) calls each pushed subscription back once, in the
    context it gave, before it returns; a lone publish still pushes at the loop's next turn."""
    import contextvars

    bus = Bus()
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="publisher")
    subscription = bus.subscribe_all()
    pushed: list[tuple[str, list[str]]] = []

    def flush() -> None:
        pushed.append((where.get(), [e.id for e in subscription.drain()]))

    stream_context = contextvars.copy_context()
    stream_context.run(where.set, "stream")
    subscription.push_to(flush, stream_context)
    bus.publish_many([_idle(1), _idle(2)])
    assert pushed == [("stream", ["evt_0001", "evt_0002"])]
    bus.publish(_idle(3))
    assert len(pushed) == 1  # not yet: at the loop's next turn
    await asyncio.sleep(0)
    assert pushed[1] == ("stream", ["evt_0003"])


async def test_what_a_push_publishes_is_pushed_after_it_not_inside_it() -> None:
    bus = Bus()
    first, second = bus.subscribe_all(), bus.subscribe_all()
    calls: list[str] = []
    depth = 0

    def pushed(name: str, subscription: object) -> None:
        nonlocal depth
        depth += 1
        assert depth == 1, "a push ran inside another"
        calls.append(f"{name}:{len(subscription.drain())}")  # type: ignore[attr-defined]
        if name == "first" and len(calls) == 1:
            bus.publish_many([_idle(9)])
        depth -= 1

    first.push_to(lambda: pushed("first", first), None)
    second.push_to(lambda: pushed("second", second), None)
    bus.publish_many([_idle(1)])
    assert calls == ["first:1", "second:2", "first:1"]
