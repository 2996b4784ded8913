"""Part frames made from a session's events rebuild exactly the stored messages."""

from __future__ import annotations

import pytest

from partwire.protocol.partframes import FrameReducer, SessionFrames
from partwire.runtime import Runtime
from partwire.schema.frames import Frame, frame_adapter
from partwire.schema.input import PromptInput, TextPartInput
from partwire.schema.message import AssistantMessage, MessageWithParts
from tests.session.helpers import new_session
from tests.session.test_recorder import _recorded_exchange


async def _prompt(runtime: Runtime, session_id: str, text: str) -> None:
    await runtime.loop.prompt(session_id, PromptInput(parts=[TextPartInput(text=text)]))


async def recorded_session(runtime: Runtime) -> str:
    """Text, reasoning, tools, a tool error, a retry, a sub-agent, an external loop's
    message and an aborted one: every part type a session commonly holds."""
    session_id = await new_session(runtime)
    for text in ("hello", "list", "edit README.md nothing-like-this => x", "retry", "task list"):
        await _prompt(runtime, session_id, text)
    async with runtime.record(session_id, prompt="external") as msg:
        await _recorded_exchange(msg)
        await msg.add_file("text/plain", "file:///notes.txt", "notes.txt")
    async with runtime.record(session_id, prompt="to abort") as msg:
        await msg.add_text_delta("partial")
        await msg.start_tool_call("c9", "bash")
        await msg.add_tool_args_delta("c9", '{"comm')
        await runtime.loop.abort(session_id)
    return session_id


def _check(reducer: FrameReducer, stored: list[MessageWithParts]) -> None:
    assert list(reducer.messages) == [m.info.id for m in stored]
    for entry in stored:
        built = reducer.message(entry.info.id)
        assert built.parts == entry.parts, entry.info.id
        assert built.role == entry.info.role
        if isinstance(entry.info, AssistantMessage):
            assert (built.finish, built.error) == (entry.info.finish, entry.info.error)
            assert built.tokens.output == entry.info.tokens.output


@pytest.mark.usefixtures("settings")
async def test_frames_of_the_live_events_rebuild_the_stored_session(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    stored = await runtime.store.list_messages(session_id)
    kinds = {p.type for m in stored for p in m.parts}
    assert {"text", "reasoning", "tool", "retry", "step-start", "step-finish", "file"} <= kinds
    assert any(p.type == "tool" and p.state.status == "error" for m in stored for p in m.parts)  # type: ignore[union-attr]
    assert stored[-1].info.error is not None  # the aborted one

    adapter = SessionFrames(session_id)
    frames: list[Frame] = []
    for event in await runtime.store.events_after(None):
        frames += adapter.frames(event)
    # through JSON, as a client gets them
    reducer = FrameReducer()
    for frame in frames:
        reducer.apply(frame_adapter.validate_json(frame.wire_json()))
    _check(reducer, stored)
    kinds_of_frames = {f.type for f in frames}
    assert kinds_of_frames == {
        "message_start", "part_start", "part_delta", "part_update", "part_complete",
        "message_complete",
    }  # fmt: skip
    # a sub-agent's session is its own stream: none of its messages leaked in
    children = [s for s in await runtime.store.list_sessions() if s.parent_id == session_id]
    assert children
    for child in children:
        child_messages = await runtime.store.list_messages(child.id)
        assert child_messages and not {m.info.id for m in child_messages} & set(reducer.messages)


async def test_a_snapshot_rebuilds_the_same_session(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    stored = await runtime.store.list_messages(session_id)
    frames = SessionFrames(session_id).snapshot(stored, "start")
    assert frames[0].type == "reset"
    reducer = FrameReducer()
    reducer.apply(frames[0])
    for frame in frames[1:]:
        reducer.apply(frame)
    _check(reducer, stored)


def test_deltas_fold_into_the_part_once_it_is_read_and_a_later_part_wins() -> None:
    """A delta only appends (the reducer copies the part once, when it is read); a
    part_update or part_complete replaces the part and whatever streamed into it."""
    start = {"type": "text", "id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1"}
    words = [f"w{n} " for n in range(1000)]
    frames: list[dict[str, object]] = [
        {"type": "message_start", "messageId": "msg_1", "role": "assistant"},
        {"type": "part_start", "messageId": "msg_1", "partIndex": 0, "part": start | {"text": ""}},
    ]
    frames += [
        {"type": "part_delta", "messageId": "msg_1", "partIndex": 0, "delta": w} for w in words
    ]
    reducer = FrameReducer()
    for frame in frames:
        reducer.apply(frame_adapter.validate_python(frame))
    assert reducer.part("msg_1", 0).text == "".join(words)  # type: ignore[union-attr]
    reducer.apply(frame_adapter.validate_python(frames[-1]))
    assert reducer.message("msg_1").parts[0].text == "".join(words) + "w999 "  # type: ignore[union-attr]
    final = {"type": "part_complete", "messageId": "msg_1", "partIndex": 0}
    reducer.apply(frame_adapter.validate_python(frames[-1]))
    reducer.apply(frame_adapter.validate_python(final | {"part": start | {"text": "final"}}))
    assert reducer.message("msg_1").content == "final"
