"""opencode's v2 API (``/api/*``), the catalog half: health, location, agents, commands,
skills, models, providers, the file system and the pending asks. Served from the same
stores and registries as v1; the session half is in ``v2_sessions``.

Most answers are ``{location, data}``; ``location`` (a deepObject query,
``?location[directory]=…``) picks the project, as v1's ``directory`` does.
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response

from partwire import commands, workspace
from partwire.config import user_config_dir
from partwire.errors import NotFoundError
from partwire.providers.listing import all_providers
from partwire.runtime import Project
from partwire.schema.event import SessionInfo, SessionUpdated
from partwire.schema.permission import Agent, PermissionRequest, QuestionRequest
from partwire.schema.provider import ModelInfo, ProviderInfo
from partwire.schema.session import Session
from partwire.server.authorize import readable_filter
from partwire.server.routes.scope import runtime_of
from partwire.session.agents import list_agents
from partwire.session.sessions import project_id
from partwire.skills import discover

router = APIRouter(prefix="/api", tags=["v2"])


def body(value: Any, status_code: int = 200) -> Response:
    return Response(json.dumps(value), status_code=status_code, media_type="application/json")


def located(request: Request) -> Project:
    """The project ``location[directory]`` names (v1's ``directory`` too), else the default."""
    params = request.query_params
    directory = params.get("location[directory]") or params.get("directory")
    return runtime_of(request).project(directory or None)


def location_info(project: Project) -> dict[str, Any]:
    directory = str(project.settings.project_dir)
    return {
        "directory": directory,
        "project": {"id": project_id(directory), "directory": directory},
    }


def listing(request: Request, data: list[Any]) -> Response:
    return body({"location": location_info(located(request)), "data": data})


def model_ref(provider_id: str, model_id: str) -> dict[str, str]:
    return {"id": model_id, "providerID": provider_id}


# ---- v1 things in v2's shape ----------------------------------------------------------------


def agent_v2(agent: Agent) -> dict[str, Any]:
    rules = [
        {"action": r.permission, "resource": r.pattern, "effect": r.action}
        for r in agent.permission
    ]
    info: dict[str, Any] = {
        "id": agent.name,
        "request": {"headers": {}, "body": {}},
        "mode": agent.mode,
        "hidden": False,
        "permissions": rules,
    }
    if agent.description:
        info["description"] = agent.description
    return info


def command_v2(command: commands.Command) -> dict[str, Any]:
    info: dict[str, Any] = {"name": command.name, "template": command.template}
    if command.description:
        info["description"] = command.description
    if command.agent:
        info["agent"] = command.agent
    if command.model and "/" in command.model:
        provider_id, _, model_id = command.model.partition("/")
        info["model"] = model_ref(provider_id, model_id)
    if command.subtask:
        info["subtask"] = True
    return info


def _modalities(kinds: Any) -> list[str]:
    return [name for name in ("text", "audio", "image", "video", "pdf") if getattr(kinds, name)]


def model_v2(model: ModelInfo) -> dict[str, Any]:
    cost = model.cost
    return {
        "id": model.id,
        "providerID": model.provider_id,
        "name": model.name,
        "api": {"id": model.api.id, "type": "native", "url": model.api.url, "settings": {}},
        "capabilities": {
            "tools": model.capabilities.toolcall,
            "input": _modalities(model.capabilities.input),
            "output": _modalities(model.capabilities.output),
        },
        "request": {"headers": dict(model.headers), "body": dict(model.options)},
        "variants": [],
        "time": {"released": 0},
        "cost": [
            {
                "input": cost.input,
                "output": cost.output,
                "cache": {"read": cost.cache.read, "write": cost.cache.write},
            }
        ],
        "status": model.status,
        "enabled": True,
        "limit": {"context": model.limit.context, "output": model.limit.output},
    }


def provider_v2(provider: ProviderInfo) -> dict[str, Any]:
    return {
        "id": provider.id,
        "name": provider.name,
        "api": {"type": "native", "settings": {}},
        "request": {"headers": {}, "body": {}},
    }


def permission_v2(request: PermissionRequest) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": request.id,
        "sessionID": request.session_id,
        "action": request.permission,
        "resources": request.patterns,
        "save": request.always,
        "metadata": request.metadata,
    }
    if request.tool is not None:
        info["source"] = {
            "type": "tool",
            "messageID": request.tool.message_id,
            "callID": request.tool.call_id,
        }
    return info


def question_v2(request: QuestionRequest) -> dict[str, Any]:
    info = request.wire()
    if request.tool is not None:
        info["tool"] = {"messageID": request.tool.message_id, "callID": request.tool.call_id}
    return info


# ---- routes ----------------------------------------------------------------------------------


@router.get("/health", operation_id="v2.health.get")
async def health() -> Response:
    return body({"healthy": True})


@router.get("/location", operation_id="v2.location.get")
async def location(request: Request) -> Response:
    return body(location_info(located(request)))


@router.get("/agent", operation_id="v2.agent.list")
async def agents(request: Request) -> Response:
    return listing(request, [agent_v2(a) for a in list_agents()])


@router.get("/command", operation_id="v2.command.list")
async def command_list(request: Request) -> Response:
    found = await commands.of_project(located(request).settings)
    return listing(request, [command_v2(c) for c in found])


@router.get("/skill", operation_id="v2.skill.list")
async def skills(request: Request) -> Response:
    settings = located(request).settings
    user_dir = user_config_dir(settings.source_env)
    found = await asyncio.to_thread(discover, settings.project_dir, user_dir)
    return listing(request, [skill.wire() for skill in found])


@router.get("/model", operation_id="v2.model.list")
async def models(request: Request) -> Response:
    providers = all_providers(runtime_of(request).settings)
    data = [model_v2(m) for p in providers for m in p.models.values()]
    return listing(request, data)


@router.get("/provider", operation_id="v2.provider.list")
async def providers(request: Request) -> Response:
    found = all_providers(runtime_of(request).settings)
    return listing(request, [provider_v2(p) for p in found])


@router.get("/provider/{providerID}", operation_id="v2.provider.get")
async def provider(request: Request, providerID: str) -> Response:
    for found in all_providers(runtime_of(request).settings):
        if found.id == providerID:
            return body({"location": location_info(located(request)), "data": provider_v2(found)})
    raise NotFoundError("Provider", providerID)


def _entries(project: Path, query: str, kind: str | None, limit: int) -> list[dict[str, str]]:
    found = workspace.find_files(project, query, dirs=kind != "file", limit=limit * 4)
    entries = []
    for path in found:
        is_dir = (project / path).is_dir()
        entry_kind = "directory" if is_dir else "file"
        if kind is None or entry_kind == kind:
            entries.append({"path": path, "type": entry_kind})
    return entries[:limit]


@router.get("/fs/find", operation_id="v2.fs.find")
async def fs_find(
    request: Request,
    query: str,
    type: Literal["file", "directory"] | None = None,
    limit: int = Query(default=50, ge=1, le=workspace.FIND_LIMIT),
) -> Response:
    project = located(request).settings.project_dir
    return listing(request, await asyncio.to_thread(_entries, project, query, type, limit))


@router.get("/fs/list", operation_id="v2.fs.list")
async def fs_list(request: Request, path: str = ".") -> Response:
    project = located(request).settings.project_dir
    nodes = await asyncio.to_thread(workspace.list_dir, project, path)
    return listing(request, [{"path": n["path"], "type": n["type"]} for n in nodes])


@router.get("/fs/read/{path:path}", operation_id="v2.fs.read")
async def fs_read(request: Request, path: str) -> Response:
    """One project file's bytes."""
    target = workspace.inside(located(request).settings.project_dir, path)
    if not target.is_file():
        raise NotFoundError("File", path)
    data = await asyncio.to_thread(target.read_bytes)
    mime = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    return Response(data, media_type=mime)


@router.get("/permission/request", operation_id="v2.permission.request.list")
async def permission_requests(request: Request) -> Response:
    readable = await readable_filter(request)
    pending = runtime_of(request).permissions.pending()
    return listing(request, [permission_v2(p) for p in pending if readable(p.session_id)])


@router.get("/question/request", operation_id="v2.question.request.list")
async def question_requests(request: Request) -> Response:
    readable = await readable_filter(request)
    pending = runtime_of(request).questions.pending()
    return listing(request, [question_v2(q) for q in pending if readable(q.session_id)])


@router.get("/reference", operation_id="v2.reference.list")
async def references(request: Request) -> Response:
    return listing(request, [])  # references (docs for the model) do not exist here


# ---- saved permissions --------------------------------------------------------------------
# partwire saves an "always" answer as an allow rule of the session that asked, so v2's
# saved permissions are those rules: id "<session id>.<rule index>".


def _saved(sessions: list[Session], project: str | None) -> list[dict[str, Any]]:
    found = []
    for session in sessions:
        owner = project_id(session.directory)
        if project is not None and owner != project:
            continue
        for n, rule in enumerate(session.permission or []):
            if rule.action == "allow":
                found.append(
                    {
                        "id": f"{session.id}.{n}",
                        "projectID": owner,
                        "action": rule.permission,
                        "resource": rule.pattern,
                    }
                )
    return found


@router.get("/permission/saved", operation_id="v2.permission.saved.list")
async def saved_permissions(request: Request, projectID: str | None = None) -> Response:
    sessions = await runtime_of(request).store.list_sessions()
    return body({"data": _saved(sessions, projectID)})


@router.delete(
    "/permission/saved/{id}",
    status_code=204,
    response_class=Response,
    operation_id="v2.permission.saved.remove",
)
async def forget_permission(request: Request, id: str) -> Response:
    session_id, _, index = id.rpartition(".")
    runtime = runtime_of(request)
    try:
        session = await runtime.store.get_session(session_id)
    except NotFoundError:
        raise NotFoundError("Saved permission", id) from None
    rules = list(session.permission or [])
    if not index.isdigit() or int(index) >= len(rules) or rules[int(index)].action != "allow":
        raise NotFoundError("Saved permission", id)
    del rules[int(index)]
    updated = session.model_copy(update={"permission": rules})
    await runtime.store.put_session(
        updated, [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))]
    )
    return Response(status_code=204)
