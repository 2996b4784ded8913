"""The one stream cursor: events after a point, from the log a page at a time, then live.

Every transport that serves the event log (``/event``, part frames, the hub over
Socket.IO and ``/ws``, the AI SDK and AG-UI turn streams) reads it through here:

- a cursor is ``<event id>`` or ``<event id>:<n>`` (the n-th item a transport made from
  that event), parsed and formatted here only;
- history comes from the store a page at a time (REPLAY_PAGE, SESSION_PAGE events): a
  session of 90,000 events is never one list in memory, and the event loop gets a turn
  between pages;
- live events follow with no gap and no repeat: the subscription is opened before the
  log is read, and anything already sent is skipped by its place in the log (an event
  announced while the store took no write has none: it always passes, and no cursor
  stands on it);
- a heartbeat goes out when nothing else has for the configured time;
- a stream counts against its client's quota while it is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass

from partwire import metrics
from partwire.access import Actor, acting
from partwire.bus import Subscription
from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.server.authorize import ends_when_revoked
from partwire.storage.base import EventLogGap, Store

REPLAY_PAGE = 500  # logged events framed as stored (GET /event): cheap, so pages are large
SESSION_PAGE = 100  # parsed and folded by an adapter: smaller, so other requests go between
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def parse_cursor(cursor: str) -> tuple[str, int | None]:
    """``evt_…:n`` → (event id, n); a bare event id means all of its items were seen."""
    event_id, _, index = cursor.partition(":")
    return event_id, int(index) if index.isdigit() else None


def item_id(event: Event, n: int) -> str | None:
    """The cursor of the n-th item made from ``event`` (None: it has no place in the log)."""
    return f"{event.id}:{n}" if event.in_log else None


async def session_events(
    store: Store,
    session_id: str | Sequence[str],
    types: Sequence[str],
    *,
    through: str,
    after: str | None = None,
) -> AsyncIterator[Event]:
    """The session's (or sessions') logged events of ``types`` after ``after`` (None: from
    the start) up to ``through``, oldest first, a page at a time (EventLogGap as the store's)."""
    wanted = list(types)
    while True:
        page = await store.session_page(
            session_id, wanted, after=after, through=through, limit=SESSION_PAGE
        )
        for event in page:
            yield event
        if len(page) < SESSION_PAGE:
            return
        after = page[-1].id
        await asyncio.sleep(0)  # other requests go on between pages


@dataclass(frozen=True)
class Resumed:
    """One step of a session's history for a client resuming at a cursor: fold ``event``
    into the adapter, then send its items from ``send_from`` on (None: send none). The
    last step has no event: ``place`` is where live goes on from."""

    event: Event | None
    send_from: int | None
    place: str


async def resume_session(
    store: Store,
    session_id: str,
    *,
    through: str,
    seen: int | None,
    fold_types: Sequence[str],
    send_types: Sequence[str],
    send_all: bool = False,
    family: Sequence[str] = (),
    newest: str | None = None,
) -> AsyncIterator[Resumed]:
    """The session from its start: events up to ``through`` are folded (so an adapter's
    numbering and state match what the client has), and sent only with ``send_all``; of
    the event at ``through`` the items after ``seen`` are sent; every event after it up to
    the newest is sent whole. EventLogGap when the log no longer holds the session's start
    (or the store's own gap). ``family``: other sessions whose events go with it (its
    sub-agents'), in log order; ``newest``: where the history ends (default: the log's
    newest event now)."""
    newest = newest or await store.last_event_id() or through
    sessions = [session_id, *family] if family else session_id
    started = False
    async for event in session_events(store, sessions, fold_types, through=through):
        started = started or (event.type == "session.created" and event.session_id == session_id)
        if not started:
            break
        if send_all:
            yield Resumed(event, 0, through)
        elif event.id == through and seen is not None:
            yield Resumed(event, seen + 1, through)
        else:
            yield Resumed(event, None, through)
    if not started:
        raise EventLogGap(None)  # the session's start was pruned: its folds are unknown
    async for event in session_events(store, sessions, send_types, through=newest, after=through):
        yield Resumed(event, 0, event.id)
    yield Resumed(None, None, newest)


async def log_pages(store: Store, after: str) -> AsyncIterator[list[Event]]:
    """Every logged event after ``after``, as stored (unparsed: for framing), a page at a
    time (EventLogGap as the store's)."""
    started = time.perf_counter()
    while True:
        page = await store.log_page(after, REPLAY_PAGE)
        if page:
            yield page
            after = page[-1].id
        if len(page) < REPLAY_PAGE:
            metrics.count_replay(time.perf_counter() - started)
            return


def unsent(batch: list[Event], sent: str | None) -> tuple[list[Event], str | None]:
    """The events of ``batch`` after ``sent`` (events announced unlogged always are), and
    the place in the log to go on from."""
    fresh: list[Event] = []
    place = sent
    for event in batch:
        if not event.in_log:
            fresh.append(event)
        elif sent is None or event.id > sent:
            fresh.append(event)
            place = event.id  # the last logged event taken
    return fresh, place


async def live(
    subscription: Subscription, heartbeat_s: float, sent: str | None
) -> AsyncIterator[list[Event] | None]:
    """Live events not sent yet, a batch at a time; None when a heartbeat is due. Ends when
    the subscription closes (``subscription.overflowed``: the client read too slowly)."""
    async for batch in subscription.batches(heartbeat_s):
        if batch is None:
            yield None
            continue
        fresh, sent = unsent(batch, sent)
        if fresh:
            yield fresh


@contextlib.contextmanager
def counted(
    runtime: Runtime,
    client: str | None,
    transport: str,
    watch: str | None = None,
    actor: Actor | None = None,
) -> Iterator[None]:
    """A stream of ``client``'s on ``transport``, counted against its quota while it is
    open (the route checked the quota before answering) and in GET /metrics; with
    ``watch``, one of that session's watchers (``session.presence``) meanwhile, as the
    request's actor (``partwire.access.acting``) unless ``actor`` says."""
    with contextlib.ExitStack() as stack:
        who = actor or acting.get()
        if watch is not None and who is not None:
            name, kind = who.principal.name, who.client
            stack.enter_context(runtime.presence.watching(watch, name, kind, transport))
        if client is None:
            yield
            return
        runtime.quotas.open_stream(client, transport)
        try:
            yield
        finally:
            runtime.quotas.close_stream(client, transport)


@contextlib.contextmanager
def watching_session(
    runtime: Runtime, subscription: Subscription, session_id: str, client: str, transport: str
) -> Iterator[None]:
    """A stream of one session while it is open: ``counted`` as one of its watchers, and
    ended (``subscription`` closed) once the caller may no longer read the session."""
    with (
        counted(runtime, client, transport, session_id),
        ends_when_revoked(runtime, subscription, session_id),
    ):
        yield
