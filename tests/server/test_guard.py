"""A page on another site, or one that rebinds its name to 127.0.0.1, cannot drive the
server: foreign Host names are refused, and so are writes from foreign Origins."""

from __future__ import annotations

import httpx
import pytest

from partwire.server.runner import serve_in_background


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:4096",
        "127.0.0.1.nip.io",
        "[::1]evil.com",
        "[::1]:80evil.com",
        "127.0.0.1:evil.com",
    ],
)
async def test_a_foreign_host_is_refused(http: httpx.AsyncClient, host: str) -> None:
    for method, path in (("GET", "/session"), ("POST", "/session"), ("GET", "/file?path=.")):
        response = await http.request(method, path, headers={"Host": host}, json={})
        assert response.status_code == 400, (method, path, response.text)
        assert "DNS rebinding" in response.json()["data"]["message"]
    sse = await http.get("/event", headers={"Host": host})
    assert sse.status_code == 400


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]:4096", "127.0.0.2:80"])
async def test_loopback_names_are_served(http: httpx.AsyncClient, host: str) -> None:
    assert (await http.get("/session", headers={"Host": host})).status_code == 200


async def test_a_write_from_a_foreign_origin_is_refused(
    server: str, http: httpx.AsyncClient
) -> None:
    sid = (await http.post("/session", json={})).json()["id"]
    shell = {"agent": "build", "command": "touch pwned"}
    for origin in ("http://attacker.example", "null", "http://127.0.0.1:1"):
        response = await http.post(f"/session/{sid}/shell", json=shell, headers={"Origin": origin})
        assert response.status_code == 403, origin
        assert "server.cors" in response.json()["data"]["message"]
    assert (await http.get(f"/session/{sid}/message")).json() == []  # nothing ran
    # the server's own pages, and clients that send no Origin, may write
    own = await http.post("/session", json={}, headers={"Origin": server})
    assert own.status_code == 200
    assert (await http.post("/session", json={})).status_code == 200
    # reading is allowed from anywhere: the browser's CORS keeps the answer from the page
    read = await http.get("/session", headers={"Origin": "http://attacker.example"})
    assert read.status_code == 200 and "access-control-allow-origin" not in read.headers


async def test_configured_hosts_and_cors_origins_are_accepted(settings: object) -> None:
    from dataclasses import replace

    opened = replace(
        settings,  # type: ignore[type-var]
        allowed_hosts=("partwire.internal",),
        cors_origins=("https://app.example",),
    )
    async with serve_in_background(opened) as url, httpx.AsyncClient(base_url=url) as http:
        assert (
            await http.get("/session", headers={"Host": "partwire.internal"})
        ).status_code == 200
        allowed = await http.post("/session", json={}, headers={"Origin": "https://app.example"})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://app.example"
        other = await http.post("/session", json={}, headers={"Origin": "https://other.example"})
        assert other.status_code == 403


async def test_reads_with_side_effects_check_the_origin_too(
    server: str, http: httpx.AsyncClient
) -> None:
    """Socket.IO's polling handshake and the TUI control queue are GETs a foreign page
    must not make (it could read the handshake, or take a queued request)."""
    foreign = {"Origin": "http://attacker.example"}
    for path in ("/socket.io/?EIO=4&transport=polling", "/tui/control/next"):
        refused = await http.get(path, headers=foreign)
        assert refused.status_code == 403, (path, refused.text)
    handshake = await http.get("/socket.io/?EIO=4&transport=polling", headers={"Origin": server})
    assert handshake.status_code == 200 and '"sid"' in handshake.text
    assert handshake.headers.get("access-control-allow-origin") in (None, server)
