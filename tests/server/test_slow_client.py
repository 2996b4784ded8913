"""A stalled SSE client: its deltas are merged, it is told to reload, others are unaffected."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import replace
from typing import Any

import httpx

from partwire.client.http import PartwireClient
from partwire.client.reducer import ClientState, reduce
from partwire.config import Settings
from partwire.server.app import create_app
from partwire.server.runner import serve_in_background
from tests.server.watch import stalled_sse

LIMIT = 200


def _read_all(sock: socket.socket) -> list[dict[str, Any]]:
    sock.settimeout(2)
    data = bytearray()
    try:
        while chunk := sock.recv(65536):
            data.extend(chunk)
    except TimeoutError:
        pass
    events = []
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("data: "):
            events.append(json.loads(line[6:]))
    return events


async def test_a_stalled_client_gets_merged_deltas_while_others_get_every_one(
    settings: Settings,
) -> None:
    tight = replace(settings, subscriber_queue=LIMIT)
    app = create_app(tight)
    async with serve_in_background(tight, app=app) as url, PartwireClient(url) as fast:
        stalled = stalled_sse(url)
        events = fast.events()
        assert (await anext(events)).type == "server.connected"
        session = await fast.create_session()
        peaks: list[int] = []
        await fast.prompt_async(session.id, "long 50000")
        state, kinds = ClientState(), set()
        async for event in events:
            peaks.extend(s.peak for s in app.state.runtime.bus._subscribers)
            reduce(state, event)
            kinds.add(event.type)
            if event.type == "session.idle" and event.session_id == session.id:
                break
        full = (await fast.messages(session.id))[-1].parts
        text = next(p.text for p in full if p.type == "text")  # type: ignore[union-attr]
        received = await asyncio.to_thread(_read_all, stalled)
        stalled.close()
    # the client that keeps reading ends with the same text and was never told to reload
    streamed = next(p for p in state.messages(session.id)[-1].parts if p.type == "text")
    assert streamed.text == text  # type: ignore[union-attr]
    assert "server.resync" not in kinds
    assert max(peaks) <= LIMIT  # no subscriber's queue grew past its bound
    # deltas are mergeable: the stalled client gets fewer, larger ones and is never told
    # to reload, and nothing is lost: joined, they are the whole text
    deltas = [e for e in received if e["type"] == "message.part.delta"]
    assert [e for e in received if e["type"] == "server.resync"] == []
    assert len(deltas) < 50_000
    assert "".join(d["properties"]["delta"] for d in deltas) == text


async def test_a_client_that_falls_behind_on_unmergeable_events_is_told_to_reload(
    settings: Settings,
) -> None:
    tight = replace(settings, subscriber_queue=50)
    async with serve_in_background(tight) as url, httpx.AsyncClient(base_url=url) as http:
        stalled = stalled_sse(url)
        await asyncio.sleep(0.2)
        for _ in range(2_000):  # session.created events cannot be merged
            await http.post("/session", json={"title": "x" * 2000})
        received = await asyncio.to_thread(_read_all, stalled)
        stalled.close()
    assert received[-1]["type"] == "server.resync"
    assert "reload state over HTTP" in received[-1]["properties"]["message"]
