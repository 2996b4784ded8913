"""Limits on what one client address may hold open or create (HTTP 429 past them).

- At most :data:`MAX_STREAMS_PER_CLIENT` event streams open at once per address.
- With a password set (the server is reachable by others), at most
  :data:`MAX_SESSIONS_PER_MINUTE` sessions created per address per minute.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque

from partwire.errors import TooManyRequestsError

MAX_STREAMS_PER_CLIENT = 256  # generous: behind a proxy every client shares one address
MAX_SESSIONS_PER_MINUTE = 120


class Quotas:
    def __init__(self) -> None:
        self._streams: dict[str, int] = defaultdict(int)
        self._created: dict[str, deque[float]] = defaultdict(deque)
        self.transports: dict[str, int] = defaultdict(int)  # streams open, by transport

    def check_stream(self, client: str) -> None:
        """429 when ``client`` holds the most streams it may. Checked before the response
        starts; a stream counts only while it runs, so one that never ran never leaks."""
        if self._streams.get(client, 0) >= MAX_STREAMS_PER_CLIENT:
            raise TooManyRequestsError(
                f"{client} already has {MAX_STREAMS_PER_CLIENT} event streams open; close one first"
            )

    def open_stream(self, client: str, transport: str) -> None:
        self._streams[client] += 1
        self.transports[transport] += 1

    def close_stream(self, client: str, transport: str) -> None:
        self._streams[client] -= 1
        if self._streams[client] <= 0:
            del self._streams[client]
        self.transports[transport] -= 1

    def create_session(self, client: str) -> None:
        now = time.monotonic()
        recent = self._created[client]
        while recent and now - recent[0] > 60:
            recent.popleft()
        if len(recent) >= MAX_SESSIONS_PER_MINUTE:
            raise TooManyRequestsError(
                f"{client} created {MAX_SESSIONS_PER_MINUTE} sessions in the last minute; "
                "wait a little"
            )
        recent.append(now)
