"""The clients of the capacity benches (bench/capacity.py, bench/scale.py): they start
the sessions and note when each delta reaches a client, on GET /event or on each
session's own part-frame stream."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import httptools
import httpx


class _EventReader:
    """GET /event on a raw socket: httptools de-chunks it in C, lines are split a read at
    a time, and every delta of one read gets that read's arrival time. The client is one
    of three busy processes on the machine; a lean one measures the server, not itself."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.pending = b""
        self.lines: list[bytes] = []

    def on_body(self, body: bytes) -> None:
        lines = (self.pending + body).split(b"\n")
        self.pending = lines.pop()
        self.lines += lines


# starts each (server URL, session), at once or one every stagger_s seconds
Starter = Callable[[list[tuple[str, str]], float], Awaitable[None]]


async def prompt_all(
    prompts: list[tuple[str, str]], stagger_s: float, sent: dict[str, int] | None = None
) -> None:
    """Prompt each (server URL, session): the server's own loop answers from the model.
    ``sent``: when each session's prompt went (wall-clock ns, by session)."""
    body = {"parts": [{"type": "text", "text": "stream please"}]}

    async def prompt(http: httpx.AsyncClient, server: str, session: str, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        if sent is not None:
            sent[session] = time.time_ns()
        await http.post(f"{server}/session/{session}/prompt_async", json=body)

    async with httpx.AsyncClient(timeout=120) as http:
        await asyncio.gather(
            *(prompt(http, url, sid, i * stagger_s) for i, (url, sid) in enumerate(prompts))
        )


async def follow(
    port: int,
    prompts: list[tuple[str, str]],
    received: dict[str, int],
    stagger_s: float = 0.0,
    start: Starter = prompt_all,
    firsts: dict[str, int] | None = None,
) -> None:
    """Start each (server URL, session), at once or ``stagger_s`` apart, and read GET
    /event on ``port`` until every session has gone idle; note when each delta arrived
    (and in ``firsts``, when each session's first one did)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    events = _EventReader()
    try:
        writer.write(b"GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        while not any(b'"server.connected"' in line for line in events.lines):
            events.parser.feed_data(await reader.read(65536))
        events.lines.clear()
        # at once (K users pressing enter together) or one every stagger_s, read meanwhile
        prompting = asyncio.ensure_future(start(prompts, stagger_s))
        waiting = {sid for _, sid in prompts}
        while waiting:
            if prompting.done() and prompting.exception() is not None:
                raise RuntimeError(f"a prompt failed: {prompting.exception()}")
            data = await reader.read(262144)
            if not data:
                raise RuntimeError("the server closed GET /event")
            now = time.time_ns()
            events.parser.feed_data(data)
            for line in events.lines:
                if b'"message.part.delta"' in line:
                    delta = json.loads(line[5:])["properties"]
                    received[delta["delta"]] = now
                    if firsts is not None:
                        firsts.setdefault(delta["sessionID"], now)
                elif b'"session.idle"' in line:
                    waiting.discard(json.loads(line[5:])["properties"]["sessionID"])
            events.lines.clear()
        await prompting
    finally:
        writer.close()


# Each watcher connects from a loopback address of its own among these many (127.0.0.2 on):
# the server allows one address 256 streams at once (partwire.quotas), and each watcher
# stands for a user of their own.
WATCHER_ADDRESSES = 200


async def _watch_one(url: str, session: str, received: dict[str, int], ready: asyncio.Event,
                     go: asyncio.Event, number: int, firsts: dict[str, int]) -> None:  # fmt: skip
    """GET /session/{id}/stream (part frames) on the session's own server: note when each
    delta arrived, until the session's assistant message completes."""
    host, port = url.rsplit("//", 1)[1].split(":")
    source = (f"127.0.0.{2 + number % WATCHER_ADDRESSES}", 0)
    reader, writer = await asyncio.open_connection(host, int(port), local_addr=source)
    frames = _EventReader()
    try:
        request = f"GET /session/{session}/stream?parts=partwire HTTP/1.1\r\nHost: {host}\r\n\r\n"
        writer.write(request.encode())
        await writer.drain()
        while not any(line.startswith(b"event: reset") for line in frames.lines):
            data = await reader.read(65536)
            if not data:
                raise RuntimeError(f"the server closed the stream of {session}")
            frames.parser.feed_data(data)
            status = frames.parser.get_status_code()
            if status and status != 200:  # refused (a quota, say): the step cannot be measured
                ready.set()  # the others go on; this error ends the step at once
                text = b"\n".join([*frames.lines, frames.pending]).decode(errors="replace")
                raise RuntimeError(f"the stream of {session} was answered {status}: {text}")
        frames.lines.clear()
        ready.set()
        await go.wait()
        while True:
            data = await reader.read(65536)
            if not data:
                raise RuntimeError(f"the server closed the stream of {session}")
            now = time.time_ns()
            frames.parser.feed_data(data)
            for line in frames.lines:
                if line.startswith(b"data: ") and b'"part_delta"' in line:
                    delta = json.loads(line[6:]).get("delta")
                    if delta is not None:
                        received[delta] = now
                        firsts.setdefault(session, now)
                elif b'"message_complete"' in line and b'"role":"assistant"' in line:
                    return
            frames.lines.clear()
    finally:
        writer.close()


async def watch_sessions(
    prompts: list[tuple[str, str]],
    received: dict[str, int],
    stagger_s: float = 0.0,
    start: Starter = prompt_all,
    firsts: dict[str, int] | None = None,
) -> None:
    """As ``follow``, but each session is watched by a client of its own, on the server it
    was prompted through (a sticky load balancer's users, each with a session open)."""
    go = asyncio.Event()
    firsts_ = {} if firsts is None else firsts
    readies = [asyncio.Event() for _ in prompts]
    watchers = [
        asyncio.create_task(_watch_one(url, sid, received, ready, go, number, firsts_))
        for number, ((url, sid), ready) in enumerate(zip(prompts, readies, strict=True))
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 60)
        go.set()
        await asyncio.gather(
            start(prompts, stagger_s), asyncio.wait_for(asyncio.gather(*watchers), 300)
        )
    finally:
        for watcher in watchers:
            watcher.cancel()
