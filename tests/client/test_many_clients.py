"""Several clients on one session: same state, prompts in arrival order, late joiners exact."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

from partwire.client.http import PartwireClient
from partwire.client.reducer import ClientState, reduce
from partwire.config import Settings
from partwire.schema.event import REGISTRY, Event
from partwire.server.runner import serve_in_background


async def _follow(
    events: AsyncIterator[Event], state: ClientState, seen: list[str], stop: asyncio.Event
) -> None:
    async for event in events:
        reduce(state, event)
        if REGISTRY[event.type].logged:
            seen.append(event.id)
        if stop.is_set() and event.type == "session.idle":
            return


async def test_two_clients_prompting_see_identical_state_and_a_late_joiner_too(
    settings: Settings,
) -> None:
    slow = replace(settings, demo_delay_ms=2)
    async with serve_in_background(slow) as url, PartwireClient(url) as a, PartwireClient(url) as b:
        session = await a.create_session()
        states = [ClientState(), ClientState()]
        seen: list[list[str]] = [[], []]
        done = asyncio.Event()
        streams = [a.events(), b.events()]
        for stream in streams:
            assert (await anext(stream)).type == "server.connected"
        followers = [
            asyncio.create_task(_follow(s, st, sn, done))
            for s, st, sn in zip(streams, states, seen, strict=True)
        ]
        await a.prompt_async(session.id, "long 60")
        await b.prompt_async(session.id, "second from b")
        await a.prompt_async(session.id, "third from a")

        # a third client joins mid-stream: snapshot over HTTP, then events after it
        await asyncio.sleep(0.1)
        async with PartwireClient(url) as late:
            snapshot, cursor = await late.snapshot(session.id)
            assert cursor is not None
            late_state, late_seen = ClientState(), []
            late_state.load(session.id, snapshot)
            late_stream = late.events(last_event_id=cursor)
            assert (await anext(late_stream)).type == "server.connected"
            done.set()
            await asyncio.wait_for(_follow(late_stream, late_state, late_seen, done), 30)
            await asyncio.wait_for(asyncio.gather(*followers), 30)
            stored = [m.wire() for m in await late.messages(session.id)]
    for state in (*states, late_state):
        assert [m.wire() for m in state.messages(session.id)] == stored
    assert seen[0] == seen[1]
    assert late_seen == [i for i in seen[0] if i > cursor]  # nothing twice, nothing missing
    users = [m["parts"][0]["text"] for m in stored if m["info"]["role"] == "user"]
    assert users == ["long 60", "second from b", "third from a"]  # arrival order
