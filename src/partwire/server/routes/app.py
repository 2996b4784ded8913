"""App-level routes opencode's TUI calls: ``POST /log`` and the ``/experimental`` ones.

Where partwire has no such subsystem (background sub-agents, the console, MCP
resources, workspaces, project copies) the answer is the truthful empty one, in
opencode's shape.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response

from partwire import workspace
from partwire.config import user_config_dir
from partwire.providers.registry import resolve_model
from partwire.schema.base import WireModel
from partwire.server.authorize import readable_filter
from partwire.server.routes.scope import requested_project, runtime_of
from partwire.skills import discover
from partwire.tools.registry import all_tools

router = APIRouter(tags=["app"])

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}


class LogEntry(WireModel):
    service: str
    level: Literal["debug", "info", "error", "warn"]
    message: str
    extra: dict[str, Any] | None = None


def _json(value: Any) -> Response:
    return Response(json.dumps(value), media_type="application/json")


@router.post("/log", operation_id="app.log")
async def write_log(body: LogEntry) -> Response:
    """A client's log line, written to partwire's log under ``client.<service>``."""
    logger = logging.getLogger(f"client.{body.service}")
    suffix = f" {json.dumps(body.extra)}" if body.extra else ""
    logger.log(LEVELS[body.level], "%s%s", body.message, suffix)
    return _json(True)


@router.get("/skill", operation_id="app.skills")
async def skills(request: Request) -> Response:
    """The skills the project's sessions may load (``partwire.skills``)."""
    settings = requested_project(request).settings
    user_dir = user_config_dir(settings.source_env)
    found = await asyncio.to_thread(discover, settings.project_dir, user_dir)
    return _json([skill.wire() for skill in found])


@router.get("/experimental/tool/ids", operation_id="tool.ids")
async def tool_ids() -> Response:
    return _json(sorted(tool.id for tool in all_tools()))


@router.get("/experimental/tool", operation_id="tool.list")
async def tools(request: Request, provider: str, model: str) -> Response:
    """The tools a model is offered (partwire offers every model the same ones)."""
    resolve_model(provider, model, runtime_of(request).settings)  # 400/404 for an unknown one
    specs = [
        {"id": tool.id, "description": tool.description, "parameters": tool.spec().parameters}
        for tool in all_tools()
    ]
    return _json(specs)


def _shells() -> list[dict[str, Any]]:
    listed = Path("/etc/shells")
    lines = listed.read_text().splitlines() if listed.is_file() else []
    paths = [line.strip() for line in lines if line.strip().startswith("/")]
    found = [p for p in dict.fromkeys(paths) if Path(p).is_file()]
    return [{"path": p, "name": Path(p).name, "acceptable": True} for p in found]


@router.get("/pty/shells", operation_id="pty.shells")
async def shells() -> Response:
    """The shells installed here (partwire's bash tool runs commands in one)."""
    return _json(await asyncio.to_thread(_shells))


@router.post("/global/dispose", operation_id="global.dispose")
async def dispose_all(request: Request) -> Response:
    """Dispose of every directory's instance (see POST /instance/dispose)."""
    runtime = runtime_of(request)
    await runtime.reconfigure()
    for directory in list(runtime.projects):
        await runtime.dispose(directory, reload=False)
    return _json(True)


@router.get("/experimental/session", operation_id="experimental.session.list")
async def all_sessions(
    request: Request,
    roots: bool = False,
    start: float | None = None,
    cursor: float | None = None,
    search: str | None = None,
    limit: int = Query(default=100, ge=1, le=1000),
    archived: bool = False,
) -> Response:
    """Every project's sessions, newest update first, each with its project; archived
    ones only when asked. ``start``: updated at or after; ``cursor``: updated before
    (the last ``time.updated`` of the page before)."""
    readable = await readable_filter(request)
    sessions = [s for s in await runtime_of(request).store.list_sessions() if readable(s.id)]
    sessions.sort(key=lambda s: s.time.updated, reverse=True)
    picked = [
        s
        for s in sessions
        if (archived or s.time.archived is None)
        and not (roots and s.parent_id is not None)
        and not (search and search.lower() not in s.title.lower())
        and (start is None or s.time.updated >= start)
        and (cursor is None or s.time.updated < cursor)
    ][:limit]
    out = []
    for session in picked:
        entry = session.wire()
        worktree = await asyncio.to_thread(workspace.worktree, Path(session.directory))
        entry["project"] = {
            "id": session.project_id,
            "name": Path(session.directory).name,
            "worktree": str(worktree),
        }
        out.append(entry)
    return _json(out)
