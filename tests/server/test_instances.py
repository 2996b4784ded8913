"""Three ``partwire serve`` processes on one Postgres database: a client of any of them
sees every server's events, in one order, and resumes on another without a gap."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx

from tests.postgres_server import PostgresServer
from tests.served import free_port


@asynccontextmanager
async def _instance(project: Path, state: Path, database_url: str) -> AsyncIterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "PARTWIRE_DATA_DIR": str(state / "data"),
        "PARTWIRE_CONFIG_DIR": str(state / "config"),
        "PARTWIRE_DEMO_DELAY_MS": "3",
        "PARTWIRE_DATABASE_URL": database_url,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "serve", "--port", str(port),
        "--project", str(project),
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url) as http:
            for _ in range(400):
                try:
                    if (await http.get("/session/status", timeout=1)).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError("partwire serve did not start")
        yield url
    finally:
        process.terminate()
        await process.wait()


async def _deltas(
    url: str, session_id: str, last_id: str | None, until: int, out: list[tuple[str, str]]
) -> None:
    """Follow GET /event (from ``last_id``), appending (event id, delta) of the session's
    text deltas to ``out`` until it holds ``until`` of them."""
    headers = {"Last-Event-ID": last_id} if last_id else {}
    async with (
        httpx.AsyncClient(base_url=url, timeout=60) as http,
        http.stream("GET", "/event", headers=headers) as response,
    ):
        event_id = None
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:") and '"message.part.delta"' in line:
                props = json.loads(line[5:])["properties"]
                if props["sessionID"] == session_id and event_id:
                    out.append((event_id, props["delta"]))
                    if len(out) >= until:
                        return


async def test_clients_of_any_instance_see_one_stream_and_resume_anywhere(
    project: Path, tmp_path: Path, postgres: PostgresServer
) -> None:
    database = postgres.new_database()
    async with AsyncExitStack() as stack:
        a, b, c = [
            await stack.enter_async_context(_instance(project, tmp_path / name, database))
            for name in "abc"
        ]
        words = 300
        async with httpx.AsyncClient(timeout=60) as http:
            sid = (await http.post(f"{b}/session", json={})).json()["id"]
            on_a: list[tuple[str, str]] = []
            watching = asyncio.create_task(_deltas(a, sid, None, words, on_a))
            first_half: list[tuple[str, str]] = []
            resuming = asyncio.create_task(_deltas(c, sid, None, words // 3, first_half))
            await asyncio.sleep(0.3)  # both clients are listening
            prompt = {"parts": [{"type": "text", "text": f"long {words}"}]}
            assert (await http.post(f"{b}/session/{sid}/prompt_async", json=prompt)).is_success
            await asyncio.wait_for(resuming, 60)  # a third of the way: this client drops
            rest: list[tuple[str, str]] = []
            await asyncio.wait_for(
                _deltas(c, sid, first_half[-1][0], words - len(first_half), rest), 60
            )
            await asyncio.wait_for(watching, 60)
            messages = (await http.get(f"{a}/session/{sid}/message")).json()

    stored = "".join(p["text"] for p in messages[-1]["parts"] if p["type"] == "text")
    seen_on_a = [event_id for event_id, _ in on_a]
    assert seen_on_a == sorted(seen_on_a) and len(set(seen_on_a)) == len(seen_on_a)
    assert "".join(delta for _, delta in on_a) == stored  # every delta, in order, once
    assert first_half + rest == on_a  # resumed on another instance: nothing missed or repeated
