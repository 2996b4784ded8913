"""POST /instance/dispose disposes the directory's instance and says so; /project and
/project/current report the project's own times."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import httpx

from partwire.client.http import PartwireClient
from partwire.schema.event import Event
from tests.reference import response_schema, validate, validate_schema


async def arrived(seen: list[Event], kind: str) -> None:
    for _ in range(500):
        if any(e.type == kind for e in seen):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {kind} event")


async def test_dispose_stops_runs_announces_and_keeps_serving(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        seen: list[Event] = []

        async def follow() -> None:
            async for event in client.events():
                seen.append(event)

        follower = asyncio.create_task(follow())
        await arrived(seen, "server.connected")
        await client.prompt_async(session_id, "long 5000")
        await arrived(seen, "message.part.delta")  # the answer streams
        assert await client.dispose() is True
        await arrived(seen, "server.instance.disposed")
        # the run stopped, the event stream stayed open, and the instance serves again
        (last,) = [m for m in await client.messages(session_id) if m.info.role == "assistant"]
        assert last.info.error is not None and last.info.error.name == "MessageAbortedError"
        before = len(seen)
        answer = await client.prompt(session_id, "hello")
        assert answer.info.error is None
        for _ in range(250):
            if any(e.type == "session.idle" for e in seen[before:]):
                break
            await asyncio.sleep(0.02)
        assert any(e.type == "session.idle" for e in seen[before:])
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        disposed = next(e for e in seen if e.type == "server.instance.disposed")
        assert Path(disposed.properties.directory).is_dir()


async def test_projects_report_their_own_times(server: str, project: Path) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        before = (await http.get("/project/current")).json()
        stamp = int(project.stat().st_mtime * 1000)
        assert before["time"] == {"created": stamp, "updated": stamp}  # no session yet
        await asyncio.sleep(0.01)
        made = (await http.post("/session", json={})).json()
        now = (await http.get("/project/current")).json()
        assert now["time"]["created"] == made["time"]["created"]
        assert now["time"]["updated"] >= made["time"]["updated"]
        listed = (await http.get("/project")).json()
        assert listed[0]["time"] == now["time"]
        assert now["time"]["created"] <= int(time.time() * 1000)


async def test_a_project_can_be_renamed(server: str) -> None:
    async with PartwireClient(server) as client:
        seen: list[Event] = []

        async def follow() -> None:
            async for event in client.events():
                seen.append(event)

        follower = asyncio.create_task(follow())
        await arrived(seen, "server.connected")
        http = client._http
        project = (await http.get("/project/current")).json()
        body = {"name": "Renamed", "icon": {"color": "#ff0000"}, "commands": {"start": "make"}}
        updated = await http.patch(f"/project/{project['id']}", json=body)
        assert updated.status_code == 200, updated.text
        validate_schema(response_schema("/project/{projectID}", "patch"), updated.json())
        assert updated.json()["name"] == "Renamed"
        current = (await http.get("/project/current")).json()
        assert current["name"] == "Renamed" and current["icon"] == {"color": "#ff0000"}
        assert (await http.get("/project")).json()[0]["name"] == "Renamed"
        await arrived(seen, "project.updated")
        event = next(e for e in seen if e.type == "project.updated")
        validate("EventProjectUpdated", json.loads(event.json))
        assert (await http.patch("/project/nope", json={"name": "x"})).status_code == 404
        bad = await http.patch(f"/project/{project['id']}", json={"name": ""})
        assert bad.status_code == 400
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
