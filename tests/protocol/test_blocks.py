"""Seed 004's SessionEvents made from a session's events: every event as the seed's types
define it, and folded by the seed's reducer (Python and TypeScript alike) into what the
store holds."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from partwire.protocol.blocks import SessionEvents
from partwire.protocol.conversation import blocks_of, conversation_of, in_call_order
from partwire.protocol.session_state import ConversationState, initial_state, reduce_session_event
from partwire.runtime import Runtime
from partwire.schema.input import PromptInput, TextPartInput
from partwire.schema.session_events import (
    PAYLOADS,
    SessionEvent,
    create_session_event,
    enrich_event_context,
    is_conversation_event,
)
from tests.protocol.test_partframes import recorded_session
from tests.session.helpers import new_session


async def session_events(runtime: Runtime, session_id: str) -> list[SessionEvent]:
    adapter = SessionEvents(session_id)
    events: list[SessionEvent] = []
    for event in await runtime.store.events_after(None):
        events += adapter.convert(event)
    return events


def reduced(events: list[SessionEvent]) -> ConversationState:
    state = initial_state()
    for event in events:  # through JSON, as a client gets them
        state = reduce_session_event(state, json.loads(event.wire_json()))
    return state


def ordered(state: ConversationState) -> ConversationState:
    subagents = [{**s, "blocks": in_call_order(s["blocks"])} for s in state["subagents"]]
    return {"blocks": in_call_order(state["blocks"]), "subagents": subagents}  # type: ignore[typeddict-item]


async def stored_state(runtime: Runtime, session_id: str) -> ConversationState:
    sessions = await runtime.store.list_sessions()
    by_session = {session_id: await runtime.store.list_messages(session_id)}
    for session in sessions:
        if session.parent_id == session_id:
            by_session[session.id] = await runtime.store.list_messages(session.id)
    return conversation_of(session_id, by_session)


async def test_reduced_conversation_equals_the_stored_one(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    events = await session_events(runtime, session_id)
    state = reduced(events)
    assert ordered(state) == await stored_state(runtime, session_id)
    kinds = {b["type"] for b in state["blocks"]}
    assert kinds == {"user_message", "assistant_text", "thinking", "tool_use", "tool_result",
                     "subagent", "system", "error"}  # fmt: skip
    (retry,) = [b for b in state["blocks"] if b["type"] == "system"]
    assert retry["subtype"] == "status" and retry["message"].startswith("retry 1:")
    (aborted,) = [b for b in state["blocks"] if b["type"] == "error"]  # the aborted recording
    assert aborted["code"] == "MessageAbortedError"
    assert all(b["status"] in ("complete", "error") for b in state["blocks"])
    (agent,) = state["subagents"]
    assert agent["status"] == "success" and agent["prompt"] == "list"
    assert [b["type"] for b in agent["blocks"]][:2] == ["user_message", "tool_use"]
    users = [b["content"] for b in state["blocks"] if b["type"] == "user_message"]
    assert users == ["hello", "list", "edit README.md nothing-like-this => x", "retry",
                     "task list", "external", "to abort"]  # fmt: skip


async def test_every_event_is_as_the_seed_defines_it(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    events = await session_events(runtime, session_id)
    assert len({e.id for e in events}) == len(events)
    for event in events:
        wire = event.wire()
        assert set(wire) == {"id", "type", "payload", "context"}
        assert wire["context"]["sessionId"] == session_id
        assert wire["context"]["source"] in ("runner", "server")
        assert wire["context"]["timestamp"].endswith("Z")
        assert PAYLOADS[event.type].model_validate(event.payload).wire() == event.payload
    kinds = {e.type for e in events}
    assert {"block:upsert", "block:delta", "metadata:update", "status", "session:idle",
            "query:started", "query:completed", "query:failed", "subagent:spawned",
            "subagent:completed", "session:initialized", "ee:creating", "ee:ready",
            "options:update", "log"} <= kinds  # fmt: skip
    sources = {(e.type, e.context.source) for e in events}
    assert ("block:delta", "runner") in sources and ("status", "server") in sources
    metadata = next(e.payload["metadata"] for e in events if e.type == "metadata:update")
    usage = metadata["usage"]
    assert set(usage) == {"inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens",
                          "thinkingTokens", "totalTokens"}  # fmt: skip
    assert usage["totalTokens"] >= usage["inputTokens"] + usage["outputTokens"]
    assert isinstance(metadata["costUSD"], float) and metadata["model"]
    started = [e.payload for e in events if e.type == "query:started"]
    assert started[0] == {"message": "hello"}
    idle = next(e for e in events if e.type == "session:idle")
    assert idle.payload == {"sessionId": session_id}
    done = next(e for e in events if e.type == "query:completed")
    assert set(done.payload) == {"durationMs"}
    assert next(e for e in events if e.type == "session:initialized").payload == {
        "isNew": True, "hasTranscript": False, "workspaceFileCount": 0, "blockCount": 0
    }  # fmt: skip
    # the sub-agent's own events carry its conversation
    spawned = [e.payload for e in events if e.type == "subagent:spawned"]
    child = spawned[-1]["agentId"]
    assert spawned[0]["prompt"] == "list" and spawned[0]["subagentType"] == "general"
    theirs = [e for e in events if e.context.conversation_id == child]
    assert theirs and {e.type for e in theirs} <= {"block:upsert", "block:delta", "session:idle"}


async def test_file_changes_come_from_the_file_tools(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    for text in ("write new.txt hello", "edit new.txt hello => bye"):
        await runtime.loop.prompt(session_id, PromptInput(parts=[TextPartInput(text=text)]))
    events = await session_events(runtime, session_id)
    path = str(runtime.settings.project_dir / "new.txt")
    changes = [(e.type, e.payload) for e in events if e.type.startswith("file:")]
    assert changes[0] == ("file:created", {"file": {"path": path}})
    assert ("file:modified", {"file": {"path": path}}) in changes


async def test_an_image_file_is_image_content_of_a_user_message(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    url = "data:image/png;base64,iVBORw0KGgo="
    async with runtime.record(session_id, prompt="draw") as msg:
        await msg.add_text_delta("here")
    await runtime.loop.prompt(
        session_id,
        PromptInput.model_validate(
            {"parts": [{"type": "text", "text": "look"},
                       {"type": "file", "mime": "image/png", "url": url, "filename": "dot.png"}]}
        ),
    )  # fmt: skip
    state = reduced(await session_events(runtime, session_id))
    image = {"type": "image", "source": {"type": "url", "data": url, "mediaType": "image/png"}}
    users = [b["content"] for b in state["blocks"] if b["type"] == "user_message"]
    assert users[:2] == ["draw", "look"] and [image] in users
    assert in_call_order(state["blocks"]) == blocks_of(
        await runtime.store.list_messages(session_id)
    )


def test_the_seeds_helpers() -> None:
    event = create_session_event(
        "block:delta", {"blockId": "b", "delta": "x"}, {"source": "runner"}
    )
    assert event.context.session_id == "" and event.context.timestamp
    enriched = enrich_event_context(event, {"sessionId": "ses_1", "conversationId": "main"})
    assert enriched.payload == event.payload and enriched.context.session_id == "ses_1"
    assert event.context.session_id == ""  # the original is unchanged
    assert is_conversation_event(event) and not is_conversation_event({"type": "status"})
    with pytest.raises(ValueError, match="unknown SessionEvent type 'block:start'"):
        create_session_event("block:start", {})
    with pytest.raises(ValueError, match="block:upsert payload"):
        create_session_event("block:upsert", {"block": {"type": "assistant_text"}})


def test_the_reducer_never_changes_the_state_it_is_given() -> None:
    before = initial_state()
    upsert = create_session_event(
        "block:upsert", {"block": {"id": "t", "type": "assistant_text"}}, {"conversationId": "main"}
    )
    after = reduce_session_event(before, upsert)
    after2 = reduce_session_event(
        after, create_session_event("block:delta", {"blockId": "t", "delta": "hi"})
    )
    assert before == {"blocks": [], "subagents": []}
    assert after["blocks"][0]["content"] == "" and after2["blocks"][0]["content"] == "hi"
    assert after2["blocks"][0]["status"] == "pending"  # a made block defaults to pending
    idle = reduce_session_event(after2, create_session_event("session:idle", {"sessionId": "s"}))
    assert idle["blocks"][0]["status"] == "complete"


async def test_the_typescript_reducer_agrees_on_a_recorded_session(runtime: Runtime) -> None:
    cli = Path(__file__).parents[2] / "clients" / "js" / "dist" / "src" / "reduce-cli.js"
    if shutil.which("node") is None or not cli.exists():
        pytest.skip("needs node and clients/js built (make js)")
    session_id = await recorded_session(runtime)
    events = await session_events(runtime, session_id)
    node = await asyncio.create_subprocess_exec(
        "node", str(cli), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await node.communicate(json.dumps([e.wire() for e in events]).encode())
    assert node.returncode == 0
    states: dict[str, Any] = json.loads(out)
    assert set(states) == {session_id}
    assert states[session_id] == reduced(events)
    assert ordered(states[session_id]) == await stored_state(runtime, session_id)
