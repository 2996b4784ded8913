"""Users, tokens and per-session access on a real server: every operation of the OpenAPI
document and every stream, tried by one user against another's session."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import httpx
import pytest

from partwire import ids
from partwire.access import Scope
from partwire.cli.accounts import database
from partwire.clock import now_ms
from partwire.config import Settings
from partwire.server.runner import serve_in_background
from partwire.storage import accounts as sql
from tests.scripted import ScriptedModel, text_reply, tool_reply

SCRIPTED = {"providerID": "scripted", "modelID": "scripted"}
STREAMS = {"/event", "/api/event", "/global/event"}
# reads that stream (or wait for the run) until the caller leaves: tried apart
LASTING = {
    "/session/{sessionID}/stream",
    "/api/session/{sessionID}/event",
    "/api/session/{sessionID}/wait",
}


def add_token(
    settings: Settings, user: str | None, scope: Scope = "write", expires_ms: int | None = None
) -> str:
    """A token for ``user`` (made if new), as ``partwire token create`` makes one."""
    secret = sql.new_secret()
    row = sql.TokenRow(ids.ascending("tok"), user, scope, None, now_ms(), expires_ms, None)
    with database(settings) as conn:
        if user is not None and not sql.user_exists(conn, user):
            sql.add_user(conn, user, now_ms())
        sql.add_token(conn, row, secret)
    return secret


@dataclass
class Team:
    alice: str
    bob: str
    carol: str  # read scope


@pytest.fixture
def team(settings: Settings) -> Team:
    return Team(
        alice=add_token(settings, "alice"),
        bob=add_token(settings, "bob"),
        carol=add_token(settings, "carol", "read"),
    )


@dataclass
class Duo:
    url: str
    alice: httpx.AsyncClient
    bob: httpx.AsyncClient
    team: Team


@pytest.fixture
async def duo(settings: Settings, team: Team) -> AsyncIterator[Duo]:
    """A server with users, and a client signed in as alice and one as bob."""
    async with (
        serve_in_background(settings) as url,
        as_user(url, team.alice) as alice_http,
        as_user(url, team.bob) as bob_http,
    ):
        yield Duo(url, alice_http, bob_http, team)


def as_user(url: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, timeout=15, headers={"authorization": f"Bearer {token}"})


async def _prompt(http: httpx.AsyncClient, sid: str, text: str = "hello") -> None:
    body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 200, response.text


async def _idle(http: httpx.AsyncClient, sid: str) -> None:
    for _ in range(500):
        if sid not in (await http.get("/session/status")).json():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{sid} did not finish")


@dataclass
class AliceSession:
    id: str
    message: str
    part: str
    ask: str
    title: str


async def _alice_session(http: httpx.AsyncClient, model: ScriptedModel) -> AliceSession:
    """Alice's session: one answered prompt, then a run waiting on a permission ask."""
    title = "alice-private-title"
    sid = (await http.post("/session", json={"title": title})).json()["id"]
    model.enqueue(text_reply("alice's answer"))
    await _prompt(http, sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}), text_reply("done"))
    body = {"parts": [{"type": "text", "text": "read it"}], "model": SCRIPTED}
    assert (await http.post(f"/session/{sid}/prompt_async", json=body)).status_code == 204
    for _ in range(500):
        pending = (await http.get("/permission")).json()
        if pending:
            break
        await asyncio.sleep(0.02)
    assert [p["sessionID"] for p in pending] == [sid]
    return AliceSession(
        sid, messages[-1]["info"]["id"], messages[-1]["parts"][0]["id"], pending[0]["id"], title
    )


def _concrete(path: str, alice: AliceSession) -> str:
    values = {
        "sessionID": alice.id,
        "messageID": alice.message,
        "partID": alice.part,
        "requestID": alice.ask,
        "permissionID": alice.ask,
    }
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), f"x_{m.group(1)}"), path)


def _names_alice(path: str) -> bool:
    return any(f"{{{p}}}" in path for p in ("sessionID", "requestID", "permissionID"))


async def _each_operation(
    http: httpx.AsyncClient, doc: dict[str, Any], alice: AliceSession, paths: Callable[[str], bool]
) -> AsyncIterator[tuple[str, str, httpx.Response, str]]:
    """Each operation of these paths, called as this caller at Alice's ids (never a 5xx):
    its method, path, answer and a line saying what happened."""
    for path, operations in doc["paths"].items():
        if not paths(path):
            continue
        for method in operations:
            upper = method.upper()
            body = {} if upper in ("POST", "PUT", "PATCH") else None
            response = await http.request(upper, _concrete(path, alice), json=body)
            where = f"{upper} {path}: {response.status_code} {response.text[:200]}"
            assert response.status_code < 500, where
            yield upper, path, response, where


async def _sweep(http: httpx.AsyncClient, doc: dict[str, Any], alice: AliceSession) -> list[str]:
    """Every operation, as this caller, at Alice's ids; what it was let do (2xx)."""
    allowed = []
    swept = _each_operation(http, doc, alice, lambda p: p not in STREAMS | {"/global/health"})
    async for upper, path, response, where in swept:
        if _names_alice(path):
            assert response.status_code in (403, 404), where
            continue
        assert alice.id not in response.text and alice.title not in response.text, where
        if response.is_success:
            allowed.append(f"{upper} {path}")
    return allowed


async def test_no_operation_lets_one_user_reach_anothers_session(
    model: ScriptedModel, duo: Duo
) -> None:
    alice_http, bob_http = duo.alice, duo.bob
    alice = await _alice_session(alice_http, model)
    before = (await alice_http.get(f"/session/{alice.id}/message")).json()
    doc = (await bob_http.get("/doc")).json()
    allowed = await _sweep(bob_http, doc, alice)
    # bob may use what the server offers and make his own sessions, nothing of the
    # machine's (configuration, keys, terminals, the TUI, worktrees)
    assert "POST /session" in allowed and "GET /agent" in allowed
    for admins in ("PATCH /config", "POST /pty", "PUT /auth/{providerID}", "GET /config"):
        assert admins not in allowed
    # Alice's session is as it was, the ask still waiting for her
    assert (await alice_http.get(f"/session/{alice.id}/message")).json() == before
    pending = (await alice_http.get("/permission")).json()
    assert [p["id"] for p in pending] == [alice.ask]
    reply = await alice_http.post(f"/permission/{alice.ask}/reply", json={"reply": "once"})
    assert reply.json() is True
    await _idle(alice_http, alice.id)


async def test_a_read_grant_reads_and_changes_nothing(
    settings: Settings, model: ScriptedModel, team: Team
) -> None:
    async with (
        serve_in_background(settings) as url,
        as_user(url, team.alice) as alice_http,
        as_user(url, team.carol) as carol_http,
        as_user(url, team.bob) as bob_http,
    ):
        alice = await _alice_session(alice_http, model)
        for user, role in (("carol", "read"), ("bob", "read")):
            grant = await alice_http.post(
                f"/session/{alice.id}/access", json={"user": user, "role": role}
            )
            assert grant.status_code == 200, grant.text
        assert {"user": "alice", "role": "owner"} in grant.json()["grants"]
        doc = (await carol_http.get("/doc")).json()
        on_alices = lambda p: "{sessionID}" in p and p not in LASTING  # noqa: E731
        async for upper, _, response, where in _each_operation(carol_http, doc, alice, on_alices):
            if upper != "GET":
                assert not response.is_success, where
        # a read grant shows the session, its messages and its ask, and answers nothing
        assert [s["id"] for s in (await carol_http.get("/session")).json()] == [alice.id]
        assert (await carol_http.get("/permission")).json()[0]["id"] == alice.ask
        refused = await bob_http.post(f"/permission/{alice.ask}/reply", json={"reply": "once"})
        assert refused.status_code == 403
        # a read token makes no session of its own either
        assert (await carol_http.post("/session", json={})).status_code == 403
        await alice_http.post(f"/permission/{alice.ask}/reply", json={"reply": "once"})
        await _idle(alice_http, alice.id)
        # taken back: gone from bob's view
        taken = {"user": "bob", "role": None}
        assert (await alice_http.post(f"/session/{alice.id}/access", json=taken)).is_success
        assert (await bob_http.get(f"/session/{alice.id}")).status_code == 404
        # only the owner gives access
        again = {"user": "bob", "role": "write"}
        assert (await carol_http.post(f"/session/{alice.id}/access", json=again)).status_code == 403


async def _read_events(
    http: httpx.AsyncClient, path: str, seen: list[dict[str, Any]], headers: dict[str, str]
) -> None:
    async with http.stream("GET", path, headers=headers, timeout=None) as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                seen.append(event.get("payload", event))


@pytest.mark.parametrize("path", sorted(STREAMS))
async def test_event_streams_carry_only_the_callers_sessions(
    model: ScriptedModel, duo: Duo, path: str
) -> None:
    alice_http, bob_http = duo.alice, duo.bob
    start = (await bob_http.get("/session")).status_code  # any request: the log's head
    assert start == 200
    bob_sid = (await bob_http.post("/session", json={})).json()["id"]
    head: list[dict[str, Any]] = []
    first = asyncio.create_task(_read_events(bob_http, path, head, {}))
    await asyncio.sleep(0.3)
    alice_sid = (await alice_http.post("/session", json={"title": "alice-private"})).json()
    model.enqueue(text_reply("for alice only"))
    await _prompt(alice_http, alice_sid["id"])
    model.enqueue(text_reply("for bob"))
    await _prompt(bob_http, bob_sid)
    await _until(lambda: _mentions(head, bob_sid, "for bob"))
    first.cancel()
    assert not _mentions(head, alice_sid["id"]) and not _mentions(head, "for alice only")
    # resumed from before everything: the replay leaves Alice's events out too
    logged = ("session.created", "session.updated", "message.updated")
    cursor = next(e["id"] for e in head if e.get("type") in logged)
    replayed: list[dict[str, Any]] = []
    resume = asyncio.create_task(_read_events(bob_http, path, replayed, {"last-event-id": cursor}))
    await _until(lambda: _mentions(replayed, "for bob"), note=lambda: (cursor, replayed))
    resume.cancel()
    assert not _mentions(replayed, alice_sid["id"])
    # shared with bob: his stream carries Alice's session from then on
    shared: list[dict[str, Any]] = []
    live = asyncio.create_task(_read_events(bob_http, path, shared, {}))
    await asyncio.sleep(0.3)
    grant = {"user": "bob", "role": "read"}
    await alice_http.post(f"/session/{alice_sid['id']}/access", json=grant)
    model.enqueue(text_reply("now bob sees this"))
    await _prompt(alice_http, alice_sid["id"])
    await _until(lambda: _mentions(shared, "now bob sees this"))
    live.cancel()


def _mentions(events: list[dict[str, Any]], *needles: str) -> bool:
    text = json.dumps(events)
    return all(needle in text for needle in needles)


async def _until(check: Any, seconds: float = 10, note: Any = None) -> None:
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out: {note() if note else ''}")


async def test_the_hub_refuses_another_users_session(model: ScriptedModel, duo: Duo) -> None:
    url, alice_http, bob_http = duo.url, duo.alice, duo.bob
    alice_sid = (await alice_http.post("/session", json={})).json()["id"]
    bob_sid = (await bob_http.post("/session", json={})).json()["id"]
    ws_url = url.replace("http://", "ws://") + "/ws"
    headers = {"authorization": f"Bearer {duo.team.bob}"}
    async with aiohttp.ClientSession() as web, web.ws_connect(ws_url, headers=headers) as ws:
        for sid, ok in ((alice_sid, False), (bob_sid, True)):
            await ws.send_json({"event": "subscribe", "data": {"sessionId": sid}})
            while True:
                message = await ws.receive_json(timeout=10)
                if message["event"] == "ack":
                    break
            assert message["data"]["ok"] is ok, message
        # shared, then taken back: the subscription ends at once
        grant = {"user": "bob", "role": "read"}
        await alice_http.post(f"/session/{alice_sid}/access", json=grant)
        await ws.send_json({"event": "subscribe", "data": {"sessionId": alice_sid}})
        while (message := await ws.receive_json(timeout=10))["event"] != "ack":
            pass
        assert message["data"]["ok"] is True
        taken = {"user": "bob", "role": None}
        await alice_http.post(f"/session/{alice_sid}/access", json=taken)
        while (message := await ws.receive_json(timeout=10))["event"] != "session:ended":
            pass
        assert message["data"]["sessionId"] == alice_sid
    # without a token the socket is refused before it opens
    async with aiohttp.ClientSession() as web:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await web.ws_connect(ws_url)
        assert refused.value.status == 403


async def test_chats_of_the_ai_sdk_and_ag_ui_are_the_owners(model: ScriptedModel, duo: Duo) -> None:
    alice_http, bob_http = duo.alice, duo.bob
    model.enqueue(text_reply("alice's chat"))
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    chat = {"id": "chat-a", "messages": [message], "model": "scripted/scripted"}
    async with alice_http.stream("POST", "/ui/chat", json=chat) as response:
        assert response.status_code == 200
        async for _ in response.aiter_lines():
            pass
    assert (await bob_http.get("/ui/chat/chat-a/messages")).status_code == 404
    assert (await bob_http.get("/ui/chat/chat-a/stream")).status_code == 404
    again = await bob_http.post("/ui/chat", json={**chat, "id": "chat-a"})
    assert again.status_code == 404
    run = {
        "threadId": "chat-a",
        "runId": "r1",
        "messages": [{"id": "u2", "role": "user", "content": "take over"}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    assert (await bob_http.post("/agui", json=run)).status_code == 404
    assert (await alice_http.get("/ui/chat/chat-a/messages")).status_code == 200


async def test_tokens_sign_in_until_revoked_or_expired(settings: Settings, team: Team) -> None:
    expired = add_token(settings, "dave", expires_ms=now_ms() + 300)
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        # users exist: loopback no longer signs anyone in without credentials
        assert (await http.get("/session")).status_code == 401
        assert (await http.get("/global/health")).status_code == 200
        bearer = {"authorization": f"Bearer {team.alice}"}
        assert (await http.get("/session", headers=bearer)).status_code == 200
        # a browser's own prompt: any user name, the token as the password
        assert (await http.get("/session", auth=("anyone", team.alice))).status_code == 200
        me = (await http.get("/user", headers=bearer)).json()
        assert me == {"name": "alice", "scope": "write", "user": "alice"}
        assert (
            await http.get("/session", headers={"authorization": "Bearer pwt_nope"})
        ).status_code == 401
        await asyncio.sleep(0.4)
        dave = {"authorization": f"Bearer {expired}"}
        assert (await http.get("/session", headers=dave)).status_code == 401
        with database(settings) as conn:
            alice_token = next(t for t in sql.list_tokens(conn, "alice"))
            sql.revoke_token(conn, alice_token.id, now_ms())
        await asyncio.sleep(1.2)  # the server looks a token up again after a second
        assert (await http.get("/session", headers=bearer)).status_code == 401


async def test_the_password_is_still_an_admin(settings: Settings, team: Team) -> None:
    locked = replace(settings, server_password="pw")
    async with (
        serve_in_background(locked) as url,
        as_user(url, team.alice) as alice_http,
        httpx.AsyncClient(base_url=url, auth=("partwire", "pw")) as admin,
    ):
        sid = (await alice_http.post("/session", json={})).json()["id"]
        assert [s["id"] for s in (await admin.get("/session")).json()] == [sid]
        assert (await admin.get("/config")).status_code == 200
        assert (await alice_http.get("/config")).status_code == 403


@pytest.fixture
async def shared_server(settings: Settings, team: Team) -> AsyncIterator[str]:
    async with serve_in_background(settings) as url:
        yield url


async def test_a_share_link_reads_one_session_live_until_unshared(
    shared_server: str, model: ScriptedModel, team: Team
) -> None:
    url = shared_server
    async with as_user(url, team.alice) as alice_http, httpx.AsyncClient(base_url=url) as guest:
        sid = (await alice_http.post("/session", json={})).json()["id"]
        other = (await alice_http.post("/session", json={})).json()["id"]
        model.enqueue(text_reply("shared answer"))
        await _prompt(alice_http, sid)
        shared = (await alice_http.post(f"/session/{sid}/share")).json()
        link = shared["share"]["url"]
        assert link.startswith(f"{url}/share/pwt_")
        opened = await guest.get(link.removeprefix(url))
        assert opened.status_code == 303 and opened.headers["location"] == f"/#/session/{sid}"
        assert "partwire_share" in guest.cookies
        assert [s["id"] for s in (await guest.get("/session")).json()] == [sid]
        assert (await guest.get(f"/session/{sid}/message")).status_code == 200
        assert (await guest.get(f"/session/{other}")).status_code == 404
        prompt = {"parts": [{"type": "text", "text": "guest"}], "model": SCRIPTED}
        assert (await guest.post(f"/session/{sid}/message", json=prompt)).status_code == 403
        assert (await guest.post("/session", json={})).status_code == 403
        assert (await guest.post(f"/session/{sid}/share")).status_code == 403
        # the web UI loads for the guest
        assert (await guest.get("/agent")).status_code == 200
        access = (await alice_http.get(f"/session/{sid}/access")).json()
        assert access["shared"] is True
        await alice_http.delete(f"/session/{sid}/share")
        await asyncio.sleep(1.2)
        assert (await guest.get(f"/session/{sid}")).status_code == 401
        assert (await guest.get(link.removeprefix(url))).status_code == 404


async def test_presence_names_who_watches_and_who_answered(model: ScriptedModel, duo: Duo) -> None:
    url, alice_http, bob_http = duo.url, duo.alice, duo.bob
    sid = (await alice_http.post("/session", json={})).json()["id"]
    grant = {"user": "bob", "role": "write"}
    await alice_http.post(f"/session/{sid}/access", json=grant)
    seen: list[dict[str, Any]] = []
    web = {"x-partwire-client": "web"}
    everything = asyncio.create_task(_read_events(alice_http, "/event", seen, web))
    await asyncio.sleep(0.3)
    cli = {"x-partwire-client": "cli"}
    watching = asyncio.create_task(_read_events(bob_http, f"/event?watch={sid}", [], cli))

    def watchers() -> list[tuple[str, str, str]]:
        found = [e for e in seen if e["type"] == "session.presence"]
        last = found[-1]["properties"]["watchers"] if found else []
        return sorted((w["user"], w["client"], w["transport"]) for w in last)

    await _until(lambda: watchers() == [("bob", "cli", "event")])
    ws_url = url.replace("http://", "ws://") + "/ws?client=web"
    headers = {"authorization": f"Bearer {duo.team.alice}"}
    async with aiohttp.ClientSession() as web_session:
        async with web_session.ws_connect(ws_url, headers=headers) as ws:
            await ws.send_json({"event": "subscribe", "data": {"sessionId": sid}})
            await _until(lambda: watchers() == [("alice", "web", "hub"), ("bob", "cli", "event")])
    await _until(lambda: watchers() == [("bob", "cli", "event")])
    watching.cancel()
    await _until(lambda: watchers() == [])
    # an ask answered by bob says so, beside opencode's permission.replied
    model.enqueue(tool_reply("read", {"filePath": "../secret.txt"}), text_reply("done"))
    body = {"parts": [{"type": "text", "text": "read it"}], "model": SCRIPTED}
    await alice_http.post(f"/session/{sid}/prompt_async", json=body)
    await _until(lambda: any(e["type"] == "permission.asked" for e in seen))
    ask = next(e for e in seen if e["type"] == "permission.asked")["properties"]["id"]
    reply = await bob_http.post(
        f"/permission/{ask}/reply", json={"reply": "once"}, headers={"x-partwire-client": "tui"}
    )
    assert reply.json() is True
    await _until(lambda: any(e["type"] == "ask.answered" for e in seen))
    answered = next(e for e in seen if e["type"] == "ask.answered")["properties"]
    assert answered == {"sessionID": sid, "requestID": ask, "by": "bob", "client": "tui"}
    await _idle(alice_http, sid)
    everything.cancel()


async def test_a_stream_opened_later_is_told_who_watches_now(duo: Duo) -> None:
    """Presence is never logged: a GET /event opened after a watcher joined learns of it
    in its opening, and only for the sessions its caller may read."""
    alice_http, bob_http = duo.alice, duo.bob
    shared = (await alice_http.post("/session", json={})).json()["id"]
    private = (await alice_http.post("/session", json={})).json()["id"]
    await alice_http.post(f"/session/{shared}/access", json={"user": "bob", "role": "read"})
    cli = {"x-partwire-client": "cli"}
    early: list[dict[str, Any]] = []
    streams = [asyncio.create_task(_read_events(alice_http, "/event", early, cli))]
    await _until(lambda: any(e["type"] == "server.connected" for e in early))
    for http, sid in ((bob_http, shared), (alice_http, private)):
        streams.append(asyncio.create_task(_read_events(http, f"/event?watch={sid}", [], cli)))

    def watched(seen: list[dict[str, Any]]) -> dict[str, list[str]]:
        told = [e["properties"] for e in seen if e["type"] == "session.presence"]
        return {p["sessionID"]: sorted(w["user"] for w in p["watchers"]) for p in told}

    now = {shared: ["bob"], private: ["alice"]}
    await _until(lambda: watched(early) == now, note=lambda: early)
    alice_late: list[dict[str, Any]] = []
    bob_late: list[dict[str, Any]] = []
    streams.append(asyncio.create_task(_read_events(alice_http, "/event", alice_late, cli)))
    streams.append(asyncio.create_task(_read_events(bob_http, "/event", bob_late, cli)))
    await _until(lambda: watched(alice_late) == now, note=lambda: alice_late)
    await _until(lambda: watched(bob_late) == {shared: ["bob"]}, note=lambda: bob_late)
    assert alice_late[0]["type"] == "server.connected"
    # a later event bob may read: by then his opening is all in, without alice's session
    await alice_http.patch(f"/session/{shared}", json={"title": "renamed"})
    await _until(lambda: any(e["type"] == "session.updated" for e in bob_late))
    assert watched(bob_late) == {shared: ["bob"]}
    for stream in streams:
        stream.cancel()


@pytest.mark.parametrize("path", ["/session/{sid}/stream", "/api/session/{sid}/event"])
async def test_a_one_session_stream_ends_when_access_is_taken(duo: Duo, path: str) -> None:
    sid = (await duo.alice.post("/session", json={})).json()["id"]
    await duo.alice.post(f"/session/{sid}/access", json={"user": "bob", "role": "read"})
    url = path.format(sid=sid)

    async def follow() -> int:
        async with duo.bob.stream("GET", url, timeout=None) as stream:
            assert stream.status_code == 200
            async for _ in stream.aiter_bytes():
                pass
        return stream.status_code

    following = asyncio.create_task(follow())
    await asyncio.sleep(0.5)
    assert not following.done()
    await duo.alice.post(f"/session/{sid}/access", json={"user": "bob", "role": None})
    assert await asyncio.wait_for(following, 10) == 200  # ended by the server
    assert (await duo.bob.get(url)).status_code == 404  # and not to be opened again


# python-engineio sends its headers with the handshake only, not with each poll, so
# polling is tried from Node (tests/client/test_js_token.py), whose client sends them all
@pytest.mark.parametrize("transport", ["websocket"])
async def test_socket_io_refuses_another_users_session(duo: Duo, transport: str) -> None:
    import socketio

    alice_sid = (await duo.alice.post("/session", json={})).json()["id"]
    bob_sid = (await duo.bob.post("/session", json={})).json()["id"]
    bob = socketio.AsyncClient()
    headers = {"Authorization": f"Bearer {duo.team.bob}"}
    await bob.connect(duo.url, transports=[transport], headers=headers)
    try:
        refused = await bob.call("subscribe", {"sessionId": alice_sid}, timeout=10)
        allowed = await bob.call("subscribe", {"sessionId": bob_sid}, timeout=10)
    finally:
        await bob.disconnect()
    assert refused["ok"] is False and "not found" in refused["error"]
    assert allowed == {"ok": True, "sessionId": bob_sid}
    async with aiohttp.ClientSession() as web:  # closed here, though the connect fails
        stranger = socketio.AsyncClient(http_session=web)
        with pytest.raises(socketio.exceptions.ConnectionError):
            await stranger.connect(duo.url, transports=[transport])


async def test_the_python_client_signs_in_with_a_token(duo: Duo) -> None:
    from partwire.client.http import PartwireClient

    async with PartwireClient(duo.url, token=duo.team.alice) as alice:
        assert (await alice.whoami())["user"] == "alice"
        session = await alice.create_session("mine")
        granted = await alice.grant(session.id, "bob", "write")
        assert {"user": "bob", "role": "write"} in granted["grants"]
        shared = await alice.share(session.id)
        assert shared.share is not None and "/share/pwt_" in shared.share.url
        assert (await alice.access(session.id))["shared"] is True
        await alice.unshare(session.id)
        assert (await alice.access(session.id))["shared"] is False
    async with PartwireClient(duo.url, token=duo.team.bob) as bob:
        assert [s.id for s in await bob.list_sessions()] == [session.id]
