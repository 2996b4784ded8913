"""A background SSE reader for tests that check the exact events a client sees, and a
stalled one that never reads."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from types import TracebackType
from typing import Any

import httpx

Event = dict[str, Any]


class Watch:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.events: list[Event] = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watch:
        self._task = asyncio.create_task(self._read())
        await self.wait_for("server.connected")
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _read(self) -> None:
        async with self.http.stream("GET", "/event", timeout=None) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    async with self._changed:
                        self.events.append(json.loads(line[5:]))
                        self._changed.notify_all()

    async def wait_for(
        self, event_type: str, where: Callable[[Event], bool] = lambda e: True, within: float = 10
    ) -> Event:
        def found() -> Event | None:
            for event in self.events:
                if event["type"] == event_type and where(event):
                    return event
            return None

        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: found() is not None)
        event = found()
        assert event is not None
        return event

    def sequence(
        self, session_id: str, *, keep: Callable[[Event], bool] | None = None
    ) -> list[str]:
        """A compact trace of one session's events: type plus the detail that matters."""
        out = []
        for event in self.events:
            props = event["properties"]
            if props.get("sessionID") != session_id or (keep and not keep(event)):
                continue
            out.append(describe(event))
        return out


def describe(event: Event) -> str:
    props = event["properties"]
    kind = event["type"]
    if kind == "message.part.updated":
        part = props["part"]
        status = part.get("state", {}).get("status")
        return f"part {part['type']}" + (f" {status}" if status else "")
    if kind == "message.updated":
        info = props["info"]
        return f"message {info['role']}" + (
            " done" if info.get("time", {}).get("completed") else ""
        )
    if kind == "session.status":
        return f"status {props['status']['type']}"
    if kind == "permission.asked":
        return f"permission.asked {props['permission']}"
    if kind == "permission.replied":
        return f"permission.replied {props['reply']}"
    return kind


def stalled_sse(url: str, path: str = "/event") -> socket.socket:
    """A raw SSE connection to ``path`` with a tiny receive buffer that we then stop
    reading."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    return sock
