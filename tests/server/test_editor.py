"""An editor attached to a session answers the read tool (POST/DELETE
/session/{id}/editor, editor.read events, POST /editor/{id}/reply); without an answer
the tool reads the disk."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from partwire import editor
from partwire.client.http import PartwireClient
from partwire.errors import NotFoundError
from partwire.schema.event import EditorReadProps
from partwire.schema.part import ToolPart
from partwire.schema.tool_state import ToolStateCompleted

FAIL = object()


async def read_output(client: PartwireClient, session_id: str) -> str:
    messages = await client.messages(session_id)
    (tool,) = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    assert isinstance(tool.state, ToolStateCompleted)
    return tool.state.output


async def prompt_answering_reads(
    client: PartwireClient, session_id: str, answer: Callable[[EditorReadProps], object]
) -> list[EditorReadProps]:
    """Prompt "notes.txt" (the demo reads it) and answer each editor.read with ``answer``:
    its text, FAIL (the editor reports an error) or anything else (it stays silent)."""
    asked: list[EditorReadProps] = []
    connected = asyncio.Event()

    async def follow() -> None:
        async for event in client.events():
            if event.type == "server.connected":
                connected.set()
            if isinstance(event.properties, EditorReadProps):
                asked.append(event.properties)
                reply = answer(event.properties)
                if reply is FAIL:
                    await client.reply_editor_read(event.properties.id, None, "no buffer")
                elif isinstance(reply, str):
                    await client.reply_editor_read(event.properties.id, reply)

    follower = asyncio.create_task(follow())
    await asyncio.wait_for(connected.wait(), 20)  # editor.read is not logged: listen first
    try:
        await client.prompt(session_id, "notes.txt")
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
    return asked


async def test_an_attached_editor_answers_reads(client: PartwireClient) -> None:
    session_id = (await client.create_session()).id
    assert await client.attach_editor(session_id) is True
    asked = await prompt_answering_reads(client, session_id, lambda _: "from the editor\n")
    assert [Path(a.path).name for a in asked] == ["notes.txt"]
    output = await read_output(client, session_id)
    assert "from the editor" in output and "alpha" not in output
    assert await client.detach_editor(session_id) is True
    with pytest.raises(NotFoundError):
        await client.detach_editor(session_id)


async def test_without_an_editor_or_with_a_failing_one_the_disk_is_read(
    client: PartwireClient,
) -> None:
    plain = (await client.create_session()).id
    assert await prompt_answering_reads(client, plain, lambda _: "never asked") == []
    assert "alpha" in await read_output(client, plain)

    failing = (await client.create_session()).id
    await client.attach_editor(failing)
    asked = await prompt_answering_reads(client, failing, lambda _: FAIL)
    assert len(asked) == 1 and "alpha" in await read_output(client, failing)


async def test_a_silent_editor_times_out_to_the_disk(
    client: PartwireClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(editor, "READ_TIMEOUT_S", 0.3)
    session_id = (await client.create_session()).id
    await client.attach_editor(session_id)
    asked = await prompt_answering_reads(client, session_id, lambda _: 0)  # never replies
    assert len(asked) == 1 and "alpha" in await read_output(client, session_id)


async def test_unknown_sessions_and_requests_are_404(client: PartwireClient) -> None:
    for call in (
        client.attach_editor("ses_nope"),
        client.reply_editor_read("edr_nope", "x"),
    ):
        with pytest.raises(NotFoundError):
            await call
