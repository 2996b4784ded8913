"""The one writer: frames → store writes and events, and nothing else writes parts."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from partwire.builder import StreamingMessageBuilder
from partwire.errors import StorageError
from partwire.schema.message import AssistantMessage, AssistantTime, MessagePath
from partwire.session.writer import FLUSH_MIN_CHARS, MessageWriter

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "partwire"


class _Store:
    """Records what the writer hands a store; ``full`` refuses part writes."""

    def __init__(self, *, full: bool = False) -> None:
        self.writes: list[tuple[str, Any]] = []
        self.commits: list[list[str]] = []  # the kinds of rows each commit held
        self.full = full

    async def put_part(self, part: Any, events: list[Any], *, streaming: bool = False) -> None:
        if self.full:
            raise StorageError("the disk is full")
        self.writes.append(("part", part))

    async def put_message(self, info: Any, events: list[Any]) -> None:
        self.writes.append(("message", info))

    def append_delta(self, props: Any) -> None:
        self.writes.append(("delta", props.delta))

    async def add_spend(self, session_id: str, tokens: Any, cost: float) -> None:
        self.writes.append(("spend", (tokens.output, cost)))

    def announce(self, events: list[Any]) -> None:
        self.writes.append(("announced", [event.type for event in events]))

    def batch(self) -> _Batch:
        return _Batch(self)


class _Batch:
    """Rows the writer groups into one commit: recorded in order when it commits."""

    def __init__(self, store: _Store) -> None:
        self.store = store
        self.rows: list[tuple[str, Any]] = []

    def put_part(self, part: Any, events: list[Any], *, streaming: bool = False) -> None:
        self.rows.append(("part", part))

    def put_message(self, info: Any, events: list[Any]) -> None:
        self.rows.append(("message", info))

    def add_spend(self, session_id: str, tokens: Any, cost: float) -> None:
        self.rows.append(("spend", (tokens.output, cost)))

    async def commit(self) -> None:
        rows, self.rows = self.rows, []
        if rows and self.store.full and any(kind == "part" for kind, _ in rows):
            raise StorageError("the disk is full")
        self.store.writes.extend(rows)
        if rows:
            self.store.commits.append([kind for kind, _ in rows])


def _writer(store: _Store) -> tuple[StreamingMessageBuilder, MessageWriter]:
    info = AssistantMessage(
        id="msg_1",
        session_id="ses_1",
        time=AssistantTime(created=1),
        parent_id="msg_0",
        model_id="m",
        provider_id="p",
        mode="build",
        agent="build",
        path=MessagePath(cwd="/p", root="/p"),
    )
    builder = StreamingMessageBuilder("msg_1", session_id="ses_1")
    return builder, MessageWriter(store, builder, info)  # type: ignore[arg-type]


async def test_a_part_whole_at_once_is_written_once_and_the_message_ends_with_its_totals() -> None:
    store = _Store()
    builder, writer = _writer(store)
    await writer.write(builder.start_step())
    await writer.write(builder.add_text_delta("hi"))
    await writer.write(builder.finish_step({"input": 3, "output": 2}, cost=0.5))
    await writer.write(builder.finish())
    kinds = [(kind, getattr(x, "type", "info")) for kind, x in store.writes]
    assert kinds == [
        ("part", "step-start"),
        ("part", "text"),
        ("delta", "info"),
        ("part", "text"),
        ("part", "step-finish"),
        ("message", "info"),
        ("spend", "info"),  # the session's totals grow by the message's usage
    ]
    # the rows of one frame list between deltas are one commit: the step's end, the message's
    assert store.commits[-2:] == [["part", "part"], ["message", "spend"]]
    info = store.writes[-2][1]
    assert info.tokens.total == 5 and info.cost == 0.5 and info.time.completed is not None
    assert store.writes[-1][1] == (2, 0.5)


async def test_text_rows_are_rewritten_on_the_geometric_schedule() -> None:
    store = _Store()
    builder, writer = _writer(store)
    await writer.write(builder.start_text("t"))
    chunk = "x" * 1024
    for _ in range(4 * FLUSH_MIN_CHARS // len(chunk)):
        if (rewrite := writer.text_delta(builder.grow("text", "t", chunk), chunk)) is not None:
            await rewrite
    rows = [len(x.text) for kind, x in store.writes if kind == "part"]
    assert rows == [0, FLUSH_MIN_CHARS, 2 * FLUSH_MIN_CHARS, 4 * FLUSH_MIN_CHARS]


async def test_when_the_store_is_full_the_message_end_goes_first() -> None:
    store = _Store()
    builder, writer = _writer(store)
    await writer.write(builder.add_tool_call("c1", "bash", {}))
    store.full = True
    await writer.write_message_first(builder.fail("the disk is full"))
    assert store.writes[-2:][0] == ("announced", ["message.updated"])  # clients see it at once
    assert store.writes[-1][0] == "message"
    assert store.writes[-1][1].error.data.message == "the disk is full"


def _writes_parts(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("put_part", "append_delta", "MessagePartUpdated"):
                found.append(name)
    return found


def test_only_the_writer_writes_parts() -> None:
    """Routes, the loop, shell, compaction, forks: every part row and its event goes
    through session/writer.py (the stores implement the writes; recovery logs its
    closings inside the store's own transaction)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "session/writer.py" or relative.startswith("storage/"):
            continue
        offenders += [f"{relative}: {name}" for name in _writes_parts(ast.parse(path.read_text()))]
    assert offenders == []
