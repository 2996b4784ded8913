"""The composition root: settings, bus, store, status, loop and sessions, wired once."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

from partwire import ids
from partwire.bus import Bus
from partwire.config import Settings
from partwire.permission import Permissions
from partwire.providers.registry import Closer, load_builtin_providers
from partwire.question import Questions
from partwire.schema.event import InstanceDisposedProps, ServerInstanceDisposed
from partwire.session.loop import SessionLoop
from partwire.session.revert import Reverts
from partwire.session.sessions import Sessions
from partwire.session.snapshot import Snapshots
from partwire.session.status import StatusTracker
from partwire.session.subtask import SubtaskRunner
from partwire.session.toolhost import ToolHost
from partwire.storage.sqlite import SqliteStore
from partwire.tools.registry import load_builtin_tools


@dataclass
class Runtime:
    settings: Settings
    bus: Bus
    store: SqliteStore
    status: StatusTracker
    permissions: Permissions
    questions: Questions
    loop: SessionLoop
    sessions: Sessions
    disposed: bool = False
    closers: list[Closer] = field(default_factory=list)

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        closers = load_builtin_providers(settings)
        load_builtin_tools()
        bus = Bus(queue_limit=settings.subscriber_queue)
        store = SqliteStore(settings.database_path, bus, retain_events=settings.event_log_retain)
        status = StatusTracker(store)
        permissions, questions = Permissions(store), Questions(store)
        host = ToolHost(store, permissions, questions, settings)
        reverts = Reverts(store, Snapshots(settings.project_dir, settings.data_dir))
        loop = SessionLoop(store, status, settings, host, reverts)
        sessions = Sessions(store, loop, settings)
        host.subtasks = SubtaskRunner(sessions, loop, bus)
        return cls(
            settings, bus, store, status, permissions, questions, loop, sessions, closers=closers
        )

    async def start(self) -> None:
        await self.store.open()
        # Everything loaded so far lives as long as the process: keep it out of the
        # cyclic collector's scans, whose full passes otherwise show up as latency spikes.
        gc.freeze()

    async def reconfigure(self) -> None:
        """Re-read the configuration and re-register providers (after PATCH /config)."""
        settings = self.settings.reload()
        for close in self.closers:
            await close()
        self.closers = load_builtin_providers(settings)
        self.settings = settings
        self.loop.settings = settings
        self.loop.host.settings = settings
        self.sessions.settings = settings

    def announce_shutdown(self) -> None:
        """Tell every subscriber the instance is going away, then end their streams."""
        if self.disposed:
            return
        self.disposed = True
        props = InstanceDisposedProps(directory=str(self.settings.project_dir))
        self.bus.publish(ServerInstanceDisposed(props).with_id(ids.event_id()))
        self.bus.close()

    async def stop(self) -> None:
        self.announce_shutdown()
        await self.loop.shutdown()
        for close in self.closers:
            await close()
        await self.store.close()
