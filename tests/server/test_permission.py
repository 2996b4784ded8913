"""Permissions through the real server: the exact events a client sees, every reply."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reference import response_schema, validate, validate_schema
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.watch import Watch

SCRIPTED = {"providerID": "scripted", "modelID": "scripted"}


async def _start(http: httpx.AsyncClient, text: str = "go", **extra: Any) -> str:
    sid = (await http.post("/session", json=extra)).json()["id"]
    body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
    response = await http.post(f"/session/{sid}/prompt_async", json=body)
    assert response.status_code == 204, response.text
    return str(sid)


def _is_tool_or_permission(event: dict[str, Any]) -> bool:
    kind = event["type"]
    if kind == "message.part.updated":
        return bool(event["properties"]["part"]["type"] == "tool")
    return kind.startswith("permission.") or kind == "session.idle"


async def test_outside_path_asks_and_once_lets_the_tool_run(
    http: httpx.AsyncClient, model: ScriptedModel, project: Path
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}), text_reply("done"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("permission.asked")
        validate("EventPermissionAsked", asked)
        props = asked["properties"]
        assert props["permission"] == "external_directory"
        assert props["patterns"] == [f"{project.parent}/*"]
        assert props["tool"]["callID"] == "call_1"
        pending = (await http.get("/permission")).json()
        validate_schema(response_schema("/permission", "get"), pending)
        assert [p["id"] for p in pending] == [props["id"]]
        # the tool is blocked, the session is busy, nothing else moves
        assert (await http.get("/session/status")).json()[sid] == {"type": "busy"}
        reply = await http.post(f"/permission/{props['id']}/reply", json={"reply": "once"})
        assert reply.json() is True
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        replied = await watch.wait_for("permission.replied")
        validate("EventPermissionReplied", replied)
        sequence = watch.sequence(sid, keep=_is_tool_or_permission)
    assert sequence == [
        "part tool pending",
        "part tool pending",
        "part tool pending",
        "part tool running",
        "permission.asked external_directory",
        "permission.replied once",
        "part tool completed",
        "session.idle",
    ]
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert "outside the project" in tool["state"]["output"]
    assert (await http.get("/permission")).json() == []


async def test_reject_errors_the_tool_and_stops_the_loop(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}), text_reply("never"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("permission.asked")
        await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "reject"})
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        sequence = watch.sequence(sid, keep=_is_tool_or_permission)
    assert sequence[-3:] == ["permission.replied reject", "part tool error", "session.idle"]
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert len(messages) == 2  # no second step: the loop stopped
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["state"]["error"] == "The user rejected permission to use this tool."
    assert len(model.requests) == 1


async def test_reject_with_feedback_lets_the_model_continue(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}), text_reply("ok"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("permission.asked")
        body = {"reply": "reject", "message": "read notes.txt instead"}
        await http.post(f"/permission/{asked['properties']['id']}/reply", json=body)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert len(messages) == 3
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["state"]["error"].endswith("The user said: read notes.txt instead")
    assert model.requests[1].messages[-1].output == tool["state"]["error"]  # type: ignore[union-attr]


async def test_always_adds_a_session_rule_so_the_next_call_does_not_ask(
    http: httpx.AsyncClient, model: ScriptedModel, project: Path
) -> None:
    (project.parent / "other.txt").write_text("another outside file\n")
    model.enqueue(
        tool_reply("read", {"filePath": "../secret.txt"}, call_id="a"),
        tool_reply("read", {"filePath": "../other.txt"}, call_id="b"),
        text_reply("done"),
    )
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("permission.asked")
        await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "always"})
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        asks = [e for e in watch.events if e["type"] == "permission.asked"]
    assert len(asks) == 1
    session = (await http.get(f"/session/{sid}")).json()
    validate("Session", session)
    assert session["permission"] == [
        {"permission": "external_directory", "pattern": f"{project.parent}/*", "action": "allow"}
    ]
    messages = (await http.get(f"/session/{sid}/message")).json()
    states = [p["state"]["status"] for m in messages for p in m["parts"] if p["type"] == "tool"]
    assert states == ["completed", "completed"]


async def test_the_older_session_route_replies_too(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}), text_reply("done"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("permission.asked")
        route = f"/session/{sid}/permissions/{asked['properties']['id']}"
        assert (await http.post(route, json={"response": "once"})).json() is True
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)


async def test_a_deny_rule_fails_the_tool_without_asking(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "notes.txt"}), text_reply("ok"))
    rules = [{"permission": "read", "pattern": "*notes*", "action": "deny"}]
    async with Watch(http) as watch:
        sid = await _start(http, permission=rules)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        assert not [e for e in watch.events if e["type"] == "permission.asked"]
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["state"]["error"].startswith("The rules deny read for")
    assert len(messages) == 3  # a deny is not a rejection: the model goes on


async def test_the_same_call_three_times_asks_doom_loop(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    call = tool_reply("read", {"filePath": "README.md"})
    model.enqueue(call, call, call, text_reply("stuck"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("permission.asked")
        assert asked["properties"]["permission"] == "doom_loop"
        assert asked["properties"]["patterns"] == ["read"]
        assert asked["properties"]["metadata"]["input"] == {"filePath": "README.md"}
        messages = (await http.get(f"/session/{sid}/message")).json()
        tools = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
        assert [t["state"]["status"] for t in tools] == ["completed", "completed", "running"]
        await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "once"})
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)


async def test_abort_while_asking_clears_the_ask_and_ends_the_tool(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}))
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("permission.asked")
        started = asyncio.get_running_loop().time()
        assert (await http.post(f"/session/{sid}/abort")).json() is True
        assert asyncio.get_running_loop().time() - started < 1.0
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        sequence = watch.sequence(sid, keep=_is_tool_or_permission)
    assert sequence[-3:] == ["permission.replied reject", "part tool error", "session.idle"]
    assert (await http.get("/permission")).json() == []
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert messages[1]["info"]["error"]["name"] == "MessageAbortedError"
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["state"]["error"] == "Tool execution aborted"


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/permission/per_nope/reply", {"reply": "once"}, 404),
        ("/permission/per_nope/reply", {"reply": "maybe"}, 400),
        ("/question/que_nope/reply", {"answers": [["a"]]}, 404),
        ("/question/que_nope/reject", None, 404),
    ],
)
async def test_replies_to_unknown_or_malformed_asks_are_clear_errors(
    http: httpx.AsyncClient, path: str, body: Any, status: int
) -> None:
    response = await http.post(path, json=body)
    assert response.status_code == status
    assert response.json()["data"]["message"]


async def test_agents_are_listed_and_unknown_agents_refused(http: httpx.AsyncClient) -> None:
    agents = (await http.get("/agent")).json()
    validate_schema(response_schema("/agent", "get"), agents)
    assert [a["name"] for a in agents] == ["build", "plan", "general"]
    sid = (await http.post("/session", json={})).json()["id"]
    body = {"parts": [{"type": "text", "text": "hi"}], "agent": "wizard"}
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 400
    assert response.json()["data"]["message"] == (
        "Unknown agent 'wizard'; available: build, plan, general"
    )


async def test_always_for_a_command_does_not_cover_a_chained_one(
    http: httpx.AsyncClient, model: ScriptedModel, project: Path
) -> None:
    first = {"command": "ls", "description": "list"}
    chained = {"command": "ls && touch made-by-rider", "description": "list and more"}
    model.enqueue(
        tool_reply("bash", first, call_id="a"),
        tool_reply("bash", chained, call_id="b"),
        text_reply("ok"),
    )
    async with Watch(http) as watch:
        rules = [{"permission": "bash", "pattern": "*", "action": "ask"}]
        sid = await _start(http, "go", permission=rules)
        asked = await watch.wait_for("permission.asked")
        assert asked["properties"]["always"] == ["ls *"]
        await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "always"})
        second = await watch.wait_for(
            "permission.asked", lambda e: e["properties"]["id"] != asked["properties"]["id"]
        )
        assert second["properties"]["patterns"] == ["ls", "touch made-by-rider"]
        await http.post(f"/permission/{second['properties']['id']}/reply", json={"reply": "reject"})
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    assert not (project / "made-by-rider").exists()
