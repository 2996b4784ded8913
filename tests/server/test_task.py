"""The task tool: a sub-agent in a child session, visible live; @agent mentions."""

from __future__ import annotations

import asyncio

import httpx

from partwire.providers.stream import StartStep, StreamStart, TextDelta, TextStart
from tests.reference import validate
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED, _start
from tests.server.watch import Watch

TASK = {
    "description": "Count the lines",
    "prompt": "Read src/app.py and count",
    "subagent_type": "general",
}


async def test_task_runs_a_child_session_and_returns_its_answer(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(
        tool_reply("task", TASK),  # parent, step 1
        tool_reply("read", {"filePath": "src/app.py"}, call_id="child_read"),  # child, step 1
        text_reply("There are 50 lines."),  # child, step 2
        text_reply("The sub-agent says 50."),  # parent, step 2
    )
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        created = [e["properties"]["info"] for e in watch.events if e["type"] == "session.created"]
        running = [
            e["properties"]["part"]["state"].get("metadata", {})
            for e in watch.events
            if e["type"] == "message.part.updated"
            and e["properties"]["part"].get("tool") == "task"
            and e["properties"]["part"]["state"]["status"] == "running"
        ]
    child = created[-1]
    assert child["parentID"] == sid
    assert child["title"] == "Count the lines (@general subagent)"
    assert next(m for m in running if "sessionId" in m)["sessionId"] == child["id"]
    summaries = [m["summary"] for m in running if m.get("summary")]
    assert summaries[-1][0]["tool"] == "read"
    assert summaries[-1][0]["state"]["status"] == "completed"
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    validate("ToolPart", tool)
    assert tool["state"]["output"].startswith("There are 50 lines.")
    assert f"session_id: {child['id']}" in tool["state"]["output"]
    child_messages = (await http.get(f"/session/{child['id']}/message")).json()
    assert [m["info"]["agent"] for m in child_messages] == ["general"] * 3


async def test_aborting_the_parent_aborts_the_child(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    endless = [StreamStart(), StartStep(), TextStart("t"), *[TextDelta("t", "x ")] * 10_000]
    model.delay_s = 0.005
    model.enqueue(tool_reply("task", TASK), endless)  # type: ignore[arg-type]
    async with Watch(http) as watch:
        sid = await _start(http)
        created = await watch.wait_for(
            "session.created", lambda e: e["properties"]["info"].get("parentID") == sid
        )
        child_id = created["properties"]["info"]["id"]
        await watch.wait_for(
            "message.part.delta", lambda e: e["properties"]["sessionID"] == child_id
        )
        await http.post(f"/session/{sid}/abort")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == child_id)
    child_messages = (await http.get(f"/session/{child_id}/message")).json()
    assert child_messages[-1]["info"]["error"]["name"] == "MessageAbortedError"
    assert (await http.get("/session/status")).json() == {}


async def test_a_primary_agent_is_not_a_subagent(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("task", {**TASK, "subagent_type": "build"}), text_reply("ok"))
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert "build is not a sub-agent" in tool["state"]["error"]


async def test_agent_mentions_become_agent_parts(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(text_reply("ok"))
    sid = (await http.post("/session", json={})).json()["id"]
    body = {"parts": [{"type": "text", "text": "ask @general about @nobody"}], "model": SCRIPTED}
    await http.post(f"/session/{sid}/message", json=body)
    user = (await http.get(f"/session/{sid}/message")).json()[0]
    agents = [p for p in user["parts"] if p["type"] == "agent"]
    assert len(agents) == 1
    validate("AgentPart", agents[0])
    assert agents[0]["name"] == "general"
    assert agents[0]["source"] == {"value": "@general", "start": 4, "end": 12}
    prompt_text = model.requests[0].messages[0].text  # type: ignore[union-attr]
    assert "call the task tool with subagent_type: general" in prompt_text
    await asyncio.sleep(0)
