"""AG-UI: every event validates against ag-ui-protocol's models, @ag-ui/client's HttpAgent
runs sessions (interrupts for permission asks included) and rebuilds what the store holds,
and a run resumes after any event."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from partwire.config import Settings
from partwire.protocol.agui import AguiView, agui_messages
from partwire.protocol.aisdk import UIChunks
from partwire.providers.demo_prompts import DEMO_TODOS
from partwire.runtime import Runtime
from partwire.server.runner import serve_in_background
from tests.protocol.node_clients import needs_node, run_node
from tests.protocol.sse import read_sse
from tests.protocol.test_partframes import recorded_session

EVENT = TypeAdapter(Event)


@pytest.fixture
async def paced(settings: Settings) -> AsyncIterator[str]:
    async with serve_in_background(replace(settings, demo_delay_ms=4)) as url:
        yield url


def run_bodies(runtime_events: list[Any], session_id: str) -> list[str]:
    """The session's turns as AG-UI runs: one SSE body per turn."""
    source, view = UIChunks(session_id), AguiView("replay", "run", [])
    bodies: list[str] = []
    for event in runtime_events:
        chunks = source.chunks(event)
        for chunk in chunks:
            if chunk["type"] == "start":
                bodies.append("".join(item.sse for item in view.beginning(source)))
            bodies[-1] += "".join(item.sse for item in view.translate([chunk], source))
    return bodies


def parsed(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


def run_input(thread: str, text: str | None, **extra: Any) -> dict[str, Any]:
    messages = [{"id": "u1", "role": "user", "content": text}] if text is not None else []
    base = {"threadId": thread, "runId": "r1", "messages": messages, "tools": [], "context": []}
    return {**base, "state": {}, "forwardedProps": {}, **extra}


# ---- the package's own models ---------------------------------------------------------------


@pytest.mark.usefixtures("settings")
async def test_every_event_of_a_recorded_session_validates(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    bodies = run_bodies(await runtime.store.events_after(None), session_id)
    assert len(bodies) == 7
    kinds = set()
    for body in bodies:
        events = parsed(body)
        for event in events:
            model = EVENT.validate_python(event)
            assert json.loads(model.model_dump_json(by_alias=True)) == event  # nothing lost
            kinds.add(event["type"] if event["type"] != "CUSTOM" else f"CUSTOM:{event['name']}")
        assert events[0]["type"] == "RUN_STARTED"
        assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    assert {
        "RUN_STARTED", "RUN_FINISHED", "STATE_SNAPSHOT", "STEP_STARTED", "STEP_FINISHED",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "REASONING_START",
        "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
        "REASONING_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TOOL_CALL_RESULT", "CUSTOM:partwire.turn", "CUSTOM:partwire.usage",
        "CUSTOM:partwire.part", "CUSTOM:partwire.file",
    } <= kinds  # fmt: skip
    cancelled = parsed(bodies[-1])[-1]  # the aborted external run
    assert cancelled["type"] == "RUN_FINISHED" and cancelled["outcome"] == {"type": "cancelled"}


@needs_node
@pytest.mark.usefixtures("settings")
async def test_http_agent_rebuilds_every_run_of_a_recorded_session(
    runtime: Runtime, tmp_path: Path
) -> None:
    session_id = await recorded_session(runtime)
    files = []
    for n, body in enumerate(run_bodies(await runtime.store.events_after(None), session_id)):
        files.append(tmp_path / f"run{n}.sse")
        files[-1].write_text(body)
    result = await run_node("agui.mjs", "replay", *map(str, files))
    stored = agui_messages(await runtime.store.list_messages(session_id))
    ours = [json.loads(m.model_dump_json(by_alias=True)) for m in stored if m.role != "user"]
    # the aborted call's arguments stopped at what had streamed; the store keeps no raw
    # arguments for a call in error, only its (empty) input
    (aborted,) = [m for m in ours if m.get("toolCalls") and m["toolCalls"][0]["id"] == "c9"]
    assert aborted["toolCalls"][0]["function"]["arguments"] == "{}"
    aborted["toolCalls"][0]["function"]["arguments"] = '{"comm'
    assert result["messages"] == ours


# ---- HttpAgent against the server -----------------------------------------------------------


async def snapshot_of(url: str, thread: str) -> list[dict[str, Any]]:
    reconnected = await run_node("agui.mjs", "reconnect", url, thread)
    assert reconnected["events"][:3] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    assert reconnected["events"][-1] == "RUN_FINISHED"
    messages: list[dict[str, Any]] = reconnected["messages"]
    return messages


def without_user_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "id": "user"} if m["role"] == "user" else m for m in messages]


@needs_node
async def test_http_agent_runs_a_prompt_with_a_permission_interrupt(server: str) -> None:
    result = await run_node("agui.mjs", "run", server, "thread-1", "bash echo agui", "plan")
    assert result["rounds"] == 2
    (interrupt,) = result["interrupts"]
    assert interrupt["reason"] == "permission" and interrupt["toolCallId"] == "call_demo_bash_0"
    assert interrupt["metadata"]["patterns"] == ["echo agui"]
    events = result["events"]
    first_run = events[: events.index("RUN_FINISHED") + 1]
    assert "CUSTOM:partwire.permission.asked" in first_run
    assert "CUSTOM:partwire.permission.replied" in events[len(first_run) :]
    tool = next(m for m in result["messages"] if m["role"] == "tool")
    assert tool["content"] == "agui\n" and tool["metadata"]["status"] == "completed"
    stored = await snapshot_of(server, "thread-1")
    assert without_user_ids(result["messages"]) == without_user_ids(stored)


@needs_node
async def test_always_allows_the_rest_and_reject_denies(server: str) -> None:
    result = await run_node("agui.mjs", "run", server, "t-no", "bash echo no", "plan", "reject")
    tool = next(m for m in result["messages"] if m["role"] == "tool")
    assert tool["metadata"] == {"status": "denied"}
    assert without_user_ids(result["messages"]) == without_user_ids(
        await snapshot_of(server, "t-no")
    )
    again = await run_node("agui.mjs", "run", server, "t-ok", "bash echo one", "plan", "always")
    assert again["rounds"] == 2
    # the rule "always" added covers the same command next time: no interrupt at all
    later = await run_node("agui.mjs", "run", server, "t-ok", "bash echo one", "plan")
    assert later["rounds"] == 1 and later["interrupts"] == []


@needs_node
async def test_a_budget_ask_is_an_interrupt_with_no_tool_call(settings: Settings) -> None:
    budgeted = replace(settings, budget={"tokens": 1})
    async with serve_in_background(budgeted) as url:
        result = await run_node("agui.mjs", "run", url, "t-budget", "bash echo spent", "build")
    assert result["rounds"] == 2  # paused before the answer's step, then allowed once
    (interrupt,) = result["interrupts"]
    assert interrupt["reason"] == "permission" and "toolCallId" not in interrupt
    assert interrupt["metadata"]["permission"] == "budget"
    assert interrupt["message"].startswith("budget: ") and interrupt["message"].endswith(
        "of 1 tokens spent"
    )
    answer = next(m for m in result["messages"][::-1] if m["role"] == "assistant")
    assert "spent" in answer["content"]


@needs_node
async def test_the_todo_list_is_the_agents_state(server: str) -> None:
    result = await run_node("agui.mjs", "run", server, "t-todo", "todo")
    assert result["state"] == {"todos": DEMO_TODOS}
    assert "STATE_DELTA" in result["events"]
    assert (await run_node("agui.mjs", "reconnect", server, "t-todo"))["state"] == {
        "todos": DEMO_TODOS
    }


# ---- resuming ------------------------------------------------------------------------------


async def test_a_run_resumes_after_any_event_and_after_a_restart(settings: Settings) -> None:
    rng = random.Random(7)
    body = run_input("cut", "long 120")
    paced = replace(settings, demo_delay_ms=4)
    async with (
        serve_in_background(paced) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        async with http.stream("POST", "/agui", json=body) as first:
            assert first.headers["content-type"].startswith("text/event-stream")
            whole = await read_sse(first)
        assert [e["type"] for _, e in whole[:2]] == ["RUN_STARTED", "STATE_SNAPSHOT"]
        assert whole[-1][1]["type"] == "RUN_FINISHED"
        logged = [n for n, (event_id, _) in enumerate(whole) if event_id is not None]
        cuts = [*sorted(rng.sample(logged[:-1], 6)), logged[-1]]
        for cut in cuts:
            headers = {"Last-Event-ID": str(whole[cut][0])}
            async with http.stream("POST", "/agui", json=body, headers=headers) as rest:
                assert rest.status_code == 200
                assert await read_sse(rest) == whole[cut + 1 :], cut
    # a new server on the same data dir: the cursors are places in the log it keeps
    async with (
        serve_in_background(paced) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        for cut in cuts[:2]:
            headers = {"Last-Event-ID": str(whole[cut][0])}
            async with http.stream("POST", "/agui", json=body, headers=headers) as rest:
                assert await read_sse(rest) == whole[cut + 1 :], f"after a restart: {cut}"


async def test_a_reconnect_mid_run_snapshots_then_goes_on_live(paced: str) -> None:
    async with httpx.AsyncClient(base_url=paced, timeout=30) as http:
        async with http.stream("POST", "/agui", json=run_input("mid", "long 800")) as first:
            async for line in first.aiter_lines():
                if "TEXT_MESSAGE_CONTENT" in line:
                    break
        async with http.stream("POST", "/agui", json=run_input("mid", None)) as again:
            events = [e for _, e in await read_sse(again)]
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
    # the open step and text message are opened again, so what follows is valid AG-UI
    assert kinds[3:5] == ["STEP_STARTED", "TEXT_MESSAGE_START"] and kinds[-1] == "RUN_FINISHED"
    (text,) = [m for m in events[1]["messages"] if m["role"] == "assistant" and m.get("content")]
    rest = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert (text["content"] + rest).split() == [f"w{i}" for i in range(800)]


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"tools": [{"name": "x", "description": "y", "parameters": {}}]}, "tools"),
        ({"state": {"mine": 1}}, "state"),
        ({"forwardedProps": {"temperature": 1}}, "forwardedProps"),
        ({"forwardedProps": {"model": "nope"}}, "provider/model"),
        (
            {
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [
                            {"type": "image", "source": {"type": "url", "value": "http://x/y.png"}}
                        ],
                    }
                ]
            },
            "image",
        ),
        ({"messages": [{"id": "u", "role": "user", "content": "  "}]}, "empty"),
        ({"threadId": 5}, "threadId"),
    ],
)
async def test_bad_runs_get_a_400_naming_the_problem(
    server: str, change: dict[str, Any], problem: str
) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.post("/agui", json={**run_input("bad", "hi"), **change})
        assert response.status_code == 400, response.text
        assert problem in response.text
        assert (await http.get("/session")).json() == []


async def test_unknown_threads_and_answers_are_refused(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.post("/agui", json=run_input("nope", None))).status_code == 404
        await http.post("/agui", json=run_input("known", "hello"))
        resume = [{"interruptId": "per_nothing", "status": "resolved"}]
        response = await http.post("/agui", json=run_input("known", None, resume=resume))
        assert response.status_code == 400 and "none of the answered" in response.text
        bad = [{"interruptId": "per_x", "status": "resolved", "payload": {"reply": "maybe"}}]
        response = await http.post("/agui", json=run_input("known", None, resume=bad))
        assert response.status_code == 400 and "payload" in response.text
