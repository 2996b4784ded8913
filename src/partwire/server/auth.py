"""Authentication for every route but the health check: tokens, the password, or the
local admin on loopback while no user exists.

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
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from partwire.access import LOCAL_ADMIN, Actor, Principal, acting, password_admin
from partwire.storage.accounts import TOKEN_PREFIX

if TYPE_CHECKING:
    from partwire.accounts import Accounts

OPEN_PATHS = frozenset({"/global/health"})
# a PTY WebSocket may come with a one-use ticket instead of credentials (browsers cannot
# send them on a WebSocket): it is let through marked, and the route must redeem the ticket
TICKET_SCOPE_KEY = "partwire.needs_ticket"
PRINCIPAL_SCOPE_KEY = "partwire.principal"
SHARE_COOKIE = "partwire_share"  # a share link's token, set when the link is opened
SHARE_PATH = "/share/"  # opening a share link needs no credentials: it is one
NOBODY = Principal(name="nobody", scope="read", shared="")
_TICKETED = re.compile(r"^(/api)?/pty/[^/]+/connect$")
_BODY = json.dumps(
    {
        "name": "Unauthorized",
        "data": {
            "message": "This server needs credentials: a token (Authorization: Bearer, or "
            "as the password of HTTP Basic auth), or the server's password (user partwire)"
        },
    }
).encode()


def is_loopback(hostname: str) -> bool:
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False


class Authenticate:
    """Who each request comes from (``scope[PRINCIPAL_SCOPE_KEY]``), or a 401.

    - ``Authorization: Bearer <token>``: a user's token or a share link's;
    - ``Authorization: Basic``: the server's password (an admin), or a token as the
      password with any user name (what a browser's own prompt sends, on pages,
      EventSource and WebSockets alike);
    - nothing, while no user exists, no password is set and the server listens on
      loopback: the local admin (partwire's zero set-up default).
    """

    def __init__(
        self,
        app: ASGIApp,
        accounts: Accounts,
        username: str,
        password: str | None,
        open_locally: bool,
    ) -> None:
        self.app = app
        self.accounts = accounts
        self.expected = f"{username}:{password}".encode() if password else None
        self.username = username
        self.open_locally = open_locally and not password

    async def _principal(self, scope: Scope) -> Principal | None:
        header = _header(scope, b"authorization")
        if header is None:
            if self.open_locally and not await self.accounts.has_users():
                return LOCAL_ADMIN
            shared = _share_cookie(scope)
            found = await self._token(shared.encode()) if shared else None
            return found if found is not None and found.shared is not None else None
        scheme, _, credentials = header.partition(b" ")
        scheme = scheme.lower()
        if scheme == b"bearer":
            return await self._token(credentials.strip())
        if scheme != b"basic":
            return None
        try:
            given = base64.b64decode(credentials.strip(), validate=True)
        except (binascii.Error, ValueError):
            return None
        if self.expected is not None and secrets.compare_digest(given, self.expected):
            return password_admin(self.username)
        return await self._token(given.partition(b":")[2])

    async def _token(self, secret: bytes) -> Principal | None:
        try:
            text = secret.decode("ascii")
        except UnicodeDecodeError:
            return None
        if not text.startswith(TOKEN_PREFIX):
            return None
        return await self.accounts.principal(text)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or _open(scope["path"]):
            await self.app(scope, receive, send)
            return
        principal = await self._principal(scope)
        if principal is not None:
            acting.set(Actor(principal, client_kind(scope)))
            await self.app({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)
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


_CLIENT = re.compile(r"[^a-z0-9._-]")


def client_kind(scope: Scope) -> str:
    """What kind of client a request comes from: ``?client=`` or ``x-partwire-client``
    (partwire's own clients say), else guessed from its User-Agent."""
    named = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("client")
    said = named[0].encode("latin-1") if named else _header(scope, b"x-partwire-client")
    if said is None:
        agent = (_header(scope, b"user-agent") or b"").lower()
        said = (
            b"opencode"
            if b"opencode" in agent
            else b"web"
            if agent.startswith(b"mozilla")
            else agent.split(b"/", 1)[0]
        )
    return _CLIENT.sub("", said.decode("latin-1").lower())[:32] or "unknown"


def _open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(SHARE_PATH)


def _share_cookie(scope: Scope) -> str | None:
    cookies = _header(scope, b"cookie")
    for pair in (cookies or b"").decode("latin-1").split(";"):
        key, _, found = pair.strip().partition("=")
        if key == SHARE_COOKIE and found:
            return found
    return None


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return bytes(value)
    return None


def principal_of(scope: Scope) -> Principal:
    """The request's principal; a request the middleware did not name (a PTY socket let
    in on its ticket alone) is no one: nothing but the ticket's terminal."""
    found = scope.get(PRINCIPAL_SCOPE_KEY)
    return found if isinstance(found, Principal) else NOBODY


def _offers_ticket(scope: Scope) -> bool:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return bool(_TICKETED.match(scope["path"])) and bool(query.get("ticket"))
