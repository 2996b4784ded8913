"""The loop and processor, driven by a scripted model through the real runtime."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from partwire.providers.stream import (
    FinishStep,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StartStep,
    StreamError,
    StreamStart,
    TextDelta,
    TextStart,
    Usage,
)
from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.schema.message import AssistantMessage, AssistantWithParts, UserMessage
from partwire.schema.part import ReasoningPart, StepFinishPart, TextPart, ToolPart
from partwire.session import writer as writer_module
from partwire.session.admission import StartGate
from partwire.storage.sqlite import SqliteStore
from tests.scripted import ScriptedModel, finish, text_reply, tool_reply
from tests.session.helpers import new_session, prompt_body


def _summary(events: list[Event]) -> list[str]:
    out = []
    for e in events:
        p = e.properties
        if e.type == "message.part.updated":
            part = p.part  # type: ignore[attr-defined]
            state = getattr(getattr(part, "state", None), "status", "")
            out.append(f"part:{part.type}{':' + state if state else ''}")
        elif e.type == "message.updated":
            out.append(f"message:{p.info.role}")  # type: ignore[attr-defined]
        elif e.type == "session.status":
            out.append(f"status:{p.status.type}")  # type: ignore[attr-defined]
        else:
            out.append(e.type)
    return out


async def test_text_and_reasoning_become_parts_with_the_event_sequence(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(
        [
            StreamStart(),
            StartStep(),
            ReasoningStart("r"),
            ReasoningDelta("r", "think"),
            ReasoningEnd("r"),
            TextStart("t"),
            TextDelta("t", "Hello "),
            TextDelta("t", "world"),
            *text_reply()[-3:-2],  # TextEnd("t")
            *finish(),
        ]
    )
    sid = await new_session(runtime)
    sub = runtime.bus.subscribe_all()
    result = await runtime.loop.prompt(sid, prompt_body("hi"))
    await asyncio.sleep(0.05)
    events = [e for e in sub.drain() if e.type != "session.updated"]
    assert _summary(events) == [
        "message:user",
        "part:text",
        "status:busy",
        "message:assistant",
        "part:step-start",
        "part:reasoning",
        "message.part.delta",
        "part:reasoning",
        "part:text",
        "message.part.delta",
        "message.part.delta",
        "part:text",
        "part:step-finish",
        "message:assistant",
        "status:idle",
        "session.idle",
    ]
    kinds = [type(p) for p in result.parts]
    assert kinds[1:4] == [ReasoningPart, TextPart, StepFinishPart]
    text = result.parts[2]
    assert isinstance(text, TextPart) and text.text == "Hello world"
    assert text.time is not None and text.time.end is not None
    assert result.info.finish == "stop" and result.info.time.completed is not None
    assert result.info.tokens.input == 10 and result.info.tokens.output == 5


async def test_tool_call_runs_and_the_loop_takes_another_step(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "README.md"}), text_reply("done"))
    sid = await new_session(runtime)
    sub = runtime.bus.subscribe("message.part.updated")
    result = await runtime.loop.prompt(sid, prompt_body("read it"))
    tool_states = [
        (
            e.properties.part.state.status,
            e.properties.part.state.raw if e.properties.part.state.status == "pending" else None,
        )  # type: ignore[attr-defined]
        for e in sub.drain()
        if e.properties.part.type == "tool"  # type: ignore[attr-defined]
    ]
    assert [s for s, _ in tool_states] == ["pending", "pending", "pending", "running", "completed"]
    assert tool_states[2][1] == '{"filePath": "README.md"}'  # raw input streamed
    history = await runtime.store.list_messages(sid)
    assert [type(m.info) for m in history] == [UserMessage, AssistantMessage, AssistantMessage]
    tool = next(p for p in history[1].parts if isinstance(p, ToolPart))
    assert tool.state.status == "completed" and "A sample project." in tool.state.output  # type: ignore[union-attr]
    assert history[1].info.finish == "tool-calls"  # type: ignore[union-attr]
    assert result.info.id == history[2].info.id and result.info.finish == "stop"
    second_request = model.requests[1]
    assert second_request.messages[-1].role == "tool"
    assert "A sample project." in second_request.messages[-1].output  # type: ignore[union-attr]


async def test_bad_tool_calls_become_error_states_the_model_can_see(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(
        tool_reply("read", "{not json", call_id="a"),
        tool_reply("nosuchtool", {}, call_id="b"),
        tool_reply("read", {"filePath": "missing.txt"}, call_id="c"),
        tool_reply("read", {"path": "x"}, call_id="d"),
        text_reply("ok"),
    )
    sid = await new_session(runtime)
    await runtime.loop.prompt(sid, prompt_body("go"))
    history = await runtime.store.list_messages(sid)
    errors = [
        p.state.error  # type: ignore[union-attr]
        for m in history
        for p in m.parts
        if isinstance(p, ToolPart)
    ]
    assert "not valid JSON" in errors[0]
    assert "no tool named nosuchtool" in errors[1]
    assert "File not found: missing.txt" in errors[2]
    assert "filePath: Field required" in errors[3]
    assert len(history) == 6  # user + 5 assistant steps: nothing crashed, nothing lost


async def test_provider_error_ends_the_message_and_publishes_session_error(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(
        [
            StreamStart(),
            StartStep(),
            TextStart("t"),
            TextDelta("t", "par"),
            StreamError("bad key", status_code=401),
        ]
    )
    sid = await new_session(runtime)
    sub = runtime.bus.subscribe("session.error", "session.idle")
    result = await runtime.loop.prompt(sid, prompt_body("hi"))
    assert result.info.error is not None and result.info.error.name == "APIError"
    assert result.info.error.data.message == "bad key"  # type: ignore[union-attr]
    text = next(p for p in result.parts if isinstance(p, TextPart))
    assert text.text == "par" and text.time is not None and text.time.end is not None
    assert [e.type for e in sub.drain()] == ["session.error", "session.idle"]


async def test_prompts_to_a_busy_session_queue_and_all_resolve(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.gate = asyncio.Event()
    model.enqueue(text_reply("first"), text_reply("second"))
    sid = await new_session(runtime)
    one = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("one")))
    await asyncio.sleep(0.05)
    two = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("two")))
    await asyncio.sleep(0.05)
    assert runtime.loop.is_busy(sid) and not one.done()
    model.gate.set()
    first, second = await asyncio.gather(one, two)
    assert first.info.id == second.info.id
    history = await runtime.store.list_messages(sid)
    # "two" arrived while the answer to "one" was already stored (the model was gated)
    roles = [m.info.role for m in history]
    assert roles == ["user", "assistant", "user", "assistant"]
    parents = [getattr(m.info, "parent_id", None) for m in history]
    assert parents == [None, history[0].info.id, None, history[2].info.id]
    assert len(model.requests) == 2
    assert [t.text for t in model.requests[1].messages if t.role == "user"] == ["one", "two"]  # type: ignore[union-attr]


async def test_abort_closes_open_parts_and_releases_every_waiter(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(
        [
            StreamStart(),
            StartStep(),
            TextStart("t"),
            TextDelta("t", "partial"),
            *[TextDelta("t", "x")] * 1000,
        ]
    )
    model.delay_s = 0.01
    sid = await new_session(runtime)
    one = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("one")))
    await asyncio.sleep(0.1)
    two = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("two")))
    await asyncio.sleep(0.05)
    started = time.monotonic()
    assert await runtime.loop.abort(sid) is True
    assert time.monotonic() - started < 1.0
    first, _second = await asyncio.wait_for(asyncio.gather(one, two), 2)
    assert first.info.error is not None and first.info.error.name == "MessageAbortedError"
    text = next(p for p in first.parts if isinstance(p, TextPart))
    assert text.text.startswith("partial") and text.time is not None and text.time.end is not None
    assert not runtime.loop.is_busy(sid)
    assert await runtime.loop.abort(sid) is False


async def test_abort_errors_a_running_tool(runtime: Runtime, model: ScriptedModel) -> None:
    from pydantic import BaseModel

    from partwire.tools.base import Tool, ToolContext, ToolResult
    from partwire.tools.registry import register_tool

    class NoArgs(BaseModel):
        pass

    async def forever(args: NoArgs, ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(60)
        return ToolResult(title="", output="")

    register_tool(Tool(id="sleepy", description="sleeps", parameters=NoArgs, execute=forever))
    model.enqueue(tool_reply("sleepy", {}))
    sid = await new_session(runtime)
    task = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("sleep")))
    await asyncio.sleep(0.1)
    await runtime.loop.abort(sid)
    result = await asyncio.wait_for(task, 2)
    tool = next(p for p in result.parts if isinstance(p, ToolPart))
    assert tool.state.status == "error" and tool.state.error == "Tool execution aborted"  # type: ignore[union-attr]


async def test_streaming_text_rewrites_its_row_a_logarithmic_number_of_times(
    runtime: Runtime, model: ScriptedModel, monkeypatch: object
) -> None:
    words = [f"w{i} " for i in range(20_000)]
    model.enqueue(
        [
            StreamStart(),
            StartStep(),
            TextStart("t"),
            *(TextDelta("t", w) for w in words),
            *text_reply()[-3:],
        ]
    )
    writes: list[int] = []
    original = SqliteStore.put_part

    async def counting(
        self: SqliteStore, part: object, events: list[object], *, streaming: bool = False
    ) -> None:
        if getattr(part, "type", "") == "text" and getattr(part, "text", "") != "long":
            writes.append(len(part.text))  # type: ignore[attr-defined]
        await original(self, part, events, streaming=streaming)  # type: ignore[arg-type]

    monkeypatch.setattr(SqliteStore, "put_part", counting)  # type: ignore[attr-defined]
    sid = await new_session(runtime)
    result = await runtime.loop.prompt(sid, prompt_body("long"))
    text = next(p for p in result.parts if isinstance(p, TextPart))
    assert text.text == "".join(words)
    assert len(writes) <= 8, writes  # start, a few doubling flushes, end
    assert sum(writes) <= 3 * len(text.text)
    assert writes[1] >= writer_module.FLUSH_MIN_CHARS


async def test_finish_step_usage_accumulates_on_the_message(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(
        [
            StreamStart(),
            StartStep(),
            FinishStep("stop", Usage(input=7, output=5, reasoning=2)),  # output: all of it
            *finish()[1:],
        ]
    )
    sid = await new_session(runtime)
    result = await runtime.loop.prompt(sid, prompt_body("x"))
    assert (result.info.tokens.input, result.info.tokens.output, result.info.tokens.reasoning) == (
        7,
        3,
        2,
    )
    assert result.info.tokens.total == 12


async def test_a_prompt_arriving_after_the_last_decision_is_still_answered(
    runtime: Runtime, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window between a run's last decision and its end: a prompt attached to the
    run there must be run, and its caller must get its own answer."""
    model.enqueue(text_reply("first"), text_reply("second"))
    sid = await new_session(runtime)
    loop = runtime.loop
    original = loop._steps
    late: list[asyncio.Future[AssistantWithParts]] = []

    async def steps_then_a_prompt_arrives(session_id: str, run: Any) -> Any:
        final = await original(session_id, run)
        if not late:  # the run has decided to stop; a prompt comes in before it exits
            late.append(await loop.enqueue(session_id, prompt_body("two")))
        return final

    monkeypatch.setattr(loop, "_steps", steps_then_a_prompt_arrives)
    first = await loop.prompt(sid, prompt_body("one"))
    second = await asyncio.wait_for(late[0], 5)
    history = await runtime.store.list_messages(sid)
    assert [m.info.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert second.info.parent_id == history[2].info.id
    assert [p.text for p in second.parts if isinstance(p, TextPart)] == ["second"]
    assert first.info.id == second.info.id  # every waiter of the run gets its final answer
    assert not loop.is_busy(sid)


async def test_a_tool_gets_its_call_id_as_an_idempotency_key(
    runtime: Runtime, model: ScriptedModel
) -> None:
    from pydantic import BaseModel

    from partwire.tools.base import Tool, ToolContext, ToolResult
    from partwire.tools.registry import register_tool

    class NoArgs(BaseModel):
        pass

    async def keyed(args: NoArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(title="keyed", output=ctx.idempotency_key)

    register_tool(Tool(id="keyed", description="echoes its key", parameters=NoArgs, execute=keyed))
    model.enqueue(tool_reply("keyed", {}, call_id="call_once"), text_reply("done"))
    sid = await new_session(runtime)
    await runtime.loop.prompt(sid, prompt_body("go"))
    history = await runtime.store.list_messages(sid)
    tool = next(p for m in history for p in m.parts if isinstance(p, ToolPart))
    assert tool.call_id == "call_once" and tool.state.output == "call_once"  # type: ignore[union-attr]


class _HeldGate(StartGate):
    """A start gate that never lets an answer through (titles go at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def ask(self, *, after_answers: bool = False) -> asyncio.Future[None] | None:
        if after_answers:
            return None
        self.asked += 1
        return asyncio.get_running_loop().create_future()


async def test_a_run_waiting_at_the_start_gate_is_busy_and_an_abort_ends_it_at_once(
    runtime: Runtime, model: ScriptedModel
) -> None:
    gate = _HeldGate()
    runtime.loop.starts = gate
    model.enqueue(text_reply("never sent"))
    sid = await new_session(runtime)
    sub = runtime.bus.subscribe("session.status", session_id=sid)
    waiting = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("one")))
    busy = await asyncio.wait_for(sub.get(), 2)
    assert busy is not None and busy.properties.status.type == "busy"  # type: ignore[attr-defined]
    await asyncio.sleep(0.05)
    assert gate.asked == 1 and runtime.loop.is_busy(sid) and model.requests == []
    assert await asyncio.wait_for(runtime.loop.abort(sid), 0.5) is True  # not held at the gate
    with pytest.raises(Exception, match="Session"):  # nothing was answered
        await asyncio.wait_for(waiting, 2)
    assert not runtime.loop.is_busy(sid) and model.requests == []
    roles = [m.info.role for m in await runtime.store.list_messages(sid)]
    assert roles == ["user"]


async def test_a_prompt_nobody_waits_for_is_still_answered(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(text_reply("hello"))
    sid = await new_session(runtime)
    future = await runtime.loop.enqueue(sid, prompt_body("hi"), waiting=False)
    assert future.cancelled()  # the caller said it would not read the answer
    await asyncio.wait_for(runtime.loop.wait_idle(sid), 5)
    history = await runtime.store.list_messages(sid)
    assert [m.info.role for m in history] == ["user", "assistant"]
    answer = history[-1]
    assert isinstance(answer.info, AssistantMessage) and answer.info.time.completed is not None
    assert "hello" in "".join(p.text for p in answer.parts if isinstance(p, TextPart))
