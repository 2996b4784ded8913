"""A full disk mid-stream: the message ends at once with a clear error, and nothing that
was committed is lost. SQLite's ``max_page_count`` gives the very error a full disk does
(SQLITE_FULL), on a database of any size."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from partwire.runtime import Runtime
from partwire.schema.message import AssistantMessage
from partwire.schema.part import TextPart
from partwire.storage.writes import Write
from tests.scripted import ScriptedModel, text_reply
from tests.session.helpers import new_session, prompt_body


class _Cap(Write):
    """Inside the writer: no more pages than the database has now (or lift the cap)."""

    def __init__(self, lift: bool = False) -> None:
        super().__init__()
        self.lift = lift

    def apply(self, ctx: Any) -> None:
        conn: sqlite3.Connection = ctx.conn
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {1 << 30 if self.lift else pages}")


async def _streamed_words(runtime: Runtime, sid: str) -> int:
    history = await runtime.store.list_messages(sid)
    texts = [p.text for m in history for p in m.parts if isinstance(p, TextPart)]
    return sum(text.count(" ") for text in texts if text.startswith("w0"))


async def test_a_full_disk_ends_the_message_with_the_error_and_keeps_what_committed(
    runtime: Runtime, model: ScriptedModel
) -> None:
    words = [f"w{i} " for i in range(20_000)]
    model.delay_s = 0.0005
    model.enqueue(text_reply(*words))
    sid = await new_session(runtime)
    answer = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("go")))
    for _ in range(400):
        if await _streamed_words(runtime, sid) >= 50:
            break
        await asyncio.sleep(0.01)
    await runtime.store._submit(_Cap())  # the disk is full from here on
    result = await asyncio.wait_for(answer, 30)

    info = result.info
    assert info.time.completed is not None
    assert info.error is not None and "full" in str(info.error.data.message)  # type: ignore[union-attr]
    assert "free space" in str(info.error.data.message)  # type: ignore[union-attr]
    assert not runtime.loop.is_busy(sid)
    assert len(model.requests) == 1  # the model call stopped; nothing was retried

    stored = (await runtime.store.list_messages(sid))[-1]
    assert isinstance(stored.info, AssistantMessage) and stored.info.error is not None
    part = next(p for p in stored.parts if isinstance(p, TextPart))
    assert part.time is not None and part.time.end is not None  # closed, thanks to the reserve
    text = part.text
    assert "".join(words).startswith(text) and text.count(" ") >= 50  # committed text kept
    assert text.count(" ") < len(words)  # the stream was cut, not run to the end

    await runtime.store._submit(_Cap(lift=True))  # space again: the session works
    model.enqueue(text_reply("fine"))
    again = await runtime.loop.prompt(sid, prompt_body("again"))
    assert again.info.error is None and again.info.finish == "stop"
