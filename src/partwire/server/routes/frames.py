"""GET /session/{id}/stream: one session as part frames over SSE, resumable.

Without a cursor the stream opens with ``reset`` and the session's stored messages as
frames, then goes on live. Every live frame has the id ``<event id>:<n>``, the n-th frame
made from that event; ``Last-Event-ID`` (or ``?lastEventID=``) resumes after exactly that
frame. To resume, the session's history up to the cursor is read back from the event log
so that part numbers match; when the log no longer holds it, the stream starts over with
``reset`` and a fresh snapshot instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from partwire.bus import Subscription
from partwire.protocol import FRAME_EVENTS
from partwire.runtime import Runtime
from partwire.schema.event import parse_logged
from partwire.server.routes.scope import runtime_of
from partwire.storage.base import EventLogGap

if TYPE_CHECKING:  # loaded with the first stream, not at start-up
    from partwire.protocol.partframes import SessionFrames
    from partwire.schema.frames import Frame

router = APIRouter(tags=["session"])

REPLAY_PAGE = 500
HISTORY_TYPES = [*FRAME_EVENTS, "session.created"]


def sse(frames: list[Frame], event_id: str | None, *, first: int = 0) -> str:
    """Frames as SSE messages; with ``event_id`` each carries ``id: <event id>:<n>``."""
    out = []
    for n, frame in enumerate(frames):
        if n < first:
            continue
        head = f"id: {event_id}:{n}\n" if event_id is not None else ""
        out.append(f"{head}event: {frame.type}\ndata: {frame.wire_json()}\n\n")
    return "".join(out)


def parse_cursor(cursor: str) -> tuple[str, int | None]:
    """``evt_…:n`` → (event id, n); a bare event id means all of its frames were seen."""
    event_id, _, index = cursor.partition(":")
    return event_id, int(index) if index.isdigit() else None


async def _snapshot(runtime: Runtime, frames: SessionFrames, reason: str) -> tuple[str, str | None]:
    messages, last = await runtime.store.snapshot_messages(frames.session_id)
    made = frames.snapshot(messages, reason)
    body = sse(made[:-1], None)
    if last is None:
        return body + sse(made[-1:], None), None
    # the last frame of a snapshot names the event it reflects: resuming from there
    # replays only what came after it
    return body + f"id: {last}\nevent: {made[-1].type}\ndata: {made[-1].wire_json()}\n\n", last


async def _resume(
    runtime: Runtime, frames: SessionFrames, cursor: str
) -> AsyncIterator[tuple[str, str]]:
    """(SSE text, id to go on from) for the history after ``cursor``; EventLogGap when the
    log cannot rebuild the session up to it."""
    event_id, seen = parse_cursor(cursor)
    history = await runtime.store.session_history(frames.session_id, event_id, HISTORY_TYPES)
    if not any(e.type == "session.created" for e in history):
        raise EventLogGap(None)  # the session's start was pruned: part numbers are unknown
    for event in history:
        made = frames.frames(event)
        if event.id == event_id and seen is not None:
            yield sse(made, event_id, first=seen + 1), event_id
    cursor_id = event_id
    needle = f'"sessionID":"{frames.session_id}"'
    while True:
        page = await runtime.store.log_page(cursor_id, REPLAY_PAGE)
        if page:
            cursor_id = page[-1].id
            text = "".join(
                sse(frames.frames(parse_logged(e)), e.id)
                for e in page
                if e.type in FRAME_EVENTS and needle in e.json
            )
            yield text, cursor_id
        if len(page) < REPLAY_PAGE:
            return


async def stream_frames(
    runtime: Runtime,
    subscription: Subscription,
    session_id: str,
    cursor: str | None,
    client: str,
) -> AsyncIterator[str]:
    from partwire.protocol.partframes import SessionFrames

    runtime.quotas.open_stream(client)
    frames = SessionFrames(session_id)
    try:
        sent: str | None = None
        resumed = False
        if cursor:
            try:
                async for text, went_to in _resume(runtime, frames, cursor):
                    sent = went_to
                    if text:
                        yield text
                resumed = True
            except EventLogGap:
                resumed = False
        if not resumed:
            reason = "start" if not cursor else f"cannot resume from {cursor}: starting over"
            text, sent = await _snapshot(runtime, frames, reason)
            yield text
        async for text in _live(runtime, subscription, frames, sent):
            yield text
    finally:
        subscription.close()
        runtime.quotas.close_stream(client)


async def _live(
    runtime: Runtime, subscription: Subscription, frames: SessionFrames, sent: str | None
) -> AsyncIterator[str]:
    async for batch in subscription.batches(runtime.settings.heartbeat_s):
        if batch is None:
            yield ": heartbeat\n\n"
            continue
        fresh = [e for e in batch if not e.in_log or sent is None or e.id > sent]
        text = "".join(sse(frames.frames(e), e.id if e.in_log else None) for e in fresh)
        sent = max([sent or "", *(e.id for e in fresh if e.in_log)])
        if text:
            yield text
    # closed (shutdown) or too far behind: the client resumes from its cursor


@router.get(
    "/session/{sessionID}/stream",
    summary="One session as part frames (SSE, resumable)",
    operation_id="session.stream",
)
async def stream(request: Request, sessionID: str) -> StreamingResponse:
    runtime = runtime_of(request)
    await runtime.store.get_session(sessionID)  # 404 for an unknown session
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    # before anything is read
    subscription = runtime.bus.subscribe(*FRAME_EVENTS, session_id=sessionID)
    cursor = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
    return StreamingResponse(
        stream_frames(runtime, subscription, sessionID, cursor, client),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
