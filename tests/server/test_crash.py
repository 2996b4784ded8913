"""A server killed mid-stream (SIGKILL) loses nothing a client saw, and restarts clean:
on the SQLite file, on a Postgres database, and on Postgres with events through Redis."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import httpx
import pytest

from partwire.config import Settings
from tests.served import free_port


@pytest.fixture(params=["sqlite", "postgres", "postgres+redis"])
def database_env(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "sqlite":
        return {}
    env = {"PARTWIRE_DATABASE_URL": request.getfixturevalue("postgres").new_database()}
    if request.param == "postgres+redis":
        env["PARTWIRE_REDIS_URL"] = request.getfixturevalue("redis_server").url()
    return env


async def _start(
    settings: Settings, port: int, database_env: dict[str, str]
) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "PARTWIRE_DATA_DIR": str(settings.data_dir),
        "PARTWIRE_DEMO_DELAY_MS": "2",
        **database_env,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "serve", "--port", str(port),
        "--project", str(settings.project_dir),
        env=env,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        for _ in range(200):
            try:
                await http.get("/session/status")
                return process
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    raise AssertionError("the server did not start")


async def test_sigkill_mid_stream_then_restart(
    settings: Settings, database_env: dict[str, str]
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = await _start(settings, port, database_env)
    seen = ""
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            sid = (await http.post("/session", json={})).json()["id"]
            async with http.stream("GET", "/event") as response:
                prompt = {"parts": [{"type": "text", "text": "long 100000"}]}
                await http.post(f"/session/{sid}/prompt_async", json=prompt)
                async for line in response.aiter_lines():
                    if line.startswith("data:") and '"message.part.delta"' in line:
                        seen += json.loads(line[5:])["properties"]["delta"]
                        if seen.count(" ") >= 200:
                            server.send_signal(signal.SIGKILL)
                            break
    finally:
        await server.wait()

    restarted = await _start(settings, port, database_env)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            messages = (await http.get(f"/session/{sid}/message")).json()
            status = (await http.get("/session/status")).json()
    finally:
        restarted.terminate()
        await restarted.wait()

    assistant = messages[-1]
    assert assistant["info"]["error"]["name"] == "MessageAbortedError"
    assert "completed" in assistant["info"]["time"]
    text = next(p for p in assistant["parts"] if p["type"] == "text")
    assert "end" in text["time"]
    assert text["text"].startswith(seen), "a delta the client saw was lost in the crash"
    assert status == {}
    if database_env:  # it was the Postgres database that kept them
        from partwire.storage.pg_connection import connect

        conn = connect(database_env["PARTWIRE_DATABASE_URL"], autocommit=True)
        try:
            sql = "SELECT COUNT(*) FROM message WHERE session_id = ?"
            assert conn.execute(sql, (sid,)).fetchone()[0] == len(messages)
        finally:
            conn.close()
