"""Reading files through the user's editor: an editor attached to a session (``partwire
acp`` when the editor offers ``fs/read_text_file``) answers a tool's reads with the text
it has, unsaved changes included.

``open``/``close`` attach and detach an editor (counted: two prompts may overlap). A
read publishes ``editor.read`` (not logged: it only means something while the editor
is there) and waits for ``reply``; an editor that says nothing within ``READ_TIMEOUT_S``,
or answers with an error, leaves the read to the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from pathlib import Path

from partwire import ids
from partwire.bus import Bus
from partwire.errors import NotFoundError
from partwire.schema.event import EditorRead, EditorReadProps

READ_TIMEOUT_S = 10.0
log = logging.getLogger(__name__)


class EditorFiles:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._attached: Counter[str] = Counter()
        self._pending: dict[str, asyncio.Future[str | None]] = {}
        self._sessions: dict[str, str] = {}  # a pending read's session

    def session_of(self, request_id: str) -> str | None:
        return self._sessions.get(request_id)

    def open(self, session_id: str) -> None:
        self._attached[session_id] += 1

    def close(self, session_id: str) -> None:
        self._attached[session_id] -= 1
        if self._attached[session_id] <= 0:
            del self._attached[session_id]

    def attached(self, session_id: str) -> bool:
        return self._attached[session_id] > 0

    async def text(self, session_id: str, path: Path) -> str | None:
        """The editor's text of ``path``, or None: no editor, it failed, or it is slow."""
        if not self.attached(session_id):
            return None
        request = EditorReadProps(id=ids.ascending("edr"), session_id=session_id, path=str(path))
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = future
        self._sessions[request.id] = session_id
        try:
            self.bus.publish(EditorRead(request).with_id(ids.event_id()))
            async with asyncio.timeout(READ_TIMEOUT_S):
                return await future
        except TimeoutError:
            log.warning("the editor did not answer a read of %s: read from disk", path)
            return None
        finally:
            self._pending.pop(request.id, None)
            self._sessions.pop(request.id, None)

    def reply(self, request_id: str, content: str | None) -> None:
        """The editor's answer: the text, or None when it could not read the file."""
        future = self._pending.get(request_id)
        if future is None:
            raise NotFoundError("Editor read", request_id)
        with contextlib.suppress(asyncio.InvalidStateError):
            future.set_result(content)
