"""Per-session status (idle | busy | retry), kept in memory and published as events."""

from __future__ import annotations

from partwire.errors import StorageError
from partwire.schema.event import (
    Event,
    SessionIdle,
    SessionRef,
    SessionStatusChanged,
    SessionStatusProps,
)
from partwire.schema.session import SessionStatus, StatusBusy, StatusIdle
from partwire.storage.base import Store


class StatusTracker:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._statuses: dict[str, SessionStatus] = {}
        # servers sharing a database: every server's statuses as the log tells them
        self._observed: dict[str, SessionStatus] = {}

    def get(self, session_id: str) -> SessionStatus:
        return self._statuses.get(session_id) or self._observed.get(session_id, StatusIdle())

    def active(self) -> dict[str, SessionStatus]:
        """Every session that is not idle (idle ones are left out, as opencode does), on
        this server or, as their events tell, on the others sharing its database."""
        return {**self._observed, **self._statuses}

    def observe(self, event: Event) -> None:
        if event.type != "session.status":
            return
        props = event.properties
        assert isinstance(props, SessionStatusProps)
        if isinstance(props.status, StatusIdle):
            self._observed.pop(props.session_id, None)
        else:
            self._observed[props.session_id] = props.status

    async def set(self, session_id: str, status: SessionStatus) -> None:
        events = [SessionStatusChanged(SessionStatusProps(session_id=session_id, status=status))]
        if isinstance(status, StatusIdle):
            self._statuses.pop(session_id, None)
            self._observed.pop(session_id, None)
            events.append(SessionIdle(SessionRef(session_id=session_id)))
        else:
            self._statuses[session_id] = status
        try:
            await self._store.publish(events)
        except StorageError:  # the store takes no write now: clients still see the status
            self._store.announce(list(events))
            raise

    async def busy(self, session_id: str) -> None:
        await self.set(session_id, StatusBusy())

    async def idle(self, session_id: str) -> None:
        await self.set(session_id, StatusIdle())
