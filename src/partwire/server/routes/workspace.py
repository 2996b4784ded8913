"""Project routes: path, project, files, find, vcs, and the subsystems partwire has not got."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import platformdirs
from fastapi import APIRouter, Request, Response

from partwire import workspace
from partwire.runtime import Runtime
from partwire.server.routes.scope import requested_project
from partwire.session.sessions import project_id

router = APIRouter(tags=["project"])


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _json(value: Any) -> Response:
    return Response(json.dumps(value), media_type="application/json")


def _project(request: Request) -> Path:
    return requested_project(request).settings.project_dir


@router.get("/path", operation_id="path.get")
async def path(request: Request) -> Response:
    settings = requested_project(request).settings
    tree = await asyncio.to_thread(workspace.worktree, settings.project_dir)
    return _json(
        {
            "home": str(Path.home()),
            "state": str(settings.data_dir),
            "config": platformdirs.user_config_dir("partwire", appauthor=False),
            "worktree": str(tree),
            "directory": str(settings.project_dir),
        }
    )


def _project_info(project: Path, started: int) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": project_id(str(project)),
        "worktree": str(workspace.worktree(project)),
        "name": project.name,
        "time": {"created": started, "updated": started},
        "sandboxes": [],
    }
    if workspace.git(project, "rev-parse", "--git-dir") is not None:
        info["vcs"] = "git"
    return info


_STARTED = int(time.time() * 1000)


@router.get("/project", operation_id="project.list")
async def projects(request: Request) -> Response:
    return _json([await asyncio.to_thread(_project_info, _project(request), _STARTED)])


@router.get("/project/current", operation_id="project.current")
async def current_project(request: Request) -> Response:
    return _json(await asyncio.to_thread(_project_info, _project(request), _STARTED))


@router.get("/file", operation_id="file.list")
async def files(request: Request, path: str = ".") -> Response:
    return _json(await asyncio.to_thread(workspace.list_dir, _project(request), path))


@router.get("/file/content", operation_id="file.read")
async def file_content(request: Request, path: str) -> Response:
    return _json(await asyncio.to_thread(workspace.read_file, _project(request), path))


@router.get("/file/status", operation_id="file.status")
async def file_status(request: Request) -> Response:
    return _json(await asyncio.to_thread(workspace.status, _project(request)))


@router.get("/find", operation_id="find.text")
async def find_text(request: Request, pattern: str) -> Response:
    return _json(await asyncio.to_thread(workspace.find_text, _project(request), pattern))


@router.get("/find/file", operation_id="find.files")
async def find_files(request: Request, query: str, dirs: bool = False, limit: int = 50) -> Response:
    limit = max(1, min(limit, workspace.FIND_LIMIT))
    found = await asyncio.to_thread(
        workspace.find_files, _project(request), query, dirs=dirs, limit=limit
    )
    return _json(found)


@router.get("/vcs", operation_id="vcs.get")
async def vcs(request: Request) -> Response:
    return _json(await asyncio.to_thread(workspace.branch, _project(request)))


# partwire has no LSP, formatter, MCP or custom-command subsystems yet: truthful empty answers
@router.get("/lsp", operation_id="lsp.status")
async def lsp() -> Response:
    return _json([])


@router.get("/formatter", operation_id="formatter.status")
async def formatter() -> Response:
    return _json([])


@router.get("/mcp", operation_id="mcp.status")
async def mcp() -> Response:
    return _json({})


@router.post("/mcp", operation_id="mcp.add", status_code=501)
async def mcp_add() -> Response:
    body = {"name": "NotImplemented", "data": {"message": "partwire has no MCP support yet"}}
    return Response(json.dumps(body), status_code=501, media_type="application/json")


@router.get("/command", operation_id="command.list")
async def commands() -> Response:
    return _json([])


@router.post("/instance/dispose", operation_id="instance.dispose")
async def dispose(request: Request) -> Response:
    """Stop every running session (the instance stays up, as a fresh one)."""
    await _runtime(request).shutdown_sessions()
    return _json(True)
