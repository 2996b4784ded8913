"""StreamingMessageBuilder: frames per call, parts in call order, illegal sequences refused."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from partwire import StreamingMessageBuilder
from partwire.errors import BuilderError
from partwire.protocol.partframes import FrameReducer, reduce_frames
from partwire.schema.base import Tokens
from partwire.schema.frames import Frame, frame_adapter
from partwire.schema.part import APIError, APIErrorData, CompactionPart, StepStartPart


def _builder(role: str = "assistant") -> StreamingMessageBuilder:
    ticks = itertools.count(1000)
    return StreamingMessageBuilder("msg_1", role, session_id="ses_1", clock=lambda: next(ticks))  # type: ignore[arg-type]


def _types(frames: list[Frame]) -> list[str]:
    return [frame.type for frame in frames]


def test_text_streams_into_one_part_and_ends_when_another_part_begins() -> None:
    b = _builder()
    assert _types(b.add_text_delta("Hel")) == ["message_start", "part_start", "part_delta"]
    assert _types(b.add_text_delta("lo")) == ["part_delta"]
    frames = b.add_tool_call("c1", "read", {"path": "a.py"})
    assert _types(frames) == ["part_complete", "part_start"]
    assert frames[0].part.text == "Hello" and frames[0].part.time.end is not None  # type: ignore[union-attr]
    b.add_tool_result("c1", "print(1)")
    b.add_text_delta("Done.")
    built = b.build()
    assert [p.type for p in built.parts] == ["text", "tool", "text"]
    assert [getattr(p, "text", None) for p in built.parts] == ["Hello", None, "Done."]
    assert built.content == "Hello\n\nTool result: print(1)\nDone."  # as the seed builds it
    assert all(p.session_id == "ses_1" and p.message_id == "msg_1" for p in built.parts)


def test_a_tool_call_goes_pending_running_completed_with_streamed_arguments() -> None:
    b = _builder()
    b.start_tool_call("c1", "bash")
    delta = b.add_tool_args_delta("c1", '{"command": ')
    assert delta[0].args_delta == '{"command": '  # type: ignore[union-attr]
    b.add_tool_args_delta("c1", '"ls"}')
    pending = b.tool_part("c1")
    assert pending.state.status == "pending" and pending.state.raw == '{"command": "ls"}'  # type: ignore[union-attr]
    update = b.add_tool_call("c1", "bash", '{"command": "ls"}')
    assert _types(update) == ["part_update"]
    assert b.tool_part("c1").state.status == "running"
    done = b.add_tool_result("c1", {"files": ["a"]}, title="ls")
    state = done[0].part.state  # type: ignore[union-attr]
    assert (
        state.status == "completed" and state.output == '{"files": ["a"]}' and state.title == "ls"
    )
    assert state.input == {"command": "ls"}


def test_an_error_result_ends_the_call_in_error() -> None:
    b = _builder()
    b.add_tool_call("c1", "bash", {"command": "false"})
    b.add_tool_result("c1", "exit 1", is_error=True)
    part = b.build().parts[0]
    assert part.state.status == "error" and part.state.error == "exit 1"  # type: ignore[union-attr]
    assert b.build().content == "Tool result: exit 1"


def test_steps_add_tokens_and_cost_to_the_message() -> None:
    b = _builder()
    b.start_step()
    b.add_text_delta("a")
    b.finish_step({"input": 10, "output": 5, "cache": {"read": 2}}, cost=0.25, reason="tool-calls")
    b.start_step()
    b.finish_step({"input": 3, "output": 1}, cost=0.5)
    built = b.build()
    assert [p.type for p in built.parts] == [
        "step-start",
        "text",
        "step-finish",
        "step-start",
        "step-finish",
    ]
    assert built.tokens.input == 13 and built.tokens.output == 6 and built.tokens.cache.read == 2
    assert built.tokens.total == 19 and built.cost == 0.75 and built.finish == "stop"


def test_finish_ends_open_calls_in_error_and_fail_records_the_error() -> None:
    b = _builder()
    b.add_tool_call("c1", "bash", {})
    b.start_tool_call("c2", "read")
    frames = b.fail("the user stopped it", aborted=True)
    assert _types(frames) == ["part_complete", "part_complete", "message_complete"]
    built = b.build()
    assert built.error is not None and built.error.name == "MessageAbortedError"
    assert [p.state.error for p in built.parts] == ["Tool execution aborted"] * 2  # type: ignore[union-attr]


def test_a_user_message_takes_text_and_files_only() -> None:
    b = _builder("user")
    b.add_text_delta("look at this")
    b.add_file("image/png", "data:image/png;base64,AAAA", "a.png")
    with pytest.raises(BuilderError, match="user message has no tool calls"):
        b.add_tool_call("c1", "bash", {})
    with pytest.raises(BuilderError, match="no reasoning"):
        b.add_reasoning_delta("hm")
    assert [p.type for p in b.build().parts] == ["text", "file"]


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ([("add_tool_result", "c1", "x")], "a result for tool call 'c1' arrived before the call"),
        ([("add_tool_args_delta", "c1", "{")], "arguments for tool call 'c1' arrived before"),
        (
            [("add_tool_call", "c1", "bash", {}), ("add_tool_args_delta", "c1", "{")],
            "after they were complete",
        ),
        (
            [("start_tool_call", "c1", "bash"), ("add_tool_result", "c1", "x")],
            "before the call was complete",
        ),
        (
            [
                ("add_tool_call", "c1", "bash", {}),
                ("add_tool_result", "c1", "x"),
                ("add_tool_result", "c1", "y"),
            ],
            "already has a result",
        ),
        ([("add_tool_call", "c1", "bash", {}), ("add_tool_call", "c1", "bash", {})], "already"),
        ([("start_tool_call", "c1", "bash"), ("add_tool_call", "c1", "read", {})], "not 'read'"),
        ([("add_tool_call", "c1", "bash", "[1]")], "must be a JSON object"),
        ([("add_tool_call", "c1", "bash", "{nope")], "not JSON"),
        ([("finish_step",)], "without an open step"),
        ([("start_step",), ("start_step",)], "already open"),
        ([("finish",), ("add_text_delta", "late")], "is complete"),
        ([("add_text_delta", 5)], "must be a string"),
    ],
)
def test_illegal_sequences_raise_and_change_nothing(
    calls: list[tuple[Any, ...]], message: str
) -> None:
    b = _builder()
    *legal, (last, *args) = calls
    for name, *call_args in legal:
        getattr(b, name)(*call_args)
    before = b.parts
    with pytest.raises(BuilderError, match=message):
        getattr(b, last)(*args)
    assert b.parts == before


# ---- every legal sequence: its frames reduce to build() -------------------------------------


class _Kw(dict[str, Any]):
    """A call's keyword arguments, in a drawn call sequence."""


@dataclass
class _Open:
    """What a drawn call sequence has left open, so the next call drawn is legal."""

    pending: list[str] = field(default_factory=list)  # started, arguments streaming
    running: list[str] = field(default_factory=list)
    named: list[tuple[str, str]] = field(default_factory=list)  # named streams: (kind, id)
    step_open: bool = False


_PROCESSOR_CHOICES = {"named", "grow", "end", "badcall", "update", "retry", "patch"}


def _processor_call(draw: st.DrawFn, choice: str, n: int, open_: _Open) -> tuple[Any, ...]:
    """The calls the built-in processor makes that an external loop's stream does not."""
    if choice == "named":
        kind = draw(st.sampled_from(["text", "reasoning"]))
        open_.named.append((kind, f"s{n}"))
        return (f"start_{kind}", f"s{n}")
    if choice == "grow":
        kind, stream = draw(st.sampled_from(open_.named))
        return (f"add_{kind}_delta", draw(st.text(max_size=6)), _Kw(stream_id=stream))
    if choice == "end":
        kind, stream = draw(st.sampled_from(open_.named))
        open_.named.remove((kind, stream))
        return (f"end_{kind}", stream, _Kw(metadata={"n": n}))
    if choice == "badcall":
        return ("add_tool_call", f"c{n}", "read", "{oops", _Kw(bad_arguments="error"))
    if choice == "update":
        return ("update_tool", draw(st.sampled_from(open_.running)), _Kw(title=f"t{n}"))
    if choice == "retry":
        open_.pending.clear()
        open_.running.clear()
        open_.named.clear()
        open_.step_open = False
        return ("add_retry", n, _API_ERROR)
    return ("add_patch", "abc123", ["/p/a.py"])


def _options(open_: _Open, processor: bool) -> list[str]:
    options = ["text", "reasoning", "start", "call", "file", "step"]
    options += ["args", "complete"] * bool(open_.pending) + ["result"] * bool(open_.running)
    if processor:
        options += ["named", "badcall", "retry", "patch"] + ["update"] * bool(open_.running)
        options += ["grow", "end"] * bool(open_.named)
    return options


@st.composite
def legal_calls(draw: st.DrawFn, *, processor: bool = False) -> list[tuple[Any, ...]]:
    """A random legal call sequence, tracking what each call makes legal next: the calls
    a recording takes, and with ``processor`` those only the built-in processor makes."""
    calls: list[tuple[Any, ...]] = []
    open_ = _Open()
    pending, running = open_.pending, open_.running
    text = st.text(min_size=0, max_size=6)
    for n in range(draw(st.integers(0, 25))):
        options = _options(open_, processor)
        choice = draw(st.sampled_from(options))
        call_id = f"c{n}"
        if choice in _PROCESSOR_CHOICES:
            calls.append(_processor_call(draw, choice, n, open_))
        elif choice == "text":
            calls.append(("add_text_delta", draw(text)))
        elif choice == "reasoning":
            calls.append(("add_reasoning_delta", draw(text)))
        elif choice == "start":
            calls.append(("start_tool_call", call_id, "bash"))
            pending.append(call_id)
        elif choice == "call":
            calls.append(("add_tool_call", call_id, "read", {"n": n}))
            running.append(call_id)
        elif choice == "args":
            calls.append(("add_tool_args_delta", draw(st.sampled_from(pending)), draw(text)))
        elif choice == "complete":
            started = draw(st.sampled_from(pending))
            pending.remove(started)
            running.append(started)
            calls.append(("add_tool_call", started, "bash", '{"command": "ls"}'))
        elif choice == "result":
            done = draw(st.sampled_from(running))
            running.remove(done)
            calls.append(("add_tool_result", done, draw(text), draw(st.booleans())))
        elif choice == "file":
            calls.append(("add_file", "text/plain", "file:///a.txt", None))
        elif open_.step_open:
            usage = {"input": draw(st.integers(0, 50)), "output": draw(st.integers(0, 50))}
            calls.append(("finish_step", usage, draw(st.sampled_from([0.0, 0.5, 1.25]))))
            open_.step_open = False
        else:
            calls.append(("start_step",))
            open_.step_open = True
    ending = draw(st.sampled_from(["finish", "fail", "abort"]))
    calls.append({"finish": ("finish",), "fail": ("fail", "boom"), "abort": ("abort",)}[ending])
    return calls


_API_ERROR = APIError(data=APIErrorData(message="overloaded", isRetryable=True))


def _play(calls: list[tuple[Any, ...]]) -> tuple[StreamingMessageBuilder, list[list[Frame]]]:
    b = _builder()
    per_call: list[list[Frame]] = []
    for name, *args in calls:
        keywords = args.pop() if args and isinstance(args[-1], _Kw) else {}
        if name == "abort":
            per_call.append(b.fail("stopped", aborted=True))
        else:
            per_call.append(getattr(b, name)(*args, **keywords))
    return b, per_call


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(legal_calls(processor=True))
def test_frames_of_any_legal_sequence_reduce_to_the_built_message(
    calls: list[tuple[Any, ...]],
) -> None:
    b, per_call = _play(calls)
    frames = [frame for chunk in per_call for frame in chunk]
    # through JSON, as a client receives them
    wire = [frame_adapter.validate_json(frame.wire_json()) for frame in frames]
    assert reduce_frames(wire) == b.build()
    assert wire[-1].type == "message_complete" and wire[-1].message == b.build()


@settings(max_examples=80, deadline=None)
@given(legal_calls(processor=True), st.data())
def test_every_prefix_of_the_frames_matches_the_builder_at_that_point(
    calls: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(calls) - 1))
    b, per_call = _play(calls[:cut])
    reducer = FrameReducer()
    for frame in (f for chunk in per_call for f in chunk):
        reducer.apply(frame)
    if per_call and any(per_call):
        assert reducer.message("msg_1").parts == b.parts
    else:
        assert b.parts == []


def test_the_order_of_parts_is_the_order_of_calls() -> None:
    b = _builder()
    b.add_reasoning_delta("think")
    b.add_text_delta("say")
    b.add_reasoning_delta("more")
    b.add_file("text/plain", "file:///x")
    b.add_text_delta("end")
    assert [p.type for p in b.build().parts] == ["reasoning", "text", "reasoning", "file", "text"]


def test_build_is_a_look_and_finish_still_sends_the_closing_frames() -> None:
    b = _builder()
    b.add_text_delta("Hello")
    built = b.build()
    assert built.parts[0].time.end is not None  # type: ignore[union-attr]
    assert not b.done  # nothing ended: the builder stays open
    frames = b.finish()
    assert _types(frames)[-2:] == ["part_complete", "message_complete"]
    assert b.build() == frames[-1].message  # type: ignore[union-attr]


# ---- what the built-in processor needs --------------------------------------------------------


def test_named_streams_interleave_and_other_parts_leave_them_open() -> None:
    b = _builder()
    b.start_reasoning("r1")
    b.start_text("t1")
    b.add_reasoning_delta("think ", stream_id="r1")
    b.add_text_delta("say ", stream_id="t1")
    b.add_tool_call("c1", "read", {"path": "a"})  # does not end the named streams
    b.add_reasoning_delta("more", stream_id="r1")
    b.add_text_delta("more", stream_id="t1")
    ended = b.end_reasoning("r1", metadata={"signature": "sig"})
    assert ended[0].part.text == "think more"  # type: ignore[union-attr]
    assert ended[0].part.metadata == {"signature": "sig"}  # type: ignore[union-attr]
    assert ended[0].part.time.end is not None  # type: ignore[union-attr]
    with pytest.raises(BuilderError, match="not open"):
        b.end_reasoning("r1")
    with pytest.raises(BuilderError, match="before its start"):
        b.grow("reasoning", "r1", "late")
    index = b.grow("text", "t1", "!")
    assert b.part(index).text == "say more!"  # type: ignore[union-attr]
    built = b.build()
    assert [p.type for p in built.parts] == ["reasoning", "text", "tool"]
    assert built.parts[1].time.end is not None  # type: ignore[union-attr]


def test_bad_arguments_can_end_the_call_in_error_for_the_model_to_see() -> None:
    b = _builder()
    frames = b.add_tool_call("c1", "read", "{nope", bad_arguments="error")
    assert _types(frames) == ["message_start", "part_start", "part_complete"]
    state = b.tool_part("c1").state
    assert state.status == "error"
    assert state.error.startswith("The read tool input is not valid JSON (")  # type: ignore[union-attr]
    b.start_tool_call("c2", "bash")
    b.add_tool_args_delta("c2", "[1]")
    assert _types(b.add_tool_call("c2", "bash", "[1]", bad_arguments="error")) == ["part_complete"]
    assert "must be a JSON object" in b.tool_part("c2").state.error  # type: ignore[union-attr]


def test_a_running_tool_updates_its_title_and_metadata_and_nothing_else_may() -> None:
    b = _builder()
    b.add_tool_call("c1", "bash", {"command": "make"})
    frames = b.update_tool("c1", title="make", metadata={"output": "cc a.c"})
    assert _types(frames) == ["part_update"]
    b.add_tool_result("c1", "done", attachments=[{"type": "file", "url": "data:,x"}])
    state = b.tool_part("c1").state
    assert state.title == "make" and state.attachments == [{"type": "file", "url": "data:,x"}]  # type: ignore[union-attr]
    with pytest.raises(BuilderError, match="completed, not running"):
        b.update_tool("c1", title="again")


def test_close_open_ends_every_open_part_and_leaves_the_message_open() -> None:
    b = _builder()
    b.start_text("t1")
    b.add_text_delta("half", stream_id="t1")
    b.add_tool_call("c1", "bash", {})
    b.start_tool_call("c2", "read")
    b.add_tool_args_delta("c2", '{"pa')
    frames = b.close_open("stopped here")
    assert _types(frames) == ["part_complete"] * 3
    assert [p.state.error for p in b.parts[1:]] == ["stopped here"] * 2  # type: ignore[union-attr]
    assert not b.done and b.open_calls() == []
    b.add_text_delta("and on")
    assert b.build().parts[-1].text == "and on"  # type: ignore[union-attr]


def test_a_retry_closes_what_the_failed_call_left_and_a_new_step_may_start() -> None:
    b = _builder()
    b.start_step(snapshot="s0")
    b.add_tool_call("c1", "bash", {})
    frames = b.add_retry(1, _API_ERROR)
    assert _types(frames) == ["part_complete", "part_start", "part_complete"]
    b.start_step(snapshot="s0")
    b.add_patch("s0", ["/p/a.py"])
    b.finish_step({"input": 1}, snapshot="s1")
    parts = b.build().parts
    assert [p.type for p in parts] == [
        "step-start", "tool", "retry", "step-start", "patch", "step-finish"
    ]  # fmt: skip
    assert parts[1].state.status == "error" and parts[5].snapshot == "s1"  # type: ignore[union-attr]


def test_fail_keeps_a_named_error_and_usage_adds_to_the_totals() -> None:
    b = _builder()
    b.add_usage(Tokens(input=7, total=7))
    b.set_finish_reason("length")
    error = APIError(data=APIErrorData(message="rate limited", isRetryable=False))
    b.add_tool_call("c1", "bash", {})
    b.fail(error)
    built = b.build()
    assert built.error == error and built.tokens.input == 7 and built.finish == "length"
    assert built.parts[0].state.error == "rate limited"  # type: ignore[union-attr]


def test_resume_closes_what_a_crash_left_open() -> None:
    first = _builder()
    first.start_text("t1")
    first.add_text_delta("partial", stream_id="t1")
    first.add_tool_call("c1", "bash", {})
    first.start_tool_call("c2", "read")
    stored = first.parts  # as the store holds them
    again = StreamingMessageBuilder.resume("msg_1", stored, session_id="ses_1")
    frames = again.close_open("interrupted")
    closed = {f.part.id: f.part for f in frames if f.type == "part_complete"}  # type: ignore[union-attr]
    assert len(closed) == 3
    text, call, started = stored
    assert closed[text.id].text == "partial" and closed[text.id].time.end is not None  # type: ignore[union-attr]
    assert closed[call.id].state.error == "interrupted"  # type: ignore[union-attr]
    assert closed[started.id].state.status == "error"  # type: ignore[union-attr]


def test_add_part_takes_a_whole_part_made_elsewhere_and_refuses_the_others() -> None:
    b = _builder("user")
    made = CompactionPart(id="prt_x", session_id="other", message_id="other", auto=True)
    frames = b.add_part(made)
    assert _types(frames) == ["message_start", "part_start", "part_complete"]
    joined = frames[-1].part  # type: ignore[union-attr]
    assert (joined.id, joined.session_id, joined.message_id) == ("prt_x", "ses_1", "msg_1")
    step = StepStartPart(id="prt_y", session_id="ses_1", message_id="msg_1")
    with pytest.raises(BuilderError, match="its own calls"):
        b.add_part(step)


@dataclass
class _SeedToolCall:  # seed 003's ToolCallPart, as a caller's own class
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]


def test_the_seeds_builder_surface_builds_the_seeds_message() -> None:
    """Seed 003's calls, as its XAgent makes them, on the one lifecycle."""
    b = StreamingMessageBuilder("msg_123", "assistant")
    assert (b.current_part_index, b.current_text, b.parts) == (-1, "", [])
    b.add_text_delta("Let me check ")
    b.add_text_delta("the weather for you.\n")
    assert b.current_text == "Let me check the weather for you.\n"
    assert _types(b.finalize_text_part()) == ["part_complete"]
    assert (b.current_text, b.current_part_index) == ("", 0)
    assert b.finalize_text_part() == []  # nothing streaming: nothing to end
    call = {"type": "tool-call", "toolCallId": "call_456", "toolName": "getWeather", "args": {}}
    b.add_tool_call({**call, "args": {"city": "Tokyo"}})
    assert b.current_part_index == 1 and b.parts[1].state.status == "running"  # type: ignore[union-attr]
    b.add_tool_result({"type": "tool-result", "toolCallId": "call_456", "result": {"f": 72}})
    b.add_tool_call(_SeedToolCall("call_789", "getWeather", {"city": "Oslo"}))
    b.add_tool_result({"toolCallId": "call_789", "result": "no data", "isError": True})
    b.add_text_delta("The weather in Tokyo is 72°F and sunny.")
    message = b.build()
    assert [p.type for p in message.parts] == ["text", "tool", "tool", "text"]
    tokyo, oslo = message.parts[1], message.parts[2]
    assert tokyo.state.input == {"city": "Tokyo"} and tokyo.state.output == '{"f": 72}'  # type: ignore[union-attr]
    assert oslo.state.status == "error" and oslo.state.error == "no data"  # type: ignore[union-attr]
    assert message.content == (
        'Let me check the weather for you.\n\n\nTool result: {"f": 72}\n\n\nTool result: no '
        "data\nThe weather in Tokyo is 72°F and sunny."
    )


@pytest.mark.parametrize(
    ("part", "problem"),
    [
        ({"toolName": "x", "args": {}}, "toolCallId"),
        ({"toolCallId": "c1", "args": {}}, "toolName"),
        ({"toolCallId": "c1", "toolName": "x", "args": 3}, "args"),
    ],
)
def test_a_seed_tool_part_missing_a_field_is_refused(part: dict[str, Any], problem: str) -> None:
    b = _builder()
    with pytest.raises(BuilderError, match=problem):
        b.add_tool_call(part)
    assert b.parts == []
