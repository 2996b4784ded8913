"""Every prompt and session field partwire accepts takes effect, or is a 400."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from partwire.providers.stream import StartStep, StreamError, StreamStart, TextDelta, TextStart
from partwire.providers.stream import UserTurn as UserTurnType
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.watch import Watch

SCRIPTED = {"providerID": "scripted", "modelID": "scripted"}


def _body(text: str, **extra: Any) -> dict[str, Any]:
    return {"parts": [{"type": "text", "text": text}], "model": SCRIPTED, **extra}


async def _session(http: httpx.AsyncClient, **extra: Any) -> str:
    response = await http.post("/session", json=extra)
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


async def _messages(http: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = (await http.get(f"/session/{sid}/message")).json()
    return result


async def test_no_reply_stores_the_prompt_as_context_without_calling_the_model(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/message", json=_body("remember 42", noReply=True))
    assert response.status_code == 200, response.text
    assert response.json()["info"]["role"] == "user"
    async_reply = await http.post(f"/session/{sid}/prompt_async", json=_body("and 7", noReply=True))
    assert async_reply.status_code == 204
    await asyncio.sleep(0.1)
    assert model.requests == []
    assert [m["info"]["role"] for m in await _messages(http, sid)] == ["user", "user"]
    assert (await http.get("/session/status")).json() == {}

    model.enqueue(text_reply("ok"))
    answer = await http.post(f"/session/{sid}/message", json=_body("what did I say?"))
    assert answer.status_code == 200
    turns = [t.text for t in model.requests[0].messages if isinstance(t, UserTurnType)]
    assert turns == ["remember 42", "and 7", "what did I say?"]  # the noReply prompts as context


async def test_a_switched_off_tool_is_not_offered_and_cannot_run(
    http: httpx.AsyncClient, model: ScriptedModel, tmp_path: Any
) -> None:
    marker = tmp_path / "ran"
    model.enqueue(tool_reply("bash", {"command": f"touch {marker}", "description": "x"}))
    model.enqueue(text_reply("done"))
    sid = await _session(http)
    body = _body("run it", tools={"bash": False})
    assert (await http.post(f"/session/{sid}/message", json=body)).status_code == 200
    offered = {spec.name for spec in model.requests[0].tools}
    assert "bash" not in offered and "read" in offered
    tool = next(p for m in await _messages(http, sid) for p in m["parts"] if p["type"] == "tool")
    assert tool["state"]["status"] == "error" and "no tool named bash" in tool["state"]["error"]
    assert not marker.exists()


async def test_an_unknown_tool_switch_is_a_400(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/message", json=_body("x", tools={"rm": False}))
    assert response.status_code == 400 and response.json()["data"]["field"] == "tools"
    assert await _messages(http, sid) == []


async def test_system_is_added_to_the_system_prompt(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(text_reply("arr"))
    sid = await _session(http)
    body = _body("hi", system="Answer like a pirate.")
    assert (await http.post(f"/session/{sid}/message", json=body)).status_code == 200
    assert model.requests[0].system.endswith("Answer like a pirate.")


async def test_a_variant_is_refused_rather_than_ignored(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/message", json=_body("x", variant="high"))
    assert response.status_code == 400 and response.json()["data"]["field"] == "variant"
    assert await _messages(http, sid) == []
    model = {"id": "demo", "providerID": "demo", "variant": "high"}
    created = await http.post("/session", json={"model": model})
    assert created.status_code == 400 and created.json()["data"]["field"] == "model.variant"


async def test_agent_and_model_given_at_creation_are_the_sessions_defaults(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(text_reply("planned"))
    sid = await _session(http, agent="plan", model={"id": "scripted", "providerID": "scripted"})
    session = (await http.get(f"/session/{sid}")).json()
    assert session["agent"] == "plan" and session["model"]["providerID"] == "scripted"
    body = {"parts": [{"type": "text", "text": "hi"}]}  # neither agent nor model
    answer = (await http.post(f"/session/{sid}/message", json=body)).json()
    assert answer["info"]["providerID"] == "scripted" and answer["info"]["agent"] == "plan"
    user = (await _messages(http, sid))[0]["info"]
    assert user["agent"] == "plan" and user["model"]["modelID"] == "scripted"

    bad_agent = await http.post("/session", json={"agent": "nobody"})
    assert bad_agent.status_code == 400 and bad_agent.json()["data"]["field"] == "agent"
    bad_model = await http.post("/session", json={"model": {"id": "x", "providerID": "nope"}})
    assert bad_model.status_code == 400 and bad_model.json()["data"]["field"] == "model"


async def test_summarize_auto_goes_on_working_after_the_summary(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    await http.post(f"/session/{sid}/message", json={"parts": [{"type": "text", "text": "list"}]})
    before = len(await _messages(http, sid))
    body = {"providerID": "demo", "modelID": "demo", "auto": True}
    assert (await http.post(f"/session/{sid}/summarize", json=body)).status_code == 200
    after = await _messages(http, sid)
    new = after[before:]
    compaction = next(p for p in new[0]["parts"] if p["type"] == "compaction")
    assert compaction["auto"] is True
    assert new[1]["info"]["summary"] is True
    assert new[2]["parts"][0]["synthetic"] is True  # "continue …"
    assert (
        new[3]["info"]["role"] == "assistant" and new[3]["info"]["parentID"] == new[2]["info"]["id"]
    )

    manual = await _session(http)
    await http.post(f"/session/{manual}/message", json={"parts": [{"type": "text", "text": "x"}]})
    count = len(await _messages(http, manual))
    body["auto"] = False
    assert (await http.post(f"/session/{manual}/summarize", json=body)).status_code == 200
    assert len(await _messages(http, manual)) == count + 2  # request and summary, nothing more


async def test_a_failed_attempt_never_reaches_the_model_again(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    failed = [
        StreamStart(),
        StartStep(),
        TextStart("t"),
        TextDelta("t", "half an"),
        StreamError("Overloaded", retryable=True, status_code=529, retry_after_s=0.01),
    ]
    model.enqueue(failed, text_reply("whole answer"), text_reply("next"))  # type: ignore[arg-type]
    sid = await _session(http)
    assert (await http.post(f"/session/{sid}/message", json=_body("one"))).status_code == 200
    assert (await http.post(f"/session/{sid}/message", json=_body("two"))).status_code == 200
    seen = [t for t in model.requests[2].messages if not isinstance(t, UserTurnType)]
    texts = [getattr(t, "text", "") for t in seen]
    assert texts == ["whole answer"]
    shown = [p.get("text") for p in (await _messages(http, sid))[1]["parts"] if p["type"] == "text"]
    assert shown == ["half an", "whole answer"]  # people still see both attempts


async def test_resuming_from_an_id_the_log_never_had_gets_a_resync(
    http: httpx.AsyncClient,
) -> None:
    await _session(http)
    headers = {"Last-Event-ID": "evt_ffffffffffffffzzzzzzzzzzzz"}
    async with http.stream("GET", "/event", headers=headers) as response:
        lines = response.aiter_lines()
        events = []
        async for line in lines:
            if line.startswith("data:"):
                events.append(line)
            if len(events) == 2:
                break
    assert '"server.connected"' in events[0] and '"instanceID"' in events[0]
    assert '"server.resync"' in events[1]


async def test_server_connected_names_the_instance(http: httpx.AsyncClient) -> None:
    async with Watch(http) as watch:
        first = watch.events[0]
    assert first["type"] == "server.connected"
    assert first["properties"]["instanceID"].startswith("ins_")
