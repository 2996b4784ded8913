"""Who the caller is, who may read or write a session, and share links in a browser.

``POST /session/{id}/share`` (opencode's route, in actions.py) makes a link; opening it
(``GET /share/{secret}``) sets a cookie holding the link's token, good for that session
only and read-only, and shows the session in the web UI.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from partwire.access import Role
from partwire.errors import NotFoundError, RefusedError
from partwire.schema.base import WireModel
from partwire.server.auth import SHARE_COOKIE, principal_of
from partwire.server.routes.scope import runtime_of
from partwire.storage.accounts import TOKEN_PREFIX

router = APIRouter(tags=["access"])


class Grant(WireModel):
    user: str
    role: Role


class SessionAccess(WireModel):
    grants: list[Grant]
    shared: bool  # a share link of it works


class GrantInput(WireModel):
    """Give ``user`` ``role`` on the session; ``role`` null takes it back."""

    user: str
    role: Literal["read", "write"] | None


class Caller(WireModel):
    name: str
    scope: str
    user: str | None = None
    shared: str | None = None  # a share link's session


@router.get("/user", response_model=Caller, operation_id="user.current")
async def current(request: Request) -> Response:
    """Who this request comes from."""
    principal = principal_of(request.scope)
    caller = Caller(
        name=principal.name, scope=principal.scope, user=principal.user, shared=principal.shared
    )
    return JSONResponse(caller.wire())


async def _access(request: Request, session_id: str) -> JSONResponse:
    accounts = runtime_of(request).accounts
    grants = [Grant(user=u, role=r) for u, r in await accounts.session_grants(session_id)]
    access = SessionAccess(grants=grants, shared=await accounts.shared(session_id))
    return JSONResponse(access.wire())


@router.get(
    "/session/{sessionID}/access", response_model=SessionAccess, operation_id="session.access"
)
async def session_access(request: Request, sessionID: str) -> Response:
    await runtime_of(request).store.get_session(sessionID)
    return await _access(request, sessionID)


@router.post(
    "/session/{sessionID}/access", response_model=SessionAccess, operation_id="session.grant"
)
async def grant(request: Request, sessionID: str, body: GrantInput) -> Response:
    """The owner (or an admin) gives a user read or write on the session, or takes it."""
    runtime = runtime_of(request)
    await runtime.store.get_session(sessionID)
    held = dict(await runtime.accounts.session_grants(sessionID))
    if held.get(body.user) == "owner":
        raise RefusedError(f"{body.user} owns session {sessionID}: their access stays")
    await runtime.accounts.set_grant(sessionID, body.user, body.role)
    return await _access(request, sessionID)


@router.get("/share/{secret}", include_in_schema=False)
async def open_share(request: Request, secret: str) -> Response:
    """A share link, opened: its cookie is set and the web UI shows the session."""
    principal = await runtime_of(request).accounts.principal(secret)
    if not secret.startswith(TOKEN_PREFIX) or principal is None or principal.shared is None:
        raise NotFoundError("Share link", "(this one was ended, or never made)")
    response = RedirectResponse(f"/#/session/{principal.shared}", status_code=303)
    response.set_cookie(
        SHARE_COOKIE,
        secret,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response
