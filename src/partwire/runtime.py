"""The composition root: settings, bus, store, status, loop and sessions, wired once."""

from __future__ import annotations

from dataclasses import dataclass

from partwire.bus import Bus
from partwire.config import Settings
from partwire.providers.registry import load_builtin_providers
from partwire.session.loop import SessionLoop
from partwire.session.sessions import Sessions
from partwire.session.status import StatusTracker
from partwire.storage.sqlite import SqliteStore
from partwire.tools.registry import load_builtin_tools


@dataclass
class Runtime:
    settings: Settings
    bus: Bus
    store: SqliteStore
    status: StatusTracker
    loop: SessionLoop
    sessions: Sessions

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        load_builtin_providers()
        load_builtin_tools()
        bus = Bus()
        store = SqliteStore(settings.database_path, bus, retain_events=settings.event_log_retain)
        status = StatusTracker(store)
        loop = SessionLoop(store, status, settings)
        return cls(settings, bus, store, status, loop, Sessions(store, loop, settings))

    async def start(self) -> None:
        await self.store.open()

    async def stop(self) -> None:
        await self.loop.shutdown()
        await self.store.close()
        self.bus.close()
