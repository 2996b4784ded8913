"""PushedStream: a stream's live events written from the subscription's callback."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncGenerator, Callable
from typing import Any

import pytest

from partwire.bus import Bus, Subscription
from partwire.schema.event import Event, SessionIdle, SessionRef
from partwire.server.pushed import (
    SERVER_SEND,
    Opening,
    PushedStream,
    SentStream,
    chunk_writer,
    keeping_server_send,
    render_each,
)

REQUEST = contextvars.ContextVar[str]("REQUEST", default="none")
Message = dict[str, Any]


def _idle(n: int) -> Event:
    return SessionIdle(SessionRef(sessionID=f"ses_{n}")).with_id(f"evt_{n:04d}")


def _frame(event: Event) -> str:
    return f"id: {event.id}\n\n"


class Client:
    """An ASGI server's side: the messages sent, the context each send ran in, and a
    disconnect to give."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.contexts: list[str] = []
        self.gone = asyncio.Event()
        self.hold_next = False  # the next send waits (a full socket buffer) until released
        self.held: asyncio.Future[None] | None = None
        self.refuse = False  # the next send fails: the connection was reset

    async def receive(self) -> Message:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.refuse:
            raise ConnectionResetError("the connection was reset")
        self.messages.append(message)
        self.contexts.append(REQUEST.get())
        if self.hold_next and message.get("more_body"):
            self.hold_next = False
            self.held = asyncio.get_running_loop().create_future()
            await self.held  # as uvicorn's send waits for the socket's buffer to drain

    async def release(self) -> None:
        assert self.held is not None
        self.held.set_result(None)
        for _ in range(5):
            await asyncio.sleep(0)

    def bodies(self) -> list[str]:
        return [m["body"].decode() for m in self.messages if m["type"] == "http.response.body"]


def _stream(
    subscription: Subscription,
    opening: Callable[[Opening], AsyncGenerator[str, None]] | None = None,
    *,
    heartbeat_s: float = 30.0,
    render: Callable[[list[Event]], str] | None = None,
) -> PushedStream:
    async def nothing(opened: Opening) -> AsyncGenerator[str, None]:
        yield "opened\n\n"

    return PushedStream(
        subscription=subscription,
        opening=opening or nothing,
        render=render or render_each(_frame),
        heartbeat=lambda: ": beat\n\n",
        heartbeat_s=heartbeat_s,
        headers={"Cache-Control": "no-cache"},
        closing=lambda sub, sent: f"closed after {sent}\n\n" if sub.overflowed else "",
    )


async def _served(stream: PushedStream, client: Client) -> asyncio.Task[None]:
    REQUEST.set("the request's")
    task = asyncio.create_task(stream({"type": "http"}, client.receive, client.send))
    REQUEST.set("none")
    for _ in range(10):
        await asyncio.sleep(0)
    return task


async def test_a_commits_events_go_out_as_one_write_in_order_in_the_requests_context() -> None:
    bus, client = Bus(), Client()
    task = await _served(_stream(bus.subscribe_all()), client)
    bus.publish_many([_idle(1), _idle(2), _idle(3)])  # one commit
    await asyncio.sleep(0)
    bus.publish(_idle(4))
    await asyncio.sleep(0)
    assert client.bodies() == ["opened\n\n", _frame(_idle(1)) + _frame(_idle(2)) + _frame(_idle(3)),
                               _frame(_idle(4))]  # fmt: skip
    assert client.messages[0]["type"] == "http.response.start"
    assert (b"content-type", b"text/event-stream; charset=utf-8") in client.messages[0]["headers"]
    assert not any(name == b"content-length" for name, _ in client.messages[0]["headers"])
    assert set(client.contexts) == {"the request's"}  # not the publisher's
    client.gone.set()
    await task
    assert len(client.messages) == 4  # gone: nothing more was sent


async def test_live_events_go_to_the_servers_own_send_the_start_and_opening_through_the_stack() -> (
    None
):
    bus, server = Bus(), Client()
    stream = _stream(bus.subscribe_all())
    stack: list[Message] = []

    async def middleware(scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def passed_on(message: Message) -> None:
            stack.append(message)
            await send(message)

        await stream(scope, receive, passed_on)

    scope: dict[str, Any] = {"type": "http"}
    app = keeping_server_send(middleware)
    task = asyncio.create_task(app(scope, server.receive, server.send))
    for _ in range(10):
        await asyncio.sleep(0)
    bus.publish_many([_idle(1)])
    assert server.bodies() == ["opened\n\n", _frame(_idle(1))]
    assert [m["type"] for m in stack] == ["http.response.start", "http.response.body"]
    assert scope[SERVER_SEND] == server.send
    server.gone.set()
    await task
    # uvicorn's send is a method of the connection's cycle, which holds the scope: kept
    # past the response, it would make every request a reference cycle
    assert SERVER_SEND not in scope


async def test_what_arrives_during_the_opening_follows_it_and_what_it_sent_is_skipped() -> None:
    bus, client = Bus(), Client()
    subscription = bus.subscribe_all()
    replayed = asyncio.Event()

    async def opening(opened: Opening) -> AsyncGenerator[str, None]:
        yield "connected\n\n"
        bus.publish_many([_idle(1), _idle(2)])  # live while the log is read: both queued
        await asyncio.sleep(0)
        yield _frame(_idle(1))  # the log already held evt_0001
        opened.sent = "evt_0001"
        replayed.set()

    task = await _served(_stream(subscription, opening), client)
    assert replayed.is_set()
    assert client.bodies() == ["connected\n\n", _frame(_idle(1)), _frame(_idle(2))]
    client.gone.set()
    await task


async def test_a_send_that_waits_holds_what_arrives_and_sends_it_after_in_order() -> None:
    bus, client = Bus(), Client()
    task = await _served(_stream(bus.subscribe_all()), client)
    client.hold_next = True
    bus.publish(_idle(1))
    await asyncio.sleep(0)
    bus.publish(_idle(2))
    await asyncio.sleep(0)
    bus.publish(_idle(3))
    await asyncio.sleep(0)
    assert client.bodies() == ["opened\n\n", _frame(_idle(1))]  # its send is waiting
    await client.release()
    assert client.bodies() == ["opened\n\n", _frame(_idle(1)), _frame(_idle(2)) + _frame(_idle(3))]
    client.gone.set()
    await task


async def test_a_quiet_stream_sends_its_heartbeat() -> None:
    bus, client = Bus(), Client()
    task = await _served(_stream(bus.subscribe_all(), heartbeat_s=0.05), client)
    await asyncio.sleep(0.2)
    beats = [b for b in client.bodies() if b == ": beat\n\n"]
    assert 2 <= len(beats) <= 5
    bus.publish(_idle(1))
    await asyncio.sleep(0)
    assert client.bodies()[-1] == _frame(_idle(1))
    client.hold_next = True
    bus.publish(_idle(2))
    await asyncio.sleep(0.2)  # its send waits: no heartbeat goes in between
    assert client.bodies()[-1] == _frame(_idle(2))
    await client.release()
    await asyncio.sleep(0.2)
    assert client.bodies()[-1] == ": beat\n\n"
    client.gone.set()
    await task


async def test_an_overflowed_subscription_ends_the_stream_with_its_closing() -> None:
    bus, client = Bus(queue_limit=4), Client()
    subscription = bus.subscribe_all()
    task = await _served(_stream(subscription), client)
    client.hold_next = True
    bus.publish(_idle(1))  # sent: its send waits
    await asyncio.sleep(0)
    bus.publish_many([_idle(n) for n in range(2, 8)])  # past the queue's limit meanwhile
    assert subscription.overflowed and subscription.closed
    await client.release()
    await asyncio.wait_for(task, 5)
    # what was queued before the overflow still goes out, then the closing names the last
    assert client.bodies()[-3:-1] == [
        "".join(_frame(_idle(n)) for n in range(2, 6)),
        "closed after evt_0005\n\n",
    ]
    assert client.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_a_render_that_fails_is_raised_in_the_requests_task() -> None:
    bus, client = Bus(), Client()

    def broken(events: list[Event]) -> str:
        raise ValueError("no frame for this")

    subscription = bus.subscribe_all()
    task = await _served(_stream(subscription, render=broken), client)
    bus.publish(_idle(1))
    with pytest.raises(ValueError, match="no frame for this"):
        await asyncio.wait_for(task, 5)
    assert subscription.closed


async def test_a_send_that_fails_ends_the_stream_and_closes_the_subscription() -> None:
    bus, client = Bus(), Client()
    subscription = bus.subscribe_all()
    task = await _served(_stream(subscription), client)

    client.refuse = True
    bus.publish(_idle(1))
    with pytest.raises(ConnectionResetError, match="reset"):
        await asyncio.wait_for(task, 5)
    assert subscription.closed


async def test_a_client_gone_while_a_send_waits_ends_the_stream_and_nothing_more_is_sent() -> None:
    bus, client = Bus(), Client()
    subscription = bus.subscribe_all()
    task = await _served(_stream(subscription), client)
    client.hold_next = True
    bus.publish(_idle(1))
    await asyncio.sleep(0)
    client.gone.set()
    await asyncio.wait_for(task, 5)
    assert subscription.closed
    bus.publish(_idle(2))
    await client.release()  # the waiting send ends as the connection closes
    assert client.bodies() == ["opened\n\n", _frame(_idle(1))]


async def test_a_client_gone_during_the_opening_ends_the_replay_there() -> None:
    bus, client = Bus(), Client()
    subscription = bus.subscribe_all()
    replayed: list[int] = []
    closed = asyncio.Event()

    async def opening(opened: Opening) -> AsyncGenerator[str, None]:
        try:
            for n in range(10_000):  # a long session's history, read from the log a page a time
                replayed.append(n)
                await asyncio.sleep(0)
                yield _frame(_idle(n))
        finally:
            closed.set()

    task = await _served(_stream(subscription, opening), client)
    client.gone.set()  # an ASGI server's send returns at once once the client is gone
    await asyncio.wait_for(task, 5)
    assert closed.is_set() and subscription.closed
    assert 0 < len(replayed) < 100  # the replay ended where the client went, not at its end
    assert len(client.bodies()) == len(replayed) - 1  # the frame made as it went: not sent


async def _pieces_then_live(
    subscription: Subscription, closed: asyncio.Event
) -> AsyncGenerator[str, None]:
    """A stream's pieces as a turn stream makes them: a replay, then live events."""
    try:
        yield "replayed\n\n"
        async for event in subscription:
            yield _frame(event)
        yield "closing\n\n"
    finally:
        closed.set()


async def test_a_sent_stream_sends_its_pieces_and_ends_with_them() -> None:
    bus, client, closed = Bus(), Client(), asyncio.Event()
    subscription = bus.subscribe_all()
    stream = SentStream(_pieces_then_live(subscription, closed), subscription, {"X-A": "b"})
    task = asyncio.create_task(stream({"type": "http"}, client.receive, client.send))
    for _ in range(10):
        await asyncio.sleep(0)
    bus.publish(_idle(1))
    await asyncio.sleep(0.01)
    subscription.close()  # shutdown, or a client too far behind: the pieces end
    await asyncio.wait_for(task, 5)
    assert client.bodies() == ["replayed\n\n", _frame(_idle(1)), "closing\n\n", ""]
    assert client.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert (b"x-a", b"b") in client.messages[0]["headers"]


async def test_a_client_gone_while_a_sent_stream_waits_ends_it_without_a_cancel() -> None:
    bus, client, closed = Bus(), Client(), asyncio.Event()
    subscription = bus.subscribe_all()
    stream = SentStream(_pieces_then_live(subscription, closed), subscription, {})
    task = asyncio.create_task(stream({"type": "http"}, client.receive, client.send))
    for _ in range(10):
        await asyncio.sleep(0)
    assert client.bodies() == ["replayed\n\n"]  # and the pieces wait for a live event
    client.gone.set()
    await asyncio.wait_for(task, 5)
    assert subscription.closed and closed.is_set()
    assert not task.cancelled() and task.exception() is None
    assert client.bodies() == ["replayed\n\n"]  # nothing after the client went


async def test_a_client_gone_while_a_sent_streams_send_waits_gets_nothing_more() -> None:
    bus, client, closed = Bus(), Client(), asyncio.Event()
    subscription = bus.subscribe_all()
    client.hold_next = True  # the replay's send waits: a full socket buffer
    stream = SentStream(_pieces_then_live(subscription, closed), subscription, {})
    task = asyncio.create_task(stream({"type": "http"}, client.receive, client.send))
    for _ in range(10):
        await asyncio.sleep(0)
    bus.publish(_idle(1))
    client.gone.set()
    await client.release()  # the waiting send returns as the connection closes
    await asyncio.wait_for(task, 5)
    assert closed.is_set() and client.bodies() == ["replayed\n\n"]


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


class _Flow:
    write_paused = False


class ChunkedServer(Client):
    """Client, shaped as uvicorn's httptools cycle once its response started chunked: the
    stream writes live events to ``transport`` itself while ``send`` would only write."""

    def __init__(self) -> None:
        super().__init__()
        self.transport, self.flow = _Transport(), _Flow()
        self.chunked_encoding = True
        self.scope = {"method": "GET"}
        self.disconnected = self.response_complete = False


def test_a_chunk_is_written_as_uvicorns_send_would_and_refused_when_send_would_do_more() -> None:
    server = ChunkedServer()
    write = chunk_writer(server.send)
    assert write is not None
    assert write("data: é\n\n".encode())
    assert write(b"")  # nothing to write: an empty chunk would end the response
    assert server.transport.written == [b"a\r\ndata: \xc3\xa9\n\n\r\n"]
    for name, flag in (("flow", "write_paused"), ("server", "disconnected"),
                       ("server", "response_complete")):  # fmt: skip
        holder = server.flow if name == "flow" else server
        setattr(holder, flag, True)
        assert not write(b"data: x\n\n")
        setattr(holder, flag, False)
    assert len(server.transport.written) == 1


def test_no_chunk_writer_for_another_server_or_a_response_that_is_not_chunked() -> None:
    assert chunk_writer(Client().send) is None  # no transport: any other ASGI server

    async def plain(message: Message) -> None: ...

    assert chunk_writer(plain) is None
    for change in ({"chunked_encoding": False}, {"scope": {"method": "HEAD"}}):
        server = ChunkedServer()
        server.__dict__.update(change)
        assert chunk_writer(server.send) is None


async def test_live_events_are_written_to_the_connection_and_sent_while_its_buffer_is_full() -> (
    None
):
    bus, server = Bus(), ChunkedServer()
    task = await _served(_stream(bus.subscribe_all()), server)
    bus.publish(_idle(1))
    await asyncio.sleep(0)
    assert server.transport.written == [
        b"%x\r\n%b\r\n" % (len(_frame(_idle(1))), _frame(_idle(1)).encode())
    ]
    server.flow.write_paused = True  # the client reads slowly: send waits for the drain
    bus.publish(_idle(2))
    await asyncio.sleep(0)
    assert server.bodies() == ["opened\n\n", _frame(_idle(2))]
    assert len(server.transport.written) == 1
    server.gone.set()
    await asyncio.wait_for(task, 5)
