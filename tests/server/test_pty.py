"""Pseudo-terminals: opencode's /pty and /api/pty routes and the WebSocket that drives one."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from partwire.bus import Bus
from partwire.config import Settings
from partwire.server.runner import serve_in_background
from partwire.terminals import PtyCreate, Terminals
from tests.reference import event_schema_name, response_schema, validate, validate_schema
from tests.server.watch import Watch

META = b"\x00"


async def _frames(ws: aiohttp.ClientWebSocketResponse, until: str, within: float = 10) -> str:
    """Text received until it contains ``until``."""
    text = ""
    async with asyncio.timeout(within):
        while until not in text:
            message = await ws.receive()
            if message.type == aiohttp.WSMsgType.TEXT:
                text += message.data
            elif message.type == aiohttp.WSMsgType.BINARY:
                assert message.data.startswith(META)
            else:
                raise AssertionError(f"socket ended before {until!r}: {message.type} {text!r}")
    return text


async def _opening(ws: aiohttp.ClientWebSocketResponse) -> tuple[str, int]:
    """The replay (if any) and the cursor frame that ends it."""
    replay = ""
    async with asyncio.timeout(10):
        while True:
            message = await ws.receive()
            if message.type == aiohttp.WSMsgType.TEXT:
                replay += message.data
                continue
            assert message.type == aiohttp.WSMsgType.BINARY, message
            assert message.data.startswith(META)
            cursor: int = json.loads(message.data[1:])["cursor"]
            return replay, cursor


async def _refused(client: aiohttp.ClientSession, url: str) -> bool:
    """Whether the server refuses the WebSocket handshake (it closes before accepting)."""
    try:
        async with client.ws_connect(url):
            return False
    except aiohttp.WSServerHandshakeError as error:
        return error.status == 403


def _ws_url(server: str, path: str) -> str:
    return server.replace("http://", "ws://") + path


async def test_a_terminal_runs_a_shell_streams_replays_resizes_and_exits(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=20) as http, Watch(http) as watch:
        created = await http.post("/pty", json={"command": "/bin/sh", "title": "build"})
        assert created.status_code == 200, created.text
        info: dict[str, Any] = created.json()
        validate_schema(response_schema("/pty", "post"), info)
        assert info["status"] == "running" and info["title"] == "build" and info["pid"] > 0
        pty_id = info["id"]
        assert [p["id"] for p in (await http.get("/pty")).json()] == [pty_id]
        listed = (await http.get("/api/pty")).json()
        validate_schema(response_schema("/api/pty", "get"), listed)
        assert [p["id"] for p in listed["data"]] == [pty_id]

        resized = await http.put(f"/pty/{pty_id}", json={"size": {"rows": 33, "cols": 101}})
        assert resized.status_code == 200
        renamed = await http.put(f"/pty/{pty_id}", json={"title": "tests"})
        assert renamed.json()["title"] == "tests"
        validate_schema(response_schema("/pty/{ptyID}", "put"), renamed.json())

        async with aiohttp.ClientSession() as client:
            async with client.ws_connect(_ws_url(server, f"/pty/{pty_id}/connect")) as ws:
                _, first = await _opening(ws)
                # an empty prompt: after the answer the shell writes nothing until told to
                await ws.send_str("PS1=''; stty size; echo sum-$((6*7))\n")
                seen = await _frames(ws, "sum-42\r\n")
                assert "33 101" in seen  # the resize reached the terminal
            # a reconnect from the cursor it had gets exactly what came after it
            url = _ws_url(server, f"/pty/{pty_id}/connect?cursor={first}")
            async with client.ws_connect(url) as ws:
                replay, cursor = await _opening(ws)
                assert "sum-42" in replay and cursor == first + len(replay)
            async with client.ws_connect(url.replace(f"cursor={first}", "cursor=-1")) as ws:
                replay, latest = await _opening(ws)
                assert replay == "" and latest == cursor
                await ws.send_str("exit 3\n")
                closed = await asyncio.wait_for(ws.receive(), 10)
                while closed.type == aiohttp.WSMsgType.TEXT:
                    closed = await asyncio.wait_for(ws.receive(), 10)
                assert closed.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)

        exited = await watch.wait_for("pty.exited")
        assert exited["properties"] == {"id": pty_id, "exitCode": 3}
        after = (await http.get(f"/pty/{pty_id}")).json()
        assert after["status"] == "exited" and after["exitCode"] == 3
        assert (await http.delete(f"/pty/{pty_id}")).json() is True
        await watch.wait_for("pty.deleted")
        for kind in ("pty.created", "pty.updated", "pty.exited", "pty.deleted"):
            event = await watch.wait_for(kind)
            validate(event_schema_name(kind), event)
        assert (await http.get("/pty")).json() == []


async def test_unknown_terminals_bad_commands_and_plain_gets_are_refused(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=20) as http:
        for method, path in [
            ("GET", "/pty/pty_nope"),
            ("PUT", "/pty/pty_nope"),
            ("DELETE", "/pty/pty_nope"),
            ("GET", "/api/pty/pty_nope"),
            ("DELETE", "/api/pty/pty_nope"),
            ("GET", "/pty/pty_nope/connect"),
        ]:
            response = await http.request(method, path, json={} if method == "PUT" else None)
            assert response.status_code == 404, (method, path)
            validate("PtyNotFoundError", response.json())
        missing = await http.post("/pty", json={"command": "no-such-shell-here"})
        assert missing.status_code == 400 and "no-such-shell-here" in missing.text
        outside = await http.post("/pty", json={"cwd": "does/not/exist"})
        assert outside.status_code == 400 and "cwd" in outside.text
        bad_size = await http.post("/pty", json={"size": {"rows": 0}})
        assert bad_size.status_code == 400
        pty_id = (await http.post("/api/pty", json={"command": "/bin/sh"})).json()["data"]["id"]
        plain = await http.get(f"/pty/{pty_id}/connect")
        assert plain.status_code == 400 and "WebSocket" in plain.text
        # a ticket needs the header a cross-site form cannot send
        refused = await http.post(f"/pty/{pty_id}/connect-token")
        assert refused.status_code == 403
        validate("PtyForbiddenError", refused.json())
        assert (await http.delete(f"/api/pty/{pty_id}")).status_code == 204


async def test_with_a_password_a_socket_needs_credentials_or_a_fresh_ticket(
    settings: Settings,
) -> None:
    locked = replace(settings, server_password="pw")
    auth = httpx.BasicAuth("partwire", "pw")
    async with (
        serve_in_background(locked) as url,
        httpx.AsyncClient(base_url=url, auth=auth, timeout=20) as http,
        aiohttp.ClientSession() as client,
    ):
        pty_id = (await http.post("/pty", json={"command": "/bin/sh"})).json()["id"]
        connect = _ws_url(url, f"/pty/{pty_id}/connect")
        assert await _refused(client, connect)
        assert await _refused(client, connect + "?ticket=made-up")
        headers = {"x-opencode-ticket": "1"}
        token = await http.post(f"/pty/{pty_id}/connect-token", headers=headers)
        validate_schema(response_schema("/pty/{ptyID}/connect-token", "post"), token.json())
        ticket = token.json()["ticket"]
        async with client.ws_connect(f"{connect}?ticket={ticket}") as ws:
            _, cursor = await _opening(ws)
            await ws.send_str("echo in-$((2+2))\n")
            assert "in-4" in await _frames(ws, "in-4\r\n")
        assert await _refused(client, f"{connect}?ticket={ticket}")  # used up
        basic = {"Authorization": "Basic " + base64.b64encode(b"partwire:pw").decode()}
        async with client.ws_connect(connect, headers=basic) as ws:  # credentials still do
            replay, later = await _opening(ws)
            assert "in-4" in replay and later > cursor
        v2 = await http.post(f"/api/pty/{pty_id}/connect-token", headers=headers)
        assert v2.status_code == 200 and v2.json()["data"]["expires_in"] == 60
        assert (await http.delete(f"/pty/{pty_id}")).status_code == 200


async def test_disposing_the_instance_ends_its_terminals(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=20) as http, Watch(http) as watch:
        created = (await http.post("/pty", json={"command": "/bin/sh"})).json()
        assert (await http.post("/instance/dispose")).json() is True
        assert (await http.get("/pty")).json() == []
        assert (await http.get(f"/pty/{created['id']}")).status_code == 404
        await watch.wait_for("server.instance.disposed")


def test_terminals_start_under_uvloop_too(tmp_path: Path) -> None:
    """`partwire serve` runs on uvloop, whose process spawning takes no preexec_fn."""
    uvloop = pytest.importorskip("uvloop")

    async def run() -> str:
        terminals = Terminals(Bus(), tmp_path)
        info = await terminals.create(PtyCreate(command="/bin/sh", args=["-c", "tty; echo done"]))
        terminal = terminals.get(info.id)
        ended: asyncio.Queue[str | None] = asyncio.Queue()
        terminal.listeners.add(ended)
        async with asyncio.timeout(10):
            while await ended.get() is not None:  # None: the shell has exited
                pass
        await terminals.close_all()
        return terminal.output

    output = uvloop.run(run())
    assert "/dev/pts/" in output  # the shell has the pty as its terminal
