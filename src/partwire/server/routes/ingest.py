"""POST /session/{id}/ingest: another process's agent loop streams its message in as NDJSON.

Each line is one ingest event (schema/ingest.py). Lines are applied as they arrive, so
clients watching the session see the message live. The end of the body finishes the
message; a connection that drops first ends it as aborted; a bad line ends it with an
error and is a 400 naming the line, while everything before that line stays stored.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.requests import ClientDisconnect
from starlette.types import Receive

from partwire.errors import BuilderError
from partwire.schema.message import MessageWithParts
from partwire.server.errors import error_body
from partwire.server.inline_body import read_inline
from partwire.server.limits import (
    MAX_JSON_DEPTH,
    SURROGATE_ESCAPE,
    json_too_deep,
    lone_surrogate,
)
from partwire.server.routes.scope import runtime_of, session_project
from partwire.server.routes.session import wire

if TYPE_CHECKING:  # loaded with the first ingest, not at start-up
    from partwire.builder import StreamKind
    from partwire.schema.ingest import IngestEvent
    from partwire.session.recorder import Recorder
    from partwire.session.recording import Recording

    # a line's number and what it says: a plain delta, an event, or what is wrong with it
    Item = tuple[int, tuple[StreamKind, str] | IngestEvent | "BadLine"]

router = APIRouter(prefix="/session/{sessionID}", tags=["session"])

MAX_LINE_BYTES = 1024 * 1024
PLAIN_DELTAS: dict[object, StreamKind] = {"text-delta": "text", "reasoning-delta": "reasoning"}
DROPPED = "The ingest connection closed before the stream ended."
NDJSON_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        "description": "One ingest event per line; an optional first line of type start.",
    }
}


class BadLine(Exception):
    status = 400

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class TooLarge(BadLine):
    """The message passed the ingest limit (``PARTWIRE_INGEST_MAX_BYTES``): a 413."""

    status = 413


@router.post(
    "/ingest",
    response_model=MessageWithParts,
    operation_id="session.ingest",
    openapi_extra=NDJSON_BODY,
)
async def ingest(request: Request, sessionID: str) -> Response:
    """Record a message from an NDJSON stream of ingest events, live."""
    _, project = await session_project(request, sessionID)
    project.loop.ensure_idle_now(sessionID)
    body = _Body(request.receive, runtime_of(request).settings.ingest_max_bytes)
    try:
        head = await _head(body)
    except BadLine as bad:
        return _bad_line(bad)
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is left to read it; nothing was stored
    if not head:  # an empty body: no message to record
        return JSONResponse(
            error_body("BadRequest", "ingest: the body holds no event; nothing was stored"),
            status_code=400,
        )
    # Every chunk of the body wakes whatever awaits the next: in a task of its own that is a
    # few frames deep, where the request's task is some thirty (each middleware, the
    # router). Cancelling the request cancels it (and so ends the message as aborted).
    message_id, failure = await asyncio.create_task(
        _record(project.recorder, sessionID, head, body)
    )
    if failure is not None:
        return _bad_line(failure)
    stored = await runtime_of(request).store.get_message(sessionID, message_id)
    return wire(stored)


async def _record(
    recorder: Recorder, session_id: str, head: list[Item], body: _Body
) -> tuple[str, BadLine | None]:
    """Record the message the body holds, ``head`` (its first items) on: its id, and the
    bad line that ended it, if one did."""
    from partwire.schema.ingest import IngestStart

    first = head[0][1]
    start = first if isinstance(first, IngestStart) else IngestStart()
    failure: BadLine | None = None
    async with recorder.record(
        session_id,
        role=start.role,
        prompt=start.prompt,
        parent_id=start.parent_id,
        model=start.model,
        agent=start.agent,
        message_id=start.message_id,
    ) as recording:
        try:
            await _apply(recording, head[1:] if isinstance(first, IngestStart) else head)
            await body.follow(recording)
        except BadLine as bad:
            await recording.fail(f"ingest {bad}")
            failure = bad
        except ClientDisconnect:
            await recording.fail(DROPPED, aborted=True)
    return recording.message_id, failure


async def _head(body: _Body) -> list[Item]:
    """The first batch that holds an item (an empty list: the body held none). A bad
    first line raises: nothing is stored."""
    while (batch := await body.batch()) is not None:
        if batch and isinstance(batch[0][1], BadLine):
            raise batch[0][1]
        if batch:
            return batch
    return []


async def _apply(recording: Recording, batch: list[Item]) -> None:
    """Make each item's call, in order; a bad line raises when its turn comes, so every
    line before it is stored."""
    for number, item in batch:
        if isinstance(item, tuple):  # a plain delta: the recording's hot path
            if (waiting := recording.grow(*item)) is not None:
                await waiting
        elif isinstance(item, BadLine):
            raise item
        else:
            try:
                await recording.feed(item)
            except BuilderError as exc:
                raise BadLine(number, exc.message) from None


class _Body:
    """The body's items as they arrive: the lines each chunk completes, at once. Most
    lines a live loop sends are text deltas, one a chunk; they skip the event models and,
    once the message is recording under uvicorn, the request's task too: the read callback
    applies them (``read_inline``), as the model's stream is applied in ours."""

    def __init__(self, receive: Receive, limit: int) -> None:
        self.receive = receive
        self.read = _Lines(limit)
        self.items = _Items()
        self.over = False  # the body ended, or a bad line ended what is read of it
        # what the read callback left the task, in order: items, awaitables, an error
        self.left: deque[list[Item] | Awaitable[None] | Exception] = deque()

    async def batch(self) -> list[Item] | None:
        """The items of the next chunk received; None once the body is over."""
        if self.over:
            return None
        message = await self.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        return self._items(message.get("body", b""), more=message.get("more_body", False))

    def _items(self, chunk: bytes, *, more: bool) -> list[Item]:
        batch = self.items.of(self.read.feed(chunk, more=more))
        if (overlong := self.read.overlong()) is not None and not _ends_badly(batch):
            batch.append((overlong.line, overlong))
        self.over = self.read.ended or _ends_badly(batch)
        return batch

    async def follow(self, recording: Recording) -> None:
        """The rest of the body applied to ``recording``, in order."""
        lane = read_inline(self.receive, functools.partial(self._take, recording))
        try:
            while True:
                try:
                    batch = await self.batch()
                except (ClientDisconnect, BadLine):
                    await self._settle(recording)  # what the lane took came first
                    raise
                await self._settle(recording)  # … and before the chunk received
                if batch is None:
                    return
                await _apply(recording, batch)
        finally:
            if lane is not None:
                lane.stop()
            for left in self.left:  # the task was cancelled: nothing awaits these
                if isinstance(left, Coroutine):
                    left.close()

    async def _settle(self, recording: Recording) -> None:
        """What the read callback left the task, in order."""
        while self.left:
            left = self.left.popleft()
            if isinstance(left, Exception):
                raise left
            if isinstance(left, list):
                await _apply(recording, left)
            else:
                await left

    def _take(self, recording: Recording, chunk: bytes) -> bool:
        """In the read callback, while ``follow`` awaits the next chunk: its plain deltas
        applied at once. True (wake the task) when it left the task something: a line
        that is not a plain delta, a delta's wait (the store's backpressure, a part to
        open), an error."""
        try:
            batch = self._items(chunk, more=True)
            for position, (_, item) in enumerate(batch):
                if not isinstance(item, tuple):
                    self.left.append(batch[position:])
                    return True
                if (waiting := recording.grow(*item)) is not None:
                    self.left.append(waiting)
                    self.left.append(batch[position + 1 :])
                    return True
        except Exception as exc:  # raised where the task would have raised it
            self.left.append(exc)
            return True
        return False


def _ends_badly(batch: list[Item]) -> bool:
    return bool(batch) and isinstance(batch[-1][1], BadLine)


class _Lines:
    """A body's NDJSON lines, numbered, from its chunks; its size held to ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = b""
        self.number = 0
        self.total = 0
        self.ended = False

    def feed(self, chunk: bytes, *, more: bool) -> list[tuple[int, bytes]]:
        self.total += len(chunk)
        if self.total > self.limit:
            raise TooLarge(
                self.number + 1,
                f"the message is larger than {self.limit} bytes (PARTWIRE_INGEST_MAX_BYTES); "
                "what came before this line is stored",
            )
        *complete, self.buffer = (self.buffer + chunk).split(b"\n")
        if not more:
            self.ended = True
            complete.append(self.buffer)
            self.buffer = b""
        lines = [(self.number + n, line) for n, line in enumerate(complete, 1)]
        self.number += len(complete)
        return lines

    def overlong(self) -> BadLine | None:
        """The line not yet complete, when it is already longer than a line may be."""
        if len(self.buffer) <= MAX_LINE_BYTES:
            return None
        return BadLine(self.number + 1, f"longer than {MAX_LINE_BYTES} bytes")


class _Items:
    """Lines → items: a plain text or reasoning delta as ``(kind, text)``, any other
    line as its ingest events. Part frames (what a StreamingMessageBuilder returns) are
    taken too, through the frames converter; a ``message_start`` frame first stands for
    the start line (its role and message id). A bad line is an item too: the last."""

    def __init__(self) -> None:
        from partwire.protocol.converters.frames import FRAME_TYPES, FramesConverter

        self.frames = FramesConverter()
        self.frame_types = FRAME_TYPES  # imported once, not per line
        self.first = True

    def of(self, lines: list[tuple[int, bytes]]) -> list[Item]:
        items: list[Item] = []
        for number, line in lines:
            try:
                self._add(items, number, line)
            except BadLine as bad:
                items.append((number, bad))
                break
        return items

    def _add(self, items: list[Item], number: int, line: bytes) -> None:
        if not line.strip():
            return
        value = _json_object(number, line)
        first, self.first = self.first, False
        kind = value.get("type")
        if kind in PLAIN_DELTAS and len(value) == 2 and type(value.get("delta")) is str:
            items.append((number, (PLAIN_DELTAS[kind], value["delta"])))
        elif kind not in self.frame_types:
            items.append((number, _validated(number, value)))
        else:
            from partwire.schema.ingest import IngestStart

            if first and kind == "message_start":
                role, message_id = value.get("role"), value.get("messageId")
                start = {"type": "start", "role": role, "messageID": message_id}
                items.append((number, _validated(number, start)))
            try:
                made = self.frames.feed(value)
            except ValueError as exc:
                raise BadLine(number, _problems(exc)) from None
            items.extend((number, event) for event in made if not isinstance(event, IngestStart))


def _json_object(number: int, line: bytes) -> dict[str, Any]:
    if json_too_deep(line):
        raise BadLine(number, f"nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadLine(number, "not UTF-8 text") from None
    except ValueError as exc:
        raise BadLine(number, f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise BadLine(number, "must be a JSON object with a type")
    field = lone_surrogate(value) if SURROGATE_ESCAPE.search(line) else None
    if field is not None:
        raise BadLine(number, f"{field}: not valid Unicode text (it holds a lone surrogate)")
    return value


def _validated(number: int, value: dict[str, Any]) -> IngestEvent:
    from partwire.schema.ingest import ingest_adapter

    try:
        return ingest_adapter.validate_python(value)
    except ValidationError as exc:
        raise BadLine(number, _problems(exc)) from None


def _problems(exc: ValueError) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    return "; ".join(
        f"{'.'.join(str(step) for step in error['loc']) or 'type'}: {error['msg']}"
        for error in exc.errors()[:3]
    )


def _bad_line(bad: BadLine) -> JSONResponse:
    name = "PayloadTooLarge" if bad.status == 413 else "BadRequest"
    return JSONResponse(
        error_body(name, f"ingest {bad}", line=bad.line, kind="Body"), status_code=bad.status
    )
