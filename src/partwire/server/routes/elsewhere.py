"""opencode features that live outside partwire: its Console (hosted accounts), remote
workspaces and their sync, MCP servers, provider OAuth, background sub-agents and
self-upgrade. Each route answers truthfully: what partwire has (none of them, the sync
history of its sessions) or a 4xx that says why not, shaped as opencode's own error.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from pydantic import Field

from partwire.errors import BadRequestError, NotFoundError
from partwire.protocol.v2events import seq_of
from partwire.schema.base import WireModel
from partwire.server.routes.scope import runtime_of
from partwire.server.routes.v2_history import durable_history
from partwire.version import __version__

router = APIRouter(tags=["experimental"])
NO_WORKSPACES = "partwire has no workspace adapters: it serves local directories only"


def _json(value: Any, status_code: int = 200) -> Response:
    return Response(json.dumps(value), status_code=status_code, media_type="application/json")


# ---- capabilities and the Console ---------------------------------------------------------


@router.get("/experimental/capabilities", operation_id="experimental.capabilities.get")
async def capabilities() -> Response:
    return _json({"backgroundSubagents": False})


@router.get("/experimental/console", operation_id="experimental.console.get")
async def console() -> Response:
    return _json({"consoleManagedProviders": [], "switchableOrgCount": 0})


@router.get("/experimental/console/orgs", operation_id="experimental.console.listOrgs")
async def console_orgs() -> Response:
    return _json({"orgs": []})


class OrgSwitch(WireModel):
    account_id: str = Field(alias="accountID")
    org_id: str = Field(alias="orgID")


@router.post("/experimental/console/switch", operation_id="experimental.console.switchOrg")
async def console_switch(body: OrgSwitch) -> Response:
    raise BadRequestError(
        f"no Console account {body.account_id!r}: partwire has no Console accounts",
        field="accountID",
    )


@router.post(
    "/experimental/session/{sessionID}/background",
    operation_id="experimental.session.background",
)
async def background(request: Request, sessionID: str) -> Response:
    """Sub-agents run inside their task call here (capabilities: backgroundSubagents
    false), so none is ever moved to the background."""
    await runtime_of(request).store.get_session(sessionID)  # 404 for an unknown one
    return _json(False)


class Upgrade(WireModel):
    target: str


@router.post("/global/upgrade", operation_id="global.upgrade")
async def upgrade(body: Upgrade) -> Response:
    error = (
        f"partwire {__version__} does not upgrade itself: run "
        f"`pip install --upgrade partwire=={body.target}` where it is installed"
    )
    return _json({"success": False, "error": error}, 400)


# ---- MCP and provider OAuth -----------------------------------------------------------------


def _no_mcp_server(name: str) -> Response:
    message = f"MCP server not found: {name} (partwire has no MCP servers)"
    return _json({"_tag": "McpServerNotFoundError", "name": name, "message": message}, 404)


@router.get("/experimental/resource", operation_id="experimental.resource.list")
async def resources() -> Response:
    return _json({})  # MCP resources: partwire has no MCP clients


MCP_ROUTES = (
    ("POST", "/auth", "mcp.auth.start"),
    ("DELETE", "/auth", "mcp.auth.remove"),
    ("POST", "/auth/callback", "mcp.auth.callback"),
    ("POST", "/auth/authenticate", "mcp.auth.authenticate"),
    ("POST", "/connect", "mcp.connect"),
    ("POST", "/disconnect", "mcp.disconnect"),
)


async def _mcp_server(name: str) -> Response:
    return _no_mcp_server(name)


for _method, _suffix, _operation in MCP_ROUTES:
    router.add_api_route(
        f"/mcp/{{name}}{_suffix}", _mcp_server, methods=[_method], operation_id=_operation
    )


class OAuthAuthorize(WireModel):
    method: int = Field(ge=0)
    inputs: dict[str, str] | None = None


class OAuthCallback(WireModel):
    method: int = Field(ge=0)
    code: str | None = None


def _no_oauth(provider_id: str) -> Response:
    message = f"partwire has no OAuth sign-in for {provider_id}: PUT /auth/{provider_id} a key"
    body = {
        "name": "ProviderAuthOauthMissing",
        "data": {"providerID": provider_id, "message": message},
    }
    return _json(body, 400)


@router.post("/provider/{providerID}/oauth/authorize", operation_id="provider.oauth.authorize")
async def oauth_authorize(providerID: str, body: OAuthAuthorize) -> Response:
    return _no_oauth(providerID)


@router.post("/provider/{providerID}/oauth/callback", operation_id="provider.oauth.callback")
async def oauth_callback(providerID: str, body: OAuthCallback) -> Response:
    return _no_oauth(providerID)


# ---- workspaces and their sync -------------------------------------------------------------


@router.get("/experimental/workspace", operation_id="experimental.workspace.list")
async def workspaces() -> Response:
    return _json([])


@router.get("/experimental/workspace/adapter", operation_id="experimental.workspace.adapter.list")
async def workspace_adapters() -> Response:
    return _json([])


@router.get("/experimental/workspace/status", operation_id="experimental.workspace.status")
async def workspace_status() -> Response:
    return _json([])


class WorkspaceCreate(WireModel):
    id: str | None = Field(default=None, pattern="^wrk")
    type: str
    branch: str | None = None
    extra: Any = None


@router.post("/experimental/workspace", operation_id="experimental.workspace.create")
async def workspace_create(body: WorkspaceCreate) -> Response:
    message = f"Unknown workspace adapter: {body.type} ({NO_WORKSPACES})"
    return _json({"name": "WorkspaceCreateError", "data": {"message": message}}, 400)


@router.post(
    "/experimental/workspace/sync-list",
    operation_id="experimental.workspace.syncList",
    status_code=204,
)
async def workspace_sync_list() -> Response:
    return Response(status_code=204)  # no adapters: no workspaces to register


@router.delete("/experimental/workspace/{id}", operation_id="experimental.workspace.remove")
async def workspace_remove(id: str) -> Response:
    raise NotFoundError("Workspace", id)


class Warp(WireModel):
    id: str | None = Field(pattern="^wrk")
    session_id: str = Field(alias="sessionID", pattern="^ses")
    copy_changes: bool | None = Field(default=None, alias="copyChanges")


@router.post(
    "/experimental/workspace/warp", operation_id="experimental.workspace.warp", status_code=204
)
async def workspace_warp(request: Request, body: Warp) -> Response:
    """``id: null`` detaches the session to the local project, where every partwire
    session already is; any workspace id is unknown."""
    await runtime_of(request).store.get_session(body.session_id)
    if body.id is not None:
        raise NotFoundError("Workspace", body.id)
    return Response(status_code=204)


@router.post("/sync/start", operation_id="sync.start")
async def sync_start() -> Response:
    return _json(False)  # no workspaces: no sync loop to start


@router.post("/sync/history", operation_id="sync.history.list")
async def sync_history(
    request: Request, known: Annotated[dict[str, int] | None, Body()] = None
) -> Response:
    """Every session's durable events (opencode v2's ``session.next.*``) the caller has
    not got: those after the ``seq`` it names for that session, all of any other (no
    body: it knows of none)."""
    known = known or {}
    if any(seq < 0 for seq in known.values()):
        raise BadRequestError("sequence numbers start at 0", field="body")
    runtime = runtime_of(request)
    out = []
    for session in await runtime.store.list_sessions():
        after = known.get(session.id, -1)
        made, _ = await durable_history(runtime, session, after=after)
        out += [
            {
                "id": d["id"],
                "aggregate_id": session.id,
                "seq": seq_of(d),
                "type": d["type"],
                "data": d["data"],
            }
            for d in made
        ]
    return _json(out)


class Steal(WireModel):
    session_id: str = Field(alias="sessionID", pattern="^ses")


@router.post("/sync/steal", operation_id="sync.steal")
async def sync_steal(request: Request, body: Steal) -> Response:
    await runtime_of(request).store.get_session(body.session_id)
    raise BadRequestError(f"{NO_WORKSPACES}: no workspace to move {body.session_id} into")


@router.post("/sync/replay", operation_id="sync.replay")
async def sync_replay(body: dict[str, Any]) -> Response:
    raise BadRequestError(
        "partwire does not replay opencode sync histories: import a session with "
        "POST /session/import instead",
        field="events",
    )
