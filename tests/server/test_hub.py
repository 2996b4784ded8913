"""The ClientHub: seed 004's SessionEvents over Socket.IO and /ws, resumable, with the
session's sub-agents in the same stream, reduced alike by the Python reducer, the
TypeScript reducer and the store."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import json
import os
import random
import shutil
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio

from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.protocol.conversation import conversation_of, in_call_order
from partwire.protocol.session_state import ConversationState, initial_state, reduce_session_event
from partwire.schema.session_events import PAYLOADS, SessionEvent
from partwire.server.app import create_app
from partwire.server.hub import MAX_BACKLOG
from partwire.server.runner import serve_in_background

JS = Path(__file__).parents[2] / "clients" / "js"
HUB_CLIENT = JS / "dist" / "scripts" / "hub-client.js"
PROMPTS = ("hello", "list", "task list", "edit README.md no-such-text => x")


class Listener:
    """A python-socketio client subscribed to one session."""

    def __init__(self) -> None:
        self.sio = socketio.AsyncClient()
        self.events: list[dict[str, Any]] = []
        self.resyncs: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self.sio.on("session:event", self._event)
        self.sio.on("session:resync", self._resync)

    async def _event(self, data: dict[str, Any]) -> None:
        self.events.append(data)
        self.arrived.set()

    async def _resync(self, data: dict[str, Any]) -> None:
        self.resyncs.append(data)
        self.arrived.set()

    async def start(self, url: str, session_id: str, since: str | None = None) -> dict[str, Any]:
        await self.sio.connect(url, transports=["websocket"])
        data = (
            {"sessionId": session_id}
            if since is None
            else {"sessionId": session_id, "since": since}
        )
        ack: dict[str, Any] = await self.sio.call("subscribe", data, timeout=10)
        return ack

    async def until(self, count: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(15):
            while len(self.events) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.events

    async def until_idle(self, idles: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(15):
            while sum(map(_main_idle, self.events)) < idles:
                self.arrived.clear()
                await self.arrived.wait()
        return self.events

    async def stop(self) -> None:
        await self.sio.disconnect()


def _main_idle(event: dict[str, Any]) -> bool:
    """The session itself went idle (not one of its sub-agents)."""
    return event["type"] == "session:idle" and event["context"]["conversationId"] == "main"


def _reduce(events: list[dict[str, Any]]) -> ConversationState:
    state = initial_state()
    for event in events:
        state = reduce_session_event(state, event)
    return state


def _calls_in_order(state: ConversationState) -> ConversationState:
    """The state with each tool result beside its call, as the store keeps it."""
    subagents = [{**s, "blocks": in_call_order(s["blocks"])} for s in state["subagents"]]
    subagents.sort(key=lambda s: s["toolUseId"])
    return {"blocks": in_call_order(state["blocks"]), "subagents": subagents}  # type: ignore[typeddict-item]


async def _stored(client: PartwireClient, session_id: str) -> ConversationState:
    """The conversation the store holds for a session and its sub-agents' sessions."""
    by_session = {session_id: await client.messages(session_id)}
    for child in await client.children(session_id):
        by_session[child.id] = await client.messages(child.id)
    return _calls_in_order(conversation_of(session_id, by_session))


async def _ran_session(client: PartwireClient) -> str:
    session_id = (await client.create_session()).id
    for text in PROMPTS:
        await client.prompt(session_id, text)
    return session_id


async def test_live_events_reduce_to_the_stored_blocks_and_resume_anywhere_and_after_a_restart(
    settings: Settings,
) -> None:
    async with serve_in_background(settings) as server, PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        live = Listener()
        assert (await live.start(server, session_id)) == {"ok": True, "sessionId": session_id}
        for text in PROMPTS:
            await client.prompt(session_id, text)
        events = await live.until_idle(len(PROMPTS))
        await live.stop()
        state = _reduce(events)
        assert _calls_in_order(state) == await _stored(client, session_id)
        assert [e["type"] for e in events].count("query:completed") == len(PROMPTS)
        assert len({e["id"] for e in events}) == len(events)
        assert all(e["context"]["sessionId"] == session_id for e in events)
        for event in events:  # every event as the seed's types define it
            SessionEvent.model_validate(event)
            PAYLOADS[event["type"]].model_validate(event["payload"])

        # resume after any event: exactly the rest
        cuts = [*sorted(random.Random(11).sample(range(len(events) - 1), 5)), len(events) - 2]
        for cut in cuts:
            assert await _resumed(server, session_id, events, cut) == events[cut + 1 :], cut
    # a new server on the same data dir: the cursors are places in the log it keeps
    async with serve_in_background(settings) as server:
        for cut in cuts[:2]:
            rest = await _resumed(server, session_id, events, cut)
            assert rest == events[cut + 1 :], f"after a restart: event {cut}"


async def _resumed(
    server: str, session_id: str, events: list[dict[str, Any]], cut: int
) -> list[dict[str, Any]]:
    """A Socket.IO subscription since event ``cut``: what it gets."""
    again = Listener()
    await again.start(server, session_id, since=events[cut]["id"])
    await again.until(len(events) - cut - 1)
    await asyncio.sleep(0.1)  # nothing more may come
    await again.stop()
    return again.events


async def test_a_new_subscriber_gets_the_whole_session_then_live(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _ran_session(client)
        late = Listener()
        await late.start(server, session_id)
        await late.until_idle(len(PROMPTS))
        before = len(late.events)
        await client.prompt(session_id, "hello")
        await late.until_idle(len(PROMPTS) + 1)
        await late.stop()
        assert len(late.events) > before
        assert _calls_in_order(_reduce(late.events)) == await _stored(client, session_id)


async def test_bad_subscriptions_are_refused_in_the_acknowledgement(server: str) -> None:
    listener = Listener()
    await listener.sio.connect(server, transports=["websocket"])
    assert (await listener.sio.call("subscribe", {"sessionId": "ses_nope"}, timeout=5))[
        "ok"
    ] is False
    refused = await listener.sio.call("subscribe", {"session": 1}, timeout=5)
    assert refused == {"ok": False, "error": "subscribe needs {sessionId, since?}"}
    await listener.stop()


@pytest.mark.skipif(
    shutil.which("node") is None or not HUB_CLIENT.exists(),
    reason="needs node and clients/js built",
)
@pytest.mark.parametrize("transport", ["socketio", "ws"])
async def test_node_clients_and_the_three_reducers_agree(server: str, transport: str) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        python = Listener()
        await python.start(server, session_id)
        node = await asyncio.create_subprocess_exec(
            "node", str(HUB_CLIENT), transport, server, session_id, str(len(PROMPTS)),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert node.stdout is not None
        assert (await asyncio.wait_for(node.stdout.readline(), 20)).strip() == b"subscribed"
        for text in PROMPTS:
            await client.prompt(session_id, text)
        out, err = await asyncio.wait_for(node.communicate(), 30)
        assert node.returncode == 0, err.decode()
        received = json.loads(out)
        events = await python.until_idle(len(PROMPTS))
        await asyncio.sleep(0.3)  # as the node client: what follows the last idle
        await python.stop()
        stored = await _stored(client, session_id)
    assert received["events"] == events  # the same events, in the same order
    python_state = _reduce(events)
    assert received["state"] == python_state  # TypeScript reducer == Python reducer
    assert _calls_in_order(python_state) == stored  # == the store
    rendered = received["rendered"]  # the typed client draws every block, sub-agents' too
    texts = [b["content"] for b in stored["blocks"] if b["type"] == "assistant_text"]
    (agent,) = stored["subagents"]
    texts += [b["content"] for b in agent["blocks"] if b["type"] == "assistant_text"]
    assert texts and all(f"assistant: {t.splitlines()[0]}" in rendered for t in texts)
    assert "subagent general: list [complete]" in rendered


async def test_a_client_that_falls_behind_is_told_to_resync_and_resumes(
    settings: Settings,
) -> None:
    app = create_app(settings)
    hub = app.state.hub
    async with serve_in_background(settings, app=app) as url, PartwireClient(url) as client:
        session_id = await _ran_session(client)
        whole = Listener()
        await whole.start(url, session_id)
        events = await whole.until_idle(len(PROMPTS))
        await asyncio.sleep(0.2)
        await whole.stop()

        sends = itertools.count()
        # engine.io's queue for this client "fills" after ten events
        hub.backlog = lambda sid: MAX_BACKLOG + 1 if next(sends) >= 10 else 0
        slow = Listener()
        await slow.start(url, session_id)
        async with asyncio.timeout(10):
            while not slow.resyncs:
                slow.arrived.clear()
                await slow.arrived.wait()
        await slow.stop()
        assert len(slow.events) == 10 and slow.events == events[:10]
        assert slow.resyncs[0]["since"] == events[9]["id"]

        hub.backlog = lambda sid: 0
        again = Listener()
        await again.start(url, session_id, since=slow.resyncs[0]["since"])
        await again.until(len(events) - 10)
        await again.stop()
        assert slow.events + again.events == events


def _ws_stalled(url: str, subscribe: dict[str, Any]) -> socket.socket:
    """A raw WebSocket to /ws with a tiny receive buffer: it subscribes, then stops reading."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert b" 101 " in head.split(b"\r\n")[0]
    payload = json.dumps({"event": "subscribe", "data": subscribe}).encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    return sock


def _ws_read_all(sock: socket.socket, quiet_s: float = 3) -> list[dict[str, Any]]:
    """Every message until the socket has been quiet for ``quiet_s``."""
    sock.settimeout(quiet_s)
    data = bytearray()
    try:
        while chunk := sock.recv(65536):
            data.extend(chunk)
    except TimeoutError:
        pass
    messages, at = [], 0
    while at + 2 <= len(data):
        size, at = data[at + 1] & 0x7F, at + 2
        if size == 126:
            size, at = int.from_bytes(data[at : at + 2], "big"), at + 2
        elif size == 127:
            size, at = int.from_bytes(data[at : at + 8], "big"), at + 8
        if at + size > len(data):
            break
        messages.append(json.loads(data[at : at + size]))
        at += size
    return messages


async def test_a_websocket_client_that_does_not_read_is_told_to_resync(
    settings: Settings,
) -> None:
    """/ws writes wait for the client, so events pile up in its bounded bus queue; events
    that cannot merge (1,500 tool calls, ingested) overflow it: session:resync follows, and
    resuming from where it stopped gives the rest."""
    tight = dataclasses.replace(settings, subscriber_queue=50)
    calls = 1500
    lines = [json.dumps({"type": "start", "prompt": "many calls"})]
    for n in range(calls):
        lines.append(json.dumps({"type": "tool-call", "callID": f"c{n}", "tool": "probe"}))
        output = f"{n} " + "x" * 2000  # large enough to fill the socket's buffers
        lines.append(json.dumps({"type": "tool-result", "callID": f"c{n}", "output": output}))
    async with serve_in_background(tight) as url, PartwireClient(url) as client:
        session_id = (await client.create_session()).id
        stalled = await asyncio.to_thread(_ws_stalled, url, {"sessionId": session_id})
        await asyncio.sleep(0.3)
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            answer = await http.post(f"/session/{session_id}/ingest", content="\n".join(lines))
            assert answer.status_code == 200, answer.text
        received = await asyncio.to_thread(_ws_read_all, stalled)
        stalled.close()
        events = [m["data"] for m in received if m["event"] == "session:event"]
        resyncs = [m["data"] for m in received if m["event"] == "session:resync"]
        assert resyncs and resyncs[0]["since"] == events[-1]["id"]
        whole = await _stored(client, session_id)
        results = sum(b["type"] == "tool_result" for b in whole["blocks"])
        assert results == calls
        rest = await asyncio.to_thread(
            _ws_session_events, url, {"sessionId": session_id, "since": resyncs[0]["since"]}
        )
    assert rest and _calls_in_order(_reduce(events)) != whole  # the stalled client lacked some
    assert _calls_in_order(_reduce(events + rest)) == whole


def _ws_session_events(url: str, subscribe: dict[str, Any]) -> list[dict[str, Any]]:
    """Every SessionEvent /ws sends for ``subscribe`` until it has been quiet a while."""
    sock = _ws_stalled(url, subscribe)
    try:
        messages = _ws_read_all(sock, quiet_s=1)
    finally:
        sock.close()
    return [m["data"] for m in messages if m["event"] == "session:event"]


async def test_ws_resumes_exactly_after_any_cut_and_after_a_restart(settings: Settings) -> None:
    """The hub over /ws, through the one cursor: after a cut anywhere, exactly the rest,
    nothing lost or repeated; and the same after the server restarts (cursors are places
    in the log, which the restart keeps)."""
    async with serve_in_background(settings) as url, PartwireClient(url) as client:
        session_id = await _ran_session(client)
        stored = await _stored(client, session_id)
        events = await asyncio.to_thread(_ws_session_events, url, {"sessionId": session_id})
        assert _calls_in_order(_reduce(events)) == stored
        cuts = [*sorted(random.Random(7).sample(range(len(events) - 1), 4)), len(events) - 2]
        for cut in cuts:
            since = {"sessionId": session_id, "since": events[cut]["id"]}
            rest = await asyncio.to_thread(_ws_session_events, url, since)
            assert rest == events[cut + 1 :], f"resumed over /ws after event {cut}"
    async with serve_in_background(settings) as url:  # a new server on the same data dir
        for cut in cuts[:2]:
            since = {"sessionId": session_id, "since": events[cut]["id"]}
            rest = await asyncio.to_thread(_ws_session_events, url, since)
            assert rest == events[cut + 1 :], f"resumed after a restart, after event {cut}"
