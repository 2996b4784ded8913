"""Events announced unlogged while the store takes no write (Store.announce): every
transport delivers them, gives them no cursor, and goes on with the logged events after
them (a cursor standing on an announced id would skip every later event)."""

from __future__ import annotations

import asyncio
from typing import Any

from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.schema.event import Event, MessageUpdated
from partwire.schema.event import MessageInfo as MessageInfoProps
from partwire.schema.frames import Frame
from partwire.server.app import create_app
from partwire.server.runner import serve_in_background
from tests.server.test_hub import Listener


def _info_ids(events: list[Event]) -> list[str]:
    return [e.properties.info.id for e in events if e.type == "message.updated"]  # type: ignore[attr-defined]


def _completed(frames: list[Frame]) -> list[str]:
    return [f.message.id for f in frames if f.type == "message_complete"]  # type: ignore[union-attr]


async def _until(items: list[Any], check: Any) -> None:
    for _ in range(1000):  # 20 s
        if check(items):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not seen in time: {items[-5:]}")


async def test_every_transport_goes_on_after_an_announced_event(settings: Settings) -> None:
    app = create_app(settings)
    runtime = app.state.runtime
    async with serve_in_background(settings, app=app) as url, PartwireClient(url) as client:
        session = await client.create_session()
        await client.prompt(session.id, "hello")
        answer = (await client.messages(session.id))[-1].info

        seen: list[Event] = []
        frames: list[Frame] = []

        async def read_events() -> None:
            async for event in client.events():
                seen.append(event)

        async def read_frames() -> None:
            async for frame in client.part_frames(session.id):
                frames.append(frame)

        tasks = [asyncio.create_task(read_events()), asyncio.create_task(read_frames())]
        hub = Listener()
        await hub.start(url, session.id)
        await _until(seen, lambda s: any(e.type == "server.connected" for e in s))
        await asyncio.sleep(0.3)  # every stream is live

        store = runtime.project_of(await runtime.store.get_session(session.id)).loop.store
        store.announce([MessageUpdated(MessageInfoProps(session_id=session.id, info=answer))])
        await client.prompt(session.id, "list")  # logged events after the announced one
        second = (await client.messages(session.id))[-1].info.id

        await _until(seen, lambda s: second in _info_ids(s))
        await _until(frames, lambda f: second in _completed(f))
        await _until(hub.events, lambda h: any(second in str(e) for e in h))
        assert answer.id in _info_ids(seen)  # the announced event reached /event too
        for task in tasks:
            task.cancel()
        await hub.stop()
