"""read_inline: a streamed request body's chunks taken in uvicorn's read callback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn

from partwire.server.inline_body import InlineLane, read_inline

PAUSE_S = 0.05  # between two chunks: the request's task is waiting by then


class Reader:
    """An ASGI app reading its one request's body with the lane: what ``take`` was handed,
    what ``receive`` returned, and a task that is busy for a while after a wake."""

    def __init__(self, busy_s: float = 0.0) -> None:
        self.taken: list[bytes] = []
        self.received: list[bytes] = []
        self.lane: InlineLane | None = None
        self.busy_s = busy_s
        self.stop_after_wake = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        self.lane = read_inline(receive, self.take)
        more = True
        while more:
            message = await receive()
            assert message["type"] == "http.request"
            self.received.append(message["body"])
            more = message["more_body"]
            if message["body"] == b"" and more:  # woken by take
                if self.stop_after_wake and self.lane is not None:
                    self.lane.stop()
                await asyncio.sleep(self.busy_s)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    def take(self, chunk: bytes) -> bool:
        self.taken.append(chunk)
        return b"wake" in chunk


@asynccontextmanager
async def _serving(app: Reader, http: str = "httptools") -> AsyncIterator[int]:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", http=http
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done()
        await asyncio.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        await task


async def _post_chunks(port: int, chunks: list[bytes]) -> bytes:
    """A chunked POST, each chunk its own write ``PAUSE_S`` after the last; the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n")
    for chunk in chunks:
        await asyncio.sleep(PAUSE_S)
        writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
    await asyncio.sleep(PAUSE_S)
    writer.write(b"0\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(65536), 10)
    writer.close()
    return answer


@pytest.mark.parametrize("http", ["httptools", "h11"])  # uvicorn's two HTTP/1.1 servers
async def test_chunks_are_taken_while_the_task_waits_and_wake_it_only_when_asked(
    http: str,
) -> None:
    app = Reader()
    async with _serving(app, http) as port:
        answer = await _post_chunks(port, [b"a", b"b", b"wake", b"c"])
    assert answer.startswith(b"HTTP/1.1 200")
    assert app.taken == [b"a", b"b", b"wake", b"c"]
    # the task woke twice: once for "wake", once for the body's end (not for a, b or c)
    assert app.received == [b"", b""]


async def test_what_arrives_while_the_task_is_busy_is_received_in_order() -> None:
    app = Reader(busy_s=3.5 * PAUSE_S)
    async with _serving(app) as port:
        await _post_chunks(port, [b"a", b"wake", b"x", b"y", b"z", b"p", b"q"])
    assert app.taken[:2] == [b"a", b"wake"]
    received = b"".join(app.received)
    # x came while the task was busy: receive returned it; whatever came once the task
    # waited again the lane took; nothing was lost or reordered
    assert received.startswith(b"x")
    assert received + b"".join(app.taken[2:]) == b"xyzpq"
    assert app.received[-1] == b""  # the end


async def test_a_chunk_past_uvicorns_high_water_mark_taken_does_not_stop_reading() -> None:
    """uvicorn pauses reading once the body it holds passes 64 KiB, and only receive
    resumes it: the lane, which takes that body without waking the task, resumes it."""
    app = Reader()
    big = b"x" * 200_000
    async with _serving(app) as port:
        answer = await _post_chunks(port, [b"a", big, b"after"])
    assert answer.startswith(b"HTTP/1.1 200")
    assert b"".join(app.taken) + b"".join(app.received) == b"a" + big + b"after"


async def test_a_stopped_lane_leaves_every_chunk_to_receive() -> None:
    app = Reader()
    app.stop_after_wake = True
    async with _serving(app) as port:
        await _post_chunks(port, [b"a", b"wake", b"b", b"c"])
    assert app.taken == [b"a", b"wake"]
    assert b"".join(app.received) == b"bc"


async def test_no_lane_for_another_server_or_a_wrapped_receive() -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    assert read_inline(receive, lambda chunk: True) is None
    app = Reader()
    async with _serving(app) as port:
        await _post_chunks(port, [b"a"])
    assert app.lane is not None  # uvicorn's own receive: the lane is installed

    class Wrapping:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def receive(self) -> Any:
            return await self.inner()

    assert read_inline(Wrapping(receive).receive, lambda chunk: True) is None
