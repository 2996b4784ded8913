"""Requests a browser page must not be able to make: the DNS-rebinding and cross-site
defence for a server that may have no password.

- **Host.** Only loopback names (``localhost``, ``127.0.0.1``, ``[::1]``, any
  127.0.0.0/8 address) and the names the server was told it is reached by are
  accepted. A page that rebinds its own name to 127.0.0.1 still sends its name.
- **Origin.** A request that can change something (anything but GET, HEAD and
  OPTIONS, and every request to Socket.IO and the TUI control queue) and carries an
  ``Origin`` must come from the server's own origin or one listed in ``server.cors``.
  Clients that are not browsers send no Origin.

A pure ASGI middleware, so streams and WebSockets are covered without buffering.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from partwire.server.auth import is_loopback

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _host_name(host: str) -> str:
    """``127.0.0.1:4096`` → ``127.0.0.1``; ``[::1]:4096`` → ``::1``; anything after the
    name but a port (``[::1]evil.com``, ``127.0.0.1:x``) → "" (refused)."""
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        return name if bracket and _is_port_suffix(rest) else ""
    if host.count(":") == 1:
        name, _, port = host.partition(":")
        return name if port.isdigit() else ""
    return host


def _is_port_suffix(rest: str) -> bool:
    return rest == "" or (rest.startswith(":") and rest[1:].isdigit())


# GETs that a foreign page must not make either: Socket.IO's polling transport (a page
# could read the handshake) and the TUI control queue (reading takes the request).
ORIGIN_CHECKED_PATHS = ("/socket.io", "/tui/control/")


def origin_allowed(origin: str, host: str, configured: frozenset[str]) -> bool:
    """The server's own origin (the one its Host names), or one listed in server.cors."""
    origin = origin.rstrip("/").lower()
    if origin in configured:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()


def _body(name: str, message: str) -> bytes:
    return json.dumps({"name": name, "data": {"message": message}}).encode()


class RequestGuard:
    def __init__(
        self, app: ASGIApp, hosts: tuple[str, ...] = (), origins: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)

    def _host_allowed(self, host: str) -> bool:
        name = _host_name(host.strip().lower())
        return bool(name) and (is_loopback(name) or name in self.hosts)

    def _origin_allowed(self, origin: str, host: str) -> bool:
        return origin_allowed(origin, host, self.origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self._host_allowed(host):
            message = (
                f"Host {host!r} is not served here (only loopback names and the configured "
                "hostname are; this protects against DNS rebinding)"
            )
            await self._refuse(scope, send, 400, "BadRequest", message)
            return
        origin = headers.get("origin")
        method = scope.get("method", "GET")
        changes = (
            scope["type"] == "websocket"
            or method not in SAFE_METHODS
            or scope.get("path", "").startswith(ORIGIN_CHECKED_PATHS)
        )
        if changes and origin is not None and not self._origin_allowed(origin, host):
            message = (
                f"Origin {origin} may not make this request; add it to server.cors in "
                "partwire.json to allow it"
            )
            await self._refuse(scope, send, 403, "Forbidden", message)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, name: str, text: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403})
            return
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": _body(name, text)})
