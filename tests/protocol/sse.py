"""Reading a protocol's SSE response in tests: (id, JSON data) per message."""

from __future__ import annotations

import json
from typing import Any

import httpx

Message = tuple[str | None, dict[str, Any]]


async def read_sse(response: httpx.Response, *, done: str | None = None) -> list[Message]:
    """Every message's id (None when it has none) and data, to the end of the response,
    or to the ``done`` data line (which must come: the AI SDK's ``[DONE]``)."""
    out: list[Message] = []
    event_id: str | None = None
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            if done is not None and line[6:] == done:
                return out
            out.append((event_id, json.loads(line[6:])))
            event_id = None
    assert done is None, f"the stream ended without {done}"
    return out
