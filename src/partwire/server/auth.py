"""HTTP Basic auth for every route but the health check, when a password is set.

A pure ASGI middleware, so streaming responses (SSE) and WebSockets are covered
without buffering. Credentials are compared in constant time.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
import secrets
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = frozenset({"/global/health"})
# a PTY WebSocket may come with a one-use ticket instead of credentials (browsers cannot
# send them on a WebSocket): it is let through marked, and the route must redeem the ticket
TICKET_SCOPE_KEY = "partwire.needs_ticket"
_TICKETED = re.compile(r"^(/api)?/pty/[^/]+/connect$")
_BODY = json.dumps(
    {
        "name": "Unauthorized",
        "data": {"message": "This server needs a password: use HTTP Basic auth (user partwire)"},
    }
).encode()


def is_loopback(hostname: str) -> bool:
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False


class BasicAuth:
    def __init__(self, app: ASGIApp, username: str, password: str) -> None:
        self.app = app
        self.expected = f"{username}:{password}".encode()

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", []):
            if name != b"authorization":
                continue
            scheme, _, token = value.partition(b" ")
            if scheme.lower() != b"basic":
                return False
            try:
                given = base64.b64decode(token, validate=True)
            except (binascii.Error, ValueError):
                return False
            return secrets.compare_digest(given, self.expected)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket" and _offers_ticket(scope):
            await self.app({**scope, TICKET_SCOPE_KEY: True}, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Basic realm="partwire"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _BODY})


def _offers_ticket(scope: Scope) -> bool:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return bool(_TICKETED.match(scope["path"])) and bool(query.get("ticket"))
