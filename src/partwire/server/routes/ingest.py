"""POST /session/{id}/ingest: another process's agent loop streams its message in as NDJSON.

Each line is one ingest event (schema/ingest.py). Lines are applied as they arrive, so
clients watching the session see the message live. The end of the body finishes the
message; a connection that drops first ends it as aborted; a bad line ends it with an
error and is a 400 naming the line, while everything before that line stays stored.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from partwire.errors import BuilderError
from partwire.schema.message import MessageWithParts
from partwire.server.errors import error_body
from partwire.server.limits import MAX_JSON_DEPTH, json_too_deep, lone_surrogate
from partwire.server.routes.scope import runtime_of, session_project
from partwire.server.routes.session import wire

if TYPE_CHECKING:  # loaded with the first ingest, not at start-up
    from partwire.schema.ingest import IngestEvent
    from partwire.session.recording import Recording

router = APIRouter(prefix="/session/{sessionID}", tags=["session"])

MAX_LINE_BYTES = 1024 * 1024
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
    from partwire.schema.ingest import IngestStart

    _, project = await session_project(request, sessionID)
    project.loop.ensure_idle_now(sessionID)
    limit = runtime_of(request).settings.ingest_max_bytes
    events = _events(request.stream(), limit)
    try:
        head = await anext(events, None)
    except BadLine as bad:
        return _bad_line(bad)
    except ClientDisconnect:
        return Response(status_code=400)  # nobody is left to read it; nothing was stored
    start = head[1] if head is not None and isinstance(head[1], IngestStart) else IngestStart()
    first = [] if head is None or isinstance(head[1], IngestStart) else [head]
    if head is None:  # an empty body: no message to record
        return JSONResponse(
            error_body("BadRequest", "ingest: the body holds no event; nothing was stored"),
            status_code=400,
        )
    failure: BadLine | None = None
    async with project.recorder.record(
        sessionID,
        role=start.role,
        prompt=start.prompt,
        parent_id=start.parent_id,
        model=start.model,
        agent=start.agent,
        message_id=start.message_id,
    ) as recording:
        try:
            for number, event in first:
                await _apply(recording, number, event)
            async for number, event in events:
                await _apply(recording, number, event)
        except BadLine as bad:
            await recording.fail(f"ingest {bad}")
            failure = bad
        except ClientDisconnect:
            await recording.fail(DROPPED, aborted=True)
    if failure is not None:
        return _bad_line(failure)
    stored = await runtime_of(request).store.get_message(sessionID, recording.message_id)
    return wire(stored)


async def _apply(recording: Recording, number: int, event: IngestEvent) -> None:
    from partwire.session.ingest import feed

    try:
        await feed(recording, event)
    except BuilderError as exc:
        raise BadLine(number, exc.message) from None


async def _events(body: AsyncIterator[bytes], limit: int) -> AsyncIterator[tuple[int, IngestEvent]]:
    """The body's ingest events. Part frames (what a StreamingMessageBuilder returns) are
    taken too, line by line, through the frames converter; a ``message_start`` frame
    first stands for the start line (its role and message id)."""
    from partwire.protocol.converters.frames import FRAME_TYPES, FramesConverter
    from partwire.schema.ingest import IngestStart

    frames = FramesConverter()
    first = True
    async for number, line in _lines(body, limit):
        if not line.strip():
            continue
        value = _json_object(number, line)
        if value.get("type") not in FRAME_TYPES:
            yield number, _validated(number, value)
        else:
            if first and value.get("type") == "message_start":
                role, message_id = value.get("role"), value.get("messageId")
                yield (
                    number,
                    _validated(number, {"type": "start", "role": role, "messageID": message_id}),
                )
            try:
                made = frames.feed(value)
            except ValueError as exc:
                raise BadLine(number, _problems(exc)) from None
            for event in made:
                if not isinstance(event, IngestStart):
                    yield number, event
        first = False


async def _lines(body: AsyncIterator[bytes], limit: int) -> AsyncIterator[tuple[int, bytes]]:
    buffer = b""
    number = 0
    total = 0
    async for chunk in body:
        total += len(chunk)
        if total > limit:
            raise TooLarge(
                number + 1,
                f"the message is larger than {limit} bytes (PARTWIRE_INGEST_MAX_BYTES); "
                "what came before this line is stored",
            )
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            number += 1
            yield number, line
        if len(buffer) > MAX_LINE_BYTES:
            raise BadLine(number + 1, f"longer than {MAX_LINE_BYTES} bytes")
    if buffer:
        yield number + 1, buffer


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
    field = lone_surrogate(value)
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
