"""Seed 003's frames: its own frontend code, unmodified (tests/protocol/node/seed003.mjs),
renders every part progressively from GET /session/{id}/stream and ends with the stored
messages; a fold over a recorded session's frames gives the same as its stored messages."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from partwire.client.http import PartwireClient
from partwire.protocol.partframes import SessionFrames
from partwire.protocol.seedframes import SeedFrames, seed_message
from partwire.runtime import Runtime
from partwire.schema.base import JSONObject
from tests.protocol.node_clients import needs_node, run_node
from tests.protocol.test_partframes import recorded_session

MARKER = "all-done"
PROMPTS = ("edit README.md Sample => Example", "list", "hello", MARKER)  # the demo echoes it


def _rebuilt(frames: list[tuple[str, JSONObject]]) -> dict[str, Any]:
    """The seed's frontend cases, in Python: messages by id."""
    messages: dict[str, Any] = {}
    for name, data in frames:
        if name == "message_start":
            messages[str(data["messageId"])] = {"role": data["role"], "parts": {}}
        elif name == "part_start":
            part = {"type": data["type"], **data["initialData"]}  # type: ignore[dict-item]
            messages[str(data["messageId"])]["parts"][data["partIndex"]] = part
        elif name == "part_delta" and data.get("delta") is not None:
            messages[str(data["messageId"])]["parts"][data["partIndex"]]["text"] += data["delta"]
        elif name == "part_complete":
            messages[str(data["messageId"])]["parts"][data["partIndex"]] = data["part"]
    return {k: [m["parts"][i] for i in sorted(m["parts"])] for k, m in messages.items()}


async def test_the_folded_frames_of_a_recorded_session_are_its_stored_messages(
    runtime: Runtime,
) -> None:
    session_id = await recorded_session(runtime)
    stored = await runtime.store.list_messages(session_id)
    frames, seed = SessionFrames(session_id), SeedFrames()
    made: list[tuple[str, JSONObject]] = []
    for event in await runtime.store.events_after(None):
        made += seed.fold(frames.frames(event))
    # through JSON, as a client gets them
    made = [(name, json.loads(json.dumps(data))) for name, data in made]
    rebuilt = _rebuilt(made)
    assert list(rebuilt) == [m.info.id for m in stored]
    for message in stored:
        assert rebuilt[message.info.id] == seed_message(message)["parts"], message.info.id
    completes = [d["message"] for name, d in made if name == "message_complete"]
    assert completes == [seed_message(m) for m in stored]  # a user message too, once answered
    kinds = {p["type"] for parts in rebuilt.values() for p in parts}
    assert kinds == {"text", "reasoning", "tool-call", "tool-result"}


async def test_a_snapshot_in_the_seed_shape_is_the_stored_session(runtime: Runtime) -> None:
    session_id = await recorded_session(runtime)
    stored = await runtime.store.list_messages(session_id)
    made = SeedFrames().fold(SessionFrames(session_id).snapshot(stored, "start"))
    assert made[0] == ("reset", {"reason": "start"})
    rebuilt = _rebuilt(made)
    assert [rebuilt[m.info.id] for m in stored] == [seed_message(m)["parts"] for m in stored]


@needs_node
async def test_the_seeds_own_frontend_renders_the_stream(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        reader = asyncio.create_task(
            run_node("seed003.mjs", server, session_id, MARKER, limit_s=60)
        )
        await asyncio.sleep(0.5)  # the stream is open before the first prompt
        for text in PROMPTS:
            await client.prompt(session_id, text)
        seen = await asyncio.wait_for(reader, 60)
        stored = await client.messages(session_id)

    expected = [seed_message(m) for m in stored]
    assert [(m["id"], m["role"], m["parts"]) for m in seen["messages"]] == [
        (m["id"], m["role"], m["parts"]) for m in expected
    ]
    assert seen["completed"] == expected  # a user message completes once its answer begins
    # text rendered as it streamed: right before its part_complete, the part already held
    # the whole text (through the seed's `part.text += data.delta`)
    texts = [(before, final) for kind, before, final in seen["beforeComplete"] if kind == "text"]
    assert len(texts) >= 3
    assert all(before["text"] == final["text"] for before, final in texts)
    # arguments streamed into args before the call completed
    calls = [
        (before, final) for kind, before, final in seen["beforeComplete"] if kind == "tool-call"
    ]
    assert len(calls) == 2 and all(before.get("args") == final["args"] for before, final in calls)
    assert seen["args"] and seen["args"][-1] == calls[-1][1]["args"]
    # the seed's build(): text parts joined, each tool result as a "Tool result:" paragraph
    edit = seen["completed"][1]
    assert "Tool result:" in edit["content"] and edit["content"] == edit["content"].strip()


async def test_an_unknown_shape_is_a_400_naming_it(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        session_id = (await http.post("/session", json={})).json()["id"]
        response = await http.get(f"/session/{session_id}/stream?parts=blocks")
    assert response.status_code == 400 and "parts" in response.text
