from __future__ import annotations

from partwire.bus import Bus
from partwire.schema.event import Empty, ServerHeartbeat, SessionIdle, SessionRef


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
