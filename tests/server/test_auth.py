"""Auth and exposure: Basic auth on every route but health, loopback by default, CORS."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path

import aiohttp
import httpx
import pytest

from partwire.config import Settings
from partwire.runtime import MAX_PROJECTS
from partwire.server.auth import is_loopback
from partwire.server.runner import serve_in_background
from tests.reference import response_schema, validate_schema

PASSWORD = "correct horse"


async def test_every_route_needs_the_password_except_health(settings: Settings) -> None:
    locked = replace(settings, server_password=PASSWORD)
    async with (
        serve_in_background(locked) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
    ):
        doc = (await http.get("/doc", auth=("partwire", PASSWORD))).json()
        checked = 0
        for path, operations in doc["paths"].items():
            concrete = path.replace("{", "x_").replace("}", "")
            for method in operations:
                response = await http.request(method.upper(), concrete)
                if path == "/global/health":
                    assert response.status_code == 200
                    validate_schema(response_schema("/global/health", "get"), response.json())
                    continue
                assert response.status_code == 401, f"{method} {path}"
                assert response.headers["www-authenticate"] == 'Basic realm="partwire"'
                assert response.json()["name"] == "Unauthorized"
                checked += 1
        assert checked == sum(len(ops) for ops in doc["paths"].values()) - 1
        wrong = await http.get("/session", auth=("partwire", "nope"))
        assert wrong.status_code == 401
        right = await http.get("/session", auth=("partwire", PASSWORD))
        assert right.status_code == 200
        async with http.stream("GET", "/event", auth=("partwire", PASSWORD)) as stream:
            assert stream.status_code == 200
            first = await anext(stream.aiter_lines())
            assert '"server.connected"' in first


async def test_non_loopback_without_a_password_refuses_to_start(settings: Settings) -> None:
    env = {"PATH": "/usr/bin:/bin", "PARTWIRE_DATA_DIR": str(settings.data_dir), "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "serve", "--hostname", "0.0.0.0", "--port", "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a password" in err.decode()
    assert "Traceback" not in err.decode()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.5.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.0.0.2", False),
    ],
)
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def test_cors_allows_only_configured_origins(settings: Settings) -> None:
    configured = replace(settings, cors_origins=("http://allowed.test",))
    async with serve_in_background(configured) as url, httpx.AsyncClient(base_url=url) as http:
        preflight = {"Access-Control-Request-Method": "GET"}
        ok = await http.options("/session", headers={"Origin": "http://allowed.test", **preflight})
        assert ok.headers.get("access-control-allow-origin") == "http://allowed.test"
        other = await http.get("/session", headers={"Origin": "http://evil.test"})
        assert "access-control-allow-origin" not in other.headers


async def test_a_stranger_makes_no_project_through_a_terminal_socket(
    settings: Settings, tmp_path: Path
) -> None:
    """A socket let through on a ticket alone (not authenticated) reaches only a project
    the server holds: its directory is never registered."""
    locked = replace(settings, server_password=PASSWORD)
    async with (
        serve_in_background(locked) as url,
        httpx.AsyncClient(base_url=url, timeout=10, auth=("partwire", PASSWORD)) as http,
        aiohttp.ClientSession() as client,
    ):
        before = (await http.get("/project")).json()
        for number in range(12):
            folder = tmp_path / f"stranger{number}"
            folder.mkdir()
            for path, name in (
                ("/pty/pty_x/connect", "directory"),
                ("/api/pty/pty_x/connect", "location[directory]"),
            ):
                ws_url = url.replace("http://", "ws://") + path
                query = {name: str(folder), "ticket": "t"}
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await client.ws_connect(ws_url, params=query)
                assert refused.value.status == 403
        after = (await http.get("/project")).json()
        assert [p["worktree"] for p in after] == [p["worktree"] for p in before]
        # an authenticated client still reaches a new directory
        (tmp_path / "mine").mkdir()
        ok = await http.get("/session", params={"directory": str(tmp_path / "mine")})
        assert ok.status_code == 200


async def test_the_projects_a_server_holds_are_bounded(settings: Settings, tmp_path: Path) -> None:
    async with (
        serve_in_background(settings) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
    ):
        for number in range(MAX_PROJECTS + 20):
            folder = tmp_path / f"p{number}"
            folder.mkdir()
            listed = await http.get("/session", params={"directory": str(folder)})
            assert listed.status_code == 200
        held = (await http.get("/project")).json()
        assert len(held) <= MAX_PROJECTS
        assert str(tmp_path / f"p{MAX_PROJECTS + 19}") in [p["worktree"] for p in held]
