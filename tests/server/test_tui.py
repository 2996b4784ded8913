"""opencode's /tui routes publish tui.* events an attached TUI carries out."""

from __future__ import annotations

import asyncio
import contextlib
import json

import httpx

from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.server.app import create_app
from partwire.server.runner import serve_in_background
from tests.reference import event_schema_name, response_schema, validate, validate_schema


async def test_tui_routes_publish_the_events_a_tui_acts_on(server: str) -> None:
    seen: list[Event] = []
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id

        connected = asyncio.Event()

        async def follow() -> None:
            async for event in client.events():
                if event.type == "server.connected":
                    connected.set()
                if event.type.startswith("tui."):
                    seen.append(event)

        follower = asyncio.create_task(follow())
        await asyncio.wait_for(connected.wait(), 20)  # tui events are not logged
        http = client._http
        calls = [
            ("/tui/append-prompt", {"text": "hello"}),
            ("/tui/clear-prompt", None),
            ("/tui/submit-prompt", None),
            ("/tui/open-help", None),
            ("/tui/open-sessions", None),
            ("/tui/open-themes", None),
            ("/tui/open-models", None),
            ("/tui/execute-command", {"command": "agent.cycle"}),
            ("/tui/show-toast", {"message": "done", "variant": "success", "duration": 3000}),
            ("/tui/select-session", {"sessionID": session_id}),
            ("/tui/publish", {"type": "tui.prompt.append", "properties": {"text": "more"}}),
        ]
        for path, body in calls:
            response = await http.post(path, json=body)
            assert response.status_code == 200 and response.json() is True, path
        bad = [
            ("/tui/select-session", {"sessionID": "ses_nope"}, 404),
            ("/tui/show-toast", {"message": "x", "variant": "loud"}, 400),
            ("/tui/publish", {"type": "session.deleted", "properties": {}}, 400),
            ("/tui/publish", {"type": "tui.toast.show", "properties": {"message": 1}}, 400),
        ]
        for path, body, status in bad:
            assert (await http.post(path, json=body)).status_code == status, path
        for _ in range(100):
            if len(seen) >= len(calls):
                break
            await asyncio.sleep(0.02)
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    commands = [e.properties.command for e in seen if e.type == "tui.command.execute"]
    assert commands == [
        "prompt.clear", "prompt.submit", "help.show", "session.list", "theme.list",
        "model.list", "agent.cycle",
    ]  # fmt: skip
    assert [e.type for e in seen].count("tui.prompt.append") == 2
    for event in seen:  # opencode's tui events carry no id; ours do, as every event here
        body = {k: v for k, v in json.loads(event.json).items() if k != "id"}
        validate(event_schema_name(event.type), body)


async def test_the_control_channel_hands_requests_to_the_tui_and_answers_back(
    settings: Settings,
) -> None:
    app = create_app(settings)
    runtime: Runtime = app.state.runtime
    async with (
        serve_in_background(settings, app=app) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        asking = asyncio.create_task(runtime.tui.call("/tui/open-models", {"hint": "fast"}))
        taken = await http.get("/tui/control/next", timeout=10)
        assert taken.json() == {"path": "/tui/open-models", "body": {"hint": "fast"}}
        validate_schema(response_schema("/tui/control/next", "get"), taken.json())
        answered = await http.post("/tui/control/response", json={"chosen": "demo/demo"})
        assert answered.json() is True
        assert await asyncio.wait_for(asking, 10) == {"chosen": "demo/demo"}
        # nothing is waiting: the answer has nowhere to go, and is still taken
        assert (await http.post("/tui/control/response", json=1)).json() is True
        assert (await http.post("/tui/control/response", content=b"{nope")).status_code == 400
        # a TUI that polls before anything is asked waits for it
        polling = asyncio.create_task(http.get("/tui/control/next", timeout=10))
        await asyncio.sleep(0.05)
        assert not polling.done()
        second = asyncio.create_task(runtime.tui.call("/tui/show-toast"))
        assert (await polling).json() == {"path": "/tui/show-toast", "body": None}
        await http.post("/tui/control/response", json=None)
        assert await asyncio.wait_for(second, 10) is None
