"""After a crash every message is terminal: parts closed, tools errored, message aborted."""

from __future__ import annotations

from pathlib import Path

from partwire.bus import Bus
from partwire.schema.message import AssistantMessage
from partwire.schema.part import TextPart, ToolPart
from partwire.schema.tool_state import RunningTime, ToolStatePending, ToolStateRunning
from partwire.storage.sqlite import SqliteStore
from tests.storage.test_sqlite import _assistant, _delta, _session, _text


async def test_open_finishes_what_a_crash_left_unfinished(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = SqliteStore(path, Bus())
    await store.open()
    await store.put_session(_session(), [])
    await store.put_message(_assistant(), [])
    await store.put_part(_text(), [], streaming=True)
    for word in ["half ", "a ", "sentence"]:
        await store.append_delta(_delta(word))
    running = ToolPart(
        id="prt_2",
        sessionID="ses_1",
        messageID="msg_2",
        callID="c1",
        tool="read",
        state=ToolStateRunning(input={"filePath": "x"}, time=RunningTime(start=5)),
    )
    pending = running.model_copy(
        update={"id": "prt_3", "call_id": "c2", "state": ToolStatePending()}
    )
    await store.put_part(running, [])
    await store.put_part(pending, [])
    await store.close()  # the "crash": nothing finished the message

    reopened = SqliteStore(path, Bus())
    await reopened.open()
    try:
        [entry] = await reopened.list_messages("ses_1")
        info = entry.info
        assert isinstance(info, AssistantMessage)
        assert info.time.completed is not None
        assert info.error is not None and info.error.name == "MessageAbortedError"
        text, tool, pend = entry.parts
        assert isinstance(text, TextPart) and text.text == "half a sentence"
        assert text.time is not None and text.time.end is not None
        assert isinstance(tool, ToolPart) and tool.state.status == "error"
        assert tool.state.time.start == 5  # type: ignore[union-attr]
        assert isinstance(pend, ToolPart) and pend.state.status == "error"
        # the recovery is in the event log, for clients that resume
        logged = await reopened.events_after(None)
        assert [e.type for e in logged][-4:] == [
            "message.part.updated",
            "message.part.updated",
            "message.part.updated",
            "message.updated",
        ]
    finally:
        await reopened.close()
