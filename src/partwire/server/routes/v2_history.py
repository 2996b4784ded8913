"""opencode's v2 API, a session's durable events: ``GET /api/session/{id}/history`` (a
page) and ``GET /api/session/{id}/event`` (the history, then live), folded from the log
by ``protocol.v2events``."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import APIRouter, Request, Response

from partwire.errors import BadRequestError
from partwire.protocol.v2events import DURABLE_SOURCES, DurableEvents, seq_of
from partwire.runtime import Runtime
from partwire.schema.base import JSONObject
from partwire.schema.event import Event
from partwire.schema.session import Session
from partwire.server.cursor import STREAM_HEADERS, watching_session
from partwire.server.cursor import session_events as session_log
from partwire.server.pushed import Opening, PushedStream
from partwire.server.routes.v2 import body
from partwire.server.routes.v2_sessions import session_of
from partwire.server.turnstream import History
from partwire.server.v2_projections import projections

router = APIRouter(prefix="/api/session", tags=["v2"])


async def durable_history(
    runtime: Runtime, session: Session, *, after: int = 0, limit: int | None = None
) -> tuple[list[JSONObject], str | None]:
    """The session's durable events after sequence number ``after`` (at most ``limit`` + 1
    of them: the reading stops there) and the newest logged event they reflect. The log
    is folded a page at a time from where a kept projection stopped (see
    ``server.v2_projections``): paging forward costs the page, not the session."""
    head = await runtime.store.last_event_id()
    kept = projections(runtime.store)
    folded = kept.take(session.id, session.directory, after)
    made = folded.since(after)
    if head is not None and (limit is None or len(made) <= limit):
        async for event in session_log(
            runtime.store, session.id, DURABLE_SOURCES, through=head, after=folded.through
        ):
            folded.tail = folded.projection.durable(event)
            folded.through = event.id
            kept.passed(session.id, folded)
            made += [d for d in folded.tail if seq_of(d) > after]
            if limit is not None and len(made) > limit:
                break
    kept.keep(session.id, folded)
    return made, head


def _after(after: str | None) -> int:
    if after is None or after == "":
        return 0
    if not after.isdigit():
        raise BadRequestError(f"after {after!r} is not a sequence number", field="after")
    return int(after)


@router.get("/{sessionID}/history", operation_id="v2.session.history")
async def session_history(
    request: Request, sessionID: str, limit: str | None = None, after: str | None = None
) -> Response:
    """One page of durable events after the ``after`` sequence number."""
    runtime, session, _ = await session_of(request, sessionID)
    if limit is not None and (not limit.isdigit() or int(limit) < 1):
        raise BadRequestError(f"limit {limit!r} is not a positive number", field="limit")
    size = min(int(limit), 1000) if limit else 100
    later, _ = await durable_history(runtime, session, after=_after(after), limit=size)
    return body({"data": later[:size], "hasMore": len(later) > size})


HISTORY_PIECE = 200  # durable events a piece of a replay holds


def _frame(durable: dict[str, Any]) -> str:
    data = json.dumps(durable, separators=(",", ":"))
    return f"id: {durable['durable']['seq']}\nevent: {durable['type']}\ndata: {data}\n\n"


@router.get("/{sessionID}/event", operation_id="v2.session.events")
async def session_events(request: Request, sessionID: str, after: str | None = None) -> Response:
    """The durable events after ``after`` (or ``Last-Event-ID``), then new ones, live."""
    runtime, session, _ = await session_of(request, sessionID)
    start = _after(after or request.headers.get("last-event-id"))
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    # before the log is read
    subscription = runtime.bus.subscribe(*DURABLE_SOURCES, session_id=session.id)
    try:
        head = await runtime.store.last_event_id()
    except BaseException:
        subscription.close()
        raise
    projection = DurableEvents(session.id, session.directory)

    async def opening(opened: Opening) -> AsyncGenerator[str, None]:
        """The history after ``start``, folded and sent a piece at a time."""
        opened.sent = head
        pending: list[str] = []
        async for event in History(runtime, session.id, head, DURABLE_SOURCES):
            pending += [_frame(d) for d in projection.durable(event) if seq_of(d) > start]
            if len(pending) >= HISTORY_PIECE:
                yield "".join(pending)
                pending.clear()
        if pending:
            yield "".join(pending)

    def render(batch: list[Event]) -> str:
        return "".join(_frame(d) for e in batch for d in projection.durable(e))

    return PushedStream(
        subscription=subscription,
        opening=opening,
        render=render,
        heartbeat=lambda: ": heartbeat\n\n",
        heartbeat_s=runtime.settings.heartbeat_s,
        headers=STREAM_HEADERS,
        lifetime=lambda: watching_session(runtime, subscription, session.id, client, "v2"),
    )
