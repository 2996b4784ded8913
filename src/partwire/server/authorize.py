"""Per-session access, enforced in one place: every route runs ``authorize`` (an app-wide
dependency) and every stream of many sessions filters through a ``Visibility``; both ask
partwire/access.py's one rule.

Each operation has a policy. A path naming ``{sessionID}`` reads the session on GET and
writes it otherwise, unless ``POLICIES`` says more. An operation not listed and naming no
session is an admin's (fail closed): the server's configuration, keys, terminals, the TUI
and the like are the machine's, not a session's.

A session a caller may not read is a 404, as if it did not exist; one they may read but
not write is a 403.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Literal

from fastapi import Request
from starlette.requests import HTTPConnection

from partwire.access import Action, Grants, Principal, acting, can
from partwire.accounts import readable
from partwire.bus import Subscription
from partwire.errors import NotFoundError, RefusedError
from partwire.runtime import Runtime
from partwire.schema.event import Event, parse_logged
from partwire.server.auth import OPEN_PATHS, TICKET_SCOPE_KEY, principal_of

Policy = Literal[
    "read",  # the path's session, read
    "write",  # the path's session, written
    "own",  # the path's session, by its owner (or an admin): sharing it
    "copy",  # the path's session read, and a new session made (fork, replay)
    "ask",  # the session of the ask the path names, written (answering it)
    "listed",  # anyone: the answer holds only what the caller may read
    "create",  # a user who may write: a new session, owned by them
    "any",  # anyone signed in: what the server offers (agents, models, …)
    "work",  # a user who may write: the project's files, read
    "route",  # the route checks the session its body names (with check_session)
    "admin",
]

_ANY = ("GET",)
POLICIES: dict[tuple[str, str], Policy] = {
    # many sessions: filtered to the caller's
    **{
        ("GET", path): "listed"
        for path in (
            "/event",
            "/api/event",
            "/global/event",
            "/session",
            "/session/status",
            "/experimental/session",
            "/api/session",
            "/api/session/active",
            "/permission",
            "/question",
            "/api/permission/request",
            "/api/question/request",
        )
    },
    ("POST", "/session"): "create",
    ("POST", "/session/import"): "create",
    ("POST", "/api/session"): "create",
    ("POST", "/session/{sessionID}/fork"): "copy",
    ("POST", "/session/{sessionID}/replay"): "copy",
    ("POST", "/session/{sessionID}/share"): "own",
    ("DELETE", "/session/{sessionID}/share"): "own",
    ("GET", "/session/{sessionID}/access"): "read",
    ("POST", "/session/{sessionID}/access"): "own",
    ("POST", "/api/session/{sessionID}/wait"): "read",
    ("POST", "/permission/{requestID}/reply"): "ask",
    ("POST", "/question/{requestID}/reply"): "ask",
    ("POST", "/question/{requestID}/reject"): "ask",
    ("POST", "/editor/{requestID}/reply"): "ask",
    ("POST", "/session/{sessionID}/permissions/{permissionID}"): "ask",
    ("POST", "/ui/chat"): "route",
    ("GET", "/ui/chat/{chatID}/stream"): "route",
    ("GET", "/ui/chat/{chatID}/messages"): "route",
    ("POST", "/agui"): "route",
    ("WEBSOCKET", "/ws"): "listed",  # the hub checks each subscription
    ("POST", "/log"): "create",
    ("GET", "/doc"): "any",
    ("GET", "/"): "any",  # the web UI's page (its assets are a mount: static files)
    ("HEAD", "/"): "any",
    ("GET", "/user"): "any",
    # what the server offers
    **{
        (method, path): "any"
        for method in _ANY
        for path in (
            "/agent",
            "/api/agent",
            "/command",
            "/api/command",
            "/skill",
            "/api/skill",
            "/api/model",
            "/provider",
            "/api/provider",
            "/api/provider/{providerID}",
            "/config/providers",
            "/provider/auth",
            "/path",
            "/project",
            "/project/current",
            "/api/health",
            "/api/location",
            "/experimental/tool/ids",
            "/experimental/tool",
            "/experimental/capabilities",
            "/lsp",
            "/formatter",
            "/api/reference",
        )
    },
    # the project's files, for those who may drive an agent that reads them anyway
    **{
        ("GET", path): "work"
        for path in (
            "/file",
            "/file/content",
            "/file/status",
            "/find",
            "/find/file",
            "/find/symbol",
            "/vcs",
            "/vcs/status",
            "/vcs/diff",
            "/vcs/diff/raw",
            "/api/fs/find",
            "/api/fs/list",
            "/api/fs/read/{path}",
        )
    },
}


def policy_of(method: str, path: str) -> Policy:
    found = POLICIES.get((method, path))
    if found is not None:
        return found
    if "{sessionID}" in path:
        return "read" if method in ("GET", "HEAD") else "write"
    return "admin"


def runtime_of(connection: HTTPConnection) -> Runtime:
    runtime: Runtime = connection.app.state.runtime
    return runtime


async def may(runtime: Runtime, principal: Principal, session_id: str, action: Action) -> bool:
    """Whether the principal may read (or write) the session; False for no session."""
    if principal.is_admin:
        return True
    grants = await runtime.accounts.grants(session_id)
    return grants is not None and can(principal, grants, action)


async def check_session(
    connection: HTTPConnection, session_id: str, action: Action
) -> Grants | None:
    """A 404 unless the caller may read the session; a 403 when they may read it but
    ``action`` is write. The session's grants (None for an admin: not read)."""
    principal = principal_of(connection.scope)
    if principal.is_admin:
        return None
    grants = await runtime_of(connection).accounts.grants(session_id)
    if grants is None or not can(principal, grants, "read"):
        raise NotFoundError("Session", session_id)
    if action == "write" and not can(principal, grants, "write"):
        raise RefusedError(f"you may read session {session_id} but not change it")
    return grants


def _refuse(principal: Principal, what: str) -> RefusedError:
    return RefusedError(f"{principal.name} may not {what} (ask an admin)")


async def authorize(connection: HTTPConnection) -> None:
    """The app-wide dependency: the operation's policy, for the caller."""
    route = connection.scope.get("route")
    path = getattr(route, "path", None)
    if path is None or path in OPEN_PATHS or path == "/share/{secret}":
        return
    if connection.scope.get(TICKET_SCOPE_KEY, False):
        return  # a terminal's socket on a one-use ticket an admin was given: pty.py redeems it
    method = "WEBSOCKET" if connection.scope["type"] == "websocket" else connection.scope["method"]
    principal = principal_of(connection.scope)
    if principal.is_admin:
        return
    policy = policy_of(method, path)
    params = connection.path_params
    if policy in ("read", "write", "own", "copy"):
        session_id = str(params.get("sessionID", ""))
        action: Action = "write" if policy == "write" else "read"
        grants = await check_session(connection, session_id, action)
        if policy == "own" and (grants is None or grants.role_of(principal.user) != "owner"):
            raise _refuse(principal, f"share session {session_id} (only its owner may)")
        if policy == "copy" and not principal.may_create:
            raise _refuse(principal, "make sessions")
    elif policy == "ask":
        request_id = str(params.get("requestID") or params.get("permissionID"))
        await check_session(connection, _ask_session(connection, request_id), "write")
    elif policy in ("create", "work") and not principal.may_create:
        raise _refuse(principal, "make sessions or read the project's files")
    elif policy == "admin":
        raise _refuse(principal, f"use {method} {path}")


def _ask_session(connection: HTTPConnection, request_id: str) -> str:
    """The session of a pending permission, question or editor read; an unknown one is
    no session (a 404 for all but admins)."""
    runtime = runtime_of(connection)
    for permission in runtime.permissions.pending():
        if permission.id == request_id:
            return permission.session_id
    for question in runtime.questions.pending():
        if question.id == request_id:
            return question.session_id
    found = runtime.editor.session_of(request_id) if runtime.editor is not None else None
    return found or ""


def check_may_create(connection: HTTPConnection) -> None:
    principal = principal_of(connection.scope)
    if not principal.may_create:
        raise _refuse(principal, "make sessions")


def owner_of(request: Request) -> str | None:
    """The user a session made by this request belongs to (None: an admin's own)."""
    return principal_of(request.scope).user


async def readable_filter(connection: HTTPConnection) -> Callable[[str | None], bool]:
    """Which sessions a list may hold for the caller."""
    principal = principal_of(connection.scope)
    if principal.is_admin:
        return lambda _: True
    found = await readable(runtime_of(connection).accounts, principal)
    return lambda session_id: session_id is not None and session_id in found


@contextlib.contextmanager
def ends_when_revoked(
    runtime: Runtime, subscription: Subscription, session_id: str
) -> Iterator[None]:
    """A stream of one session, for the request's caller (``access.acting``): its
    subscription closes (the stream ends; a reconnect gets a 404) once the caller may no
    longer read the session. Asked again at each ``session.access``, which is rare."""
    actor = acting.get()
    if actor is None or actor.principal.is_admin:
        yield
        return
    principal = actor.principal
    changes = runtime.bus.subscribe("session.access")

    async def guard() -> None:  # asked first too: access taken before ``changes`` existed
        while await may(runtime, principal, session_id, "read"):
            if await changes.get() is None:
                return
        subscription.close()

    task = asyncio.get_running_loop().create_task(guard())
    try:
        yield
    finally:
        task.cancel()
        changes.close()


# events about no session that anyone signed in may have (the rest are admins')
OPEN_EVENTS = frozenset({"server.connected", "server.heartbeat", "server.resync"})


class Visibility:
    """What one stream of many sessions may carry to its caller: the events of sessions
    they may read, learnt as sessions appear and again when one's access changes."""

    def __init__(self, runtime: Runtime, principal: Principal) -> None:
        self.runtime = runtime
        self.principal = principal
        self.everything = principal.is_admin
        self.visible: set[str] = set()
        self.hidden: set[str] = set()

    async def start(self) -> None:
        if not self.everything:
            self.visible = await readable(self.runtime.accounts, self.principal)

    async def keep(self, events: list[Event]) -> list[Event]:
        if self.everything:
            return events
        kept = []
        for event in events:
            if event.type == "session.access":
                await self.start()
                self.hidden.clear()
            session_id = event.session_id
            if session_id is None and event.in_log:  # read back from the log, unparsed
                session_id = parse_logged(event).session_id
            if session_id is None:
                if event.type in OPEN_EVENTS:
                    kept.append(event)
            elif await self._readable(session_id):
                kept.append(event)
        return kept

    async def _readable(self, session_id: str) -> bool:
        if session_id in self.visible:
            return True
        if session_id in self.hidden:
            return False
        grants = await self.runtime.accounts.grants(session_id)
        if grants is not None and can(self.principal, grants, "read"):
            self.visible.add(session_id)
            return True
        if grants is not None:  # a session not yet stored is asked again
            self.hidden.add(session_id)
        return False
