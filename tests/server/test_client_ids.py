"""Ids chosen by clients (opencode's SDKs and TUI send their own): every path that takes one
answers each prompt once, keeps history in the order it was stored, and refuses ids that
are malformed (400) or already used (409) without touching what is stored."""

from __future__ import annotations

import itertools
import secrets
import string
import time
from typing import Any

import httpx
import pytest

_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_counter = itertools.count()


def opencode_id(prefix: str) -> str:
    """An id minted by opencode's own scheme: 12 hex digits of ms*4096+counter (48 bits),
    then 14 random base62 characters. These sort after partwire's ids of the same time."""
    value = (int(time.time() * 1000) * 0x1000 + next(_counter)) % (1 << 48)
    return f"{prefix}_{value:012x}" + "".join(secrets.choice(_BASE62) for _ in range(14))


def _text(body: str) -> dict[str, Any]:
    return {"parts": [{"type": "text", "text": body}]}


async def _session(http: httpx.AsyncClient) -> str:
    return str((await http.post("/session", json={})).json()["id"])


async def _messages(http: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    response = await http.get(f"/session/{sid}/message")
    assert response.status_code == 200
    result: list[dict[str, Any]] = response.json()
    return result


async def _wait_idle(http: httpx.AsyncClient, sid: str) -> None:
    for _ in range(500):
        status = (await http.get("/session/status")).json()
        if sid not in status:
            return
        await _sleep()
    raise AssertionError(f"session {sid} never went idle")


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.02)


def _roles(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(m["info"]["role"], m["info"].get("parentID")) for m in messages]


def test_our_ids_sort_before_opencodes_so_order_cannot_come_from_ids() -> None:
    from partwire import ids

    assert ids.message_id() < opencode_id("msg")  # the case that made the loop run away


async def test_prompt_with_an_opencode_id_is_answered_once(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    mid = opencode_id("msg")
    response = await http.post(
        f"/session/{sid}/message", json={**_text("long 3"), "messageID": mid}
    )
    assert response.status_code == 200, response.text
    assert response.json()["info"]["parentID"] == mid
    assert _roles(await _messages(http, sid)) == [("user", None), ("assistant", mid)]


async def test_prompt_async_with_an_opencode_id_is_answered_once(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    first, second = opencode_id("msg"), opencode_id("msg")
    for mid in (first, second):
        body = {**_text("long 3"), "messageID": mid}
        assert (await http.post(f"/session/{sid}/prompt_async", json=body)).status_code == 204
        await _wait_idle(http, sid)
    messages = await _messages(http, sid)
    expected = [("user", None), ("assistant", first), ("user", None), ("assistant", second)]
    assert _roles(messages) == expected
    assert [m["info"]["id"] for m in messages if m["info"]["role"] == "user"] == [first, second]


async def test_init_with_an_opencode_id_is_answered_once(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    mid = opencode_id("msg")
    body = {"providerID": "demo", "modelID": "demo", "messageID": mid}
    response = await http.post(f"/session/{sid}/init", json=body)
    assert response.status_code == 200 and response.json() is True
    assert _roles(await _messages(http, sid)) == [("user", None), ("assistant", mid)]


async def test_shell_stores_the_user_turn_under_the_clients_id(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    mid = opencode_id("msg")
    body = {"agent": "build", "command": "echo hi", "messageID": mid}
    response = await http.post(f"/session/{sid}/shell", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["info"]["parentID"] == mid
    assert _roles(await _messages(http, sid)) == [("user", None), ("assistant", mid)]
    assert (await _messages(http, sid))[0]["info"]["id"] == mid


async def test_command_with_an_opencode_id_stores_nothing_for_an_unknown_command(
    http: httpx.AsyncClient,
) -> None:
    sid = await _session(http)
    body = {"command": "deploy", "arguments": "", "messageID": opencode_id("msg")}
    response = await http.post(f"/session/{sid}/command", json=body)
    assert response.status_code == 404
    assert await _messages(http, sid) == []
    bad = await http.post(f"/session/{sid}/command", json={**body, "messageID": "msg-1"})
    assert bad.status_code == 400 and bad.json()["data"]["field"] == "messageID"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("message", {**_text("hi"), "messageID": "msg"}, "messageID"),
        ("prompt_async", {**_text("hi"), "messageID": "msg_a/b"}, "messageID"),
        ("message", {"parts": [{"type": "text", "text": "hi", "id": "part_1"}]}, "parts.0.id"),
        ("init", {"providerID": "demo", "modelID": "demo", "messageID": "ses_1"}, "messageID"),
        ("shell", {"agent": "build", "command": "ls", "messageID": "msg_ x"}, "messageID"),
    ],
)
async def test_a_malformed_client_id_is_a_400_naming_the_field(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
) -> None:
    sid = await _session(http)
    response = await http.post(f"/session/{sid}/{path}", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["data"]["field"] == field
    assert await _messages(http, sid) == []


async def test_an_id_used_by_another_session_is_a_409_and_overwrites_nothing(
    http: httpx.AsyncClient,
) -> None:
    owner, intruder = await _session(http), await _session(http)
    mid, pid = opencode_id("msg"), opencode_id("prt")
    body = {"messageID": mid, "parts": [{"type": "text", "text": "mine", "id": pid}]}
    assert (await http.post(f"/session/{owner}/message", json=body)).status_code == 200
    before = await _messages(http, owner)

    again = await http.post(f"/session/{intruder}/message", json={**_text("x"), "messageID": mid})
    assert again.status_code == 409
    assert again.json()["name"] == "IdConflictError" and mid in again.json()["data"]["message"]
    part_body = {"parts": [{"type": "text", "text": "theirs", "id": pid}]}
    stolen_part = await http.post(f"/session/{intruder}/prompt_async", json=part_body)
    assert stolen_part.status_code == 409
    shell = {"agent": "build", "command": "echo x", "messageID": mid}
    assert (await http.post(f"/session/{intruder}/shell", json=shell)).status_code == 409
    same_session = await http.post(
        f"/session/{owner}/message", json={**_text("y"), "messageID": mid}
    )
    assert same_session.status_code == 409

    assert await _messages(http, owner) == before
    assert await _messages(http, intruder) == []


async def test_a_part_id_repeated_inside_one_prompt_is_a_409(http: httpx.AsyncClient) -> None:
    sid = await _session(http)
    pid = opencode_id("prt")
    parts = [{"type": "text", "text": "a", "id": pid}, {"type": "text", "text": "b", "id": pid}]
    response = await http.post(f"/session/{sid}/message", json={"parts": parts})
    assert response.status_code == 409 and response.json()["data"]["message"].startswith("parts.1")
    assert await _messages(http, sid) == []


async def _mixed_history(http: httpx.AsyncClient) -> tuple[str, list[str]]:
    """A session whose first prompt has an id sorting after everything, then ours."""
    sid = await _session(http)
    late = "msg_" + "z" * 26
    await http.post(f"/session/{sid}/message", json={**_text("first"), "messageID": late})
    await http.post(f"/session/{sid}/message", json=_text("second"))
    await http.post(f"/session/{sid}/message", json=_text("third"))
    users = [m["info"]["id"] for m in await _messages(http, sid) if m["info"]["role"] == "user"]
    assert users[0] == late and users[1] < late
    return sid, users


async def test_paging_revert_and_fork_follow_history_order_not_ids(
    http: httpx.AsyncClient,
) -> None:
    sid, users = await _mixed_history(http)
    history = [m["info"]["id"] for m in await _messages(http, sid)]
    assert len(history) == 6

    page = (await http.get(f"/session/{sid}/message?limit=2&before={users[1]}")).json()
    assert [m["info"]["id"] for m in page] == history[:2]
    missing = await http.get(f"/session/{sid}/message?limit=2&before=msg_nothere")
    assert missing.status_code == 404

    fork = (await http.post(f"/session/{sid}/fork", json={"messageID": users[1]})).json()
    forked = await _messages(http, fork["id"])
    assert [m["parts"][0].get("text") for m in forked if m["info"]["role"] == "user"] == ["first"]
    assert _roles(forked)[1] == ("assistant", forked[0]["info"]["id"])

    reverted = await http.post(f"/session/{sid}/revert", json={"messageID": users[1]})
    assert reverted.status_code == 200
    await http.post(f"/session/{sid}/message", json=_text("fourth"))  # makes the revert final
    texts = [
        m["parts"][0]["text"] for m in await _messages(http, sid) if m["info"]["role"] == "user"
    ]
    assert texts == ["first", "fourth"]  # the older message with the high id survived
