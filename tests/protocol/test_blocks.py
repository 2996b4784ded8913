"""SessionEvent blocks made from a session's events rebuild what the store holds."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from partwire.protocol.blocks import (
    SessionEvent,
    SessionEvents,
    blocks_of,
    empty_state,
    is_conversation_event,
    reduce_session_event,
)
from partwire.runtime import Runtime
from partwire.schema.input import PromptInput, TextPartInput
from tests.protocol.test_partframes import recorded_session
from tests.session.helpers import new_session


async def session_events(runtime: Runtime) -> tuple[str, list[SessionEvent]]:
    session_id = await recorded_session(runtime)
    adapter = SessionEvents()
    events: list[SessionEvent] = []
    for event in await runtime.store.events_after(None):
        events += adapter.convert(event)
    return session_id, events


def reduced(events: list[SessionEvent], session_id: str) -> dict[str, Any]:
    state = empty_state()
    for event in events:
        if event.context.session_id == session_id:
            reduce_session_event(state, SessionEvent.model_validate_json(event.wire_json()).wire())
    return state


async def test_reduced_blocks_equal_the_stored_messages(runtime: Runtime) -> None:
    session_id, events = await session_events(runtime)
    state = reduced(events, session_id)
    stored = await runtime.store.list_messages(session_id)
    assert state["blocks"] == blocks_of(stored)
    kinds = {b["type"] for b in state["blocks"]}
    assert kinds == {"text", "thinking", "tool_use", "tool_result"}
    assert all(b["status"] == "complete" for b in state["blocks"])
    assert state["status"] == {"type": "idle"}
    # every prompt run is a query; the aborted external one failed
    assert set(state["queries"].values()) == {"completed"} | (
        {"failed"} & set(state["queries"].values())
    )
    assert len(state["queries"]) == 7
    (child,) = state["subagents"]
    assert state["subagents"][child] == "completed"
    assert state["files"] == {}  # the edit failed: nothing changed
    assert state["initialized"]["directory"] and state["environment"] == "ready"
    assert any(log.startswith("retry 1:") for log in state["logs"])
    assert state["metadata"]["cost"] >= 0 and state["metadata"]["tokens"]["output"] > 0
    assert set(state["transcript"].values()) == {"changed", "written"}


async def test_context_and_ids(runtime: Runtime) -> None:
    session_id, events = await session_events(runtime)
    ours = [e for e in events if e.context.session_id == session_id]
    assert len({e.id for e in events}) == len(events)
    assert all(e.context.conversation_id == session_id for e in ours)
    sources = {(e.type, e.context.source) for e in ours}
    assert ("block:delta", "assistant") in sources and ("status", "system") in sources
    assert any(t == "block:upsert" and s == "tool" for t, s in sources)
    stamps = [e.context.timestamp for e in ours]
    assert stamps == sorted(stamps) and stamps[0] > 0
    assert is_conversation_event(ours[0]) is False
    assert any(is_conversation_event(e.wire()) for e in ours)


async def test_file_changes_come_from_the_file_tools(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    for text in ("write new.txt hello", "edit new.txt hello => bye"):
        await runtime.loop.prompt(session_id, PromptInput(parts=[TextPartInput(text=text)]))
    adapter = SessionEvents()
    events = [e for ev in await runtime.store.events_after(None) for e in adapter.convert(ev)]
    state = reduced(events, session_id)
    path = str(runtime.settings.project_dir / "new.txt")
    assert state["files"] == {path: "modified"}
    kinds = [e.type for e in events if e.type.startswith("file:")]
    assert kinds[0] == "file:created" and "file:modified" in kinds


async def test_an_image_file_is_an_image_block(runtime: Runtime) -> None:
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="draw") as msg:
        await msg.add_file("image/png", "data:image/png;base64,iVBORw0KGgo=", "dot.png")
        await msg.add_file("text/plain", "file:///notes.txt")
    adapter = SessionEvents()
    events = [e for ev in await runtime.store.events_after(None) for e in adapter.convert(ev)]
    blocks = reduced(events, session_id)["blocks"]
    assert [(b["type"], b.get("mime")) for b in blocks] == [("text", None), ("image", "image/png")]
    assert blocks == blocks_of(await runtime.store.list_messages(session_id))


async def test_the_typescript_reducer_agrees_on_a_recorded_session(
    runtime: Runtime,
) -> None:
    cli = Path(__file__).parents[2] / "clients" / "js" / "dist" / "src" / "reduce-cli.js"
    if shutil.which("node") is None or not cli.exists():
        pytest.skip("needs node and clients/js built (make js)")
    session_id, events = await session_events(runtime)
    node = await asyncio.create_subprocess_exec(
        "node", str(cli), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await node.communicate(json.dumps([e.wire() for e in events]).encode())
    assert node.returncode == 0
    states = json.loads(out)
    sessions = {e.context.session_id for e in events}
    assert set(states) == sessions and len(sessions) >= 2  # the sub-agent's session too
    for sid in sessions:
        assert states[sid] == reduced(events, sid), sid
    stored = await runtime.store.list_messages(session_id)
    assert states[session_id]["blocks"] == blocks_of(stored)
