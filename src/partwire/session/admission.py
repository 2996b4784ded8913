"""When a new answer may start: once the event loop keeps up with the streams it carries.

Starting an answer costs the loop a few milliseconds in one go (the history read, the
model and title requests, the first parts' writes), and a live stream costs it a little
per delta. While prompts arrive faster than a loaded loop can start them, every live
session's next delta waits behind the starts: on one CPU, 300 sessions prompted 5 ms
apart held their streams' p99 at 37-121 ms at the end of the ramp (bench/capacity.py).

So a start after a quiet spell (none for QUIET_S: one user's next prompt) goes ahead at
once; the others wait for a probe timer, PROBE_S away, to fire less than BUSY_TURN_S
late, which it does only while the loop's turns are short: one start a probe, in the
order they came, a session's title request after every answer waiting. The starts are
spread over the loop's slack, and the streams already running keep their pace. A start
never waits longer than LONGEST_WAIT_S however busy the loop stays, and the probe runs
only while a start waits.
"""

from __future__ import annotations

import asyncio
from collections import deque

from partwire import metrics

# a turn of the loop longer than this means the streams' deltas are already waiting
BUSY_TURN_S = 0.002
PROBE_S = 0.001
LONGEST_WAIT_S = 1.0
# a start this long after the last one goes ahead at once (one user's next prompt)
QUIET_S = 0.05


class StartGate:
    """Admits answer starts, one a probe while the loop's turns are short (see the module)."""

    def __init__(
        self,
        busy_turn_s: float = BUSY_TURN_S,
        probe_s: float = PROBE_S,
        longest_wait_s: float = LONGEST_WAIT_S,
        quiet_s: float = QUIET_S,
    ) -> None:
        self.busy_turn_s = busy_turn_s
        self.probe_s = probe_s
        self.longest_wait_s = longest_wait_s
        self.quiet_s = quiet_s
        self._last_start = float("-inf")
        self._waiting: deque[tuple[asyncio.Future[None], float]] = deque()  # answers
        self._after: deque[tuple[asyncio.Future[None], float]] = deque()  # titles: after them
        self._probe: asyncio.TimerHandle | None = None
        self._due = 0.0

    async def turn(self, *, after_answers: bool = False) -> None:
        """Return when this start may go ahead (GET /metrics: partwire_start_wait_seconds).
        ``after_answers`` (a title request): at once while nothing waits, else after every
        answer waiting, and never taking the quiet spell's pass an answer would get."""
        admitted = self.ask(after_answers=after_answers)
        if admitted is not None:
            await admitted

    def ask(self, *, after_answers: bool = False) -> asyncio.Future[None] | None:
        """As ``turn``, without a coroutine: None when the start may go at once, else the
        future the probe resolves (cancelling it gives the place up)."""
        loop = asyncio.get_running_loop()
        asked = loop.time()
        if after_answers and not self._waiting and not self._after:
            return None
        if not after_answers and not self._waiting and asked - self._last_start >= self.quiet_s:
            self._last_start = asked  # the first start in a while: nothing to wait for
            metrics.count_start_wait(0.0)
            return None
        admitted: asyncio.Future[None] = loop.create_future()
        (self._after if after_answers else self._waiting).append((admitted, asked))
        if self._probe is None:
            self._schedule(loop)
        return admitted

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due = loop.time() + self.probe_s
        self._probe = loop.call_at(self._due, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for queue in (self._waiting, self._after):
            while queue and queue[0][0].done():
                queue.popleft()  # cancelled while it waited
        queue = self._waiting or self._after
        if queue:
            admitted, since = queue[0]
            if now - self._due < self.busy_turn_s or now - since >= self.longest_wait_s:
                queue.popleft()
                admitted.set_result(None)
                self._last_start = now
                if queue is self._waiting:
                    metrics.count_start_wait(now - since)
        self._probe = None
        if self._waiting or self._after:
            self._schedule(loop)
