"""Fork at a part: after or before a tool result, in a sub-agent's session, across a
compaction, of a busy session; what the forked session's next prompt sends the model."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from partwire.providers.stream import AssistantTurn, ToolResultTurn, UserTurn
from partwire.session.forking import FORK_INTERRUPTED
from partwire.session.history import COMPACTION_QUESTION
from tests.reference import validate
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED, _start
from tests.server.test_task import TASK
from tests.server.watch import Watch

READ = {"filePath": "README.md"}


async def _prompt(http: httpx.AsyncClient, sid: str, text: str) -> None:
    body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 200, response.text


async def _messages(http: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await http.get(f"/session/{sid}/message")).json()
    return found


async def _fork(http: httpx.AsyncClient, sid: str, **body: Any) -> dict[str, Any]:
    response = await http.post(f"/session/{sid}/fork", json=body)
    assert response.status_code == 200, response.text
    fork: dict[str, Any] = response.json()
    validate("Session", fork)
    return fork


def _part(messages: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(p for m in messages for p in m["parts"] if p["type"] == kind)


async def _read_session(http: httpx.AsyncClient, model: ScriptedModel) -> str:
    model.enqueue(tool_reply("read", READ, call_id="r"), text_reply("read it"))
    sid = (await http.post("/session", json={})).json()["id"]
    await _prompt(http, sid, "read the readme")
    return str(sid)


async def test_a_fork_after_a_tool_result_holds_the_call_and_its_result(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    sid = await _read_session(http, model)
    source = await _messages(http, sid)
    tool = _part(source, "tool")
    fork = await _fork(http, sid, partID=tool["id"])
    assert fork["metadata"]["forkedFrom"] == {
        "sessionID": sid,
        "messageID": tool["messageID"],
        "partID": tool["id"],
        "cut": "after",
    }
    assert "parentID" not in fork  # a root session of its own, listed as one
    copied = await _messages(http, fork["id"])
    assert [p["type"] for p in copied[1]["parts"]] == ["step-start", "tool"]
    copy = copied[1]["parts"][1]
    assert copy["id"] != tool["id"] and copy["sessionID"] == fork["id"]
    assert copy["state"] == tool["state"]  # the result came along
    assert copied[1]["info"]["tokens"]["output"] == 0  # its step-finish was cut off
    assert len(await _messages(http, sid)) == 3  # the source is untouched
    model.enqueue(text_reply("from the fork"))
    await _prompt(http, fork["id"], "go on")
    turns = model.requests[-1].messages
    assert turns[0] == UserTurn("read the readme")
    assert isinstance(turns[1], AssistantTurn) and turns[1].tool_calls[0].tool == "read"
    assert isinstance(turns[2], ToolResultTurn) and turns[2].output == tool["state"]["output"]
    assert turns[-1] == UserTurn("go on")


async def test_a_fork_before_a_tool_result_lets_the_model_call_again(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    sid = await _read_session(http, model)
    tool = _part(await _messages(http, sid), "tool")
    fork = await _fork(http, sid, partID=tool["id"], cut="before")
    assert fork["metadata"]["forkedFrom"]["cut"] == "before"
    copied = await _messages(http, fork["id"])
    assert [m["info"]["role"] for m in copied] == ["user"]  # the step held nothing else
    model.enqueue(tool_reply("read", READ, call_id="again"), text_reply("read again"))
    await _prompt(http, fork["id"], "try once more")
    first = model.requests[-2].messages
    assert not any(isinstance(t, ToolResultTurn) for t in first)
    assert first == (UserTurn("read the readme"), UserTurn("try once more"))
    calls = [
        p for m in await _messages(http, fork["id"]) for p in m["parts"] if p["type"] == "tool"
    ]
    assert [c["callID"] for c in calls] == ["again"]


async def test_a_fork_at_a_text_part_keeps_the_parts_before_it(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    sid = await _read_session(http, model)
    source = await _messages(http, sid)
    text = next(p for p in source[2]["parts"] if p["type"] == "text")
    fork = await _fork(http, sid, messageID=source[2]["info"]["id"], partID=text["id"])
    copied = await _messages(http, fork["id"])
    assert [m["info"]["role"] for m in copied] == ["user", "assistant", "assistant"]
    assert [p["type"] for p in copied[2]["parts"]] == ["step-start", "text"]
    assert copied[2]["parts"][1]["text"] == "read it"
    assert copied[1]["info"]["tokens"] == source[1]["info"]["tokens"]  # whole: unchanged


async def test_fork_errors_name_the_problem(http: httpx.AsyncClient, model: ScriptedModel) -> None:
    sid = await _read_session(http, model)
    source = await _messages(http, sid)
    tool = _part(source, "tool")
    missing = await http.post(f"/session/{sid}/fork", json={"partID": "prt_nope"})
    assert missing.status_code == 404
    wrong = await http.post(
        f"/session/{sid}/fork", json={"messageID": source[0]["info"]["id"], "partID": tool["id"]}
    )
    assert wrong.status_code == 400 and wrong.json()["data"]["field"] == "partID"
    lone_cut = await http.post(f"/session/{sid}/fork", json={"cut": "before"})
    assert lone_cut.status_code == 400 and lone_cut.json()["data"]["field"] == "cut"
    bad_cut = await http.post(f"/session/{sid}/fork", json={"partID": tool["id"], "cut": "mid"})
    assert bad_cut.status_code == 400
    bad_id = await http.post(f"/session/{sid}/fork", json={"partID": "nope"})
    assert bad_id.status_code == 400 and bad_id.json()["data"]["field"] == "partID"
    sessions = (await http.get("/session")).json()
    assert len(sessions) == 1  # a refused fork made nothing


async def test_a_fork_in_a_sub_agents_session(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(
        tool_reply("task", TASK),
        tool_reply("read", {"filePath": "src/app.py"}, call_id="child_read"),
        text_reply("There are 50 lines."),
        text_reply("The sub-agent says 50."),
    )
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    child = next(s for s in (await http.get("/session")).json() if s.get("parentID") == sid)
    child_messages = await _messages(http, child["id"])
    read = _part(child_messages, "tool")
    fork = await _fork(http, child["id"], partID=read["id"])
    assert fork["metadata"]["forkedFrom"]["sessionID"] == child["id"]
    assert fork["agent"] == "general"  # the agent its history's prompts went to
    copied = await _messages(http, fork["id"])
    assert copied[0]["parts"][0]["text"] == child_messages[0]["parts"][0]["text"]
    assert [p["type"] for p in copied[-1]["parts"]] == ["step-start", "tool"]
    assert copied[-1]["parts"][1]["state"]["output"] == read["state"]["output"]
    model.enqueue(text_reply("counted again"))
    await _prompt(http, fork["id"], "count once more")
    assert [type(t).__name__ for t in model.requests[-1].messages] == [
        "UserTurn",
        "AssistantTurn",
        "ToolResultTurn",
        "UserTurn",
    ]
    prompts = [m for m in await _messages(http, fork["id"]) if m["info"]["role"] == "user"]
    assert prompts[-1]["info"]["agent"] == "general"


async def test_a_fork_across_a_compaction_starts_from_the_summary(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(text_reply("first answer"), text_reply("the summary"), text_reply("second"))
    sid = (await http.post("/session", json={})).json()["id"]
    await _prompt(http, sid, "one")
    assert (await http.post(f"/session/{sid}/summarize", json=SCRIPTED)).json() is True
    await _prompt(http, sid, "two")
    source = await _messages(http, sid)
    second = next(p for p in source[-1]["parts"] if p["type"] == "text")
    first = next(p for p in source[1]["parts"] if p["type"] == "text")
    after = await _fork(http, sid, partID=second["id"])
    before = await _fork(http, sid, partID=first["id"])
    assert [p["type"] for p in (await _messages(http, after["id"]))[2]["parts"]] == ["compaction"]
    model.enqueue(text_reply("three after"), text_reply("three before"))
    await _prompt(http, after["id"], "three")
    await _prompt(http, before["id"], "three")
    texts = [[getattr(t, "text", "") for t in r.messages] for r in model.requests[-2:]]
    assert texts[0] == [COMPACTION_QUESTION, "the summary", "two", "second", "three"]
    assert texts[1] == ["one", "first answer", "three"]


async def test_a_busy_sessions_fork_is_a_finished_copy(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.gate = asyncio.Event()
    model.enqueue(tool_reply("read", READ, call_id="held"), text_reply("never"))
    async with Watch(http) as watch:
        sid = await _start(http, "read")
        model.gate.set()
        await watch.wait_for(
            "message.part.updated",
            lambda e: (
                e["properties"]["part"].get("tool") == "read"
                and e["properties"]["part"]["state"]["status"] == "pending"
            ),
        )
        model.gate.clear()  # the stream stops before the call is complete
        fork = await _fork(http, sid)
        model.gate.set()
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    copied = await _messages(http, fork["id"])
    answer = copied[-1]
    assert answer["info"]["time"]["completed"] >= answer["info"]["time"]["created"]
    assert answer["info"]["error"]["name"] == "MessageAbortedError"
    tool = next(p for p in answer["parts"] if p["type"] == "tool")
    assert tool["state"]["status"] == "error" and tool["state"]["error"] == FORK_INTERRUPTED
    assert (await http.get("/session/status")).json() == {}
