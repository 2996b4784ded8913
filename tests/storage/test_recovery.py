"""After a crash every message is terminal: parts closed, tools errored, message aborted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from partwire.bus import Bus
from partwire.providers.stream import AssistantTurn, ToolResultTurn
from partwire.schema.event import (
    PermissionAsked,
    PermissionReplied,
    PermissionRepliedProps,
    QuestionAsked,
    SessionStatusChanged,
    SessionStatusProps,
)
from partwire.schema.message import AssistantMessage
from partwire.schema.part import TextPart, ToolPart
from partwire.schema.permission import PermissionRequest, QuestionRequest
from partwire.schema.session import StatusBusy
from partwire.schema.tool_state import RunningTime, ToolStatePending, ToolStateRunning
from partwire.session.history import to_turns
from partwire.storage.health import explain
from partwire.storage.migrations import MIGRATIONS
from partwire.storage.sqlite import SqliteStore
from tests.storage.conftest import MakeStore
from tests.storage.streaming import append
from tests.storage.test_sqlite import _assistant, _delta, _session, _text


async def _opened(make_store: MakeStore) -> SqliteStore:
    """A store on a test's database holding session ses_1 (whose work a test then "crashes")."""
    store = make_store()
    await store.open()
    await store.put_session(_session(), [])
    return store


def _running_tool(call_id: str, tool: str, args: dict[str, str]) -> ToolPart:
    return ToolPart(
        id="prt_2",
        sessionID="ses_1",
        messageID="msg_2",
        callID=call_id,
        tool=tool,
        state=ToolStateRunning(input=args, time=RunningTime(start=5)),
    )


async def test_open_finishes_what_a_crash_left_unfinished(make_store: MakeStore) -> None:
    store = await _opened(make_store)
    await store.put_message(_assistant(), [])
    await store.put_part(_text(), [], streaming=True)
    for word in ["half ", "a ", "sentence"]:
        await append(store, _delta(word))
    running = _running_tool("c1", "read", {"filePath": "x"})
    pending = running.model_copy(
        update={"id": "prt_3", "call_id": "c2", "state": ToolStatePending()}
    )
    await store.put_part(running, [])
    await store.put_part(pending, [])
    await store.close()  # the "crash": nothing finished the message

    reopened = make_store()
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


async def test_open_rejects_abandoned_asks_and_idles_working_sessions(
    make_store: MakeStore,
) -> None:
    store = await _opened(make_store)
    ask = PermissionRequest(id="per_1", sessionID="ses_1", permission="bash", patterns=["ls"])
    answered = ask.model_copy(update={"id": "per_2"})
    question = QuestionRequest(id="que_1", sessionID="ses_1", questions=[])
    busy = SessionStatusProps(session_id="ses_1", status=StatusBusy())
    await store.publish(
        [SessionStatusChanged(busy), PermissionAsked(ask), PermissionAsked(answered)]
    )
    reply = PermissionRepliedProps(session_id="ses_1", request_id="per_2", reply="once")
    await store.publish([PermissionReplied(reply), QuestionAsked(question)])
    await store.close()  # the "crash": the run and its asks are gone

    reopened = make_store()
    await reopened.open()
    logged = [(e.type, e.properties) for e in await reopened.events_after(None)][-4:]
    await reopened.close()
    assert [kind for kind, _ in logged] == [
        "permission.replied", "question.rejected", "session.status", "session.idle"
    ]  # fmt: skip
    assert logged[0][1].request_id == "per_1" and logged[0][1].reply == "reject"  # type: ignore[union-attr]
    assert logged[1][1].request_id == "que_1"  # type: ignore[union-attr]
    assert logged[2][1].status.type == "idle"  # type: ignore[union-attr]

    again = make_store()
    await again.open()  # nothing left to close: a second open logs nothing
    assert [e.type for e in await again.events_after(None)][-4:] == [k for k, _ in logged]
    await again.close()


async def test_an_interrupted_tool_call_gets_a_result_the_model_can_read(
    make_store: MakeStore,
) -> None:
    store = await _opened(make_store)
    await store.put_message(_assistant(), [])
    running = _running_tool("call_9", "bash", {"command": "make deploy"})
    await store.put_part(running, [])
    await store.close()
    reopened = make_store()
    await reopened.open()
    history = await reopened.list_messages("ses_1")
    await reopened.close()
    [tool] = [p for p in history[0].parts if isinstance(p, ToolPart)]
    assert tool.state.status == "error" and "interrupted by a server restart" in tool.state.error  # type: ignore[union-attr]
    turns = to_turns(history)
    [call] = [c for t in turns if isinstance(t, AssistantTurn) for c in t.tool_calls]
    [result] = [t for t in turns if isinstance(t, ToolResultTurn)]
    assert call.call_id == result.call_id == "call_9" and result.is_error
    assert "interrupted by a server restart" in result.output


async def test_a_migration_backs_up_the_database_first(tmp_path: Path) -> None:
    path = tmp_path / "partwire.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TABLE schema_version "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for version, name, apply in MIGRATIONS[:2]:  # a database from before the sequence column
        apply(conn)
        conn.execute("INSERT INTO schema_version VALUES (?, ?, datetime('now'))", (version, name))
    for mid in ("msg_2", "msg_1"):
        conn.execute(
            "INSERT INTO message (id, session_id, data) VALUES (?, 'ses_1', ?)",
            (mid, _assistant().model_copy(update={"id": mid}).wire_json()),
        )
    conn.close()

    store = SqliteStore(path, Bus())
    await store.open()
    try:
        migrated = [m.info.id for m in await store.list_messages("ses_1")]
    finally:
        await store.close()
    assert migrated == ["msg_1", "msg_2"]  # old rows keep their id order
    [backup] = list(tmp_path.glob("partwire.db.bak-v2-*"))
    with sqlite3.connect(backup) as copy:
        assert copy.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 2
        assert copy.execute("SELECT COUNT(*) FROM message").fetchone()[0] == 2
    copy.close()


def test_storage_errors_say_what_to_do() -> None:
    path = Path("/data/partwire.db")
    full = explain(path, sqlite3.OperationalError("database or disk is full"))
    assert str(path) in full.message and "free space" in full.message
    damaged = explain(path, sqlite3.DatabaseError("file is not a database"))
    assert "damaged" in damaged.message and "backup" in damaged.message
    denied = explain(path, PermissionError(13, "Permission denied"))
    assert "Permission denied" in denied.message and "PARTWIRE_DATA_DIR" in denied.message
