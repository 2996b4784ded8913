"""The session routes through a real server on loopback, bodies checked against opencode's."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.reference import document, response_schema, validate, validate_schema
from tests.scripted import ScriptedModel, text_reply, tool_reply


async def _session(http: httpx.AsyncClient) -> str:
    response = await http.post("/session", json={})
    assert response.status_code == 200
    return str(response.json()["id"])


def _prompt(text: str) -> dict[str, object]:
    return {"parts": [{"type": "text", "text": text}]}


async def test_session_lifecycle_matches_the_reference(http: httpx.AsyncClient) -> None:
    created = await http.post("/session", json={"title": "mine"})
    validate("Session", created.json())
    sid = created.json()["id"]
    assert created.json()["title"] == "mine"
    listed = await http.get("/session")
    validate_schema(response_schema("/session", "get"), listed.json())
    assert [s["id"] for s in listed.json()] == [sid]
    got = await http.get(f"/session/{sid}")
    assert got.json() == created.json()
    deleted = await http.delete(f"/session/{sid}")
    assert deleted.json() is True
    assert (await http.get(f"/session/{sid}")).status_code == 404


async def test_post_without_body_creates_a_session(http: httpx.AsyncClient) -> None:
    response = await http.post("/session")
    assert response.status_code == 200
    validate("Session", response.json())


async def test_prompt_returns_the_assistant_message_with_parts(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/message", json=_prompt("hello"))
    assert response.status_code == 200
    body = response.json()
    validate_schema(response_schema("/session/{sessionID}/message", "post"), body)
    validate("AssistantMessage", body["info"])
    assert [p["type"] for p in body["parts"]] == ["step-start", "reasoning", "text", "step-finish"]
    messages = (await http.get(f"/session/{sid}/message")).json()
    validate_schema(response_schema("/session/{sessionID}/message", "get"), messages)
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]
    one = (await http.get(f"/session/{sid}/message/{body['info']['id']}")).json()
    validate_schema(response_schema("/session/{sessionID}/message/{messageID}", "get"), one)
    assert one == messages[1]
    session = (await http.get(f"/session/{sid}")).json()
    assert session["title"] == "hello"  # the first prompt names an untitled session


async def test_prompt_async_returns_204_and_runs_in_the_background(
    http: httpx.AsyncClient,
) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/prompt_async", json=_prompt("long 1000000"))
    assert response.status_code == 204 and response.content == b""
    statuses = (await http.get("/session/status")).json()
    validate_schema(response_schema("/session/status", "get"), statuses)
    assert statuses.get(sid) == {"type": "busy"}
    for _ in range(200):  # wait until the answer is streaming, then abort it
        messages = (await http.get(f"/session/{sid}/message")).json()
        if len(messages) == 2 and any(p["type"] == "text" for p in messages[1]["parts"]):
            break
        await asyncio.sleep(0.01)
    assert (await http.post(f"/session/{sid}/abort")).json() is True
    assert (await http.get("/session/status")).json() == {}
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert messages[-1]["info"]["error"]["name"] == "MessageAbortedError"


async def test_openapi_document_is_served_at_doc(http: httpx.AsyncClient) -> None:
    doc = (await http.get("/doc")).json()
    ours = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    expected = {
        ("/event", "get"),
        ("/session", "get"),
        ("/session", "post"),
        ("/session/status", "get"),
        ("/session/{sessionID}", "get"),
        ("/session/{sessionID}", "delete"),
        ("/session/{sessionID}/message", "get"),
        ("/session/{sessionID}/message", "post"),
        ("/session/{sessionID}/message/{messageID}", "get"),
        ("/session/{sessionID}/prompt_async", "post"),
        ("/session/{sessionID}/abort", "post"),
    }
    assert expected <= ours
    assert all(path in document()["paths"] for path, _ in expected)


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/session/ses_missing"),
        ("DELETE", "/session/ses_missing"),
        ("GET", "/session/ses_missing/message"),
        ("POST", "/session/ses_missing/abort"),
    ],
)
async def test_unknown_session_is_404_with_a_json_error(
    http: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await http.request(method, path)
    assert response.status_code == 404
    assert response.json() == {
        "name": "NotFoundError",
        "data": {"message": "Session not found: ses_missing"},
    }
    validate("NotFoundError", response.json())


async def test_unknown_message_is_404(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    response = await http.get(f"/session/{sid}/message/msg_missing")
    assert response.status_code == 404
    assert response.json()["data"]["message"] == "Message not found: msg_missing"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"parts": []}, "parts", "at least one part"),
        ({"parts": [{"type": "text", "text": "   "}]}, "parts", "prompt is empty"),
        ({}, "parts", "Field required"),
        ({"parts": [{"type": "text"}]}, "parts.0.text", "Field required"),
        ({"parts": [{"type": "bogus", "text": "x"}]}, "parts.0", "tag 'bogus'"),
        ({"parts": "hello"}, "parts", "valid list"),
        (
            {"parts": [{"type": "text", "text": "x"}], "model": {"providerID": "demo"}},
            "model.modelID",
            "Field required",
        ),
    ],
)
async def test_malformed_prompt_is_400_naming_the_field(
    http: httpx.AsyncClient, body: dict[str, object], field: str, message: str
) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["name"] == "BadRequest"
    assert error["data"]["field"] == field
    assert message in error["data"]["message"]
    validate("BadRequestError", error)
    assert (await http.get(f"/session/{sid}/message")).json() == []  # nothing stored


async def test_invalid_json_is_400(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    response = await http.post(
        f"/session/{sid}/message", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["data"]["message"].startswith("Invalid JSON body")


async def test_unknown_model_is_400_and_stores_nothing(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    body = {**_prompt("x"), "model": {"providerID": "nope", "modelID": "m"}}
    response = await http.post(f"/session/{sid}/prompt_async", json=body)
    assert response.status_code == 400
    assert "Unknown model nope/m; available: " in response.json()["data"]["message"]
    assert (await http.get(f"/session/{sid}/message")).json() == []


async def test_prompt_to_a_deleted_session_is_404_and_others_keep_their_data(
    http: httpx.AsyncClient,
) -> None:
    keep = await _session(http)
    await http.post(f"/session/{keep}/message", json=_prompt("keep me"))
    gone = await _session(http)
    await http.delete(f"/session/{gone}")
    response = await http.post(f"/session/{gone}/message", json=_prompt("hello?"))
    assert response.status_code == 404
    assert len((await http.get(f"/session/{keep}/message")).json()) == 2


async def test_a_tool_given_a_missing_file_is_a_tool_error_not_a_failure(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "no/such/file.txt"}), text_reply("sorry"))
    sid = await _session(http)
    body = {**_prompt("read it"), "model": {"providerID": "scripted", "modelID": "scripted"}}
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 200
    assert response.json()["info"]["finish"] == "stop"
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert [m["info"]["role"] for m in messages] == ["user", "assistant", "assistant"]
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["state"]["status"] == "error"
    assert tool["state"]["error"].startswith("File not found: no/such/file.txt")
    validate("ToolPart", tool)
