"""The recorder: an external loop's message gets the same storage, events and asks as ours."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest

from partwire.bus import Subscription
from partwire.client.reducer import ClientState, reduce
from partwire.errors import (
    AbortedError,
    BadRequestError,
    BuilderError,
    RejectedError,
    SessionBusyError,
)
from partwire.providers.stream import (
    StartStep,
    StreamStart,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
)
from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.schema.message import AssistantMessage, UserMessage
from partwire.session.recording import Recording
from tests.scripted import ScriptedModel, finish, text_reply
from tests.session.helpers import new_session, prompt_body


async def _next(sub: Subscription, type_: str) -> Event:
    async with asyncio.timeout(5):
        while True:
            event = await sub.get()
            if event.type == type_:
                return event


async def _recorded_exchange(msg: Recording) -> None:
    await msg.start_step()
    await msg.add_reasoning_delta("The user wants a file listing.")
    await msg.add_text_delta("Let me ")
    await msg.add_text_delta("look.")
    await msg.start_tool_call("call_1", "bash")
    await msg.add_tool_args_delta("call_1", '{"command":')
    await msg.add_tool_args_delta("call_1", ' "ls"}')
    await msg.add_tool_call("call_1", "bash", '{"command": "ls"}')
    await msg.add_tool_result("call_1", "README.md\nsrc", title="ls")
    await msg.finish_step({"input": 100, "output": 20}, cost=0.01, reason="tool-calls")
    await msg.start_step()
    await msg.add_text_delta("Two entries.")
    await msg.finish_step({"input": 130, "output": 5}, cost=0.02)


async def test_a_recorded_message_is_stored_and_published_like_our_own(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    sub = runtime.bus.subscribe_all()
    async with runtime.record(session_id, prompt="list the files", model="acme/m1") as msg:
        assert runtime.status.get(session_id).type == "busy"
        await _recorded_exchange(msg)
    built = msg.builder.build()
    stored = await runtime.store.list_messages(session_id)
    user, answer = stored
    assert isinstance(user.info, UserMessage) and user.parts[0].text == "list the files"  # type: ignore[union-attr]
    info = answer.info
    assert isinstance(info, AssistantMessage)
    assert info.parent_id == user.info.id and (info.provider_id, info.model_id) == ("acme", "m1")
    assert info.time.completed is not None and info.error is None and info.finish == "stop"
    assert info.tokens.input == 230 and info.cost == pytest.approx(0.03)
    assert answer.parts == built.parts
    assert [p.type for p in answer.parts] == [
        "step-start", "reasoning", "text", "tool", "step-finish", "step-start", "text",
        "step-finish",
    ]  # fmt: skip
    assert runtime.status.get(session_id).type == "idle"
    spent = await runtime.store.get_session(session_id)  # an external loop's spend counts too
    assert spent.tokens is not None and spent.tokens.input == 230 and spent.tokens.output == 25
    assert spent.cost == pytest.approx(0.03)

    # a client that knows nothing of the recorder rebuilds the same message from the events
    state = ClientState()
    types = []
    async with asyncio.timeout(5):
        while True:
            event = await sub.get()
            types.append(event.type)
            state = reduce(state, event)
            if event.type == "session.idle":
                break
    assert "message.part.delta" in types and types.index("session.status") < types.index(
        "message.part.delta"
    )
    assert state.messages(session_id) == stored


async def test_an_answer_needs_a_user_message_to_answer(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    with pytest.raises(BadRequestError, match="no user message"):
        async with runtime.record(session_id):
            pass
    with pytest.raises(BadRequestError, match="parentID"):
        async with runtime.record(session_id, parent_id="msg_nope"):
            pass
    assert await runtime.store.list_messages(session_id) == []
    assert not runtime.loop.is_busy(session_id)
    # a user message recorded first is then the one answered
    async with runtime.record(session_id, role="user") as user:
        await user.add_text_delta("hello")
    async with runtime.record(session_id) as answer:
        await answer.add_text_delta("hi")
    assert isinstance(answer.info, AssistantMessage) and answer.info.parent_id == user.message_id


async def test_a_prompt_while_recording_queues_and_a_second_recording_is_refused(
    runtime: Runtime, model: ScriptedModel
) -> None:
    session_id = await new_session(runtime)
    model.enqueue(text_reply("answered after the recording"))
    async with runtime.record(session_id, prompt="a") as msg:
        await msg.add_text_delta("recorded")
        queued = asyncio.create_task(runtime.loop.prompt(session_id, prompt_body("b")))
        await asyncio.sleep(0.2)
        assert not queued.done()  # it waits for the recording, as for a running prompt
        with pytest.raises(SessionBusyError):
            async with runtime.record(session_id, prompt="c"):
                pass
        await msg.add_text_delta(" still")
    answer = await asyncio.wait_for(queued, 10)
    stored = await runtime.store.list_messages(session_id)
    assert [m.info.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].parts[-1].text == "recorded still"  # type: ignore[union-attr]
    assert answer.info.id == stored[3].info.id and answer.info.parent_id == stored[2].info.id


async def test_an_illegal_call_writes_nothing_and_the_recording_goes_on(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="go") as msg:
        await msg.add_text_delta("a")
        with pytest.raises(BuilderError, match="before the call"):
            await msg.add_tool_result("call_x", "out")
        await msg.add_text_delta("b")
    parts = (await runtime.store.list_messages(session_id))[1].parts
    assert [(p.type, p.text) for p in parts] == [("text", "ab")]  # type: ignore[union-attr]


async def test_an_exception_ends_the_message_with_it_and_propagates(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    sub = runtime.bus.subscribe("session.error")
    with pytest.raises(RuntimeError, match="model exploded"):
        async with runtime.record(session_id, prompt="go") as msg:
            await msg.add_tool_call("call_1", "bash", {"command": "ls"})
            raise RuntimeError("model exploded")
    answer = (await runtime.store.list_messages(session_id))[1]
    assert answer.info.error is not None and "model exploded" in answer.info.error.data.message  # type: ignore[union-attr]
    assert answer.parts[0].state.status == "error"  # type: ignore[union-attr]
    assert (await _next(sub, "session.error")).properties.session_id == session_id  # type: ignore[attr-defined]
    assert not runtime.loop.is_busy(session_id)


async def test_abort_ends_the_message_at_once_and_refuses_the_next_call(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    reached_end = False
    async with runtime.record(session_id, prompt="go") as msg:
        await msg.add_text_delta("working")
        await msg.add_tool_call("call_1", "bash", {"command": "sleep 100"})
        assert await runtime.loop.abort(session_id)
        # the session is free again before the external loop notices
        assert not runtime.loop.is_busy(session_id)
        with pytest.raises(AbortedError):
            await msg.add_text_delta("more")
        reached_end = True
    assert reached_end
    answer = (await runtime.store.list_messages(session_id))[1]
    assert answer.info.error is not None and answer.info.error.name == "MessageAbortedError"
    assert [p.type for p in answer.parts] == ["text", "tool"]
    assert answer.parts[1].state.error == "Tool execution aborted"  # type: ignore[union-attr]
    assert runtime.status.get(session_id).type == "idle"


async def test_grow_is_one_call_while_its_part_streams(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    sub = runtime.bus.subscribe("message.part.delta")
    async with runtime.record(session_id, prompt="go") as msg:
        opening = msg.grow("text", "Hel")
        assert inspect.iscoroutine(opening)  # the part to open: the builder's own way
        await opening
        for piece in ("lo", " you"):
            queued = msg.grow("text", piece)
            assert not inspect.iscoroutine(queued)
            if queued is not None:
                await queued
        switching = msg.grow("reasoning", "hm")
        assert inspect.iscoroutine(switching)
        await switching
        assert await runtime.loop.abort(session_id)
        with pytest.raises(AbortedError):  # no hot path past an abort
            await msg.grow("reasoning", "more")  # type: ignore[misc]
    deltas = [(await _next(sub, "message.part.delta")).properties.delta for _ in range(4)]  # type: ignore[attr-defined]
    assert deltas == ["Hel", "lo", " you", "hm"]
    answer = (await runtime.store.list_messages(session_id))[1]
    assert [(p.type, p.text) for p in answer.parts] == [("text", "Hello you"), ("reasoning", "hm")]  # type: ignore[union-attr]


async def test_a_cancelled_block_ends_the_message_as_aborted(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    started = asyncio.Event()

    async def external_loop() -> None:
        async with runtime.record(session_id, prompt="go") as msg:
            await msg.add_text_delta("streaming")
            started.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(external_loop())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    answer = (await runtime.store.list_messages(session_id))[1]
    assert answer.info.error is not None and answer.info.error.name == "MessageAbortedError"
    assert not runtime.loop.is_busy(session_id)


@pytest.fixture
async def recording(runtime: Runtime) -> AsyncIterator[Recording]:
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="deploy") as msg:
        await msg.add_tool_call("call_1", "bash", {"command": "deploy"})
        yield msg


async def test_permission_asks_are_tied_to_the_tool_call(
    runtime: Runtime, recording: Recording
) -> None:
    sub = runtime.bus.subscribe("permission.asked")
    ask = asyncio.create_task(
        recording.ask_permission("bash", ["deploy prod"], call_id="call_1", always=["deploy *"])
    )
    asked = (await _next(sub, "permission.asked")).properties
    assert asked.tool is not None  # type: ignore[attr-defined]
    assert (asked.tool.message_id, asked.tool.call_id) == (recording.message_id, "call_1")  # type: ignore[attr-defined]
    await runtime.permissions.reply(asked.id, "always")  # type: ignore[attr-defined]
    await ask
    # "always" added a session rule: the same kind of ask is answered by itself
    await asyncio.wait_for(recording.ask_permission("bash", ["deploy staging"]), 2)
    again = asyncio.create_task(recording.ask_permission("bash", ["rm -rf build"]))
    asked = (await _next(sub, "permission.asked")).properties
    await runtime.permissions.reply(asked.id, "reject", "not now")  # type: ignore[attr-defined]
    with pytest.raises(RejectedError, match="not now"):
        await again
    with pytest.raises(BuilderError, match="no tool call"):
        await recording.ask_permission("bash", ["x"], call_id="call_unknown")


async def test_questions_from_an_external_loop(runtime: Runtime, recording: Recording) -> None:
    sub = runtime.bus.subscribe("question.asked")
    question = {
        "question": "Which environment?",
        "header": "Target",
        "options": [
            {"label": "staging", "description": "safe"},
            {"label": "prod", "description": "live"},
        ],
    }
    ask = asyncio.create_task(recording.ask_question([question], call_id="call_1"))
    asked = (await _next(sub, "question.asked")).properties
    assert asked.tool.call_id == "call_1"  # type: ignore[attr-defined]
    await runtime.questions.reply(asked.id, [["staging"]])  # type: ignore[attr-defined]
    assert await ask == [["staging"]]
    with pytest.raises(BadRequestError, match="questions"):
        await recording.ask_question([{"nope": 1}])


async def test_an_abort_while_the_message_is_being_made_ends_it(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = await new_session(runtime)
    put_message = runtime.store.put_message

    async def aborted_meanwhile(message: Any, events: Any) -> None:
        await put_message(message, events)
        if message.role == "assistant" and message.time.completed is None:
            await runtime.loop.abort(session_id)  # stored, but the recording is not out yet

    monkeypatch.setattr(runtime.store, "put_message", aborted_meanwhile)
    async with runtime.record(session_id, prompt="go") as msg:
        with pytest.raises(AbortedError):
            await msg.add_text_delta("too late")
    answer = (await runtime.store.list_messages(session_id))[1]
    assert answer.info.error is not None and answer.info.error.name == "MessageAbortedError"
    assert not runtime.loop.is_busy(session_id)


async def test_building_the_message_mid_recording_loses_nothing(runtime: Runtime) -> None:
    """`msg.builder.build()` inside the block is a look, not an end: the recording still
    finishes and stores the message (completion, tokens, cost, finish)."""
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="look") as msg:
        await msg.start_step()
        await msg.add_text_delta("half")
        peek = msg.builder.build()
        assert [p.type for p in peek.parts] == ["step-start", "text"]
        await msg.add_text_delta(" and the rest")
        await msg.finish_step({"input": 3, "output": 4}, cost=0.5)
    answer = (await runtime.store.list_messages(session_id))[1]
    info = answer.info
    assert isinstance(info, AssistantMessage)
    assert info.time.completed is not None and info.finish == "stop" and info.error is None
    assert info.tokens.output == 4 and info.cost == pytest.approx(0.5)
    assert answer.parts[1].text == "half and the rest"  # type: ignore[union-attr]


ARGS = '{"content": "' + "x" * 100_000 + '"}'


async def _log_bytes(runtime: Runtime, session_id: str) -> int:
    return sum(len(e.json) for e in await runtime.store.events_after(None) if session_id in e.json)


async def test_streamed_arguments_cost_bytes_linear_in_their_length(
    runtime: Runtime, model: ScriptedModel
) -> None:
    """100 KB of arguments in 1,000 deltas: the log grows by a few times their size, not by
    a copy of all of them per delta (50 MB before), through the recorder and our loop."""
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="write") as msg:
        await msg.start_tool_call("call_1", "write")
        for start in range(0, len(ARGS), 100):
            await msg.add_tool_args_delta("call_1", ARGS[start : start + 100])
        await msg.add_tool_call("call_1", "write", ARGS)
        await msg.add_tool_result("call_1", "ok")
    recorded = await _log_bytes(runtime, session_id)
    assert recorded < 10 * len(ARGS), recorded

    chunks = [ARGS[start : start + 100] for start in range(0, len(ARGS), 100)]
    model.enqueue(
        [
            StreamStart(),
            StartStep(),
            ToolInputStart("call_2", "todoread"),
            *(ToolInputDelta("call_2", chunk) for chunk in chunks),
            ToolCall("call_2", "todoread", ARGS),
            *finish("tool-calls"),
        ],
        text_reply("done"),
    )
    ours = await new_session(runtime)
    await runtime.loop.prompt(ours, prompt_body("go"))
    assert await _log_bytes(runtime, ours) < 10 * len(ARGS)
