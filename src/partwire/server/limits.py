"""Request bodies, before any route runs: larger than the limit is a 413, and text that
is not valid Unicode is a 400 naming the field (both with a JSON error body)."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_QUERY_BYTES = 8 * 1024


def _error(name: str, message: str) -> bytes:
    return json.dumps({"name": name, "data": {"message": message}}).encode()


def _too_large(limit: int) -> bytes:
    message = f"The request body is larger than {limit // (1024 * 1024)} MiB"
    return json.dumps({"name": "PayloadTooLarge", "data": {"message": message}}).encode()


def streams_body(scope: Scope) -> bool:
    """Routes that read their body as it arrives (NDJSON ingest) and check it line by line:
    buffering it here would hold back every line until the stream ended."""
    path: str = scope.get("path", "")
    return scope["method"] == "POST" and path.startswith("/session/") and path.endswith("/ingest")


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if len(scope.get("query_string", b"")) > MAX_QUERY_BYTES:
            too_long = f"The query string is longer than {MAX_QUERY_BYTES} bytes"
            await _respond(send, 414, _error("URITooLong", too_long))
            return
        if streams_body(scope):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._reject(send)
            return
        if (
            declared is not None
            or scope["method"] in ("GET", "HEAD", "DELETE")
            or streams_body(scope)
        ):
            await self.app(scope, receive, send)
            return
        # chunked: read it here, up to the limit, then replay it to the app
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            size += len(message.get("body", b""))
            if size > self.limit:
                await self._reject(send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        await _respond(send, 413, _too_large(self.limit))


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


def lone_surrogate(value: Any, path: str = "") -> str | None:
    """The dotted path of the first string (or key) in ``value`` that is not valid
    Unicode (a lone surrogate such as ``"\\ud800"``), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "body"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found = lone_surrogate(key, where) or lone_surrogate(item, where)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = lone_surrogate(item, f"{path}.{index}" if path else str(index))
            if found:
                return found
    return None


class UnicodeGuard:
    """A body that is not UTF-8, JSON nested too deep to parse, or JSON holding text that
    is not valid Unicode (a lone surrogate escape, which JSON allows and UTF-8 cannot
    store, named by its field) is a 400 before any route runs. Only bodies that contain a
    surrogate escape at all are parsed here."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in WRITE_METHODS or streams_body(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[Message] = []
        while True:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        body = b"".join(m.get("body", b"") for m in chunks)
        problem = bad_json_text(body)
        if problem is not None:
            await _respond(send, 400, _bad_body(*problem))
            return

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)


MAX_JSON_DEPTH = 100
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def bad_json_text(body: bytes) -> tuple[str, str | None] | None:
    """Why ``body`` can never be read as JSON text, before anything tries: bytes that are
    not UTF-8, nesting deeper than MAX_JSON_DEPTH (a parser would run out of stack), or
    a lone surrogate escape (with the field holding it). None otherwise."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not valid UTF-8 (byte {exc.start} is {body[exc.start]:#04x})", None
    if json_too_deep(body):
        return f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels", None
    if SURROGATE_ESCAPE.search(body):
        try:
            field = lone_surrogate(json.loads(body))
        except ValueError:
            return None  # not JSON: the route's own parsing says so
        if field is not None:
            return f"{field}: not valid Unicode text (it holds a lone surrogate)", field
    return None


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` (brackets in strings aside)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub(b"", body)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > limit:
            return True
    return False


def _bad_body(message: str, field: str | None) -> bytes:
    data: dict[str, str] = {"message": message, "kind": "Body"}
    if field is not None:
        data["field"] = field
    return json.dumps({"name": "BadRequest", "data": data}).encode()
