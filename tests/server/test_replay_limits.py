"""Replay streams from the store a page at a time, and a client too far behind is told
to reload instead (memory per client stays bounded; bench/replay.py measures it)."""

from __future__ import annotations

import json

import httpx
import pytest

from partwire.server import cursor, sse


async def _read(http: httpx.AsyncClient, last_id: str, count: int) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    async with http.stream("GET", "/event", headers={"Last-Event-ID": last_id}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
            if len(events) >= count:
                break
    return events


async def _log(http: httpx.AsyncClient) -> list[str]:
    """Some logged events; returns their ids in order, as a live client saw them."""
    ids: list[str] = []
    async with http.stream("GET", "/event") as response:
        lines = response.aiter_lines()
        sid = (await http.post("/session", json={})).json()["id"]
        body = {"parts": [{"type": "text", "text": "long 30"}]}
        await http.post(f"/session/{sid}/prompt_async", json=body)
        async for line in lines:
            if line.startswith("id:"):
                ids.append(line[3:].strip())
            if line.startswith("data:") and '"session.idle"' in line:
                break
    return ids


async def test_replay_comes_in_pages_in_order(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cursor, "REPLAY_PAGE", 3)
    logged = await _log(http)
    assert len(logged) > 40
    replayed = await _read(http, logged[0], len(logged))
    assert replayed[0]["type"] == "server.connected"
    assert [e["id"] for e in replayed[1:]] == logged[1:]


async def test_a_client_too_far_behind_gets_a_resync(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged = await _log(http)
    monkeypatch.setattr(sse, "MAX_REPLAY_EVENTS", 10)
    events = await _read(http, logged[0], 2)
    assert events[1]["type"] == "server.resync"
    assert "reload state over HTTP" in events[1]["properties"]["message"]  # type: ignore[index]
    near = await _read(http, logged[-5], 5)
    assert [e["id"] for e in near[1:]] == logged[-4:]
