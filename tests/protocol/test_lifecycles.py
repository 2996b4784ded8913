"""Random legal part lifecycles, recorded as an external loop would: every adapter's
frames reduce to exactly what the store holds."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from partwire.protocol.blocks import SessionEvents, blocks_of, empty_state, reduce_session_event
from partwire.protocol.partframes import FrameReducer, SessionFrames
from partwire.runtime import Runtime
from tests.session.helpers import new_session
from tests.session.test_builder import legal_calls


async def _record(runtime: Runtime, calls: list[tuple[Any, ...]]) -> str:
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="go") as msg:
        for name, *args in calls:
            if name == "abort":
                await runtime.loop.abort(session_id)
            else:
                await getattr(msg, name)(*args)
    return session_id


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(calls=legal_calls())
async def test_every_adapter_rebuilds_a_random_lifecycle(
    runtime: Runtime, calls: list[tuple[Any, ...]]
) -> None:
    session_id = await _record(runtime, calls)
    stored = await runtime.store.list_messages(session_id)
    log = [e for e in await runtime.store.events_after(None) if session_id in e.json]

    frames = SessionFrames(session_id)
    reducer = FrameReducer()
    for event in log:
        for frame in frames.frames(event):
            reducer.apply(frame)
    assert [reducer.message(m.info.id).parts for m in stored] == [m.parts for m in stored]

    blocks = SessionEvents()
    state = empty_state()
    for event in log:
        for made in blocks.convert(event):
            reduce_session_event(state, made)
    assert state["blocks"] == blocks_of(stored)
