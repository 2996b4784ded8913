"""GET /event: connected first, id lines, heartbeats, exact resume, opencode-shaped events."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from partwire.config import Settings
from partwire.server import pushed
from partwire.server.app import create_app
from partwire.server.runner import serve_in_background
from partwire.storage.writes import EventPrune
from tests.reference import event_schema_name, has_schema, validate


async def read_frames(
    response: httpx.Response, until: str | None = None, limit: int = 100_000
) -> AsyncIterator[dict[str, Any]]:
    """Parse SSE frames into {"id": line id or None, "event": parsed JSON}."""
    frame_id: str | None = None
    data: list[str] = []
    seen = 0
    async for line in response.aiter_lines():
        if line.startswith("id:"):
            frame_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            event = json.loads("\n".join(data))
            yield {"id": frame_id, "event": event}
            seen += 1
            frame_id, data = None, []
            if (until and event["type"] == until) or seen >= limit:
                return


async def _prompt(http: httpx.AsyncClient, text: str) -> str:
    sid = (await http.post("/session", json={})).json()["id"]
    response = await http.post(
        f"/session/{sid}/prompt_async", json={"parts": [{"type": "text", "text": text}]}
    )
    assert response.status_code == 204
    return str(sid)


async def test_connected_first_then_logged_events_with_id_lines(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        async with http.stream("GET", "/event") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            frames = read_frames(response, until="session.idle")
            first = await anext(frames)
            assert first["event"]["type"] == "server.connected" and first["id"] is None
            await _prompt(http, "hello")
            rest = [f async for f in frames]
    assert all(f["id"] == f["event"]["id"] for f in rest)
    ids = [f["id"] for f in rest]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert "message.part.delta" in {f["event"]["type"] for f in rest}


EXTERNAL_MESSAGE = b"\n".join(
    json.dumps(line).encode()
    for line in [
        {"type": "start", "prompt": "external", "model": {"providerID": "x", "modelID": "y"}},
        {"type": "step-start"},
        {"type": "reasoning-delta", "delta": "think"},
        {"type": "text-delta", "delta": "say"},
        {"type": "tool-call-start", "callID": "c1", "tool": "bash"},
        {"type": "tool-args-delta", "callID": "c1", "delta": "{}"},
        {"type": "tool-call", "callID": "c1", "tool": "bash", "input": {}},
        {"type": "tool-result", "callID": "c1", "output": "ok"},
        {"type": "file", "mime": "text/plain", "url": "file:///a.txt"},
        {"type": "step-finish", "tokens": {"input": 1, "output": 1}, "cost": 0.1},
    ]
)


async def test_every_event_validates_against_the_reference_schema(server: str) -> None:
    """Drive each demo behaviour, then check every emitted event against Event<Name>."""
    seen: dict[str, int] = {}
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        async with http.stream("GET", "/event") as response:
            frames = read_frames(response)
            await anext(frames)
            sid = await _prompt(http, "hello")
            for text in ("list", "README.md", "missing/file.txt", "long 20"):
                await http.post(
                    f"/session/{sid}/message", json={"parts": [{"type": "text", "text": text}]}
                )
            ingested = await http.post(f"/session/{sid}/ingest", content=EXTERNAL_MESSAGE)
            assert ingested.status_code == 200, ingested.text  # events of our recorder
            await http.delete(f"/session/{sid}")
            async for frame in frames:
                event = frame["event"]
                name = event_schema_name(event["type"])
                if has_schema(name):
                    validate(name, event)
                    seen[event["type"]] = seen.get(event["type"], 0) + 1
                if event["type"] == "session.deleted":
                    break
    assert {
        "session.created", "session.updated", "session.deleted", "session.status",
        "session.idle", "message.updated", "message.part.updated", "message.part.delta",
    } <= seen.keys()  # fmt: skip


def test_only_our_own_events_lack_a_reference_schema() -> None:
    from partwire.schema.event import REGISTRY

    missing = {t for t in REGISTRY if not has_schema(event_schema_name(t))}
    # editor: acp; the rest: a team's (sharing, who watches, who answered)
    ours = {"session.access", "session.presence", "ask.answered"}
    assert missing == {"server.heartbeat", "server.resync", "editor.read", *ours}


async def test_heartbeat_when_nothing_else_happens(settings: Settings) -> None:
    fast = replace(settings, heartbeat_s=0.2)
    async with (
        serve_in_background(fast) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
        http.stream("GET", "/event") as response,
    ):
        frames = [f async for f in read_frames(response, limit=3)]
    assert [f["event"]["type"] for f in frames] == [
        "server.connected",
        "server.heartbeat",
        "server.heartbeat",
    ]
    assert all(f["id"] is None for f in frames)  # never a resume point


async def test_last_event_id_replays_exactly_the_missed_events(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        async with http.stream("GET", "/event") as response:
            frames = read_frames(response, until="session.idle")
            await anext(frames)
            await _prompt(http, "long 300")
            everything = [f["id"] async for f in frames]
        cut = everything[len(everything) // 3]
        headers = {"Last-Event-ID": cut}
        async with http.stream("GET", "/event", headers=headers) as response:
            replayed = [f async for f in read_frames(response, until="session.idle")]
    assert replayed[0]["event"]["type"] == "server.connected"
    assert [f["id"] for f in replayed[1:]] == everything[everything.index(cut) + 1 :]


async def test_a_resume_point_older_than_the_log_gets_an_explicit_resync(
    settings: Settings,
) -> None:
    small = replace(settings, event_log_retain=5)
    app = create_app(small)
    async with serve_in_background(small, app=app) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            await http.post("/session", json={})
            await http.post("/session", json={})
            await http.post("/session", json={})
            oldest_events = await app.state.runtime.store.events_after(None)
            for _ in range(10):
                await http.post("/session", json={})
            # prune as the periodic pruning would, through the live store
            await app.state.runtime.store._submit(EventPrune(retain=5))
            headers = {"Last-Event-ID": oldest_events[0].id}
            async with http.stream("GET", "/event", headers=headers) as response:
                frames = [f async for f in read_frames(response, limit=2)]
    assert frames[1]["event"]["type"] == "server.resync"
    assert frames[1]["id"] is None
    assert "reload state" in frames[1]["event"]["properties"]["message"]


@pytest.mark.parametrize("header", ["Last-Event-ID"])
async def test_resume_with_nothing_missed_sends_only_new_events(server: str, header: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        async with http.stream("GET", "/event") as response:
            frames = read_frames(response, until="session.idle")
            await anext(frames)
            await _prompt(http, "hi")
            last = [f["id"] async for f in frames][-1]
        async with http.stream("GET", "/event", headers={header: last}) as response:
            frames = read_frames(response, until="session.idle")
            assert (await anext(frames))["event"]["type"] == "server.connected"
            sid = await _prompt(http, "again")
            fresh = [f async for f in frames]
    assert fresh[0]["event"]["type"] == "session.created"
    assert fresh[-1]["event"]["properties"]["sessionID"] == sid


async def test_shutdown_announces_itself_and_ends_open_streams(settings: Settings) -> None:
    server = serve_in_background(settings)
    url = await server.__aenter__()
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        async with http.stream("GET", "/event") as response:
            frames = read_frames(response)
            assert (await anext(frames))["event"]["type"] == "server.connected"
            stopping = asyncio.create_task(server.__aexit__(None, None, None))
            rest = [f["event"]["type"] async for f in frames]  # ends when the server closes it
            started = asyncio.get_running_loop().time()
            await stopping
            assert asyncio.get_running_loop().time() - started < 1.0
    assert rest == ["server.instance.disposed"]


async def test_a_cursor_resumes_exactly_at_any_cut_and_after_a_restart(settings: Settings) -> None:
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        async with http.stream("GET", "/event") as response:
            frames = read_frames(response, until="session.idle")
            await anext(frames)  # connected: listening before the prompt
            await _prompt(http, "list")
            whole = [f async for f in frames]
        assert all(f["id"] == f["event"]["id"] for f in whole)
        cuts = [*sorted(random.Random(5).sample(range(len(whole) - 1), 4)), len(whole) - 2]
        for cut in cuts:
            assert await _resumed(http, whole[cut]["id"]) == whole[cut + 1 :], cut
    # a new server on the same data dir: the cursors are places in the log it keeps
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        for cut in cuts[:2]:
            assert await _resumed(http, whole[cut]["id"]) == whole[cut + 1 :], f"restart: {cut}"


async def _resumed(http: httpx.AsyncClient, cursor: str) -> list[dict[str, Any]]:
    """The logged events /event sends after ``cursor``, up to the session going idle."""
    async with http.stream("GET", "/event", headers={"Last-Event-ID": cursor}) as response:
        frames = read_frames(response, until="session.idle")
        assert (await anext(frames))["event"]["type"] == "server.connected"
        return [f async for f in frames]


async def test_uvicorns_live_chunks_are_written_to_the_connection_directly(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stream's direct write (pushed.chunk_writer) is taken under the real server: an
    upgrade of uvicorn that renamed what it reads would turn it off and fail this."""
    taken: list[bool] = []
    real = pushed.chunk_writer

    def noting(send: Any) -> Any:
        writer = real(send)
        taken.append(writer is not None)
        return writer

    monkeypatch.setattr(pushed, "chunk_writer", noting)
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        async with http.stream("GET", "/event") as response:
            frames = read_frames(response, until="session.idle")
            await anext(frames)
            await _prompt(http, "hello")
            rest = [f async for f in frames]
    assert taken == [True]
    assert "message.part.delta" in {f["event"]["type"] for f in rest}
