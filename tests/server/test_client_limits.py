"""Every limit on what a client controls answers 4xx with a JSON body, never a stall."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import httpx
import pytest

from partwire import quotas
from partwire.config import Settings
from partwire.permission import MAX_ANSWERS, MAX_REPLY_CHARS
from partwire.schema.input import MAX_PROMPT_PARTS, MAX_TEXT_CHARS
from partwire.server.limits import MAX_QUERY_BYTES
from partwire.server.runner import serve_in_background
from partwire.tools.shell_words import MAX_COMMAND_CHARS, analyze


async def _session(http: httpx.AsyncClient) -> str:
    return str((await http.post("/session", json={})).json()["id"])


async def test_too_many_parts_in_one_prompt(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    parts = [{"type": "text", "text": "x"}] * (MAX_PROMPT_PARTS + 1)
    response = await http.post(f"/session/{sid}/message", json={"parts": parts})
    assert response.status_code == 400 and response.json()["data"]["field"] == "parts"
    assert (await http.get(f"/session/{sid}/message")).json() == []


async def test_one_part_too_large(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    parts = [{"type": "text", "text": "x" * (MAX_TEXT_CHARS + 1)}]
    response = await http.post(f"/session/{sid}/prompt_async", json={"parts": parts})
    assert response.status_code == 400 and response.json()["data"]["field"] == "parts.0.text"


async def test_a_query_string_too_long(http: httpx.AsyncClient) -> None:
    response = await http.get("/find/file", params={"query": "a" * (MAX_QUERY_BYTES + 1)})
    assert response.status_code == 414 and "query string" in response.json()["data"]["message"]
    assert (await http.get("/find/file", params={"query": "a" * 100})).status_code == 200


async def test_event_streams_per_client_address(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quotas, "MAX_STREAMS_PER_CLIENT", 3)
    streams = [http.stream("GET", "/event") for _ in range(3)]
    opened = [await s.__aenter__() for s in streams]
    assert all(r.status_code == 200 for r in opened)
    refused = await asyncio.wait_for(http.get("/event"), 5)
    assert refused.status_code == 429 and "event streams" in refused.json()["data"]["message"]
    await streams[0].__aexit__(None, None, None)
    await asyncio.sleep(0.1)
    async with http.stream("GET", "/event") as again:  # a closed stream frees its place
        assert again.status_code == 200
    for stream in streams[1:]:
        await stream.__aexit__(None, None, None)


async def test_sessions_per_minute_with_a_password(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quotas, "MAX_SESSIONS_PER_MINUTE", 5)
    locked = replace(settings, server_password="pw")
    async with (
        serve_in_background(locked) as url,
        httpx.AsyncClient(base_url=url, auth=("partwire", "pw")) as http,
    ):
        codes = [(await http.post("/session", json={})).status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]


def test_a_bash_line_too_long_for_the_parser_is_always_asked() -> None:
    shell = analyze("ls " + "a" * MAX_COMMAND_CHARS)
    assert shell.opaque is not None and "longer than" in shell.opaque


async def test_streams_dropped_at_once_do_not_use_up_the_quota(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quotas, "MAX_STREAMS_PER_CLIENT", 3)
    for _ in range(30):  # connect and leave before reading anything
        async with http.stream("GET", "/event") as response:
            assert response.status_code == 200
    await asyncio.sleep(0.3)
    async with http.stream("GET", "/event") as again:
        assert again.status_code == 200


async def test_reply_texts_are_bounded(http: httpx.AsyncClient) -> None:
    long = "x" * (MAX_REPLY_CHARS + 1)
    bodies = [
        ("/permission/per_x/reply", {"reply": "reject", "message": long}),
        ("/question/que_x/reply", {"answers": [[long]]}),
        ("/question/que_x/reply", {"answers": [["a"]] * (MAX_ANSWERS + 1)}),
    ]
    for path, body in bodies:
        response = await http.post(path, json=body)
        assert response.status_code == 400, (path, response.text)
        assert (
            str(MAX_ANSWERS if "answers" in body and len(body["answers"]) > 1 else MAX_REPLY_CHARS)
            in response.text
        )
    fits = await http.post("/permission/per_x/reply", json={"reply": "reject", "message": "no"})
    assert fits.status_code == 404  # within the bounds: on to finding the ask
