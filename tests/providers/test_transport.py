"""FastTransport against scripted raw HTTP/1.1 servers, on asyncio's loop and on uvloop's
(the server runs on uvloop, whose transports are not asyncio.Transport subclasses)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import httpx2
import pytest
import uvloop

from partwire.config import ProviderConfig
from partwire.providers.library import classify
from partwire.providers.openai_chat import ChatClient, OpenAIChatModel
from partwire.providers.stream import NOT_TAKEN, ModelRequest, StreamEvent, UserTurn
from partwire.providers.transport import BODY_EXTENSION, FastTransport, provider_http_client
from tests.providers.mock_openai import text as mock_text

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, None]], None]:
    def runner(coro: Coroutine[Any, Any, None]) -> None:
        with asyncio.Runner(loop_factory=LOOPS[request.param]) as r:
            r.run(coro)

    return runner


class Server:
    """A loopback server that hands each connection to ``handler``; counts connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await reader.readexactly(length)
        self.requests.append(head + body)
        return body


def sized(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=FastTransport(), timeout=5)


def test_keep_alive_reuses_one_connection_and_sends_the_body(run: Any) -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                body = await server.read_request(reader)
                writer.write(sized(b"echo:" + body))
                await writer.drain()

        async with Server(handler) as server, client() as http:
            for n in range(3):
                response = await http.post(server.url + "/v1/x?q=1", json={"n": n})
                assert response.status_code == 200
                assert response.text == f'echo:{{"n":{n}}}'
        assert server.connections == 1
        assert server.requests[0].startswith(b"POST /v1/x?q=1 HTTP/1.1\r\n")
        assert b"content-length: 7" in server.requests[0].lower()

    run(main())


def test_a_chunked_stream_arrives_chunk_by_chunk(run: Any) -> None:
    async def main() -> None:
        sent = [b"data: one\n\n", b"data: two\n\n", b"data: three\n\n"]

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for chunk in sent:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                await asyncio.sleep(0.02)  # each chunk alone on the wire
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            await reader.read()

        async with Server(handler) as server, client() as http:
            async with http.stream("POST", server.url, content=b"{}") as response:
                got = [chunk async for chunk in response.aiter_raw()]
        assert got == sent

    run(main())


def test_a_body_without_length_ends_with_the_connection(run: Any) -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it")
            await writer.drain()

        async with Server(handler) as server, client() as http:
            first = await http.get(server.url)
            second = await http.get(server.url)
        assert first.text == second.text == "all of it"
        assert server.connections == 2

    run(main())


def test_a_kept_alive_connection_the_server_closed_is_retried_on_a_new_one(run: Any) -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(sized(b"once"))  # says nothing of closing, then closes
            await writer.drain()

        async with Server(handler) as server, client() as http:
            assert (await http.get(server.url)).text == "once"
            await asyncio.sleep(0.05)  # the close reaches the client while it is idle
            assert (await http.get(server.url)).text == "once"
        assert server.connections == 2

    run(main())


def test_a_stalled_response_is_a_read_timeout(run: Any) -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            await writer.drain()
            await asyncio.sleep(5)

        async with Server(handler) as server:
            async with httpx2.AsyncClient(transport=FastTransport(), timeout=0.3) as http:
                async with http.stream("GET", server.url) as response:
                    started = time.monotonic()
                    chunks = response.aiter_raw()
                    assert await chunks.__anext__() == b"hello"
                    with pytest.raises(httpx2.ReadTimeout):
                        await chunks.__anext__()
                    assert 0.25 < time.monotonic() - started < 2

    run(main())


def test_a_refused_connection_is_a_connect_error_classify_names(run: Any) -> None:
    async def main() -> None:
        async with Server(lambda r, w: asyncio.sleep(0)) as server:
            url = server.url
        async with client() as http:
            with pytest.raises(httpx2.ConnectError) as caught:
                await http.get(url)
        error = classify(caught.value, "mock", url)
        assert error.kind == "unreachable"
        assert "connection refused" in error.message

    run(main())


def test_a_connection_dropped_mid_body_is_a_read_error(run: Any) -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
            await writer.drain()

        async with Server(handler) as server, client() as http:
            with pytest.raises(httpx2.ReadError):
                await http.get(server.url)
        error = classify(httpx2.ReadError("x"), "mock")
        assert error.retryable

    run(main())


def test_a_body_left_unread_closes_its_connection(run: Any) -> None:
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                await server.read_request(reader)
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
                await writer.drain()
                await asyncio.sleep(0.05)
                writer.write(b"0\r\n\r\n")
                await writer.drain()

        async with Server(handler) as server, client() as http:
            async with http.stream("GET", server.url) as response:
                async for _ in response.aiter_raw():
                    break  # an aborted stream
            assert (await http.get(server.url)).text == "abc"
        assert server.connections == 2

    run(main())


def test_a_large_body_is_delivered_whole_in_slices_through_back_pressure(run: Any) -> None:
    async def main() -> None:
        payload = bytes(range(256)) * 8192  # 2 MiB, past the high-water mark

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(sized(payload))
            await writer.drain()

        async with Server(handler) as server, client() as http:
            async with http.stream("GET", server.url) as response:
                received = bytearray()
                sizes = []
                async for chunk in response.aiter_raw():
                    received += chunk
                    sizes.append(len(chunk))
                    await asyncio.sleep(0)
        assert bytes(received) == payload
        assert max(sizes) <= 64 * 1024  # handed on a slice at a time, never the whole burst

    run(main())


def test_a_burst_then_the_connections_end_is_delivered_whole(run: Any) -> None:
    """Reads far larger than a parse slice, then the end of the connection (a body without
    length): what was read is parsed a slice at a time and all of it reaches the reader
    before the end does."""

    async def main() -> None:
        payload = bytes(range(256)) * 2048  # 512 KiB: more than one read, many slices

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + payload)
            await writer.drain()

        async with Server(handler) as server, client() as http:
            async with http.stream("GET", server.url) as response:
                await asyncio.sleep(0.2)  # the whole body and the close arrive meanwhile
                received = b"".join([chunk async for chunk in response.aiter_raw()])
        assert received == payload

    run(main())


def test_a_proxy_in_the_environment_leaves_the_sdk_its_own_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(provider_http_client(), httpx2.AsyncClient)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert provider_http_client() is None


def test_bytes_that_arrive_while_the_reader_waits_go_to_its_consumer_in_that_read(
    run: Any,
) -> None:
    """``take_directly``: a chunk that arrives while the reader waits is given to the
    consumer at once, not buffered; when the consumer asks for the reader, its read
    returns b"". Chunks keep coming for longer than the read timeout: each restarts it."""

    async def main() -> None:
        sent = [b"one", b"two", b"three", b"four"]

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for chunk in sent:
                await asyncio.sleep(0.15)  # the reader waits for each
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            await reader.read()

        given: list[bytes] = []

        def direct(data: bytes) -> bool:
            given.append(data)
            return data == b"three"  # wake the reader for this one only

        async with Server(handler) as server:
            async with httpx2.AsyncClient(transport=FastTransport(), timeout=0.4) as http:
                async with http.stream("POST", server.url, content=b"{}") as response:
                    body = response.extensions[BODY_EXTENSION]
                    body.take_directly(direct)
                    assert await body.next_chunk() == b""  # woken at "three"
                    assert given == [b"one", b"two", b"three"]
                    body.take_directly(None)
                    assert await body.next_chunk() == b"four"  # buffered as usual again
                    assert await body.next_chunk() is None
        assert given == [b"one", b"two", b"three"]

    run(main())


def test_a_chat_streams_consumer_takes_deltas_in_the_read_and_the_rest_keeps_its_order(
    run: Any,
) -> None:
    """The chat model's events, some taken in the read (providers/stream.py's TakeNow):
    what the consumer leaves comes through the stream in order, what it owes is awaited
    before the next event, and what it raises is raised in the reader."""

    async def main() -> None:
        items = mock_text("a", "b", "c", "d", "e", "f")

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for item in items:
                await asyncio.sleep(0.03)  # the reader waits for each
                data = f"data: {json.dumps(item)}\n\n".encode()
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (14, b"data: [DONE]\n\n"))
            await writer.drain()
            await reader.read()

        log: list[str] = []

        async def owed() -> None:
            log.append("owed")

        def take_now(event: StreamEvent) -> object:
            delta = getattr(event, "delta", None)
            if event.type != "text-delta" or delta == "e":
                return NOT_TAKEN  # e and all after it come through the stream
            log.append(f"took {delta}")
            if delta == "c":
                raise RuntimeError("c broke")
            return owed() if delta == "b" else None

        async with Server(handler) as server:
            config = ProviderConfig(id="mock", api="openai-compatible", base_url=server.url)
            model = OpenAIChatModel(ChatClient(config), "m")
            request = ModelRequest(system="", messages=(UserTurn(text="hi"),), tools=())
            with pytest.raises(RuntimeError, match="c broke"):
                async for event in model.stream_taking(request, take_now):
                    log.append(event.type if event.type != "text-delta" else "delta")
            await model.client.close()
        # a is the text's first event (its start comes through); b is taken, and what it
        # owes awaited before c's error is raised
        assert log == [
            "start", "start-step", "text-start", "delta", "took b", "owed", "took c",
        ]  # fmt: skip

    run(main())


def test_chunks_that_arrive_after_the_consumer_left_events_come_after_them(run: Any) -> None:
    """One read brings three chunks: the consumer leaves the first's events (a part's
    start), the reader is woken, and the other two are buffered meanwhile: the reader
    gets the left events first, then the buffered ones, then takes the next in its read."""

    async def main() -> None:
        items = mock_text("a", "b", "c", "d", "e")

        def sse(item: dict[str, Any]) -> bytes:
            data = f"data: {json.dumps(item)}\n\n".encode()
            return b"%x\r\n%s\r\n" % (len(data), data)

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"".join(sse(item) for item in items[:3]))  # one read: a, b, c
            for item in items[3:]:
                await writer.drain()
                await asyncio.sleep(0.05)
                writer.write(sse(item))
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (14, b"data: [DONE]\n\n"))
            await writer.drain()
            await reader.read()

        seen: list[str] = []

        def take_now(event: StreamEvent) -> object:
            if event.type != "text-delta":
                return NOT_TAKEN
            seen.append(f"took {event.delta}")  # type: ignore[union-attr]
            return None

        async with Server(handler) as server:
            config = ProviderConfig(id="mock", api="openai-compatible", base_url=server.url)
            model = OpenAIChatModel(ChatClient(config), "m")
            request = ModelRequest(system="", messages=(UserTurn(text="hi"),), tools=())
            async for event in model.stream_taking(request, take_now):
                if event.type in ("text-start", "text-delta"):
                    seen.append(getattr(event, "delta", event.type))
            await model.client.close()
        assert seen == ["text-start", "a", "b", "c", "took d", "took e"]

    run(main())
