"""HTTP/1.1 for the provider SDKs: asyncio protocols and httptools' C response parser.

The SDKs' default transport (httpcore over anyio, h11 in Python) runs a stack of Python for
every chunk it receives: a cancel scope, h11's state machine, a pause and resume of the
socket. A streamed token is a chunk, so that stack was about a fifth of the server's CPU per
token. Here a connection is an asyncio Protocol: httptools parses and de-chunks the response
in C and hands the body to a buffer that the response stream reads, one wake-up per chunk.

It covers what the provider clients send: HTTP/1.1 over TCP or TLS, keep-alive, the
request's connect and read timeouts. Anything else (a proxy named in the environment, a
scheme other than http(s), HEAD) goes to httpx2's own transport, unchanged. A read timeout
is watched by one timer per connection, re-armed only when it fires, not one per chunk.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import httptools
import httpx2

Origin = tuple[str, str, int]
BODY_EXTENSION = "partwire.body"  # the response's _Body, for readers that skip httpx's layers
# A read is parsed 16 KiB at a time, and the socket stops being read once 32 KiB of body
# wait for the reader. A burst that arrived whole (a fast model, 10,000 tokens at once) is
# then parsed and decoded a slice at a time: the first tokens go on while the rest is still
# held, instead of waiting behind the parsing of 256 KiB (one read, about 4,000 chunks).
# Reads themselves go through the plain Protocol's data_received: asyncio's BufferedProtocol
# costs two more calls into Python a read, about 1.4 µs of a paced token's 12.
_PARSE_SLICE = 16 * 1024
_HIGH_WATER = 32 * 1024
_MAX_IDLE = 16  # kept-alive connections per origin
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; one response at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, origin: Origin) -> None:
        self.loop = loop
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.in_use = False
        self._reset()

    def _reset(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.complete = False
        self.keep_alive = False
        self.until_eof = False
        self.received = False
        self.error: Exception | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.paused = False
        self.held = memoryview(b"")  # read but not yet parsed (a burst), parsed a slice at a time
        self.waiter: asyncio.Future[None] | None = None
        self.wait_started = 0.0
        # the reader's consumer, given the body's bytes in the read that brought them while
        # the reader waits (True: wake the reader, whose next_chunk then returns b"")
        self.direct: Callable[[bytes], bool] | None = None
        self.nudged = False
        self.read_timeout: float | None = None
        self.watchdog: asyncio.TimerHandle | None = None

    # ---- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        if not self.in_use:  # an idle connection is not spoken to: it is no longer usable
            self.close()
            return
        self.received = True
        if len(data) <= _PARSE_SLICE and not self.held:
            self._parse(data)
            return
        self.held = memoryview(bytes(self.held) + data if self.held else data)
        self._parse_held()

    def _parse(self, data: bytes | memoryview) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx2.RemoteProtocolError(f"invalid HTTP response: {exc}"))
            self.close()

    def _parse_held(self) -> None:
        """The next slice of a burst; the socket is not read while any of it is held."""
        piece, self.held = self.held[:_PARSE_SLICE], self.held[_PARSE_SLICE:]
        if self.held and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._parse(piece)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.held:  # what was read goes before the end
            held, self.held = self.held, memoryview(b"")
            self._parse(held)
        self.closed = True
        if not self.in_use or self.complete:
            return
        if self.headers_done and self.until_eof and exc is None:
            self.complete = True  # a body without length or chunks ends with the connection
            self._wake()
            return
        if not self.received:
            error: Exception = httpx2.RemoteProtocolError(
                "Server disconnected without sending a response."
            )
        else:
            error = httpx2.ReadError(str(exc) if exc else "peer closed connection mid-response")
        if exc is not None:
            error.__cause__ = exc
        self._fail(error)

    # ---- httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if 100 <= self.status < 200:  # an interim response; the real one follows
            self.headers = []
            return
        names = {name.lower() for name, _ in self.headers}
        self.until_eof = b"content-length" not in names and b"transfer-encoding" not in names
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        waiter, direct = self.waiter, self.direct
        waits = waiter is not None and not waiter.done() and not self.chunks and not self.held
        if direct is not None and waits:
            assert waiter is not None
            self.wait_started = self.loop.time()  # the provider spoke: the read timeout restarts
            if direct(body):
                self.nudged = True
                waiter.set_result(None)
            return
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.headers_done:
            self.keep_alive = self.parser.should_keep_alive()  # llhttp answers only here
            self.complete = True
            self._wake()

    # ---- the reading side

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    async def _wait(self) -> None:
        self.waiter = self.loop.create_future()
        self.wait_started = self.loop.time()
        if self.read_timeout is not None and self.watchdog is None:
            self.watchdog = self.loop.call_at(self.wait_started + self.read_timeout, self._watch)
        try:
            await self.waiter
        finally:
            self.waiter = None

    def _watch(self) -> None:
        """The read timeout: fires at most once per timeout period, not once per chunk."""
        self.watchdog = None
        if self.waiter is None or self.read_timeout is None:
            return
        due = self.wait_started + self.read_timeout
        if self.loop.time() >= due:
            self._fail(httpx2.ReadTimeout("the provider sent nothing for the read timeout"))
            self.close()
        else:
            self.watchdog = self.loop.call_at(due, self._watch)

    async def response_head(self) -> None:
        while not self.headers_done:
            if self.error is not None:
                raise self.error
            await self._wait()

    async def next_chunk(self) -> bytes | None:
        """The body bytes received since the last call (None at the body's end; b"" when
        ``direct`` took them and asked for the reader)."""
        chunks = self.chunks
        while not chunks:
            if self.held:
                self._parse_held()
                continue
            if self.complete:
                return None
            if self.error is not None:
                raise self.error
            if self.nudged:  # the consumer took the bytes, and has something for the reader
                self.nudged = False
                return b""
            await self._wait()
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self.buffered = 0
        if self.paused and not self.held and self.transport is not None:  # read all: resume
            self.paused = False
            self.transport.resume_reading()
        return data

    # ---- life cycle

    def begin(self, read_timeout: float | None) -> None:
        self._reset()
        self.in_use = True
        self.read_timeout = read_timeout
        if self.closed:  # lost while idle, after it was taken
            self.error = httpx2.RemoteProtocolError(
                "Server disconnected without sending a response."
            )

    @property
    def reusable(self) -> bool:
        return (
            not self.closed
            and self.complete
            and self.error is None
            and not self.chunks
            and self.keep_alive
        )

    def finish(self) -> None:
        self.in_use = False
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None

    def close(self) -> None:
        self.finish()
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _Body(httpx2.AsyncByteStream):
    """A response's body, read off its connection; the connection is kept alive for
    the next request only when the body was read to its end."""

    def __init__(self, connection: _Connection, transport: FastTransport) -> None:
        self._connection = connection
        self._transport = transport
        self._done = False
        # the body bytes received since the last call (None at the end), read off the
        # connection itself: no level between per chunk. The reader then calls ``aclose``
        # (Response.aclose does), which gives the connection back.
        self.next_chunk: Callable[[], Awaitable[bytes | None]] = connection.next_chunk

    async def chunks(self) -> AsyncIterator[bytes]:
        connection = self._connection
        try:
            while (chunk := await connection.next_chunk()) is not None:
                yield chunk
        finally:
            await self.aclose()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.chunks()

    def take_directly(self, direct: Callable[[bytes], bool] | None) -> None:
        """From now on (until None, or the body's end) bytes that arrive while the reader
        waits go to ``direct`` in the read that brought them, not to a buffer and a
        wake-up; when it returns True the reader wakes and ``next_chunk`` returns b""."""
        self._connection.direct = direct

    async def aclose(self) -> None:
        if self._done:
            return
        self._done = True
        self._connection.direct = None
        self._transport.release(self._connection)


def _request_head(request: httpx2.Request, body: bytes) -> bytes:
    target = request.url.raw_path or b"/"
    lines = [request.method.encode("ascii") + b" " + target + b" HTTP/1.1"]
    sized = False
    for name, value in request.headers.raw:
        lowered = name.lower()
        if lowered == b"transfer-encoding":
            continue  # the body was read whole: it goes with its length
        if lowered == b"content-length":
            sized = True
        lines.append(name + b": " + value)
    if not sized and (body or request.method in ("POST", "PUT", "PATCH")):
        lines.append(b"Content-Length: " + str(len(body)).encode("ascii"))
    return b"\r\n".join(lines) + b"\r\n\r\n"


class FastTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport for provider clients (see the module's docstring)."""

    def __init__(self, fallback: httpx2.AsyncBaseTransport | None = None) -> None:
        self._fallback = fallback or httpx2.AsyncHTTPTransport()
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme not in _DEFAULT_PORTS or request.method == "HEAD":
            return await self._fallback.handle_async_request(request)
        origin: Origin = (url.scheme, url.host, url.port or _DEFAULT_PORTS[url.scheme])
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        body = await request.aread()
        message = _request_head(request, body) + body
        connection = await self._send(origin, message, timeouts)
        stream = _Body(connection, self)
        return httpx2.Response(
            connection.status,
            headers=connection.headers,
            stream=stream,
            extensions={"http_version": b"HTTP/1.1", BODY_EXTENSION: stream},
        )

    async def _send(self, origin: Origin, message: bytes, timeouts: dict[str, Any]) -> _Connection:
        """Write the request and wait for the response's head; a kept-alive connection the
        server closed before answering is retried once on a new one."""
        while True:
            connection = self._take_idle(origin)
            reused = connection is not None
            if connection is None:
                connection = await self._connect(origin, timeouts.get("connect"))
            connection.begin(timeouts.get("read"))
            assert connection.transport is not None
            connection.transport.write(message)
            try:
                await connection.response_head()
            except httpx2.RemoteProtocolError:
                connection.close()
                if reused and not connection.received:
                    continue
                raise
            except BaseException:
                connection.close()
                raise
            return connection

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            transport = connection.transport
            if not connection.closed and transport is not None and not transport.is_closing():
                return connection
        return None

    async def _connect(self, origin: Origin, limit_s: float | None) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        context = self._ssl_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(limit_s):
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop, origin),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                )
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"connecting to {host}:{port} timed out") from exc
        except OSError as exc:  # refused, unreachable, a failed TLS handshake, no such host
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = httpx2.create_ssl_context()
        return self._ssl

    def release(self, connection: _Connection) -> None:
        if not connection.reusable:
            connection.close()
            return
        connection.finish()
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) >= _MAX_IDLE:
            connection.close()
        else:
            idle.append(connection)

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        await self._fallback.aclose()


def provider_http_client(**options: Any) -> httpx2.AsyncClient | None:
    """An httpx2 client on FastTransport for an SDK, or None (the SDK's own default) when
    the environment names a proxy, which only httpx2's transport knows how to use."""
    from httpx2._utils import get_environment_proxies

    if get_environment_proxies():
        return None
    return httpx2.AsyncClient(transport=FastTransport(), **options)
