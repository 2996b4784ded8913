"""Random legal part lifecycles, recorded as an external loop would and run by partwire's
own processor from a scripted model: every adapter's frames reduce to exactly what the
store holds."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from partwire.protocol.blocks import SessionEvents
from partwire.protocol.conversation import blocks_of, in_call_order
from partwire.protocol.partframes import FrameReducer, SessionFrames
from partwire.protocol.session_state import initial_state, reduce_session_event
from partwire.providers.stream import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StartStep,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
)
from partwire.runtime import Runtime
from tests.protocol.test_partframes import recorded_session
from tests.scripted import ScriptedModel, finish, text_reply
from tests.session.helpers import new_session, prompt_body
from tests.test_builder import legal_calls


async def _record(runtime: Runtime, calls: list[tuple[Any, ...]]) -> str:
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="go") as msg:
        for name, *args in calls:
            if name == "abort":
                await runtime.loop.abort(session_id)
            else:
                await getattr(msg, name)(*args)
    return session_id


async def _assert_adapters_rebuild(runtime: Runtime, session_id: str) -> None:
    stored = await runtime.store.list_messages(session_id)
    log = [e for e in await runtime.store.events_after(None) if session_id in e.json]

    frames = SessionFrames(session_id)
    reducer = FrameReducer()
    for event in log:
        for frame in frames.frames(event):
            reducer.apply(frame)
    assert [reducer.message(m.info.id).parts for m in stored] == [m.parts for m in stored]

    blocks = SessionEvents(session_id)
    state = initial_state()
    for event in log:
        for made in blocks.convert(event):
            state = reduce_session_event(state, made)
    assert in_call_order(state["blocks"]) == blocks_of(stored)


async def test_every_adapter_shows_a_fork_at_a_part(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    stored = await runtime.store.list_messages(session_id)
    tool = next(p for m in stored for p in m.parts if p.type == "tool")
    fork = await runtime.sessions.fork(session_id, None, tool.id)
    forked = await runtime.store.list_messages(fork.id)
    assert forked and forked[-1].parts[-1].type == "tool"
    await _assert_adapters_rebuild(runtime, fork.id)


LIFECYCLE_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@LIFECYCLE_SETTINGS
@given(calls=legal_calls())
async def test_every_adapter_rebuilds_a_random_lifecycle(
    runtime: Runtime, calls: list[tuple[Any, ...]]
) -> None:
    session_id = await _record(runtime, calls)
    await _assert_adapters_rebuild(runtime, session_id)


WORDS = st.lists(st.sampled_from(["a ", "b", " c", "é", "\n", "` "]), min_size=1, max_size=4)


@st.composite
def model_steps(draw: st.DrawFn) -> list[StreamEvent]:
    """One model call: text and reasoning streams (interleaved or one after the other) and
    tool calls with streamed, sometimes broken, arguments, then its finish."""
    events: list[StreamEvent] = [StreamStart(), StartStep()]
    calls = 0
    for block in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["text", "reasoning", "both", "tool", "broken-tool"]))
        if kind in ("text", "reasoning", "both"):
            streams = ["text", "reasoning"] if kind == "both" else [kind]
            keys = {name: f"{name[0]}{block}" for name in streams}
            for name in streams:
                events.append((TextStart if name == "text" else ReasoningStart)(keys[name]))
            for word in draw(WORDS):
                for name in streams:  # interleaved: the processor keys its streams
                    delta = TextDelta if name == "text" else ReasoningDelta
                    events.append(delta(keys[name], word))
            for name in streams:
                events.append((TextEnd if name == "text" else ReasoningEnd)(keys[name]))
        else:
            calls += 1
            call_id = f"call_{block}"
            # each call's arguments differ: three alike in a row would be a doom loop,
            # which asks the user (and nobody answers here)
            raw = "{" if kind == "broken-tool" else f'{{"note": {block}}}'
            events += [
                ToolInputStart(call_id, "todoread"),
                ToolInputDelta(call_id, raw),
                ToolCall(call_id, "todoread", raw),
            ]
    return events + finish("tool-calls" if calls else "stop")


@LIFECYCLE_SETTINGS
@given(step=model_steps())
async def test_every_adapter_rebuilds_what_the_processor_ran(
    runtime: Runtime, model: ScriptedModel, step: list[StreamEvent]
) -> None:
    model.scripts.clear()
    model.enqueue(step, text_reply("done"))  # a step that called tools gets an answer
    session_id = await new_session(runtime)
    await runtime.loop.prompt(session_id, prompt_body("go"))
    stored = await runtime.store.list_messages(session_id)
    tools = [p for m in stored for p in m.parts if p.type == "tool"]
    assert all(p.state.status in ("completed", "error") for p in tools)  # type: ignore[union-attr]
    await _assert_adapters_rebuild(runtime, session_id)
