"""Each converter on streams built with the runtime's own SDK types (validated by the SDK,
then fed as objects and as the JSON lines the SDK writes): thinking, parallel tool calls,
errors and aborts. The SDK versions are pinned in pyproject's dev extras."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from partwire.protocol.converters import formats
from partwire.protocol.converters.pydantic_ai import PydanticAIConverter
from partwire.runtime import Runtime
from partwire.schema.ingest import IngestEvent, ToolCall
from partwire.session.ingest import feed
from tests.protocol.test_converters import convert, pydantic_ai_events, record, shape
from tests.session.helpers import new_session


def _both(name: str, objects: list[Any]) -> list[IngestEvent]:
    """The events a format makes of SDK objects, checked equal to those of their JSON."""
    typed = convert(formats()[name](), objects)
    plain = [o.model_dump(mode="json", exclude_none=True) for o in objects]
    assert convert(formats()[name](), plain) == typed
    return typed


# ---- Anthropic ----------------------------------------------------------------------------


def _anthropic(events: list[dict[str, Any]]) -> list[Any]:
    from anthropic.types import RawMessageStreamEvent

    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    return [adapter.validate_python(e) for e in events]


MESSAGE = {
    "id": "msg_p", "type": "message", "role": "assistant", "content": [], "model":
    "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 30},
}  # fmt: skip


def _tool(index: int, call: str, name: str, args: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index,
         "content_block": {"type": "tool_use", "id": call, "name": name, "input": {}}},
        {"type": "content_block_delta", "index": index,
         "delta": {"type": "input_json_delta", "partial_json": args}},
        {"type": "content_block_stop", "index": index},
    ]  # fmt: skip


async def test_anthropic_thinking_and_parallel_calls(runtime: Runtime) -> None:
    stream = _anthropic([
        {"type": "message_start", "message": MESSAGE},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "Two lookups at once."}},
        {"type": "content_block_stop", "index": 0},
        *_tool(1, "toolu_a", "read", '{"path": "a"}'),
        *_tool(2, "toolu_b", "read", '{"path": "b"}'),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 40}},
        {"type": "message_stop"},
    ])  # fmt: skip
    events = _both("anthropic", stream)
    answer = await record(runtime, events, {"toolu_b": "B", "toolu_a": "A"})
    assert shape(answer) == [
        ("step-start", None),
        ("reasoning", "Two lookups at once."),
        ("tool", ("read", "completed", {"path": "a"})),
        ("tool", ("read", "completed", {"path": "b"})),
        ("step-finish", None),
    ]
    tokens = answer.info.tokens  # type: ignore[union-attr]
    assert (tokens.input, tokens.cache.read, tokens.output, tokens.total) == (12, 30, 40, 82)


async def test_an_anthropic_error_mid_stream_ends_the_message(runtime: Runtime) -> None:
    from anthropic.types import RawMessageStreamEvent

    stream = _anthropic([
        {"type": "message_start", "message": MESSAGE},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "Partial"}},
    ])  # fmt: skip
    assert all(isinstance(e, RawMessageStreamEvent.__args__[0].__args__) for e in stream)  # type: ignore[attr-defined]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    events = convert(formats()["anthropic"](), [*stream, error])
    answer = await record(runtime, events)
    assert answer.info.error is not None  # type: ignore[union-attr]
    assert answer.info.error.data.message == "Overloaded"  # type: ignore[union-attr]
    assert shape(answer)[:2] == [("step-start", None), ("text", "Partial")]


# ---- OpenAI Chat Completions --------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> Any:
    from openai.types.chat import ChatCompletionChunk

    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return ChatCompletionChunk.model_validate(
        {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
         "choices": [choice], **extra}
    )  # fmt: skip


def _call_delta(index: int, call: str | None, name: str | None, args: str) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": args}
    if name:
        function["name"] = name
    entry: dict[str, Any] = {"index": index, "function": function}
    if call:
        entry |= {"id": call, "type": "function"}
    return {"tool_calls": [entry]}


async def test_openai_chat_parallel_calls(runtime: Runtime) -> None:
    from openai.types.chat import ChatCompletionChunk

    usage = {"prompt_tokens": 90, "completion_tokens": 25, "total_tokens": 115,
             "prompt_tokens_details": {"cached_tokens": 64},
             "completion_tokens_details": {"reasoning_tokens": 10}}  # fmt: skip
    stream = [
        _chunk({"role": "assistant", "content": "Checking both."}),
        _chunk(_call_delta(0, "call_x", "weather", '{"city": ')),
        _chunk(_call_delta(1, "call_y", "weather", '{"city": "Rome"}')),
        _chunk(_call_delta(0, None, None, '"Oslo"}')),
        _chunk({}, "tool_calls"),
        ChatCompletionChunk.model_validate(
            {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
             "choices": [], "usage": usage}
        ),
    ]  # fmt: skip
    events = _both("openai-chat", stream)
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == ["call_x", "call_y"]
    answer = await record(runtime, events, {"call_y": "sunny", "call_x": "snow"})
    assert shape(answer)[1:4] == [
        ("text", "Checking both."),
        ("tool", ("weather", "completed", {"city": "Oslo"})),
        ("tool", ("weather", "completed", {"city": "Rome"})),
    ]
    tokens = answer.info.tokens  # type: ignore[union-attr]
    assert (tokens.input, tokens.cache.read, tokens.output, tokens.reasoning) == (26, 64, 15, 10)
    assert tokens.total == 115  # OpenAI's own total


async def test_an_openai_chat_stream_cut_short_is_aborted_cleanly(runtime: Runtime) -> None:
    """The stream stops mid-call (the user's loop was aborted): the call that never got its
    arguments whole ends in error, the text stays."""
    stream = [
        _chunk({"role": "assistant", "content": "Let me"}),
        _chunk(_call_delta(0, "call_z", "weather", '{"ci')),
    ]
    events = _both("openai-chat", stream)
    answer = await record(runtime, events)
    kinds = shape(answer)
    assert kinds[1] == ("text", "Let me")
    assert answer.parts[2].state.status == "error"  # type: ignore[union-attr]


# ---- OpenAI Responses ---------------------------------------------------------------------


def _responses(events: list[dict[str, Any]]) -> list[Any]:
    from openai.types.responses import ResponseStreamEvent

    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    return [adapter.validate_python(e) for e in events]


RESPONSE = {"id": "resp_p", "object": "response", "created_at": 1, "model": "gpt-4o",
            "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "status": "in_progress"}  # fmt: skip


def _function(n: int, item: str, call: str, args: str) -> list[dict[str, Any]]:
    added = {"type": "function_call", "id": item, "call_id": call, "name": "lookup",
             "arguments": "", "status": "in_progress"}  # fmt: skip
    done = {**added, "arguments": args, "status": "completed"}
    return [
        {"type": "response.output_item.added", "output_index": n, "item": added,
         "sequence_number": 10 + n},
        {"type": "response.function_call_arguments.delta", "item_id": item, "output_index": n,
         "delta": args, "sequence_number": 20 + n},
        {"type": "response.output_item.done", "output_index": n, "item": done,
         "sequence_number": 30 + n},
    ]  # fmt: skip


async def test_openai_responses_parallel_calls_and_a_failure(runtime: Runtime) -> None:
    usage = {"input_tokens": 50, "output_tokens": 20, "total_tokens": 70,
             "input_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 5}}  # fmt: skip
    stream = _responses([
        {"type": "response.created", "response": RESPONSE, "sequence_number": 0},
        *_function(0, "fc_1", "call_1", '{"q": "a"}'),
        *_function(1, "fc_2", "call_2", '{"q": "b"}'),
        {"type": "response.completed", "sequence_number": 99,
         "response": {**RESPONSE, "status": "completed", "usage": usage}},
    ])  # fmt: skip
    events = _both("openai-responses", stream)
    answer = await record(runtime, events, {"call_2": "B", "call_1": "A"})
    tools = [p for p in answer.parts if p.type == "tool"]
    assert [(t.call_id, t.state.input) for t in tools] == [  # type: ignore[union-attr]
        ("call_1", {"q": "a"}), ("call_2", {"q": "b"}),
    ]  # fmt: skip
    tokens = answer.info.tokens  # type: ignore[union-attr]
    assert (tokens.input, tokens.cache.read, tokens.output, tokens.reasoning) == (40, 10, 15, 5)

    failed = _responses([
        {"type": "response.created", "response": RESPONSE, "sequence_number": 0},
        {"type": "response.failed", "sequence_number": 1,
         "response": {**RESPONSE, "status": "failed",
                      "error": {"code": "server_error", "message": "The server broke"}}},
    ])  # fmt: skip
    broken = await record(runtime, _both("openai-responses", failed))
    assert broken.info.error.data.message == "The server broke"  # type: ignore[union-attr]


# ---- pydantic-ai --------------------------------------------------------------------------


async def test_a_pydantic_ai_run_with_thinking_and_parallel_calls(runtime: Runtime) -> None:
    from collections.abc import AsyncIterator

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import (
        AgentInfo,
        DeltaThinkingCalls,
        DeltaThinkingPart,
        DeltaToolCall,
        DeltaToolCalls,
        FunctionModel,
    )

    async def model(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls | DeltaThinkingCalls]:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content="Both at once.")}
            yield {
                1: DeltaToolCall(name="size", json_args='{"name": "a"}', tool_call_id="call_a"),
                2: DeltaToolCall(name="size", json_args='{"name": "b"}', tool_call_id="call_b"),
            }
        else:
            yield "a is 1, b is 1."

    agent = Agent(FunctionModel(stream_function=model))

    @agent.tool_plain
    def size(name: str) -> int:
        return len(name)

    answer = await record(runtime, await pydantic_ai_events(agent, "sizes?"))
    assert shape(answer) == [
        ("step-start", None),
        ("reasoning", "Both at once."),
        ("tool", ("size", "completed", {"name": "a"})),
        ("tool", ("size", "completed", {"name": "b"})),
        ("step-finish", None),
        ("step-start", None),
        ("text", "a is 1, b is 1."),
        ("step-finish", None),
    ]
    assert answer.info.tokens.output > 0  # type: ignore[union-attr]


async def test_a_pydantic_ai_model_failing_mid_stream_ends_the_message(runtime: Runtime) -> None:
    """The model fails after streaming some text: the recording ends the message with the
    error pydantic-ai raised, and what streamed before it stays."""
    from collections.abc import AsyncIterator

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield "Half an ans"
        raise ConnectionError("model connection lost")

    agent = Agent(FunctionModel(stream_function=model))
    session_id = await new_session(runtime)
    with pytest.raises(ConnectionError):
        async with runtime.record(session_id, prompt="go") as msg:
            async with agent.run_stream_events("go") as stream:
                converter = PydanticAIConverter(stream)
                async for event in stream:
                    for ingest_event in converter.feed(event):
                        await feed(msg, ingest_event)
    answer = (await runtime.store.list_messages(session_id))[-1]
    assert shape(answer)[:2] == [("step-start", None), ("text", "Half an ans")]
    assert answer.info.error is not None  # type: ignore[union-attr]
    assert "model connection lost" in answer.info.error.data.message  # type: ignore[union-attr]
