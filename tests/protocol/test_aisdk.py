"""The AI SDK UI message stream: the SDK's own reader rebuilds what the store holds, the
chat routes answer useChat's transport, tool approvals round-trip, and reconnects resume
after any chunk."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from partwire.config import Settings
from partwire.protocol.aisdk import UIChunks
from partwire.protocol.uimessages import ui_messages
from partwire.runtime import Runtime
from partwire.schema.input import PromptInput
from partwire.server.runner import serve_in_background
from tests.protocol.node_clients import needs_node, run_node
from tests.protocol.sse import Message, read_sse
from tests.protocol.test_partframes import recorded_session
from tests.session.helpers import new_session


@pytest.fixture
async def paced(settings: Settings) -> AsyncIterator[str]:
    async with serve_in_background(replace(settings, demo_delay_ms=4)) as url:
        yield url


def turn_bodies(chunks: list[dict[str, Any]]) -> list[str]:
    """The chunks as one SSE body per turn, as POST /ui/chat would send each."""
    bodies: list[list[str]] = []
    for chunk in chunks:
        if chunk["type"] == "start":
            bodies.append([])
        bodies[-1].append(f"data: {json.dumps(chunk)}\n\n")
    return ["".join(body) + "data: [DONE]\n\n" for body in bodies]


async def read_chunks(response: httpx.Response) -> list[Message]:
    """(id, chunk) of every chunk until [DONE]."""
    return await read_sse(response, done="[DONE]")


def chat_body(chat_id: str, text: str, **extra: Any) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message", **extra}


async def ui_of(http: httpx.AsyncClient, chat_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/ui/chat/{chat_id}/messages")
    assert response.status_code == 200
    messages: list[dict[str, Any]] = response.json()
    return messages


async def idle(http: httpx.AsyncClient, chat_id: str) -> None:
    for _ in range(400):
        if (await http.get(f"/ui/chat/{chat_id}/stream")).status_code == 204:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"chat {chat_id} never went idle")


# ---- the recorded session through the SDK's reader ------------------------------------------


@needs_node
@pytest.mark.usefixtures("settings")
async def test_the_sdk_reader_rebuilds_every_turn_of_a_recorded_session(
    runtime: Runtime, tmp_path: Path
) -> None:
    session_id = await recorded_session(runtime)
    adapter = UIChunks(session_id)
    chunks = [c for e in await runtime.store.events_after(None) for c in adapter.chunks(e)]
    kinds = {c["type"] for c in chunks}
    assert {
        "start", "finish", "abort", "start-step", "finish-step", "message-metadata",
        "text-start", "text-delta", "text-end", "reasoning-start", "reasoning-delta",
        "reasoning-end", "tool-input-start", "tool-input-delta", "tool-input-available",
        "tool-output-available", "tool-output-error", "file", "data-retry",
    } <= kinds  # fmt: skip
    files = []
    for n, body in enumerate(turn_bodies(chunks)):
        files.append(tmp_path / f"turn{n}.sse")
        files[-1].write_text(body)
    rebuilt = await run_node("aisdk.mjs", "read", *map(str, files))

    stored = ui_messages(await runtime.store.list_messages(session_id))
    assistant = [m for m in stored if m["role"] == "assistant"]
    assert len(rebuilt) == len(assistant) == 7
    for ours, theirs in zip(assistant, rebuilt, strict=True):
        assert theirs == ours


# ---- useChat's transport against the server --------------------------------------------------


@needs_node
async def test_the_chat_transport_streams_a_turn_equal_to_the_stored_one(server: str) -> None:
    result = await run_node("aisdk.mjs", "chat", server, "chat-a", "list")
    assert result["rounds"] == 1
    assert result["chunks"][0] == "start" and result["chunks"][-1] == "finish"
    assert {"tool-input-available", "tool-output-available", "text-delta"} <= set(result["chunks"])
    async with httpx.AsyncClient(base_url=server) as http:
        stored = await ui_of(http, "chat-a")
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert stored[0]["parts"] == [{"type": "text", "text": "list"}]
        assert result["message"] == stored[-1]
        tool = next(p for p in stored[-1]["parts"] if p["type"] == "tool-list")
        assert tool["state"] == "output-available" and "README.md" in tool["output"]
        assert stored[-1]["metadata"]["model"] == {"providerID": "demo", "modelID": "demo"}
        assert stored[-1]["metadata"]["tokens"]["output"] > 0
        # the chat id named a new session, kept in its metadata; a second prompt uses it
        again = await run_node("aisdk.mjs", "chat", server, "chat-a", "hello")
        sessions = (await http.get("/session")).json()
        assert [s["metadata"] for s in sessions] == [{"chatID": "chat-a"}]
        assert again["message"] == (await ui_of(http, "chat-a"))[-1]
        assert len(await ui_of(http, "chat-a")) == 4


@needs_node
async def test_a_tool_approval_is_answered_through_the_sdks_flow(server: str) -> None:
    result = await run_node(
        "aisdk.mjs", "chat", server, "chat-ok", "bash echo approved", "plan", "approve"
    )
    assert result["rounds"] == 2
    cut = result["chunks"].index("finish")
    assert result["chunks"][cut - 1] == "tool-approval-request"  # the first response
    assert "tool-approval-response" in result["chunks"][cut:]
    (tool,) = [p for p in result["message"]["parts"] if p["type"] == "tool-bash"]
    assert tool["state"] == "output-available" and tool["output"] == "approved\n"
    assert tool["approval"]["approved"] is True and tool["approval"]["id"].startswith("per")
    async with httpx.AsyncClient(base_url=server) as http:
        await idle(http, "chat-ok")
        stored = (await ui_of(http, "chat-ok"))[-1]
        assert result["message"] == stored


@needs_node
async def test_a_rejected_approval_denies_the_call(server: str) -> None:
    result = await run_node(
        "aisdk.mjs", "chat", server, "chat-no", "bash echo no", "plan", "reject"
    )
    (tool,) = [p for p in result["message"]["parts"] if p["type"] == "tool-bash"]
    assert tool["state"] == "output-denied" and tool["approval"]["approved"] is False
    async with httpx.AsyncClient(base_url=server) as http:
        await idle(http, "chat-no")
        stored = (await ui_of(http, "chat-no"))[-1]
    # the client keeps the reason it gave; partwire passed it on to the model
    assert tool["approval"].pop("reason") == "not now"
    assert result["message"] == stored


# ---- resuming ------------------------------------------------------------------------------


async def test_a_reconnect_resumes_after_any_chunk_and_after_a_restart(
    settings: Settings,
) -> None:
    rng = random.Random(13)
    paced = replace(settings, demo_delay_ms=4)
    async with (
        serve_in_background(paced) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        async with http.stream("POST", "/ui/chat", json=chat_body("cut", "long 120")) as first:
            assert first.headers["x-vercel-ai-ui-message-stream"] == "v1"
            whole = await read_chunks(first)
        assert whole[0][1]["type"] == "start" and whole[-1][1] == {
            "type": "finish",
            "finishReason": "stop",
        }
        assert all(event_id is not None for event_id, _ in whole)
        cuts = [*sorted(rng.sample(range(len(whole) - 1), 6)), len(whole) - 1]
        for cut in cuts:
            headers = {"Last-Event-ID": str(whole[cut][0])}
            async with http.stream("GET", "/ui/chat/cut/stream", headers=headers) as rest:
                assert rest.status_code == 200
                assert await read_chunks(rest) == whole[cut + 1 :], cut
    # a new server on the same data dir: the cursors are places in the log it keeps
    async with (
        serve_in_background(paced) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        for cut in cuts[:2]:
            headers = {"Last-Event-ID": str(whole[cut][0])}
            async with http.stream("GET", "/ui/chat/cut/stream", headers=headers) as rest:
                assert await read_chunks(rest) == whole[cut + 1 :], f"after a restart: {cut}"


async def test_a_reconnect_mid_turn_goes_on_live_without_loss_or_repeats(paced: str) -> None:
    async with httpx.AsyncClient(base_url=paced, timeout=30) as http:
        async with http.stream("POST", "/ui/chat", json=chat_body("live", "long 800")) as first:
            got: list[Message] = []
            async for line in first.aiter_lines():
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    got.append((event_id, json.loads(line[6:])))
                    if len(got) == 40:
                        break  # the connection drops mid-turn
        # useChat's reconnect, no cursor: the turn in progress from its start
        async with http.stream("GET", "/ui/chat/live/stream") as again:
            assert again.status_code == 200
            replayed = await read_chunks(again)
        assert replayed[:40] == got
        headers = {"Last-Event-ID": str(got[-1][0])}
        async with http.stream("GET", "/ui/chat/live/stream", headers=headers) as rest:
            resumed = await read_chunks(rest)
        assert got + resumed == replayed
        text = "".join(c["delta"] for _, c in replayed if c["type"] == "text-delta")
        assert text.split() == [f"w{i}" for i in range(800)]
        assert (await http.get("/ui/chat/live/stream")).status_code == 204


async def test_the_messages_route_leaves_out_the_turn_in_progress(paced: str) -> None:
    async with httpx.AsyncClient(base_url=paced, timeout=30) as http:
        async with http.stream("POST", "/ui/chat", json=chat_body("busy", "long 200")) as first:
            async for line in first.aiter_lines():
                if "text-delta" in line:
                    break
            during = await ui_of(http, "busy")
        assert [m["role"] for m in during] == ["user"]
        await idle(http, "busy")
        assert [m["role"] for m in await ui_of(http, "busy")] == ["user", "assistant"]


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"id": "has space"}, "id"),
        ({"messages": []}, "messages"),
        ({"trigger": "regenerate-message"}, "regenerate"),
        ({"model": "no-slash"}, "provider/model"),
        ({"surprise": 1}, "surprise"),
        ({"messages": [{"id": "u", "role": "user", "parts": []}]}, "no prompt"),
        (
            {"messages": [{"id": "u", "role": "user", "parts": [{"type": "data-x", "data": 1}]}]},
            "data-x",
        ),
        (
            {
                "messages": [
                    {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "x"}]}
                ]
            },
            "approval",
        ),
    ],
)
async def test_bad_chat_requests_get_a_400_naming_the_problem(
    server: str, change: dict[str, Any], problem: str
) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.post("/ui/chat", json={**chat_body("bad", "hi"), **change})
        assert response.status_code == 400, response.text
        assert problem in response.text
        assert (await http.get("/session")).json() == []  # nothing was stored


async def test_unknown_chats_are_404_or_have_nothing_streaming(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.get("/ui/chat/nope/messages")).status_code == 404
        # nothing streams in a chat that does not exist: useChat's resume gets a 204
        assert (await http.get("/ui/chat/nope/stream")).status_code == 204
        cursor = {"Last-Event-ID": "evt_nothing:0"}
        assert (await http.get("/ui/chat/nope/stream", headers=cursor)).status_code == 404
        await http.post("/ui/chat", json=chat_body("known", "hello"))
        response = await http.get("/ui/chat/known/stream", headers=cursor)
        assert response.status_code == 400 and "cannot resume" in response.text


async def test_a_budget_ask_is_data_permission_and_holds_only_an_ag_ui_run(
    settings: Settings,
) -> None:
    runtime = Runtime.build(replace(settings, budget={"tokens": 1}))
    await runtime.start()
    try:
        session_id = await new_session(runtime)
        subscription = runtime.bus.subscribe("permission.asked", session_id=session_id)
        run = asyncio.create_task(runtime.loop.prompt(session_id, demo_prompt("bash echo x")))
        event = await asyncio.wait_for(subscription.get(), 10)
        subscription.close()
        assert event is not None and event.properties.permission == "budget"  # type: ignore[attr-defined]
        log = [e for e in await runtime.store.events_after(None) if e.session_id == session_id]
        ai_sdk, ag_ui = UIChunks(session_id), UIChunks(session_id, loose_asks_wait=True)
        chunks = [c for e in log for c in ai_sdk.chunks(e)]
        for e in log:
            ag_ui.chunks(e)
        permission = [c for c in chunks if c["type"] == "data-permission"]
        assert [c["data"]["permission"] for c in permission] == ["budget"]
        assert permission[0]["transient"] is True
        assert not ai_sdk.waiting and ai_sdk.pending_approvals() == []  # the stream goes on
        assert ag_ui.waiting and ag_ui.pending_approvals() == [event.properties.id]  # type: ignore[attr-defined]
        await runtime.permissions.reply(event.properties.id, "reject")  # type: ignore[attr-defined]
        await asyncio.wait_for(run, 10)
    finally:
        await runtime.stop()


def demo_prompt(text: str) -> PromptInput:
    return PromptInput.model_validate({"parts": [{"type": "text", "text": text}]})
