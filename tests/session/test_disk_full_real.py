"""A real full file system mid-stream (a small tmpfs holds the data dir): the message
ends at once with a named error that clients see, and the session works again once
there is room."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from partwire.config import Settings
from partwire.errors import StorageError
from partwire.runtime import Runtime
from partwire.schema.message import AssistantWithParts
from partwire.schema.part import TextPart
from partwire.storage import health
from tests.scripted import ScriptedModel, text_reply
from tests.session.helpers import new_session, prompt_body

BUSY_S = 1.0  # the busy timeout these tests run with (5 s by default): they wait it out


@pytest.fixture(autouse=True)
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set before the runtime fixture opens the store (autouse fixtures come first)."""
    monkeypatch.setattr(health, "BUSY_TIMEOUT_MS", int(BUSY_S * 1000))


@contextlib.contextmanager
def _small_disk(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(folder: Path) -> Path:
    """Take every free byte of the file system."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(descriptor, b"\0" * size)
    finally:
        os.close(descriptor)
    return filler


async def test_a_really_full_disk_ends_the_message_visibly(
    settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    with _small_disk(tmp_path / "disk", "24m") as disk:
        runtime = Runtime.build(replace(settings, data_dir=disk / "data"))
        await runtime.start()
        try:
            sub = runtime.bus.subscribe_all()
            words = [f"w{i} " for i in range(50_000)]
            model.delay_s = 0.0005
            model.enqueue(text_reply(*words))
            sid = await new_session(runtime)
            answer = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("go")))
            await asyncio.sleep(0.5)
            filler = await asyncio.to_thread(_fill, disk)
            result = await asyncio.wait_for(answer, 30)
            info = result.info
            assert info.error is not None and "full" in str(info.error.data.message)  # type: ignore[union-attr]
            seen = [e.type for e in sub.drain()]
            assert "session.error" in seen
            stored = (await runtime.store.list_messages(sid))[-1]
            assert stored.info.time.completed is not None  # type: ignore[union-attr]
            assert stored.info.error is not None  # type: ignore[union-attr]
            part = next(p for p in stored.parts if isinstance(p, TextPart))
            assert part.time is not None and part.time.end is not None

            filler.unlink()  # room again: the session works
            model.enqueue(text_reply("fine"))
            again = await runtime.loop.prompt(sid, prompt_body("again"))
            assert again.info.error is None and again.info.finish == "stop"
        finally:
            await runtime.stop()


Answer = asyncio.Task[AssistantWithParts]


async def _long_answer(runtime: Runtime, model: ScriptedModel) -> tuple[str, Answer]:
    """A session streaming a long answer, a moment in."""
    model.delay_s = 0.0005
    model.enqueue(text_reply(*[f"w{i} " for i in range(50_000)]))
    sid = await new_session(runtime)
    answer = asyncio.create_task(runtime.loop.prompt(sid, prompt_body("go")))
    await asyncio.sleep(0.3)
    return sid, answer


def _hold_write_lock(runtime: Runtime) -> sqlite3.Connection:
    """Another process's connection holding SQLite's write lock until it rolls back."""
    holder = sqlite3.connect(runtime.settings.database_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    return holder


async def test_a_write_lock_held_elsewhere_ends_the_message_with_its_name(
    runtime: Runtime, model: ScriptedModel
) -> None:
    """Another process holds SQLite's write lock past the busy timeout: the message ends
    with an error that says so, clients see it, and the session works once it is let go."""
    sub = runtime.bus.subscribe_all()
    sid, answer = await _long_answer(runtime, model)
    holder = _hold_write_lock(runtime)
    try:
        await asyncio.sleep(BUSY_S * 1.3)  # past the busy timeout
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    result = await asyncio.wait_for(answer, 30)
    message = str(result.info.error.data.message)  # type: ignore[union-attr]
    assert "locked" in message and "another" in message, message
    assert "session.error" in [e.type for e in sub.drain()]
    model.enqueue(text_reply("fine"))
    again = await runtime.loop.prompt(sid, prompt_body("again"))
    assert again.info.error is None and again.info.finish == "stop"
    first = (await runtime.store.list_messages(sid))[1]  # the answer the lock stopped
    assert first.info.error is not None and first.info.time.completed is not None  # type: ignore[union-attr]


async def test_a_write_lock_held_for_good_still_ends_the_message_for_clients(
    runtime: Runtime, model: ScriptedModel
) -> None:
    """The lock is not let go: clients are told the message's end, the session's error and
    its idle status unlogged, while the store takes no write; once the lock is gone, the
    message's end is stored and the session answers again."""
    sub = runtime.bus.subscribe_all()
    sid, answer = await _long_answer(runtime, model)
    holder = _hold_write_lock(runtime)
    seen: list[str] = []
    try:
        ended = False
        for _ in range(400):  # the busy timeout twice over, and some (20 s at most)
            await asyncio.sleep(0.05)
            for event in sub.drain():
                info = getattr(event.properties, "info", None)
                if event.type == "message.updated" and getattr(info, "error", None) is not None:
                    ended = True
                seen.append(event.type)
            if ended and "session.idle" in seen:
                break
        assert ended and "session.error" in seen and "session.idle" in seen, seen
        with pytest.raises(StorageError):
            await asyncio.wait_for(answer, 1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for _ in range(100):  # the message's end is stored once the store takes writes again
        stored = (await runtime.store.list_messages(sid))[1]
        if stored.info.time.completed is not None:  # type: ignore[union-attr]
            break
        await asyncio.sleep(0.1)
    assert stored.info.error is not None and stored.info.time.completed is not None  # type: ignore[union-attr]
    model.enqueue(text_reply("fine"))
    again = await runtime.loop.prompt(sid, prompt_body("again"))
    assert again.info.error is None and again.info.finish == "stop"
