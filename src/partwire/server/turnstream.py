"""One turn of a session as a resumable SSE response, in whichever protocol a view speaks.

The AI SDK's chat routes and AG-UI's run route share this: a response follows one turn
(``UIChunks`` decides what a turn is and when it waits for approvals), a ``View`` turns
its chunks into the protocol's items, and every item made from a logged event has the id
``<event id>:<n>``, so ``Last-Event-ID`` resumes after exactly that item. Where the
response begins is the route's choice: a new prompt (live only), the point where an
earlier response stopped to wait for approvals, the start of the turn in progress, or a
cursor; everything before that point in the session's history is fed to the view
silently, so its state there is exact.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Generic, Protocol, TypeVar

from partwire.bus import Subscription
from partwire.errors import BadRequestError, NotFoundError
from partwire.protocol.aisdk import UI_EVENTS, Chunk, UIChunks
from partwire.runtime import Project, Runtime
from partwire.schema.event import Event
from partwire.schema.input import PromptInput
from partwire.schema.permission import PermissionReply
from partwire.schema.session import Session
from partwire.server.cursor import (
    STREAM_HEADERS,
    item_id,
    live,
    parse_cursor,
    session_events,
    watching_session,
)
from partwire.server.pushed import SentStream
from partwire.session.loop import leave_running

Item = TypeVar("Item")


class View(Protocol[Item]):
    def translate(self, chunks: list[Chunk], source: UIChunks) -> list[Item]:
        """The protocol's items for chunks just made (``source`` is the state after)."""
        ...

    def encode(self, item: Item) -> str:
        """One item as an SSE message's ``data:`` line(s) and blank line."""
        ...

    def beginning(self, source: UIChunks) -> list[Item]:
        """What every response opens with, given the state where it begins."""
        ...

    def waiting(self, source: UIChunks) -> list[Item]:
        """What ends a response whose turn now waits for approvals."""
        ...

    def closing(self) -> str:
        """What ends every response (after its last item)."""
        ...

    @property
    def headers(self) -> dict[str, str]:
        """The protocol's own response headers."""
        ...

    @property
    def transport(self) -> str:
        """The protocol's name in GET /metrics (streams open, by transport)."""
        ...

    @property
    def loose_asks_wait(self) -> bool:
        """Whether an ask on no tool call (a budget) ends a response as an approval does."""
        ...


async def session_for(runtime: Runtime, external_id: str) -> Session | None:
    """The session an AI SDK chat id or AG-UI thread id names: a session id, or an id
    kept in a session's metadata as ``chatID``."""
    try:
        return await runtime.store.get_session(external_id)
    except NotFoundError:
        pass
    for session in await runtime.store.list_sessions():
        if (session.metadata or {}).get("chatID") == external_id:
            return session
    return None


async def answer_permissions(
    runtime: Runtime, session_id: str, replies: list[tuple[str, PermissionReply, str | None]]
) -> None:
    """Reply to the session's asks that are still pending (one answered elsewhere already
    is left: the stream shows how it went). Approvals go first: a rejection settles
    every other ask of the session too."""
    for request_id, reply, message in sorted(replies, key=lambda r: r[1] == "reject"):
        pending = {p.id for p in runtime.permissions.pending() if p.session_id == session_id}
        if request_id in pending:
            await runtime.permissions.reply(request_id, reply, message)


async def enqueue_prompt(
    project: Project, session: Session, prompt: PromptInput, *, created: bool
) -> None:
    """Start the prompt's run; a session made for it goes again when the prompt is bad."""
    try:
        future = await project.loop.enqueue(session.id, prompt, waiting=False)
    except BaseException:
        if created:
            await project.sessions.delete(session.id)
        raise
    future.add_done_callback(leave_running)


class TurnStream(Generic[Item]):
    """Which turn one response follows, and its items so far."""

    def __init__(self, session_id: str, view: View[Item]) -> None:
        self.session_id = session_id
        self.source = UIChunks(session_id, loose_asks_wait=view.loose_asks_wait)
        self.view = view
        self.follow: str | None = None  # the user message the turn answers
        self.done = False

    def feed(self, event: Event) -> None:
        """Take in an event before the response begins (its items are not sent)."""
        self.view.translate(self.source.chunks(event), self.source)

    def emit(self, event: Event, *, first: int = 0) -> str:
        """The SSE text of what ``event`` adds to the followed turn, from item ``first``."""
        made = self.source.chunks(event)
        if not made:
            return ""
        own = 0  # the first chunk of the turn in progress (before it: the one that ended)
        if (ended := self.source.ended) is not None:
            parent, own = ended
            closing = self.view.translate(made[:own], self.source)
            if parent == self.follow:
                self.done = True
                self.view.translate(made[own:], self.source)  # the view keeps count
                return self._sse(closing, event, first)
        items = self.view.translate(made[own:], self.source)
        turn = self.source.turn
        if self.follow is None and turn is not None and made[own]["type"] == "start":
            self.follow = turn.parent_id
        if turn is None or turn.parent_id != self.follow:
            return ""
        if turn.done:
            self.done = True
        return self._sse(items, event, first)

    def _sse(self, items: list[Item], event: Event | None, first: int = 0) -> str:
        out = []
        for n, item in enumerate(items):
            if n >= first:
                cursor = item_id(event, n) if event is not None else None
                head = f"id: {cursor}\n" if cursor is not None else ""
                out.append(head + self.view.encode(item))
        return "".join(out)

    def plain(self, items: list[Item]) -> str:
        return self._sse(items, None)

    def stop_if_waiting(self) -> str:
        if not self.done and self.follow is not None and self.source.waiting:
            self.done = True
            return self.plain(self.view.waiting(self.source))
        return ""


# ---- reading the history ---------------------------------------------------------------------


class History:
    """A session's logged events up to ``head``, read from the store a page at a time each
    time it is iterated (a turn stream may pass over it twice): never a whole session in
    memory."""

    def __init__(
        self,
        runtime: Runtime,
        session_id: str,
        head: str | None,
        types: tuple[str, ...] = UI_EVENTS,
    ) -> None:
        self.store = runtime.store
        self.session_id = session_id
        self.head = head
        self.types = types

    async def __aiter__(self) -> AsyncIterator[Event]:
        if self.head is None:
            return
        async for event in session_events(
            self.store, self.session_id, self.types, through=self.head
        ):
            yield event


Opening = AsyncIterator[str]
FLUSH_CHARS = 65_536  # an opening is sent in pieces of about this size, as they are made


async def check_cursor(history: History, cursor: str) -> None:
    """400 unless ``cursor`` names an event of this session (read before answering)."""
    event_id, _ = parse_cursor(cursor)
    async for event in history:
        if event.id == event_id:
            return
    raise BadRequestError(f"cannot resume from {cursor}: not an event of this session")


async def from_cursor(stream: TurnStream[Item], history: History, cursor: str) -> Opening:
    """What followed ``cursor``, to the end of the turn that was in progress there (the
    route checked the cursor with check_cursor)."""
    event_id, seen = parse_cursor(cursor)
    found = False
    text = _Pieces()
    async for event in history:
        if found:
            if stream.done:
                break
            if piece := text.add(stream.emit(event)):
                yield piece
        elif event.id != event_id:
            stream.feed(event)
        else:
            found = True
            current = stream.source.turn
            stream.follow = current.parent_id if current is not None else None
            if current is not None and current.done:
                stream.done = True
                return
            text.add(stream.emit(event, first=(seen + 1) if seen is not None else 1 << 30))
    yield text.rest()


class _Pieces:
    """Text gathered until it is worth a send."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, text: str) -> str:
        self.parts.append(text)
        self.size += len(text)
        return self.rest() if self.size >= FLUSH_CHARS else ""

    def rest(self) -> str:
        joined = "".join(self.parts)
        self.parts, self.size = [], 0
        return joined


async def after_last_wait(
    history: History, asks: set[str], *, loose_asks_wait: bool = False
) -> str | None:
    """The id of the event where the response that asked ``asks`` stopped: the first point
    after the last of those asks at which the turn waited (None: the end)."""
    asked: str | None = None
    async for event in history:
        if event.type == "permission.asked" and getattr(event.properties, "id", None) in asks:
            asked = event.id
    if asked is None:
        raise BadRequestError("none of the answered asks was made in this session")
    probe = UIChunks(history.session_id, loose_asks_wait=loose_asks_wait)
    async for event in history:
        probe.chunks(event)
        if event.id >= asked and probe.waiting:
            return event.id
    return None


async def resume_at(stream: TurnStream[Item], history: History, after: str | None) -> Opening:
    """The turn in progress just after the event ``after`` (None: at the end), from there
    on: the view's beginning, then the history's items after it."""
    began = False
    text = _Pieces()
    async for event in history:
        if not began and (after is None or event.id <= after):
            stream.feed(event)
            continue
        if not began:
            began = True
            text.add(_begin(stream))
        if stream.done:
            break
        if piece := text.add(stream.emit(event)):
            yield piece
    yield text.rest() if began else _begin(stream)


async def from_turn_start(stream: TurnStream[Item], history: History) -> Opening:
    """The latest turn from its first chunk; when it has ended, the next one to begin."""
    start = await latest_turn_start(history)
    text = _Pieces()
    async for event in history:
        if start is None or event.id < start:
            stream.feed(event)
        elif piece := text.add(stream.emit(event)):
            yield piece
    yield text.rest()


async def opening_of(text: str) -> Opening:
    yield text


def _begin(stream: TurnStream[Item]) -> str:
    current = stream.source.turn
    stream.follow = current.parent_id if current is not None else None
    return stream.plain(stream.view.beginning(stream.source))


async def latest_turn_start(history: History) -> str | None:
    """The id of the event where the latest turn began, or None when it has ended (or none
    began)."""
    probe = UIChunks(history.session_id)
    start = None
    async for event in history:
        made = probe.chunks(event)
        if any(chunk["type"] == "start" for chunk in made):
            start = event.id
    latest = probe.turn
    return None if latest is None or latest.done else start


# ---- the response -----------------------------------------------------------------------------


async def _live(
    runtime: Runtime, subscription: Subscription, stream: TurnStream[Item], sent: str | None
) -> AsyncIterator[str]:
    async for batch in live(subscription, runtime.settings.heartbeat_s, sent):
        if batch is None:
            yield ": heartbeat\n\n"
            continue
        text = []
        for event in batch:
            text.append(stream.emit(event))
            text.append(stream.stop_if_waiting())
            if stream.done:
                break
        if out := "".join(text):
            yield out
        if stream.done:
            return
    # closed: the client reconnects with its Last-Event-ID


async def _respond(
    runtime: Runtime,
    subscription: Subscription,
    stream: TurnStream[Item],
    opening: Opening,
    sent: str | None,
    client: str,
) -> AsyncGenerator[str, None]:
    try:
        with watching_session(
            runtime, subscription, stream.session_id, client, stream.view.transport
        ):
            async for text in opening:
                if text:
                    yield text
            if not stream.done:
                if stop := stream.stop_if_waiting():
                    yield stop
                else:
                    async for text in _live(runtime, subscription, stream, sent):
                        yield text
            yield stream.view.closing()
    finally:
        subscription.close()


def respond(
    runtime: Runtime,
    subscription: Subscription,
    stream: TurnStream[Item],
    opening: Opening | str,
    sent: str | None,
    client: str,
) -> SentStream:
    """Send ``opening`` (made while it is sent: a long turn is never one string), then the
    live events after ``sent`` until the turn ends or waits."""
    if isinstance(opening, str):
        opening = opening_of(opening)
    return SentStream(
        _respond(runtime, subscription, stream, opening, sent, client),
        subscription,
        headers={**STREAM_HEADERS, **stream.view.headers},
    )
