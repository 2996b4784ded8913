"""GET /event: every event as Server-Sent Events, resumable with Last-Event-ID.

``server.connected`` comes first; logged events carry an ``id:`` line (their evt_
id); a heartbeat goes out when nothing else has for ``heartbeat_s``. On resume the
subscription is opened *before* the log is read, so an event published in between
is not lost; anything the log already delivered is skipped by id.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from fastapi import APIRouter, Request
from fastapi.responses import Response

from partwire import ids
from partwire.bus import Subscription
from partwire.runtime import Runtime
from partwire.schema.event import (
    REGISTRY,
    ConnectedProps,
    Empty,
    Event,
    ResyncProps,
    ServerConnected,
    ServerHeartbeat,
    ServerResync,
)
from partwire.server.auth import principal_of
from partwire.server.authorize import Visibility, check_session
from partwire.server.cursor import STREAM_HEADERS, counted, log_pages, unsent
from partwire.server.pushed import Opening, PushedStream, SentStream, render_each
from partwire.storage.base import EventLogGap

router = APIRouter()


Framer = Callable[[Event], str]


def frame(event: Event) -> str:
    if event.in_log:
        return f"id: {event.id}\ndata: {event.json}\n\n"
    return f"data: {event.json}\n\n"


def global_framer(directory: str) -> Framer:
    """GET /global/event wraps each event as {"directory": …, "payload": event}."""
    prefix = f'{{"directory":{json.dumps(directory)},"payload":'

    def framed(event: Event) -> str:
        body = f"{prefix}{event.json}}}"
        if event.in_log:
            return f"id: {event.id}\ndata: {body}\n\n"
        return f"data: {body}\n\n"

    return framed


# partwire's events that opencode's v2 stream carries too; the rest have no v2 shape
V2_TYPES = frozenset(REGISTRY) - {
    "editor.read",
    "server.instance.disposed",
    "server.resync",
    "session.access",
    "session.presence",
    "ask.answered",
}


def v2_framer(directory: str) -> Framer:
    """GET /api/event: v2's native frame, ``{id, type, location, data}`` (``data`` is the
    event's properties), and after a message or part event the ``session.next.*`` events
    it makes, deltas included (``protocol.v2events``; without ``durable``: the numbered
    ones are the session's own stream). Heartbeats are SSE comments, as opencode's."""
    from partwire.protocol.v2events import LIVE_SOURCES, DurableEvents

    location = json.dumps({"directory": directory})
    sessions: dict[str, DurableEvents] = {}

    def session_next(event: Event) -> str:
        session_id = event.session_id
        if event.type not in LIVE_SOURCES or session_id is None:
            return ""
        projection = sessions.get(session_id)
        if projection is None:
            projection = sessions[session_id] = DurableEvents(session_id, directory, live=True)
        out = []
        for made in projection.durable(event):
            made.pop("durable", None)
            out.append(f"data: {json.dumps(made, separators=(',', ':'))}\n\n")
        return "".join(out)

    def framed(event: Event) -> str:
        if event.type == "server.heartbeat":
            return ": heartbeat\n\n"
        if event.type not in V2_TYPES:
            return ""
        properties = event.properties_json
        data = (
            f'{{"id":"{event.id}","type":"{event.type}","location":{location},"data":{properties}}}'
        )
        head = f"id: {event.id}\n" if event.in_log else ""
        return f"{head}data: {data}\n\n{session_next(event)}"

    return framed


# A client further behind than this is told to reload over HTTP instead of replaying.
MAX_REPLAY_EVENTS = 50_000


def _resync(last_id: str, oldest: str | None, message: str) -> Event:
    props = ResyncProps(last_event_id=last_id, oldest_event_id=oldest, message=message)
    return ServerResync(props).with_id(ids.event_id())


async def _replay(
    runtime: Runtime, last_id: str, frame: Framer, visibility: Visibility
) -> AsyncIterator[str | None]:
    """Frames of the logged events after ``last_id``, a page at a time; the last item is
    the id to go on from (None after a resync)."""
    store = runtime.store
    try:
        behind = await store.events_behind(last_id)
        if behind > MAX_REPLAY_EVENTS:
            message = (
                f"You are {behind} events behind (more than {MAX_REPLAY_EVENTS}); "
                "reload state over HTTP."
            )
            yield frame(_resync(last_id, None, message))
            yield None
            return
        cursor = last_id
        # each page is framed and sent before the next is read: a client that does not
        # read holds up only its own page
        async for page in log_pages(store, last_id):
            cursor = page[-1].id
            yield "".join(frame(e) for e in await visibility.keep(page))
    except EventLogGap as gap:
        message = "Events since your last id are no longer kept; reload state over HTTP."
        yield frame(_resync(last_id, gap.oldest, message))
        yield None
        return
    yield cursor


def _fell_behind(sent: str | None) -> Event:
    props = ResyncProps(
        last_event_id=sent or "",
        message="This connection fell too far behind; reload state over HTTP and reconnect.",
    )
    return ServerResync(props).with_id(ids.event_id())


async def _opening(
    runtime: Runtime, last_id: str | None, frame: Framer, visibility: Visibility, opened: Opening
) -> AsyncGenerator[str, None]:
    """``server.connected``, who watches which session now (``session.presence``, never
    logged: a stream opened after a watcher joined would otherwise not know of it until the
    next change), then (with ``last_id``) the logged events after it."""
    await visibility.start()
    connected = ConnectedProps(instance_id=runtime.instance_id)
    yield frame(ServerConnected(connected).with_id(ids.event_id()))
    for presence in await visibility.keep(runtime.presence.current()):
        if text := frame(presence):  # v2's stream has no presence
            yield text
    opened.sent = last_id
    if last_id:
        async for item in _replay(runtime, last_id, frame, visibility):
            if item is None or item.startswith("evt_"):
                opened.sent = item  # the replay's end: where live events go on from
            else:
                yield item


def _heartbeat(frame: Framer) -> Callable[[], str]:
    return lambda: frame(ServerHeartbeat(Empty()).with_id(ids.event_id()))


def _closing(frame: Framer) -> Callable[[Subscription, str | None], str]:
    """A stream ended by a subscription that overflowed says so: reload and reconnect."""
    return lambda subscription, sent: frame(_fell_behind(sent)) if subscription.overflowed else ""


async def stream_filtered(
    runtime: Runtime,
    subscription: Subscription,
    last_id: str | None,
    frame: Framer,
    client: str | None,
    visibility: Visibility,
    watch: str | None = None,
) -> AsyncGenerator[str, None]:
    """A stream that only carries what its caller may read (not an admin's): its live
    events are filtered by ``visibility``, which may have to read, so they are sent by the
    response's task (an admin's stream is a PushedStream)."""
    try:
        with counted(runtime, client, "event", watch):
            opened = Opening()
            async for text in _opening(runtime, last_id, frame, visibility, opened):
                yield text
            sent, render, heartbeat = opened.sent, render_each(frame), _heartbeat(frame)
            async for batch in subscription.batches(runtime.settings.heartbeat_s):
                if batch is None:
                    yield heartbeat()
                    continue
                fresh, sent = unsent(batch, sent)
                if fresh := await visibility.keep(fresh):
                    yield render(fresh)
            if ending := _closing(frame)(subscription, sent):
                yield ending
    finally:
        subscription.close()


async def _response(request: Request, frame: Framer) -> Response:
    """``?watch=SESSION``: count this stream as one of the session's watchers
    (``session.presence``), as ``partwire run`` does."""
    runtime: Runtime = request.app.state.runtime
    client = request.client.host if request.client else "?"
    watch = request.query_params.get("watch") or None
    if watch is not None:
        await check_session(request, watch, "read")
    runtime.quotas.check_stream(client)  # 429 past the limit
    visibility = Visibility(runtime, principal_of(request.scope))
    subscription = runtime.bus.subscribe_all()
    last_id = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
    if not visibility.everything:
        return SentStream(
            stream_filtered(runtime, subscription, last_id, frame, client, visibility, watch),
            subscription,
            headers=STREAM_HEADERS,
        )
    return PushedStream(
        subscription=subscription,
        opening=lambda opened: _opening(runtime, last_id, frame, visibility, opened),
        render=render_each(frame),
        heartbeat=_heartbeat(frame),
        heartbeat_s=runtime.settings.heartbeat_s,
        headers=STREAM_HEADERS,
        lifetime=lambda: counted(runtime, client, "event", watch),
        closing=_closing(frame),
    )


@router.get("/event", summary="Subscribe to events (SSE)", operation_id="event.subscribe")
async def subscribe(request: Request) -> Response:
    return await _response(request, frame)


@router.get("/api/event", summary="v2 events (SSE)", operation_id="v2.event.subscribe")
async def subscribe_v2(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    return await _response(request, v2_framer(str(runtime.settings.project_dir)))


@router.get("/global/event", summary="Events of every directory (SSE)", operation_id="global.event")
async def subscribe_global(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    return await _response(request, global_framer(str(runtime.settings.project_dir)))
