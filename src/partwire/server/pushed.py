"""An SSE stream whose live part is written as the bus delivers it, with no task per event.

A streamed response is usually a task that waits on its subscription: each event wakes it,
resumes a chain of async generators (the stream's, the cursor's, Starlette's) and awaits
the ASGI ``send``. Per event and per stream that is a task's wake-up and about ten
coroutine frames resumed: with a part-frame client per session, once per client per
streamed token.

Here the opening (the connected event, a replay, a snapshot) is sent by the response's
task as before. Then the subscription calls back once per loop iteration with whatever
arrived (all of one commit's events at once); the callback skips what the opening already
sent (``cursor.unsent``), renders the rest (the adapter's fold: synchronous) and hands the
text to the ASGI ``send``, run at once. The send does not wait in the usual case (uvicorn
writes to the socket and returns); when it does (the client reads slowly and the socket's
buffer is full), it is resumed when what it waits for is done, and events meanwhile stay
in the subscription's bounded queue, merged or ended with "too far behind" as before.
Under uvicorn even the send is skipped while it would only write (``chunk_writer``).
The response's task only waits for the stream's end: the client gone, the subscription
closed (shutdown, revoked access, a client too far behind), or a failed send.

``SentStream`` is the plain kind, whose task sends every piece: for a turn stream (it
ends with its turn) and a filtered ``/event`` (its live events need an await). Neither
cancels a task when the client goes (design 8d).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Sequence
from types import CoroutineType
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from partwire.bus import Subscription
from partwire.schema.event import Event
from partwire.server.cursor import unsent

Render = Callable[[list[Event]], str]

# The ASGI server's own ``send``, kept in the scope by ``keeping_server_send`` (outside every
# middleware). A stream's live events go straight to it: once the response has started, each
# layer between (Starlette's error handlers, the access log) passes a body message through
# unchanged, and none of ours compresses or rewrites bodies. Per client per token that is
# three coroutine levels less. The start and the opening still go through the whole stack.
SERVER_SEND = "partwire.server_send"


def keeping_server_send(app: ASGIApp) -> ASGIApp:
    async def kept(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[SERVER_SEND] = send
        try:
            await app(scope, receive, send)
        finally:  # the send's connection cycle holds the scope: no reference cycle
            scope.pop(SERVER_SEND, None)

    return kept


class Opening:
    """What a stream sends before it goes live, and the place in the log it reached."""

    def __init__(self) -> None:
        self.sent: str | None = None  # events up to here were sent by the opening


class PushedStream(Response):
    """A streamed response: ``opening`` sent by the task, then ``subscription``'s events
    pushed as they arrive, each batch ``render``-ed; ``heartbeat`` after ``heartbeat_s``
    without anything sent; ``closing`` (given the last place sent) when the subscription
    ended the stream. ``lifetime()`` is entered for the whole response, once it is sent
    (quotas, presence, revocation), and ``subscription`` is closed at its end."""

    media_type = "text/event-stream"

    def __init__(
        self,
        *,
        subscription: Subscription,
        opening: Callable[[Opening], AsyncGenerator[str, None]],
        render: Render,
        heartbeat: Callable[[], str],
        heartbeat_s: float,
        headers: dict[str, str],
        lifetime: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
        closing: Callable[[Subscription, str | None], str] | None = None,
    ) -> None:
        self.status_code, self.background = 200, None
        self.init_headers(headers)  # no body: no content-length, as a streamed response
        self.subscription = subscription
        self.opening = opening
        self.render_events = render
        self.heartbeat = heartbeat
        self.heartbeat_s = heartbeat_s
        self.lifetime = lifetime or contextlib.nullcontext
        self.closing = closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            with self.lifetime():
                await self._respond(receive, send, scope.get(SERVER_SEND, send))
        finally:
            self.subscription.close()

    async def _respond(self, receive: Receive, send: Send, server_send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(start)
        # from the start: a client that goes during a long replay ends it (an ASGI server's
        # send after the client went returns at once, and the replay would run on)
        listening = asyncio.ensure_future(_disconnect(receive))
        try:
            opened = Opening()
            if await send_while_connected(self.opening(opened), listening, send):
                await self._live(listening, send, server_send, opened)
        finally:
            listening.cancel()

    async def _live(
        self, listening: asyncio.Future[None], send: Send, server_send: Send, opened: Opening
    ) -> None:
        live = _Live(self, server_send, opened.sent)
        try:
            await asyncio.wait([listening, live.ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            listening.cancel()
            live.stop()
        if listening.done() and not listening.cancelled():
            if live.ended.done():
                live.ended.exception()  # retrieved: a send that failed as the client went
            return  # the client went: nothing more can reach it
        live.ended.result()  # a failed send or render is raised here, in the request's task
        await live.finished()
        if self.closing is not None and (text := self.closing(self.subscription, live.sent)):
            await send(_body(text))
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def send_while_connected(
    pieces: AsyncGenerator[str, None], listening: asyncio.Future[None], send: Send
) -> bool:
    """Each piece sent, until the client goes (``listening`` done: nothing more can reach
    it), when ``pieces`` is closed there. No task is cancelled for it: a send that waits
    for a client that went returns (the ASGI server's) and the next piece is not made.
    Whether every piece was sent."""
    async with contextlib.aclosing(pieces):
        async for text in pieces:
            if listening.done():
                return False
            await send(_body(text))
    return not listening.done()


class SentStream(Response):
    """A streamed response of ``pieces``, which wait for ``subscription``'s live events
    between pieces; it ends when they end or the client goes. A client that goes closes
    the subscription, which ends their wait; nothing is cancelled. (Starlette's
    StreamingResponse cancels the stream's task instead: the cancelled send's traceback
    keeps its frames, with the piece they held, in reference cycles until a full
    collection, which a server's thresholds make rare, ``runner.SERVER_GC_THRESHOLDS``.)"""

    media_type = "text/event-stream"

    def __init__(
        self,
        pieces: AsyncGenerator[str, None],
        subscription: Subscription,
        headers: dict[str, str],
    ) -> None:
        self.status_code, self.background = 200, None
        self.init_headers(headers)  # no body: no content-length, as a streamed response
        self.pieces = pieces
        self.subscription = subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        listening = asyncio.ensure_future(_disconnect(receive))
        listening.add_done_callback(lambda _: self.subscription.close())
        try:
            if await send_while_connected(self.pieces, listening, send):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listening.cancel()


class _Live:
    """The live part of one PushedStream: the subscription's callback and the sends it
    runs. Everything here runs on the loop's thread, in the request's context."""

    def __init__(self, stream: PushedStream, send: Send, sent: str | None) -> None:
        self.stream = stream
        self.send = send
        self.sent = sent
        self.loop = asyncio.get_running_loop()
        self.ended: asyncio.Future[None] = self.loop.create_future()
        self.sending: Coroutine[Any, Any, None] | None = None
        self.idle: asyncio.Future[None] | None = None  # finished(): the send in progress
        self.last_sent = self.loop.time()
        self.beat: asyncio.TimerHandle | None = None
        self.stopped = False  # the response's task sends from here on, or nobody does
        self.write = chunk_writer(send)
        self._arm(stream.heartbeat_s)
        stream.subscription.push_to(self.flush, contextvars.copy_context())
        self.flush()  # what arrived while the opening was sent

    def flush(self) -> None:
        if self.sending is not None or self.ended.done() or self.stopped:
            return  # the send in progress flushes again once it is done
        subscription = self.stream.subscription
        try:
            batch = subscription.drain()
            if batch:
                fresh, self.sent = unsent(batch, self.sent)
                if fresh and (text := self.stream.render_events(fresh)):
                    self._send(text)
        except Exception as exc:  # a render that failed: the request's task raises it
            self._end(exc)
            return
        if subscription.closed and self.sending is None:
            self._end()

    def _send(self, text: str) -> None:
        self.last_sent = self.loop.time()
        if self.write is not None and self.write(text.encode()):
            return
        sent = self.send(_body(text))
        if not isinstance(sent, CoroutineType):  # an ASGI server's send that is no coroutine
            sent = _awaited(sent)
        self.sending = sent
        self._drive(None, resumed=False)

    def _drive(self, _: object, *, resumed: bool = True) -> None:
        """Run the send until it finishes or waits; resumed when what it waits for is
        done (as a task would, without being one)."""
        sending = self.sending
        assert sending is not None
        try:
            waiting = sending.send(None)
        except StopIteration:
            self.sending = None
            if self.idle is not None and not self.idle.done():
                self.idle.set_result(None)
            if resumed:  # events may have arrived while it waited
                self.flush()
            return
        except BaseException as exc:  # the client is gone, or the transport failed
            self.sending = None
            self._end(exc)
            return
        if isinstance(waiting, asyncio.Future):
            waiting.add_done_callback(self._drive)
        else:  # a bare yield (asyncio.sleep(0)): the next turn of the loop
            self.loop.call_soon(self._drive, None)

    def _arm(self, delay: float) -> None:
        self.beat = self.loop.call_later(delay, self._heartbeat)

    def _heartbeat(self) -> None:
        if self.ended.done() or self.stopped:
            return
        quiet = self.loop.time() - self.last_sent
        if self.sending is not None:
            quiet = 0.0  # a send still waits for the client: a whole period later
        elif quiet >= self.stream.heartbeat_s:
            self._send(self.stream.heartbeat())
            quiet = 0.0
        self._arm(max(self.stream.heartbeat_s - quiet, 0.001))

    def _end(self, exc: BaseException | None = None) -> None:
        if self.ended.done():
            return
        if exc is None:
            self.ended.set_result(None)
        else:
            self.ended.set_exception(exc)

    def stop(self) -> None:
        self.stopped = True
        if self.beat is not None:
            self.beat.cancel()
        self.stream.subscription.push_to(None, None)

    async def finished(self) -> None:
        """Once the send in progress (if any) has finished."""
        if self.sending is not None:
            self.idle = self.loop.create_future()
            await self.idle


async def _awaited(awaitable: Awaitable[None]) -> None:
    await awaitable


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def chunk_writer(send: Send) -> Callable[[bytes], bool] | None:
    """A body chunk written straight to the connection, for uvicorn's HTTP/1.1 (httptools)
    server once its response has started chunked: what its ``send`` does for a body
    message, without the message, the coroutine and the checks each time (per client per
    token). The writer returns False, writing nothing, whenever ``send`` would do more
    than write: the socket's buffer is full (``send`` waits), the client is gone or the
    response ended; the caller then sends as usual. None for any other server."""
    cycle: Any = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    flow = getattr(cycle, "flow", None)
    if (
        transport is None
        or flow is None
        or getattr(cycle, "chunked_encoding", None) is not True
        or getattr(cycle, "scope", {}).get("method") == "HEAD"
        or not all(hasattr(cycle, name) for name in ("disconnected", "response_complete"))
        or not hasattr(flow, "write_paused")
    ):
        return None

    def write(body: bytes) -> bool:
        if flow.write_paused or cycle.disconnected or cycle.response_complete:
            return False
        if body:  # an empty chunk would end the response
            transport.write(b"%x\r\n%b\r\n" % (len(body), body))
        return True

    return write


def _body(text: str) -> Message:
    return {"type": "http.response.body", "body": text.encode(), "more_body": True}


def render_each(frame: Callable[[Event], str]) -> Render:
    """A renderer that frames each event on its own and joins them."""

    def render(events: Sequence[Event]) -> str:
        if len(events) == 1:  # the usual live batch (a paced token)
            return frame(events[0])
        return "".join([frame(event) for event in events])

    return render
