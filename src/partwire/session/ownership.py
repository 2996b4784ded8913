"""Which server runs a session's loop, when several share one database.

Exactly one server runs a session at a time: it holds the session's lease, renews it
while the run goes on and gives it back when the run ends. A prompt stored by another
server reaches the owner as the user message's event (every server sees every event):
the owner's run takes it up, or, with no run going, whichever server takes the lease
answers it. A server that dies stops renewing; within a lease's length another server
takes the lease, finishes what the dead one left (as a restart's recovery would) and
answers any prompt still waiting. A prompt stored without a reply (``noReply``) is
marked in the database before it is stored, so that no server answers it.

With one server (the SQLite file) there are no leases: every session is ours.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from partwire.permission import Forward

if TYPE_CHECKING:
    from partwire.bus import Bus

log = logging.getLogger(__name__)

RENEW_EVERY_S = 2.0
SWEEP_EVERY_S = 1.0


class Leases(Protocol):
    async def acquire(self, session_id: str) -> bool: ...
    async def renew(self, session_ids: list[str]) -> None: ...
    async def release(self, session_id: str) -> None: ...
    async def expired(self) -> list[str]: ...
    async def mark_no_reply(self, session_id: str, message_id: str) -> None: ...
    async def no_reply(self, session_id: str) -> set[str]: ...


class Ownership:
    def __init__(self, leases: Leases | None = None, bus: Bus | None = None) -> None:
        self.leases = leases
        self.bus = bus  # where another server's answer is seen
        self.forward: Forward | None = None  # to the server that runs a session
        self.held: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def shared(self) -> bool:
        return self.leases is not None

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    async def acquire(self, session_id: str) -> bool:
        """True when this server may run the session now (it holds the lease)."""
        if self.leases is None:
            return True
        async with self._lock(session_id):
            if session_id in self.held:
                return True
            if await self.leases.acquire(session_id):
                self.held.add(session_id)
                return True
            return False

    async def mark_no_reply(self, session_id: str, message_id: str) -> None:
        """The user message will be stored as context only: no server may answer it."""
        if self.leases is not None:
            await self.leases.mark_no_reply(session_id, message_id)

    async def no_reply(self, session_id: str) -> set[str]:
        """The session's user messages that any server stored as context only."""
        return await self.leases.no_reply(session_id) if self.leases is not None else set()

    async def release(self, session_id: str, still_needed: Callable[[], bool]) -> None:
        """Give the lease back, unless ``still_needed()`` says a new run took it meanwhile."""
        if self.leases is None:
            return
        async with self._lock(session_id):
            if session_id not in self.held or still_needed():
                return
            self.held.discard(session_id)
            await self.leases.release(session_id)
        self._locks.pop(session_id, None)

    async def _take_over(
        self, session_id: str, take_over: Callable[[str], Awaitable[None]]
    ) -> None:
        try:
            await take_over(session_id)
        except Exception:  # e.g. the session was deleted meanwhile: do not keep its lease
            log.exception("session %s: taking it over failed", session_id)
            await self.release(session_id, lambda: False)

    async def keep(self, take_over: Callable[[str], Awaitable[None]]) -> None:
        """Renew the leases held, and take over the sessions of servers that are gone
        (``take_over`` is called holding the session's lease). Runs until cancelled."""
        assert self.leases is not None
        renewed = 0.0
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(SWEEP_EVERY_S)
            try:
                if loop.time() - renewed >= RENEW_EVERY_S:
                    await self.leases.renew(sorted(self.held))
                    renewed = loop.time()
                for session_id in await self.leases.expired():
                    if session_id not in self.held and await self.acquire(session_id):
                        log.info("session %s: its server is gone; taking it over", session_id)
                        await self._take_over(session_id, take_over)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("session leases: renewal or take-over failed; trying again")
