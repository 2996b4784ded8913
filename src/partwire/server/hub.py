"""The ClientHub: SessionEvents of the sessions a client subscribes to, over Socket.IO
(``/socket.io``, on the same app and port) or a plain WebSocket (``GET /ws``).

A client sends ``subscribe`` ``{sessionId, since?}`` and receives every event of that
session, seed 004's SessionEvents (protocol/blocks.py), as ``session:event`` (one
Socket.IO room per session); its sub-agents' sessions come in the same stream, each with
its own ``conversationId``. Without ``since`` it gets the session from its first event;
with it, exactly what followed that event id. Both are read back from the event log; when
the log no longer holds them the client gets ``session:resync`` with the conversation
(``{blocks, subagents}``) rebuilt from the store instead, then live events. Each
subscription reads its own bounded bus queue, so a slow client has its deltas merged and,
past the limit, gets ``session:resync`` (and subscribes again with ``since``) rather than
growing the server's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from starlette.types import ASGIApp, Receive, Scope
from starlette.types import Send as ASGISend

if TYPE_CHECKING:  # the adapter loads with the first subscription, not at start-up
    from partwire.protocol.blocks import SessionEvents
    from partwire.schema.session_events import SessionEvent

from partwire.access import Actor, Principal
from partwire.bus import Subscription
from partwire.errors import NotFoundError, PartwireError, TooManyRequestsError
from partwire.runtime import Runtime
from partwire.server.auth import client_kind, principal_of
from partwire.server.authorize import may
from partwire.server.cursor import counted, parse_cursor, resume_session, unsent
from partwire.server.guard import origin_allowed
from partwire.storage.base import EventLogGap

log = logging.getLogger(__name__)

Send = Callable[[str, dict[str, Any]], Awaitable[None]]
# Socket.IO queues what it is given without limit: past this many packets waiting for one
# client, that client is told to resync instead of being sent more.
MAX_BACKLOG = 2000


class FellBehind(Exception):
    """The client reads too slowly: stop sending it this session."""


SESSION_EVENTS = [
    "session.created", "session.deleted", "session.status", "session.idle",
    "session.error", "message.updated", "message.part.updated", "message.part.delta",
]  # fmt: skip


async def _history(
    runtime: Runtime, adapter: SessionEvents, session_id: str, since: str | None
) -> AsyncIterator[tuple[list[SessionEvent], str]]:
    """The session's SessionEvents after ``since`` (None: all of them) and the event id to
    go on from, read a page at a time; EventLogGap when the log no longer holds the
    session's start."""
    store = runtime.store
    if since is None:
        _, newest = await store.snapshot_messages(session_id, limit=1)
        if newest is None:
            raise EventLogGap(None)
        through, seen = newest, None
    else:
        through, seen = parse_cursor(since)
    # the log's end first, then the sub-agent sessions made by then; any made later are
    # taken by the subscription (opened before this)
    newest = await store.last_event_id() or through
    family = await _subagent_sessions(runtime, session_id)
    async for step in resume_session(
        store,
        session_id,
        through=through,
        seen=seen,
        fold_types=SESSION_EVENTS,
        send_types=SESSION_EVENTS,
        send_all=since is None,
        family=family,
        newest=newest,
    ):
        if step.event is None:
            yield [], step.place
            continue
        made = adapter.convert(step.event)
        if step.send_from is not None:
            yield made[step.send_from :], step.place


async def _subagent_sessions(runtime: Runtime, session_id: str) -> list[str]:
    """The sessions created under ``session_id`` (and under those), oldest first."""
    children: dict[str, list[str]] = {}
    for session in await runtime.store.list_sessions():
        if session.parent_id is not None:
            children.setdefault(session.parent_id, []).append(session.id)
    found: list[str] = []
    pending = [session_id]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


async def _resync(
    runtime: Runtime, session_id: str, reason: str
) -> tuple[dict[str, Any], str | None]:
    """The session's conversation (``{blocks, subagents}``, as the shared reducer holds
    it) rebuilt from the store, and the event id live events go on from."""
    from partwire.protocol.conversation import conversation_of

    messages, newest = await runtime.store.snapshot_messages(session_id)
    by_session = {session_id: messages}
    for child in await _subagent_sessions(runtime, session_id):
        by_session[child], _ = await runtime.store.snapshot_messages(child)
    state = conversation_of(session_id, by_session)
    payload = {"sessionId": session_id, "state": state, "lastEventId": newest, "message": reason}
    return payload, newest


Allowed = Callable[[], Awaitable[bool]]


async def follow(
    runtime: Runtime, session_id: str, since: str | None, send: Send, allowed: Allowed | None = None
) -> None:
    """Send the session's events to one client until it unsubscribes, falls behind, or
    may no longer read the session (``allowed``, asked again when its access changes:
    then ``session:ended``)."""
    from partwire.protocol.blocks import SessionEvents

    # before the log is read
    kinds = (*SESSION_EVENTS, "session.access")
    subscription = runtime.bus.subscribe(*kinds, session_id=session_id, with_children=True)
    adapter = SessionEvents(session_id)
    last: list[str | None] = [since]  # the id of the last SessionEvent the client got

    async def deliver(event: SessionEvent) -> None:
        await send("session:event", event.wire())
        last[0] = event.id

    try:
        sent: str | None = None
        try:
            async for events, cursor in _history(runtime, adapter, session_id, since):
                for event in events:
                    await deliver(event)
                sent = cursor
        except EventLogGap:
            reason = "the events of this session are no longer kept: here is its state"
            payload, sent = await _resync(runtime, session_id, reason)
            await send("session:resync", payload)
            last[0] = sent
        # access taken after the subscribe's check but before this subscription existed
        # shows only here; from now on a session.access event tells
        revoked = allowed is not None and not await allowed()
        ended = "revoked" if revoked else await _live(subscription, adapter, sent, deliver, allowed)
        if ended == "revoked":
            message = "You may no longer read this session."
            await send("session:ended", {"sessionId": session_id, "message": message})
        elif ended == "overflowed":
            raise FellBehind
    except FellBehind:
        message = "This subscription fell too far behind; subscribe again with since."
        await send(
            "session:resync", {"sessionId": session_id, "since": last[0], "message": message}
        )
    finally:
        subscription.close()


async def _live(
    subscription: Subscription,
    adapter: SessionEvents,
    sent: str | None,
    deliver: Callable[[SessionEvent], Awaitable[None]],
    allowed: Allowed | None,
) -> str:
    """Live events until the subscription ends: "closed", "overflowed" (too slow) or
    "revoked" (the caller's access was taken)."""
    while (first := await subscription.get()) is not None:
        batch, sent = unsent([first, *subscription.drain()], sent)
        for event in batch:
            if event.type == "session.access":
                if allowed is not None and not await allowed():
                    return "revoked"
                continue
            for made in adapter.convert(event):
                await deliver(made)
    return "overflowed" if subscription.overflowed else "closed"


@dataclass
class _Client:
    send: Send
    principal: Principal
    kind: str = "unknown"  # web, cli, … (server/auth.py's client_kind)
    address: str = "?"  # its streams count against this address's quota
    follows: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    async def close(self) -> None:
        for task in self.follows.values():
            task.cancel()
        for task in list(self.follows.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.follows.clear()


class ClientHub:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.sio: Any = None  # socketio.AsyncServer, made on the first Socket.IO request
        self.clients: dict[str, _Client] = {}

    def asgi(self) -> ASGIApp:
        """The Socket.IO endpoint. python-socketio (and the aiohttp its package imports)
        loads on the first request to it, not at start-up: most servers never see one."""
        loaded: list[ASGIApp] = []

        async def app(scope: Scope, receive: Receive, send: ASGISend) -> None:
            if not loaded:
                loaded.append(self._socketio_app())
            await loaded[0](scope, receive, send)

        return app

    def _socketio_app(self) -> ASGIApp:
        import socketio

        configured = frozenset(o.rstrip("/").lower() for o in self.runtime.settings.cors_origins)

        def allowed(origin: str | None, environ: dict[str, Any]) -> bool:
            # the guard refuses a foreign Origin on /socket.io already (polling GETs too);
            # this keeps engineio's own answer (its CORS headers) to the same rule
            return origin is None or origin_allowed(
                origin, environ.get("HTTP_HOST", ""), configured
            )

        self.sio = socketio.AsyncServer(async_mode="asgi", cors_allowed_origins=allowed)
        self.sio.on("connect", self._connect)
        self.sio.on("disconnect", self._disconnect)
        self.sio.on("subscribe", self._subscribe_sio)
        self.sio.on("unsubscribe", self._unsubscribe_sio)
        app: ASGIApp = socketio.ASGIApp(self.sio, socketio_path="socket.io")
        return app

    async def subscribe(
        self, client: _Client, data: Any, room: Callable[[str], Any] | None = None
    ) -> dict[str, Any]:
        """Start following a session; the acknowledgement says which, or what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str):
            return {"ok": False, "error": "subscribe needs {sessionId, since?}"}
        session_id, since = data["sessionId"], data.get("since")
        if since is not None and not isinstance(since, str):
            return {"ok": False, "error": "since must be an event id (a string)"}
        try:
            await self.runtime.store.get_session(session_id)
            if not await may(self.runtime, client.principal, session_id, "read"):
                raise NotFoundError("Session", session_id)
        except NotFoundError as exc:
            return {"ok": False, "error": exc.message}
        old = client.follows.pop(session_id, None)
        if old is not None:
            old.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await old  # its stream is no longer counted
        try:
            self.runtime.quotas.check_stream(client.address)
        except TooManyRequestsError as exc:
            return {"ok": False, "error": exc.message}
        if room is not None:
            await room(session_id)
        task = asyncio.create_task(self._follow(client, session_id, since))
        client.follows[session_id] = task
        return {"ok": True, "sessionId": session_id}

    async def _follow(self, client: _Client, session_id: str, since: str | None) -> None:
        try:
            actor = Actor(client.principal, client.kind)

            async def allowed() -> bool:
                return await may(self.runtime, client.principal, session_id, "read")

            with counted(self.runtime, client.address, "hub", session_id, actor):
                await follow(self.runtime, session_id, since, client.send, allowed)
        except (PartwireError, ConnectionError) as exc:
            log.info("hub: %s stopped: %s", session_id, exc)

    def unsubscribe(self, client: _Client, data: Any) -> dict[str, Any]:
        session_id = data.get("sessionId") if isinstance(data, dict) else None
        task = client.follows.pop(str(session_id), None)
        if task is not None:
            task.cancel()
        return {"ok": task is not None}

    # ---- Socket.IO -----------------------------------------------------------------------

    async def _connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> None:
        async def send(name: str, data: dict[str, Any]) -> None:
            if name == "session:event" and self.backlog(sid) > MAX_BACKLOG:
                raise FellBehind
            await self.sio.emit(name, data, to=sid)

        scope = environ.get("asgi.scope") or {}
        address = str(environ.get("REMOTE_ADDR") or "?")
        self.clients[sid] = _Client(send, principal_of(scope), client_kind(scope), address)

    def backlog(self, sid: str) -> int:
        """Packets waiting to be written to this client (engine.io keeps them in a queue)."""
        eio_sid = self.sio.manager.eio_sid_from_sid(sid, "/")
        queue = getattr(self.sio.eio.sockets.get(eio_sid), "queue", None)
        return int(queue.qsize()) if queue is not None else 0

    async def _disconnect(self, sid: str, *args: Any) -> None:
        client = self.clients.pop(sid, None)
        if client is not None:
            await client.close()

    async def _subscribe_sio(self, sid: str, data: Any) -> dict[str, Any]:
        client = self.clients.get(sid)
        if client is None:
            return {"ok": False, "error": "not connected"}

        async def room(session_id: str) -> None:
            await self.sio.enter_room(sid, session_id)

        return await self.subscribe(client, data, room)

    async def _unsubscribe_sio(self, sid: str, data: Any) -> dict[str, Any]:
        client = self.clients.get(sid)
        if client is None:
            return {"ok": False}
        session_id = data.get("sessionId") if isinstance(data, dict) else None
        if isinstance(session_id, str):
            await self.sio.leave_room(sid, session_id)
        return self.unsubscribe(client, data)

    async def shutdown(self) -> None:
        for client in list(self.clients.values()):
            await client.close()


router = APIRouter()


@router.websocket("/ws")
async def websocket(socket: WebSocket) -> None:
    """The hub for clients without Socket.IO: JSON messages ``{"event", "data"}`` both ways
    (``subscribe`` / ``unsubscribe`` in, ``session:event`` / ``session:resync`` / ``ack`` out)."""
    hub: ClientHub = socket.app.state.hub
    await socket.accept()
    lock = asyncio.Lock()

    async def send(name: str, data: dict[str, Any]) -> None:
        async with lock:
            await socket.send_json({"event": name, "data": data})

    address = socket.client.host if socket.client else "?"
    client = _Client(send, principal_of(socket.scope), client_kind(socket.scope), address)
    try:
        while True:
            message = await socket.receive_json()
            name = message.get("event") if isinstance(message, dict) else None
            data = message.get("data") if isinstance(message, dict) else None
            if name == "subscribe":
                ack = await hub.subscribe(client, data)
            elif name == "unsubscribe":
                ack = hub.unsubscribe(client, data)
            else:
                ack = {"ok": False, "error": "send {event: subscribe | unsubscribe, data}"}
            await send("ack", {"for": name, **ack})
    except (WebSocketDisconnect, ValueError, RuntimeError):
        pass
    finally:
        await client.close()
