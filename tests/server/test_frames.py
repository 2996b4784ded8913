"""GET /session/{id}/stream: part frames over SSE, resumable after any frame."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator

import httpx
import pytest

from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.protocol.partframes import FrameReducer, SessionFrames
from partwire.runtime import Runtime
from partwire.schema.frames import Frame
from partwire.server.routes.frames import _render, shape_of, sse
from partwire.server.runner import serve_in_background
from tests.protocol.test_partframes import recorded_session

PROMPTS = ("hello", "list", "edit README.md no-such-text => x", "long 300")


async def _collect(
    stream: AsyncIterator[tuple[str | None, Frame]], count: int
) -> list[tuple[str | None, Frame]]:
    """The first ``count`` items, then the stream is closed."""
    got: list[tuple[str | None, Frame]] = []
    try:
        async with asyncio.timeout(20):
            while len(got) < count:
                got.append(await anext(stream))
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return got


def _reduced(frames: list[Frame]) -> FrameReducer:
    reducer = FrameReducer()
    for frame in frames:
        reducer.apply(frame)
    return reducer


async def test_live_frames_rebuild_the_session_and_resume_after_any_frame_and_a_restart(
    settings: Settings,
) -> None:
    async with serve_in_background(settings) as server, PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        live = client._frame_stream(session_id, None)
        first = await anext(live)
        assert first[1].type == "reset" and first[0] is not None  # an empty session: just reset
        frames: list[tuple[str | None, Frame]] = []

        arrived = asyncio.Event()

        async def read() -> None:
            async for item in live:
                frames.append(item)
                arrived.set()

        reader = asyncio.create_task(read())
        for text in PROMPTS:
            await client.prompt(session_id, text)
        stored = await client.messages(session_id)
        last_answer = stored[-1].info.id
        async with asyncio.timeout(10):
            while not any(
                f.type == "message_complete" and f.message.id == last_answer  # type: ignore[union-attr]
                for _, f in frames
            ):
                arrived.clear()
                await arrived.wait()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader

        whole = [f for _, f in frames]
        reducer = _reduced(whole)
        assert [reducer.message(m.info.id).parts for m in stored] == [m.parts for m in stored]
        assert {"part_delta", "part_update", "part_complete"} <= {f.type for f in whole}
        ids = [i for i, _ in frames]
        assert all(i is not None for i in ids) and len(set(ids)) == len(ids)

        # cut anywhere and resume with the last id seen: the rest, exactly once
        rng = random.Random(7)
        cuts = [*sorted(rng.sample(range(len(frames) - 1), 6)), len(frames) - 2]
        for cut in cuts:
            cursor = frames[cut][0]
            rest = await _collect(client._frame_stream(session_id, cursor), len(frames) - cut - 1)
            assert [f for _, f in rest] == whole[cut + 1 :], f"resumed after frame {cut}"
    # a new server on the same data dir: the cursors are places in the log it keeps
    async with serve_in_background(settings) as server, PartwireClient(server) as client:
        for cut in cuts[:2]:
            cursor = frames[cut][0]
            rest = await _collect(client._frame_stream(session_id, cursor), len(frames) - cut - 1)
            assert [f for _, f in rest] == whole[cut + 1 :], f"after a restart: frame {cut}"


async def test_a_new_stream_starts_with_a_snapshot_then_goes_live(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        await client.prompt(session_id, "list")
        stream = client._frame_stream(session_id, None)
        stored = await client.messages(session_id)
        snapshot = await _collect(stream, 1 + sum(2 + 2 * len(m.parts) for m in stored))
        assert snapshot[0][1].type == "reset"
        assert [i for i, _ in snapshot[:-1]] == [None] * (len(snapshot) - 1)
        cursor = snapshot[-1][0]
        assert cursor is not None and cursor.startswith("evt_")
        reducer = _reduced([f for _, f in snapshot])
        assert [reducer.message(m.info.id).parts for m in stored] == [m.parts for m in stored]
        # resuming from the snapshot's cursor sends only what came after it
        resumed = client._frame_stream(session_id, cursor)
        await client.prompt_async(session_id, "hello")
        first = await _collect(resumed, 1)
        assert first[0][1].type == "message_start"  # the new prompt, nothing from before


@pytest.mark.parametrize("cursor", ["evt_nonsense", "garbage", "evt_00000000000000ffffffffffff:3"])
async def test_a_cursor_that_cannot_be_resumed_starts_over(server: str, cursor: str) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        await client.prompt(session_id, "hello")
        first = await _collect(client._frame_stream(session_id, cursor), 1)
        assert first[0][1].type == "reset" and "cannot resume" in first[0][1].reason  # type: ignore[union-attr]


async def test_an_unknown_session_is_a_404(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        response = await http.get("/session/ses_nope/stream")
    assert response.status_code == 404 and response.json()["name"] == "NotFoundError"


async def test_the_client_follows_frames_across_a_reconnect(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        frames = client.part_frames(session_id)
        reducer = FrameReducer()
        reducer.apply(await anext(frames))
        await client.prompt(session_id, "hello")
        stored = await client.messages(session_id)
        async with asyncio.timeout(10):
            async for frame in frames:
                reducer.apply(frame)
                if frame.type == "message_complete" and frame.message.id == stored[-1].info.id:
                    break
        await frames.aclose()
    assert reducer.message(stored[-1].info.id).parts == stored[-1].parts


@pytest.mark.parametrize("parts", ["seed", "partwire"])
async def test_a_token_renders_as_the_fold_renders_its_frame(runtime: Runtime, parts: str) -> None:
    """Live rendering takes a text delta's own way (no frame made); over a session with
    every common part kind, sub-agents and non-ASCII text, it writes what folding each
    event's frames writes, whatever the batches."""
    session_id = await recorded_session(runtime)
    async with runtime.record(session_id, prompt="unicode") as msg:
        for piece in ("héllo ", "✓ ", "\u2028", '"quoted"\n', "😀"):
            await msg.add_text_delta(piece)
    events = await runtime.store.events_after(None)
    folding, folded_shape = SessionFrames(session_id), shape_of(parts)
    expected = "".join(sse(folded_shape.messages(folding.frames(e)), e) for e in events)
    assert "event: part_delta" in expected
    assert ("😀" if parts == "partwire" else "\\ud83d\\ude00") in expected  # seed's JSON is ASCII
    for size in (1, 7, len(events)):
        render = _render(SessionFrames(session_id), shape_of(parts))
        batches = [events[n : n + size] for n in range(0, len(events), size)]
        assert "".join(render(batch) for batch in batches) == expected
