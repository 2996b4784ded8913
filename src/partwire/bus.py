"""The in-process event bus: publish, subscribe(type), subscribe_all.

Publishing is synchronous and never blocks: each subscriber has a bounded queue.
A subscriber that falls too far behind is marked ``overflowed`` and closed; its
transport resumes from the event log (Last-Event-ID), so nothing is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

from partwire.schema.event import Event

DEFAULT_QUEUE_LIMIT = 50_000


class Subscription:
    """A queue of events for one consumer; iterate it or call :meth:`get`."""

    def __init__(self, bus: Bus, types: frozenset[str] | None, limit: int) -> None:
        self._bus = bus
        self._types = types
        self._limit = limit
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.overflowed = False
        self.closed = False

    def wants(self, event: Event) -> bool:
        return self._types is None or event.type in self._types

    def offer(self, event: Event) -> None:
        if self.closed:
            return
        if self._queue.qsize() >= self._limit:
            self.overflowed = True
            self.close()
            return
        self._queue.put_nowait(event)

    async def get(self) -> Event | None:
        """The next event, or None once the subscription is closed."""
        if self.closed and self._queue.empty():
            return None
        return await self._queue.get()

    def drain(self) -> list[Event]:
        """Events already queued, without waiting (stops at the close marker)."""
        events: list[Event] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:
                self._queue.put_nowait(None)
                break
            events.append(item)
        return events

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)
            self._bus.unsubscribe(self)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while (event := await self.get()) is not None:
            yield event


class Bus:
    def __init__(self, queue_limit: int = DEFAULT_QUEUE_LIMIT) -> None:
        self._subscribers: list[Subscription] = []
        self._queue_limit = queue_limit

    def subscribe(self, *types: str) -> Subscription:
        return self._add(frozenset(types))

    def subscribe_all(self) -> Subscription:
        return self._add(None)

    def _add(self, types: frozenset[str] | None) -> Subscription:
        subscription = Subscription(self, types, self._queue_limit)
        self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    def publish(self, event: Event) -> None:
        for subscriber in tuple(self._subscribers):
            if subscriber.wants(event):
                subscriber.offer(event)

    def publish_many(self, events: Iterable[Event]) -> None:
        for event in events:
            self.publish(event)

    def close(self) -> None:
        for subscriber in tuple(self._subscribers):
            subscriber.close()
