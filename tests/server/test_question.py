"""The question and todo tools through the real server."""

from __future__ import annotations

from typing import Any

import httpx

from tests.reference import response_schema, validate, validate_schema
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import _start
from tests.server.watch import Watch

QUESTIONS = {
    "questions": [
        {
            "question": "Which database should we use?",
            "header": "Database",
            "options": [
                {"label": "SQLite", "description": "embedded"},
                {"label": "Postgres", "description": "a server"},
            ],
        },
        {
            "question": "Add tests?",
            "header": "Tests",
            "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}],
        },
    ]
}


def _question_or_tool(event: dict[str, Any]) -> bool:
    kind = event["type"]
    if kind == "message.part.updated":
        return bool(event["properties"]["part"]["type"] == "tool")
    return kind.startswith("question.") or kind == "session.idle"


async def test_question_waits_for_the_answers_and_returns_them(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("question", QUESTIONS), text_reply("thanks"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("question.asked")
        validate("EventQuestionAsked", asked)
        assert asked["properties"]["tool"]["callID"] == "call_1"
        pending = (await http.get("/question")).json()
        validate_schema(response_schema("/question", "get"), pending)
        request_id = asked["properties"]["id"]
        wrong = await http.post(f"/question/{request_id}/reply", json={"answers": [["SQLite"]]})
        assert (
            wrong.status_code == 400 and "Expected 2 answer(s)" in wrong.json()["data"]["message"]
        )
        answers = {"answers": [["SQLite"], ["Yes"]]}
        assert (await http.post(f"/question/{request_id}/reply", json=answers)).json() is True
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        validate("EventQuestionReplied", await watch.wait_for("question.replied"))
        sequence = watch.sequence(sid, keep=_question_or_tool)
    assert sequence[3:] == [
        "part tool running",
        "question.asked",
        "question.replied",
        "part tool completed",
        "session.idle",
    ]
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert '"Which database should we use?"="SQLite"' in tool["state"]["output"]
    assert '"Add tests?"="Yes"' in tool["state"]["output"]
    assert (await http.get("/question")).json() == []


async def test_rejecting_a_question_errors_the_tool_and_stops(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("question", QUESTIONS), text_reply("never"))
    async with Watch(http) as watch:
        sid = await _start(http)
        asked = await watch.wait_for("question.asked")
        assert (await http.post(f"/question/{asked['properties']['id']}/reject")).json() is True
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        validate("EventQuestionRejected", await watch.wait_for("question.rejected"))
        sequence = watch.sequence(sid, keep=_question_or_tool)
    assert sequence[-3:] == ["question.rejected", "part tool error", "session.idle"]
    assert len((await http.get(f"/session/{sid}/message")).json()) == 2


async def test_todowrite_publishes_and_todoread_and_the_route_return_the_list(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    todos = [
        {"content": "write the parser", "status": "in_progress", "priority": "high"},
        {"content": "test it", "status": "pending", "priority": "medium"},
    ]
    model.enqueue(
        tool_reply("todowrite", {"todos": todos}, call_id="a"),
        tool_reply("todoread", {}, call_id="b"),
        text_reply("ok"),
    )
    async with Watch(http) as watch:
        sid = await _start(http)
        updated = await watch.wait_for("todo.updated")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    validate("EventTodoUpdated", updated)
    assert updated["properties"]["todos"] == todos
    listed = (await http.get(f"/session/{sid}/todo")).json()
    validate_schema(response_schema("/session/{sessionID}/todo", "get"), listed)
    assert listed == todos
    messages = (await http.get(f"/session/{sid}/message")).json()
    tools = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
    assert tools[0]["state"]["title"] == "2 todos"  # both open
    assert '"write the parser"' in tools[1]["state"]["output"]
    assert (await http.get("/session/ses_nope/todo")).status_code == 404


async def test_a_bad_todo_is_an_error_the_model_can_fix(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    bad = {"todos": [{"content": "x", "status": "someday", "priority": "high"}]}
    model.enqueue(tool_reply("todowrite", bad), text_reply("ok"))
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert "todos.0.status" in tool["state"]["error"]
    assert (await http.get(f"/session/{sid}/todo")).json() == []
