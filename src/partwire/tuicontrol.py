"""The TUI control channel (opencode's ``/tui/control``): a request for an attached TUI
waits in a queue until the TUI long-polls ``GET /tui/control/next`` for it, and the call
that made it waits until the TUI posts its answer to ``/tui/control/response``. Answers
settle the requests in the order the TUI took them."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any


class TuiControl:
    def __init__(self) -> None:
        self._requests: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[Any]]] = asyncio.Queue()
        self._taken: deque[asyncio.Future[Any]] = deque()

    async def call(self, path: str, body: Any = None) -> Any:
        """Ask the TUI to act on ``path`` and return what it answers."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._requests.put_nowait(({"path": path, "body": body}, answer))
        return await answer

    async def next(self) -> dict[str, Any]:
        """The oldest request no TUI has taken yet (waits for one)."""
        while True:
            request, answer = await self._requests.get()
            if not answer.done():  # its caller may have given up
                self._taken.append(answer)
                return request

    def respond(self, answer: Any) -> bool:
        """Settle the oldest request the TUI took; whether one was waiting."""
        while self._taken:
            waiting = self._taken.popleft()
            if not waiting.done():
                waiting.set_result(answer)
                return True
        return False
