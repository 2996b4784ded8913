"""Who follows which session, on this server: each stream that follows one session (the
hub, part frames, the AI SDK and AG-UI, v2's session events, ``/event?watch=``) joins
while it lasts, and every change is a ``session.presence`` event naming all of the
session's watchers here; a GET /event opens with the current ones. Several servers each
tell of their own (``instanceID``)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

from partwire import ids
from partwire.bus import Bus
from partwire.clock import now_ms
from partwire.schema.event import Event, SessionPresence, SessionPresenceProps, Watcher


class Presence:
    def __init__(self, bus: Bus, instance_id: str) -> None:
        self.bus = bus
        self.instance_id = instance_id
        self._watching: dict[str, dict[int, Watcher]] = {}
        self._keys = itertools.count()

    def watchers(self, session_id: str) -> list[Watcher]:
        return list(self._watching.get(session_id, {}).values())

    @contextlib.contextmanager
    def watching(self, session_id: str, user: str, client: str, transport: str) -> Iterator[None]:
        """Count this stream as watching the session while the block runs."""
        key = next(self._keys)
        watcher = Watcher(user=user, client=client, transport=transport, since=now_ms())
        self._watching.setdefault(session_id, {})[key] = watcher
        self._tell(session_id)
        try:
            yield
        finally:
            held = self._watching.get(session_id, {})
            held.pop(key, None)
            if not held:
                self._watching.pop(session_id, None)
            self._tell(session_id)

    def current(self) -> list[Event]:
        """A ``session.presence`` event for each session watched here now. They are not
        logged, so a stream that opens later learns of the watchers from these (sent in
        its opening), not only from the next change."""
        return [self._presence(session_id) for session_id in self._watching]

    def _tell(self, session_id: str) -> None:
        self.bus.publish(self._presence(session_id))

    def _presence(self, session_id: str) -> Event:
        props = SessionPresenceProps(
            session_id=session_id, instance_id=self.instance_id, watchers=self.watchers(session_id)
        )
        return SessionPresence(props).with_id(ids.event_id())
