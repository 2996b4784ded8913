"""GET /session/{id}/stream: one session as part frames over SSE, resumable.

Two shapes of the same frames: seed 003's (the default; ``protocol.seedframes``: the SSE
event names the frame and ``data.type`` is the part's type) and partwire's own
(``?parts=partwire``: every part kind, whole, with the frame's kind in ``type``).

Without a cursor the stream opens with ``reset`` and the session's stored messages as
frames, then goes on live. Every live frame has the id ``<event id>:<n>``, the n-th frame
made from that event; ``Last-Event-ID`` (or ``?lastEventID=``) resumes after exactly that
frame. To resume, the session's history up to the cursor is read back from the event log
so that part numbers match; when the log no longer holds it, the stream starts over with
``reset`` and a fresh snapshot instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Protocol

from fastapi import APIRouter, Request

from partwire.errors import BadRequestError
from partwire.protocol import FRAME_EVENTS
from partwire.runtime import Runtime
from partwire.schema.event import Event, PartDeltaProps
from partwire.server.cursor import (
    STREAM_HEADERS,
    item_id,
    parse_cursor,
    resume_session,
    watching_session,
)
from partwire.server.pushed import Opening, PushedStream
from partwire.server.routes.scope import runtime_of
from partwire.storage.base import EventLogGap

if TYPE_CHECKING:  # loaded with the first stream, not at start-up
    from partwire.protocol.partframes import SessionFrames
    from partwire.schema.frames import Frame

router = APIRouter(tags=["session"])

HISTORY_TYPES = [*FRAME_EVENTS, "session.created"]


class Shape(Protocol):
    def messages(self, frames: list[Frame]) -> list[str]:
        """One SSE message (``event:`` and ``data:`` lines) per item the frames make."""
        ...

    def text_delta(self, message_id: str, part_index: int, delta: str) -> str:
        """``messages`` of one text ``part_delta`` frame, joined, with no frame made."""
        ...


class PartwireShape:
    def __init__(self) -> None:
        from partwire.schema.frames import text_delta_json

        self.delta_json = text_delta_json

    def messages(self, frames: list[Frame]) -> list[str]:
        return [f"event: {frame.type}\ndata: {frame.wire_json()}\n\n" for frame in frames]

    def text_delta(self, message_id: str, part_index: int, delta: str) -> str:
        return f"event: part_delta\ndata: {self.delta_json(message_id, part_index, delta)}\n\n"


_compact_json = json.JSONEncoder(separators=(",", ":")).encode  # made once, not per frame
_ascii_string = json.encoder.encode_basestring_ascii  # a string as _compact_json writes it


class SeedShape:
    def __init__(self) -> None:
        from partwire.protocol.seedframes import SeedFrames

        self.seed = SeedFrames()

    def messages(self, frames: list[Frame]) -> list[str]:
        return [
            f"event: {name}\ndata: {_compact_json(data)}\n\n"
            for name, data in self.seed.fold(frames)
        ]

    def text_delta(self, message_id: str, part_index: int, delta: str) -> str:
        at = self.seed.text_delta_index(message_id, part_index)
        if at is None:
            return ""
        return (
            f'event: part_delta\ndata: {{"messageId":{_ascii_string(message_id)},'
            f'"partIndex":{at},"delta":{_ascii_string(delta)}}}\n\n'
        )


def shape_of(parts: str | None) -> Shape:
    if parts in (None, "", "seed"):
        return SeedShape()
    if parts == "partwire":
        return PartwireShape()
    raise BadRequestError(f"parts {parts!r} is not seed or partwire", field="parts", kind="Query")


def sse(messages: list[str], event: Event | None, *, first: int = 0) -> str:
    """SSE messages; made from a logged ``event``, each carries its cursor."""
    out = []
    for n, message in enumerate(messages):
        if n < first:
            continue
        cursor = item_id(event, n) if event is not None else None
        out.append(f"id: {cursor}\n{message}" if cursor is not None else message)
    return "".join(out)


async def _snapshot(
    runtime: Runtime, frames: SessionFrames, shape: Shape, reason: str
) -> tuple[str, str | None]:
    messages, last = await runtime.store.snapshot_messages(frames.session_id)
    made = shape.messages(frames.snapshot(messages, reason))
    if last is None:
        return "".join(made), None
    # the last frame of a snapshot names the event it reflects: resuming from there
    # replays only what came after it
    return "".join(made[:-1]) + f"id: {last}\n{made[-1]}", last


async def _resume(
    runtime: Runtime, frames: SessionFrames, shape: Shape, cursor: str
) -> AsyncIterator[tuple[str, str]]:
    """(SSE text, id to go on from) for the history after ``cursor``, the session's events
    up to it folded in first so that part numbers match; EventLogGap when the log cannot
    rebuild the session up to it."""
    event_id, seen = parse_cursor(cursor)
    async for step in resume_session(
        runtime.store,
        frames.session_id,
        through=event_id,
        seen=seen,
        fold_types=HISTORY_TYPES,
        send_types=FRAME_EVENTS,
    ):
        if step.event is None:
            yield "", step.place
            continue
        made = shape.messages(frames.frames(step.event))
        if step.send_from is not None:
            yield sse(made, step.event, first=step.send_from), step.place


def _opening(
    runtime: Runtime, frames: SessionFrames, shape: Shape, cursor: str | None
) -> Callable[[Opening], AsyncGenerator[str, None]]:
    """What the stream sends before it goes live: the history after ``cursor``, or (no
    cursor, or one the log cannot serve) ``reset`` and a snapshot."""

    async def opening(opened: Opening) -> AsyncGenerator[str, None]:
        resumed = False
        if cursor:
            try:
                async for text, went_to in _resume(runtime, frames, shape, cursor):
                    opened.sent = went_to
                    if text:
                        yield text
                resumed = True
            except EventLogGap:
                resumed = False
        if not resumed:
            reason = "start" if not cursor else f"cannot resume from {cursor}: starting over"
            text, opened.sent = await _snapshot(runtime, frames, shape, reason)
            yield text

    return opening


def _render(frames: SessionFrames, shape: Shape) -> Callable[[list[Event]], str]:
    """Live events → SSE text. A streamed token (most events) takes the fold's text-delta
    way: the same text, with no frame object made per token per stream."""

    def render(events: list[Event]) -> str:
        out: list[str] = []
        for event in events:
            props = event.properties
            if isinstance(props, PartDeltaProps):  # grown() skips another session's
                index = frames.grown(props)
                text = (
                    "" if index is None else shape.text_delta(props.message_id, index, props.delta)
                )
                if text:
                    cursor = item_id(event, 0)
                    out.append(f"id: {cursor}\n{text}" if cursor is not None else text)
            else:
                out.append(sse(shape.messages(frames.frames(event)), event))
        return "".join(out)

    return render


@router.get(
    "/session/{sessionID}/stream",
    summary="One session as part frames (SSE, resumable)",
    operation_id="session.stream",
)
async def stream(request: Request, sessionID: str, parts: str | None = None) -> PushedStream:
    """``parts``: ``seed`` (default: seed 003's frames, as its frontend reads them) or
    ``partwire`` (every part kind, whole)."""
    shape = shape_of(parts)
    runtime = runtime_of(request)
    await runtime.store.get_session(sessionID)  # 404 for an unknown session
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    # before anything is read
    subscription = runtime.bus.subscribe(*FRAME_EVENTS, session_id=sessionID)
    cursor = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
    from partwire.protocol.partframes import SessionFrames

    frames = SessionFrames(sessionID)
    return PushedStream(
        subscription=subscription,
        opening=_opening(runtime, frames, shape, cursor),
        render=_render(frames, shape),
        heartbeat=lambda: ": heartbeat\n\n",
        heartbeat_s=runtime.settings.heartbeat_s,
        headers=STREAM_HEADERS,
        lifetime=lambda: watching_session(runtime, subscription, sessionID, client, "frames"),
    )  # closed (shutdown) or too far behind: the client resumes from its cursor
