from __future__ import annotations

import asyncio

import pytest

from partwire.bus import Bus
from partwire.schema.event import (
    Empty,
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
