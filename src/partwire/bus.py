"""The in-process event bus: publish, subscribe(type), subscribe_all.

Publishing is synchronous and never blocks. Each subscriber has a bounded
queue: once it is half full, a delta that continues the previous queued delta
of the same part is merged into it (the client still gets the same text, in
fewer events, up to MAX_MERGED_CHARS per merged event); if the queue fills
anyway, the subscriber is marked ``overflowed`` and closed: its transport tells
the client to reload, or the client resumes from the event log with
Last-Event-ID. Memory stays bounded.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable

from partwire.schema.event import Event, PartDeltaProps, SessionInfo

DEFAULT_QUEUE_LIMIT = 10_000
MAX_MERGED_CHARS = 1_000_000  # past this a lagging client is sent to reload instead


class _Merged:
    """Consecutive deltas of one part and field, kept as chunks: O(1) per merge.

    The single event they become is built once, when it is taken off the queue.
    """

    def __init__(self, first: Event) -> None:
        props = first.properties
        assert isinstance(props, PartDeltaProps)
        self.props = props
        self.chunks = [props.delta]
        self.size = len(props.delta)
        self.last = first

    def absorbs(self, event: Event) -> bool:
        props = event.properties
        if not isinstance(props, PartDeltaProps):
            return False
        same = (props.part_id, props.field) == (self.props.part_id, self.props.field)
        if not same or self.size + len(props.delta) > MAX_MERGED_CHARS:
            return False
        self.chunks.append(props.delta)
        self.size += len(props.delta)
        self.last = event
        return True

    def event(self) -> Event:
        merged = self.props.model_copy(update={"delta": "".join(self.chunks)})
        return Event(self.last.id, self.last.type, merged)


class Subscription:
    """A queue of events for one consumer; iterate it or call :meth:`get`."""

    def __init__(
        self, bus: Bus, types: frozenset[str] | None, limit: int, session_id: str | None = None
    ) -> None:
        self._bus = bus
        self.types = types  # None: every type
        self.session_id = session_id  # None: every session's events (and sessionless ones)
        # with_children: the sessions it takes (session_id and those created under it)
        self.family: set[str] | None = None
        self._limit = limit
        self._items: deque[Event | _Merged] = deque()
        self._waiter: asyncio.Future[None] | None = None
        # the consumer's loop, kept: asyncio.get_running_loop() costs a getpid() on 3.11
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle_due = False  # the heartbeat timer found the stream quiet
        # push_to: what arrives calls this back at the loop's next turn instead of waking
        self._pushed: Callable[[], None] | None = None
        self._push_context: contextvars.Context | None = None
        self._push_due = False
        self.overflowed = False
        self.closed = False
        self.merged = 0
        self.peak = 0

    def takes_type(self, event_type: str) -> bool:
        return self.types is None or event_type in self.types

    def offer(self, event: Event) -> None:
        if self.closed:
            return
        items = self._items
        if len(items) >= self._limit // 2 and items and event.type == "message.part.delta":
            tail = items[-1]
            if isinstance(tail, Event) and tail.type == "message.part.delta":
                tail = items[-1] = _Merged(tail)
            if isinstance(tail, _Merged) and tail.absorbs(event):
                self.merged += 1
                return
        if len(items) >= self._limit:
            self.overflowed = True
            self.close()
            return
        items.append(event)
        if len(items) > self.peak:
            self.peak = len(items)
        self._wake()

    def push_to(
        self, pushed: Callable[[], None] | None, context: contextvars.Context | None
    ) -> None:
        """From now on (until called with None) an arrival or the close calls ``pushed``,
        in ``context``, at the loop's next turn, once for everything that arrived by then
        (one commit's events together), instead of waking a waiter; ``pushed`` drains."""
        self._pushed, self._push_context = pushed, context
        if self._loop is None:
            self._loop = asyncio.get_running_loop()

    def _push(self) -> None:
        self._push_due = False
        if self._pushed is not None:
            self._pushed()

    def push_soon(self) -> None:
        assert self._loop is not None
        self._loop.call_soon(self._push, context=self._push_context)

    def push_now(self) -> None:
        """The callback ``push_to`` asked for, run now, in its context (Bus.publish_many)."""
        if self._push_context is None:
            self._push()
        else:
            self._push_context.run(self._push)

    def _wake(self) -> None:
        if self._pushed is not None:
            if not self._push_due:
                self._push_due = True
                due = self._bus.pushing
                if due is not None:
                    due.append(self)
                else:
                    self.push_soon()
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def get(self) -> Event | None:
        """The next event, or None once the subscription is closed and drained."""
        while not self._items:
            if self.closed:
                return None
            await self._wait()
        item = self._items.popleft()
        return item.event() if isinstance(item, _Merged) else item

    async def batches(self, idle_s: float) -> AsyncIterator[list[Event] | None]:
        """What has arrived, a list at a time; None after ``idle_s`` without anything (a
        stream sends its heartbeat then). Ends once the subscription is closed and drained.

        One timer watches for quiet: it is re-armed when it fires, not at every wait, so a
        streamed delta costs no timer of its own."""
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        timer: asyncio.TimerHandle | None = None

        def beat() -> None:
            nonlocal timer
            due = quiet_since + idle_s
            if loop.time() >= due:
                self._idle_due = True
                self._wake()
                due = loop.time() + idle_s
            timer = loop.call_at(due, beat)

        timer = loop.call_at(quiet_since + idle_s, beat)
        try:
            while True:
                if self._items:
                    quiet_since = loop.time()
                    yield self.drain()
                elif self.closed:
                    return
                elif self._idle_due:
                    self._idle_due = False
                    quiet_since = loop.time()
                    yield None
                else:
                    await self._wait()
        finally:
            if timer is not None:
                timer.cancel()

    def drain(self) -> list[Event]:
        """Events already queued, without waiting."""
        events = [i.event() if isinstance(i, _Merged) else i for i in self._items]
        self._items.clear()
        return events

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._wake()
            self._bus.unsubscribe(self)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while (event := await self.get()) is not None:
            yield event


class Bus:
    """Subscriptions to every session's events are offered each event; a subscription to
    one session's (``session_id=``) only that session's: a server with a stream open for
    each of 150 sessions wakes one of them per delta, not all 150."""

    def __init__(self, queue_limit: int = DEFAULT_QUEUE_LIMIT) -> None:
        self._subscribers: list[Subscription] = []
        self._everywhere: list[Subscription] = []
        self._by_session: dict[str, list[Subscription]] = {}
        self._queue_limit = queue_limit
        # while publish_many runs: the pushed subscriptions it reached, to call back at its end
        self.pushing: list[Subscription] | None = None

    def subscribe(
        self, *types: str, session_id: str | None = None, with_children: bool = False
    ) -> Subscription:
        """Events of these types; with ``session_id``, only those whose properties name
        that session (the session-scoped transports drop the others anyway), and with
        ``with_children`` also those of every session created under it (and under those),
        taken from the moment it is created: its first event is never missed."""
        subscription = self._add(frozenset(types), session_id)
        if with_children and session_id is not None:
            subscription.family = {session_id}
        return subscription

    def include(self, subscription: Subscription, session_id: str) -> None:
        """Offer ``subscription`` (one with children) the events of ``session_id`` too."""
        family = subscription.family
        if family is None or session_id in family or subscription.closed:
            return
        family.add(session_id)
        self._by_session.setdefault(session_id, []).append(subscription)

    def subscribe_all(self) -> Subscription:
        return self._add(None, None)

    def _add(self, types: frozenset[str] | None, session_id: str | None) -> Subscription:
        subscription = Subscription(self, types, self._queue_limit, session_id)
        self._subscribers.append(subscription)
        if session_id is None:
            self._everywhere.append(subscription)
        else:
            self._by_session.setdefault(session_id, []).append(subscription)
        return subscription

    def takes(self, event_type: str, session_id: str | None) -> bool:
        """Whether some subscriber would take an event of this type (and of this session;
        None: not known, any session's subscriber counts)."""
        if self._everywhere and any(s.takes_type(event_type) for s in self._everywhere):
            return True
        if session_id is not None:  # another server's delta, say, for a session not watched
            scoped: list[Subscription] | None = self._by_session.get(session_id)
            if scoped is None:
                return False
        else:
            scoped = [s for group in self._by_session.values() for s in group]
        return any(s.takes_type(event_type) for s in scoped)

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription not in self._subscribers:
            return
        self._subscribers.remove(subscription)
        if subscription.session_id is None:
            self._everywhere.remove(subscription)
            return
        for session_id in subscription.family or {subscription.session_id}:
            group = self._by_session[session_id]
            group.remove(subscription)
            if not group:
                del self._by_session[session_id]

    def _adopt(self, event: Event) -> None:
        """A session created under one a family subscription takes joins that family."""
        info = event.properties.info if isinstance(event.properties, SessionInfo) else None
        parent = info.parent_id if info is not None else None
        if parent is None:
            return
        for subscription in tuple(self._by_session.get(parent, ())):
            if subscription.family is not None:
                self.include(subscription, info.id)  # type: ignore[union-attr]

    def publish(self, event: Event) -> None:
        if event.type == "session.created" and self._by_session:
            self._adopt(event)
        session_id = event.session_id if self._by_session else None
        scoped = self._by_session.get(session_id, []) if session_id is not None else []
        for subscriber in (*self._everywhere, *scoped):  # a copy: offer() may unsubscribe
            if subscriber.takes_type(event.type):
                subscriber.offer(event)

    def publish_many(self, events: Iterable[Event]) -> None:
        """Publish ``events`` (one commit's); the subscriptions they reach that are pushed
        to (``push_to``) are called back once they are all offered, before this returns:
        a commit's events go out in its own turn of the loop, not the next one."""
        if self.pushing is not None:  # published from a push: the pushes under way take them
            for event in events:
                self.publish(event)
            return
        due: list[Subscription] = []
        self.pushing = due
        done = 0
        try:
            for event in events:
                self.publish(event)
            while done < len(due):  # a push may publish, and so add to ``due``
                done += 1
                due[done - 1].push_now()
        finally:
            self.pushing = None
            for subscription in due[done:]:  # only if an offer raised: pushed the usual way
                subscription.push_soon()

    def close(self) -> None:
        for subscriber in tuple(self._subscribers):
            subscriber.close()
