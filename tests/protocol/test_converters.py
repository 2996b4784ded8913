"""Converters in: each runtime's stream, as its public docs and SDK types describe it,
recorded into a session through the same path as any external loop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from partwire.errors import BuilderError
from partwire.protocol.converters import Converter, formats
from partwire.protocol.converters.pydantic_ai import PydanticAIConverter
from partwire.runtime import Runtime
from partwire.schema.ingest import IngestEvent, IngestStart, ToolCall
from partwire.schema.message import MessageWithParts
from partwire.session.ingest import feed
from tests.session.helpers import new_session

FIXTURES = Path(__file__).parent / "fixtures"


def lines(name: str) -> list[dict[str, Any]]:
    """A stream written from the format's public documentation and SDK types, one JSON
    object per line (tests/protocol/fixtures/NAME.jsonl)."""
    text = (FIXTURES / f"{name}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def convert(converter: Converter, items: Iterable[Any]) -> list[IngestEvent]:
    events: list[IngestEvent] = []
    for item in items:
        events += converter.feed(item)
    return events + converter.end()


async def record(
    runtime: Runtime, events: list[IngestEvent], results: dict[str, str] | None = None
) -> MessageWithParts:
    """Record one answer; ``results`` are the tool results the user's loop would add."""
    session_id = await new_session(runtime)
    start = events[0] if events and isinstance(events[0], IngestStart) else IngestStart()
    events = events[1:] if events and events[0] is start else events
    prompt = start.prompt or "go"  # the stream's own prompt when it has one
    async with runtime.record(session_id, prompt=prompt, model=start.model) as msg:
        for event in events:
            await feed(msg, event)
        for call_id, output in (results or {}).items():
            await msg.add_tool_result(call_id, output)
    return (await runtime.store.list_messages(session_id))[-1]


def shape(message: MessageWithParts) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for part in message.parts:
        if part.type in ("text", "reasoning"):
            out.append((part.type, part.text))  # type: ignore[union-attr]
        elif part.type == "tool":
            state = part.state  # type: ignore[union-attr]
            out.append(("tool", (part.tool, state.status, state.input)))  # type: ignore[union-attr]
        else:
            out.append((part.type, None))
    return out


# ---- OpenAI Chat Completions --------------------------------------------------------------

CHAT_CHUNKS = lines("openai-chat")


async def test_openai_chat_chunks(runtime: Runtime) -> None:
    events = convert(formats()["openai-chat"](), CHAT_CHUNKS)
    answer = await record(runtime, events, {"call_1": "18°C"})
    assert shape(answer) == [
        ("step-start", None),
        ("reasoning", "Weather needs a tool."),
        ("text", "Let me check."),
        ("tool", ("get_weather", "completed", {"city": "Paris"})),
        ("step-finish", None),
    ]
    finish = answer.parts[-1]
    assert finish.reason == "tool-calls" and finish.tokens.input == 50  # type: ignore[union-attr]
    assert answer.info.tokens.output == 12  # type: ignore[union-attr]


async def test_openai_chat_sdk_objects(runtime: Runtime) -> None:
    from openai.types.chat import ChatCompletionChunk

    chunks = [ChatCompletionChunk.model_validate(chunk) for chunk in CHAT_CHUNKS]
    events = convert(formats()["openai-chat"](), chunks)
    assert events == convert(formats()["openai-chat"](), CHAT_CHUNKS)


# ---- OpenAI Responses ---------------------------------------------------------------------

RESPONSES = lines("openai-responses")


async def test_openai_responses_events(runtime: Runtime) -> None:
    events = convert(formats()["openai-responses"](), RESPONSES)
    answer = await record(runtime, events, {"call_9": "no rain"})
    assert shape(answer) == [
        ("step-start", None),
        ("reasoning", "Look it up."),
        ("text", "Checking now."),
        ("tool", ("search", "completed", {"q": "rain"})),
        ("step-finish", None),
    ]
    finish = answer.parts[-1]
    assert finish.reason == "tool-calls"  # type: ignore[union-attr]
    assert (finish.tokens.reasoning, finish.tokens.cache.read) == (3, 8)  # type: ignore[union-attr]


async def test_a_failed_response_ends_the_message_with_its_error(runtime: Runtime) -> None:
    failed = [
        {"type": "response.created", "response": {"id": "r"}},
        {"type": "response.output_text.delta", "delta": "Hal"},
        {"type": "response.failed", "response": {"error": {"message": "server overloaded"}}},
    ]
    answer = await record(runtime, convert(formats()["openai-responses"](), failed))
    assert answer.info.error is not None and answer.info.error.data.message == "server overloaded"  # type: ignore[union-attr]


# ---- Anthropic Messages -------------------------------------------------------------------

ANTHROPIC = lines("anthropic")


async def test_anthropic_stream_events(runtime: Runtime) -> None:
    events = convert(formats()["anthropic"](), ANTHROPIC)
    answer = await record(runtime, events, {"toolu_1": "README.md"})
    assert shape(answer) == [
        ("step-start", None),
        ("reasoning", "The user wants files."),
        ("text", "I'll list them."),
        ("tool", ("bash", "completed", {"command": "ls"})),
        ("step-finish", None),
    ]
    finish = answer.parts[-1]
    assert finish.reason == "tool-calls"  # type: ignore[union-attr]
    assert (finish.tokens.input, finish.tokens.output, finish.tokens.cache.read) == (25, 30, 4)  # type: ignore[union-attr]


async def test_anthropic_sdk_objects_convert_the_same(runtime: Runtime) -> None:
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    objects = [adapter.validate_python(e) for e in ANTHROPIC if e["type"] != "ping"]
    plain = [e for e in ANTHROPIC if e["type"] != "ping"]
    assert convert(formats()["anthropic"](), objects) == convert(formats()["anthropic"](), plain)


# ---- Claude Code stream-json --------------------------------------------------------------


def _claude_code_lines() -> list[dict[str, Any]]:
    """The Anthropic stream above as Claude Code prints it, with the whole messages it
    repeats, a tool result and a second, unstreamed turn."""
    return lines("claude-code")


async def test_claude_code_stream_json(runtime: Runtime) -> None:
    events = convert(formats()["claude-code"](), _claude_code_lines())
    answer = await record(runtime, events)
    assert shape(answer) == [
        ("step-start", None),
        ("reasoning", "The user wants files."),
        ("text", "I'll list them."),
        ("tool", ("bash", "completed", {"command": "ls"})),
        ("step-finish", None),
        ("step-start", None),
        ("text", "Two entries."),
        ("step-finish", None),
    ]
    assert answer.parts[3].state.output == "README.md\nsrc"  # type: ignore[union-attr]
    assert answer.info.tokens.input == 85 and answer.info.error is None  # type: ignore[union-attr]


async def test_a_claude_code_error_result_ends_the_message(runtime: Runtime) -> None:
    lines = [{"type": "result", "subtype": "error_max_turns", "is_error": True}]
    answer = await record(runtime, convert(formats()["claude-code"](), lines))
    assert answer.info.error is not None and answer.info.error.data.message == "error_max_turns"  # type: ignore[union-attr]


# ---- pydantic-ai --------------------------------------------------------------------------


async def pydantic_ai_events(
    agent: Any, prompt: str, *, with_run: bool = True
) -> list[IngestEvent]:
    """The ingest events of one run of ``agent``, converted as they stream (given the run's
    handle, as the README shows, unless ``with_run`` is false)."""
    events: list[IngestEvent] = []
    async with agent.run_stream_events(prompt) as stream:
        converter = PydanticAIConverter(stream if with_run else None)
        async for event in stream:
            events += converter.feed(event)
    return events + converter.end()


def _lookup_agent(model_name: str | None = None) -> Any:
    """A pydantic-ai agent over a scripted model: one step calls ``lookup``, the next answers."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

    async def model(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        if len(messages) == 1:
            yield "Let me look. "
            yield {0: DeltaToolCall(name="lookup", json_args='{"key": ', tool_call_id="call_a")}
            yield {0: DeltaToolCall(json_args='"colour"}')}
        else:
            yield "It is "
            yield "blue."

    agent = Agent(FunctionModel(stream_function=model, model_name=model_name))

    @agent.tool_plain
    def lookup(key: str) -> str:
        return f"{key}=blue"

    return agent


async def test_a_pydantic_ai_agent_run(runtime: Runtime) -> None:
    agent = _lookup_agent()
    answer = await record(runtime, await pydantic_ai_events(agent, "What colour?"))
    assert shape(answer) == [
        ("step-start", None),
        ("text", "Let me look. "),
        ("tool", ("lookup", "completed", {"key": "colour"})),
        ("step-finish", None),
        ("step-start", None),
        ("text", "It is blue."),
        ("step-finish", None),
    ]
    assert answer.parts[2].state.output == "colour=blue"  # type: ignore[union-attr]
    assert answer.info.tokens.output > 0  # type: ignore[union-attr]


@pytest.mark.parametrize("with_run", [True, False])
async def test_a_pydantic_ai_run_keeps_each_steps_usage_and_the_model(
    runtime: Runtime, with_run: bool
) -> None:
    """Given the run's handle, each step carries its own model response's usage and the
    message is the model's; without it the last step carries the whole run's, once."""
    from pydantic_ai.messages import ModelResponse

    agent = _lookup_agent("scripted-1")
    async with agent.run_stream_events("What colour?") as stream:
        converter = PydanticAIConverter(stream if with_run else None)
        events: list[IngestEvent] = []
        async for event in stream:  # converted as each arrives: the run is live
            events += converter.feed(event)
        responses = [m for m in stream.new_messages() if isinstance(m, ModelResponse)]
    answer = await record(runtime, events + converter.end())
    steps = [p.tokens for p in answer.parts if p.type == "step-finish"]  # type: ignore[union-attr]
    outputs = [r.usage.output_tokens for r in responses]
    assert len(steps) == len(responses) == 2 and all(outputs)
    if with_run:
        assert [s.output for s in steps] == outputs
        assert [s.input for s in steps] == [r.usage.input_tokens for r in responses]
    else:
        assert [s.output for s in steps] == [0, sum(outputs)]
    info = answer.info
    assert info.tokens.output == sum(outputs)  # type: ignore[union-attr]
    assert (info.provider_id, info.model_id) == ("pydantic-ai", "scripted-1")  # type: ignore[union-attr]


async def test_a_pydantic_ai_response_from_a_priced_model_is_priced(runtime: Runtime) -> None:
    """A response names its provider and model: the step is priced from the catalogue."""
    from pydantic_ai import messages as pai
    from pydantic_ai.usage import RequestUsage

    response = pai.ModelResponse(
        parts=[pai.TextPart("hi")],
        usage=RequestUsage(input_tokens=1000, output_tokens=100),
        model_name="gpt-4o",
        provider_name="openai",
    )

    class Run:
        def new_messages(self) -> list[pai.ModelMessage]:
            return [response]

    converter = PydanticAIConverter(Run())
    events = converter.feed(pai.PartStartEvent(index=0, part=pai.TextPart("hi")))
    answer = await record(runtime, events + converter.end())
    info = answer.info
    assert (info.provider_id, info.model_id) == ("openai", "gpt-4o")  # type: ignore[union-attr]
    assert (info.tokens.input, info.tokens.output) == (1000, 100)  # type: ignore[union-attr]
    assert info.cost > 0  # type: ignore[union-attr]


# ---- opencode's /event stream -------------------------------------------------------------


def _sse_events(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:]) for line in path.read_text().splitlines() if line.startswith("data:")
    ]


async def test_an_opencode_session_is_mirrored_from_its_event_stream(runtime: Runtime) -> None:
    """A trace recorded from opencode 1.18.33 (tests/protocol/fixtures) is mirrored into a
    partwire session; the result matches what opencode itself stored."""
    events = convert(formats()["opencode"](), _sse_events(FIXTURES / "trace-tool.sse"))
    session_id = await new_session(runtime)
    messages: list[list[IngestEvent]] = []
    for event in events:
        if isinstance(event, IngestStart):
            messages.append([event])
        else:
            messages[-1].append(event)
    for message in messages:
        start = message[0]
        assert isinstance(start, IngestStart)
        async with runtime.record(session_id, role=start.role, model=start.model) as msg:
            for event in message[1:]:
                await feed(msg, event)
    ours = await runtime.store.list_messages(session_id)
    theirs = [
        MessageWithParts.model_validate(m)
        for m in json.loads((FIXTURES / "messages-tool.json").read_text())
    ]
    assert [shape(m) for m in ours] == [shape(m) for m in theirs]
    tool = next(p for p in ours[1].parts if p.type == "tool")
    original = next(p for p in theirs[1].parts if p.type == "tool")
    assert tool.state.output == original.state.output  # type: ignore[union-attr]
    assert ours[1].info.model_id == theirs[1].info.model_id  # type: ignore[union-attr]


def test_every_format_is_listed() -> None:
    assert set(formats()) == {
        "partwire", "openai-chat", "openai-responses", "anthropic", "claude-code", "opencode",
        "frames",
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(set(formats()) - {"partwire", "frames"}))
def test_items_of_no_known_shape_are_skipped(name: str) -> None:
    converter = formats()[name]()
    assert converter.feed({"type": "something.else"}) == []
    assert converter.feed("not an object") == []


def test_frames_refuse_what_is_not_a_frame() -> None:
    frames = formats()["frames"]()
    with pytest.raises(ValueError, match="something.else"):
        frames.feed({"type": "something.else"})
    with pytest.raises(ValueError):
        frames.feed("not an object")


def test_the_native_format_refuses_what_it_does_not_know() -> None:
    native = formats()["partwire"]()
    assert native.feed({"type": "text-delta", "delta": "x"})[0].type == "text-delta"
    with pytest.raises(ValueError, match="teleport"):
        native.feed({"type": "teleport"})


async def test_a_claude_code_task_becomes_a_child_session_with_its_own_calls(
    runtime: Runtime,
) -> None:
    """The prompt and model come from the stream, the reported cost is kept, tokens are
    Anthropic's own, and the Task's sub-agent (its lines carry parent_tool_use_id) is a
    child session linked from the call, with its own tool calls."""
    from partwire.protocol.blocks import SessionEvents
    from partwire.protocol.conversation import conversation_of, in_call_order
    from partwire.protocol.session_state import initial_state, reduce_session_event

    events = convert(formats()["claude-code"](), lines("claude-code-task"))
    start = events[0]
    assert (
        isinstance(start, IngestStart) and start.prompt == "Count the files, and read the README."
    )
    answer = await record(runtime, events)
    info = answer.info
    assert (info.provider_id, info.model_id) == ("anthropic", "claude-sonnet-4-5")  # type: ignore[union-attr]
    assert info.cost == pytest.approx(0.0421)  # type: ignore[union-attr]
    first = next(p for p in answer.parts if p.type == "step-finish")
    tokens = first.tokens  # type: ignore[union-attr]
    assert (tokens.input, tokens.output, tokens.cache.read, tokens.cache.write) == (40, 20, 100, 10)
    assert tokens.total == 170  # Anthropic's input leaves the cache out: all four, once
    task = next(p for p in answer.parts if p.type == "tool" and p.tool == "Task")  # type: ignore[union-attr]
    assert task.state.status == "completed"  # type: ignore[union-attr]
    child_id = task.state.metadata["sessionId"]  # type: ignore[union-attr]
    child = await runtime.store.get_session(child_id)
    assert child.parent_id == answer.info.session_id
    assert child.title == "Count files (@general-purpose subagent)"
    (asked, answered) = await runtime.store.list_messages(child_id)
    assert [p.text for p in asked.parts] == ["Count the files in the project."]  # type: ignore[union-attr]
    assert shape(answered) == [
        ("step-start", None),
        ("tool", ("Bash", "completed", {"command": "ls | wc -l"})),
        ("step-finish", None),
        ("step-start", None),
        ("text", "There are 2 files."),
        ("step-finish", None),
    ]
    read = next(p for p in answer.parts if p.type == "tool" and p.tool == "Read")  # type: ignore[union-attr]
    assert read.state.output == "# Demo"  # type: ignore[union-attr]

    # seed 004: the sub-agent's conversation, as the store holds it
    session_id = answer.info.session_id
    adapter = SessionEvents(session_id)
    state = initial_state()
    for event in await runtime.store.events_after(None):
        for made in adapter.convert(event):
            state = reduce_session_event(state, made)
    stored = {
        session_id: await runtime.store.list_messages(session_id),
        child_id: [asked, answered],
    }
    whole = conversation_of(session_id, stored)
    assert in_call_order(state["blocks"]) == whole["blocks"]
    (agent,) = state["subagents"]
    assert agent["agentId"] == child_id and agent["status"] == "success"
    assert in_call_order(agent["blocks"]) == whole["subagents"][0]["blocks"]


@pytest.mark.parametrize(
    ("outcome", "failed"),
    [("success", False), ("retried", True), ("denied", True), ("failed", True)],
)
def test_a_pydantic_ai_outcome_other_than_success_is_an_error(outcome: str, failed: bool) -> None:
    from pydantic_ai import messages as pai

    part = pai.ToolReturnPart(tool_name="t", content="x", tool_call_id="c1", outcome=outcome)  # type: ignore[arg-type]
    (result,) = PydanticAIConverter().feed(pai.FunctionToolResultEvent(part=part))
    assert result.is_error is failed  # type: ignore[union-attr]


def test_openai_usage_counts_each_token_once() -> None:
    """OpenAI's input includes the cached prompt and its output the reasoning; stored,
    each is in its own field once and the total is OpenAI's."""
    events = convert(formats()["openai-responses"](), RESPONSES)
    finish = next(e for e in events if e.type == "step-finish")
    tokens = finish.tokens  # type: ignore[union-attr]
    assert (tokens.input, tokens.cache.read, tokens.output, tokens.reasoning) == (32, 8, 6, 3)
    assert tokens.total == 49


def test_an_anthropic_server_tool_completes_with_its_result() -> None:
    stream = [
        {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {
            "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
            "input": {"query": "weather"}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {
            "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "title": "Sunny", "url": "https://x",
                         "encrypted_content": "EqA"}]}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]  # fmt: skip
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    typed = TypeAdapter(RawMessageStreamEvent)
    events = convert(formats()["anthropic"](), [typed.validate_python(e) for e in stream])
    kinds = [e.type for e in events]
    assert kinds == [
        "start", "step-start", "tool-call-start", "tool-call", "tool-result", "step-finish"
    ]  # fmt: skip
    assert events[0].model.model_id == "claude-sonnet-4-5"  # type: ignore[union-attr]
    result = events[4]
    assert result.call_id == "srvtoolu_1" and "Sunny" in result.output  # type: ignore[union-attr]


async def test_opencode_sub_agent_sessions_are_mirrored_as_child_sessions(
    runtime: Runtime,
) -> None:
    """opencode's /event of a session whose task tool ran two sub-agents (partwire's own
    stream, which is opencode's shape): mirrored, each child session holds the sub-agent's
    prompt and tool calls, linked from its call."""
    from partwire.schema.input import PromptInput, TextPartInput

    source = await new_session(runtime)
    watched = runtime.bus.subscribe_all()
    for text in ("task list", "task list"):
        await runtime.loop.prompt(source, PromptInput(parts=[TextPartInput(text=text)]))
    stream = [json.loads(e.json) for e in watched.drain() if e.json]
    watched.close()
    events = convert(formats()["opencode"](source), stream)
    starts = [e.role for e in events if isinstance(e, IngestStart)]
    assert starts.count("user") == 2  # the two prompts; the sub-agents' are theirs

    mirror = await new_session(runtime)
    message: list[IngestEvent] = []
    for event in [*events, IngestStart()]:
        if isinstance(event, IngestStart) and message:
            start = message[0]
            assert isinstance(start, IngestStart)
            async with runtime.record(mirror, role=start.role, model=start.model) as msg:
                for item in message[1:]:
                    await feed(msg, item)
            message = []
        message.append(event)
    sessions = await runtime.store.list_sessions()
    theirs = [s for s in sessions if s.parent_id == source]
    ours = [s for s in sessions if s.parent_id == mirror]
    assert len(theirs) == len(ours) == 2
    calls = [
        p
        for m in await runtime.store.list_messages(mirror)
        for p in m.parts
        if p.type == "tool" and p.tool == "task"  # type: ignore[union-attr]
    ]
    linked = sorted(c.state.metadata["sessionId"] for c in calls)  # type: ignore[union-attr]
    assert linked == sorted(s.id for s in ours)
    for child in ours:
        asked, answered = await runtime.store.list_messages(child.id)
        assert [p.text for p in asked.parts] == ["list"]  # type: ignore[union-attr]
        tools = [p for p in answered.parts if p.type == "tool"]
        assert [(t.tool, t.state.status) for t in tools] == [("list", "completed")]  # type: ignore[union-attr]
        assert any(p.type == "text" and "README.md" in p.text for p in answered.parts)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "model"),
    [("anthropic", "anthropic/claude-sonnet-4"), ("openai-chat", "openai/gpt-4o"),
     ("openai-responses", "openai/gpt-4o")],
)  # fmt: skip
async def test_the_streams_model_is_kept_and_priced(
    runtime: Runtime, name: str, model: str
) -> None:
    """The model the stream names is the message's, and its steps cost what the price
    catalogue says (these streams report no cost)."""
    events = convert(formats()[name](), lines(name))
    calls = {e.call_id for e in events if isinstance(e, ToolCall)}
    answer = await record(runtime, events, dict.fromkeys(calls, "x"))
    info = answer.info
    assert f"{info.provider_id}/{info.model_id}" == model  # type: ignore[union-attr]
    assert info.cost > 0  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["claude-code", "claude-code-task"])
def test_the_claude_code_lines_are_what_the_agent_sdk_reads(name: str) -> None:
    """Each fixture line is one the Claude Agent SDK's own parser reads as its message
    types (pinned in pyproject), sub-agent lines with their parent_tool_use_id."""
    from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, UserMessage
    from claude_agent_sdk._internal.message_parser import parse_message

    parsed = [parse_message(line) for line in lines(name)]
    assert isinstance(parsed[0], SystemMessage) and isinstance(parsed[-1], ResultMessage)
    kinds = {type(m).__name__ for m in parsed}
    assert {"AssistantMessage", "UserMessage"} <= kinds
    if name == "claude-code-task":
        sub = [m for m in parsed if isinstance(m, AssistantMessage | UserMessage)]
        assert {m.parent_tool_use_id for m in sub} == {None, "toolu_task"}


async def test_a_loop_that_converts_each_model_call_keeps_one_message(runtime: Runtime) -> None:
    """Each model call of a user's loop has its own converter, and each names the model
    (a start event): fed in process, the message takes that model when the loop named
    none, and the later starts only name it again."""
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="go") as msg:
        for call in ("call_1", "call_2"):
            chunks = json.loads(json.dumps(CHAT_CHUNKS).replace("call_1", call))
            for event in convert(formats()["openai-chat"](), chunks):
                if isinstance(event, ToolCall):
                    await feed(msg, event)
                    await msg.add_tool_result(event.call_id, "18°C")
                else:
                    await feed(msg, event)
    answer = (await runtime.store.list_messages(session_id))[-1]
    info = answer.info
    assert (info.provider_id, info.model_id) == ("openai", "gpt-4o")  # type: ignore[union-attr]
    assert [p.type for p in answer.parts].count("step-start") == 2
    with pytest.raises(BuilderError, match="first line"):
        async with runtime.record(session_id, prompt="again") as again:
            await feed(again, IngestStart(prompt="a second prompt"))
