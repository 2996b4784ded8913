"""A streamed request body taken in the connection's read callback: for a request body
what ``chunk_writer`` (pushed.py) is for a response.

A route that reads a long body as it arrives (ingest: one token a chunk) awaits
``receive`` for each chunk, and each chunk wakes the request's task, a few coroutine
frames deep, through uvicorn's asyncio.Event and a future. Under uvicorn's HTTP/1.1
servers (httptools or h11), ``read_inline(receive, take)`` has the read callback hand each
chunk to ``take`` instead, while the task waits in ``receive``: ``take`` does what it can
at once and returns whether the task must wake (it left the task something only a task
can do: await, raise). ``receive`` then returns whatever came after the chunks taken (an empty
body when nothing did). What arrives while the task is busy waits in ``receive`` as
usual, held to uvicorn's flow control. The body's end, the client's going and every
other server take the usual way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

from starlette.types import Receive

Take = Callable[[bytes], bool]
_CYCLE_FIELDS = ("body", "more_body", "disconnected", "response_complete", "flow")


class InlineLane(asyncio.Event):
    """uvicorn's per-request event (set by the read callback for every chunk, by the end
    of the body and by the client's going), taking body chunks itself while it is awaited.
    ``take`` must not raise: it is called inside the HTTP parser's callback."""

    def __init__(self, cycle: Any, take: Take) -> None:
        super().__init__()
        self._cycle = cycle
        self._take: Take | None = take
        self._awaited = False

    async def wait(self) -> Literal[True]:
        self._awaited = True
        try:
            return await super().wait()
        finally:
            self._awaited = False

    def set(self) -> None:
        cycle = self._cycle
        if (
            self._take is not None
            and self._awaited
            and not self.is_set()
            and cycle.body
            and cycle.more_body
            and not cycle.disconnected
            and not cycle.response_complete
        ):
            chunk = bytes(cycle.body)
            cycle.body = type(cycle.body)()  # httptools' is a bytearray, h11's bytes
            if not self._take(chunk):
                # a chunk past uvicorn's high-water mark paused reading, which only
                # receive resumes: the task is not woken, so resume it here
                cycle.flow.resume_reading()
                return
        super().set()

    def stop(self) -> None:
        """Every chunk from now on through ``receive``."""
        self._take = None


def read_inline(receive: Receive, take: Take) -> InlineLane | None:
    """The lane, installed on uvicorn's request cycle behind ``receive``; None (nothing
    installed) for any other server or a ``receive`` some middleware wraps."""
    cycle: Any = getattr(receive, "__self__", None)
    event = getattr(cycle, "message_event", None)
    if type(event) is not asyncio.Event or not all(hasattr(cycle, n) for n in _CYCLE_FIELDS):
        return None
    lane = InlineLane(cycle, take)
    if event.is_set():  # a chunk not yet received: receive returns it at once
        asyncio.Event.set(lane)
    cycle.message_event = lane
    return lane
