"""Project routes: path, project, files, find, vcs, and the subsystems partwire has not got."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import platformdirs
from fastapi import APIRouter, Query, Request, Response

from partwire import commands as command_files
from partwire import workspace
from partwire.errors import NotFoundError
from partwire.runtime import Runtime
from partwire.schema.base import WireModel
from partwire.schema.event import ProjectUpdated
from partwire.schema.project import ProjectInfo, ProjectUpdateInput
from partwire.schema.session import Session
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


def _project_info(
    project: Path, created: int, updated: int, chosen: dict[str, Any] | None = None
) -> dict[str, Any]:
    """opencode's Project for one directory partwire serves. ``worktree`` is its git work
    tree; a directory inside one is named in ``sandboxes`` (the schema has no other field
    for it), so a client scopes requests with ``sandboxes[0]`` if any, else ``worktree``."""
    tree = workspace.worktree(project)
    info: dict[str, Any] = {
        "id": project_id(str(project)),
        "worktree": str(tree),
        "name": project.name,
        "time": {"created": created, "updated": updated},
        "sandboxes": [] if tree.resolve() == project.resolve() else [str(project)],
    }
    if workspace.git(project, "rev-parse", "--git-dir") is not None:
        info["vcs"] = "git"
    return {**info, **(chosen or {})}  # what the user set (PATCH /project/{id}) wins


def _session_times(sessions: list[Session]) -> dict[Path, tuple[int, int]]:
    """(first created, last updated) of the sessions of each directory."""
    times: dict[Path, tuple[int, int]] = {}
    for session in sessions:
        path = Path(session.directory)
        created, updated = times.get(path, (session.time.created, session.time.updated))
        times[path] = (min(created, session.time.created), max(updated, session.time.updated))
    return times


def _times(path: Path, known: dict[Path, tuple[int, int]]) -> tuple[int, int]:
    """A project's times: from its sessions, or, before it has any, the directory's own."""
    if path in known:
        return known[path]
    stamp = int(path.stat().st_mtime * 1000) if path.is_dir() else 0
    return stamp, stamp


def _known_projects(
    default: Path, opened: list[Path], sessions: list[Session], data_dir: Path
) -> list[Any]:
    """Every directory this server knows: where it started, then those of stored sessions
    and of requests, most recently active first; directories gone from disk are left out."""
    known = _session_times(sessions)
    chosen = workspace.project_settings(data_dir)
    others = sorted({*opened, *known} - {default}, key=lambda p: -known.get(p, (0, 0))[1])
    return [
        _project_info(path, *_times(path, known), chosen.get(project_id(str(path))))
        for path in [default, *others]
        if path == default or path.is_dir()
    ]


@router.get("/project", operation_id="project.list")
async def projects(request: Request) -> Response:
    runtime = _runtime(request)
    sessions = await runtime.store.list_sessions()
    opened = list(runtime.projects)
    known = await asyncio.to_thread(
        _known_projects, runtime.settings.project_dir, opened, sessions, runtime.settings.data_dir
    )
    return _json(known)


async def _info(request: Request, project: Path) -> dict[str, Any]:
    runtime = _runtime(request)
    known = _session_times(await runtime.store.list_sessions())
    times = await asyncio.to_thread(_times, project, known)
    chosen = await asyncio.to_thread(workspace.project_settings, runtime.settings.data_dir)
    pid = project_id(str(project))
    return await asyncio.to_thread(_project_info, project, *times, chosen.get(pid))


@router.get("/project/current", operation_id="project.current")
async def current_project(request: Request) -> Response:
    return _json(await _info(request, _project(request)))


@router.patch("/project/{projectID}", operation_id="project.update")
async def update_project(request: Request, projectID: str, body: ProjectUpdateInput) -> Response:
    """Set the project's name, icon or start command (kept in the data dir, shown by every
    project route); ``project.updated`` tells the clients."""
    runtime = _runtime(request)
    sessions = await runtime.store.list_sessions()
    known = await asyncio.to_thread(
        _known_projects, runtime.settings.project_dir, list(runtime.projects), sessions,
        runtime.settings.data_dir,
    )  # fmt: skip
    if all(info["id"] != projectID for info in known):
        raise NotFoundError("Project", projectID)
    fields = body.wire()
    await asyncio.to_thread(
        workspace.save_project_settings, runtime.settings.data_dir, projectID, fields
    )
    info = next(i for i in known if i["id"] == projectID)
    updated = await _info(
        request, Path(info["sandboxes"][0] if info["sandboxes"] else info["worktree"])
    )
    await runtime.store.publish([ProjectUpdated(ProjectInfo.model_validate(updated))])
    return _json(updated)


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


@router.get("/vcs/status", operation_id="vcs.status")
async def vcs_status(request: Request) -> Response:
    return _json(await asyncio.to_thread(workspace.vcs_status, _project(request)))


@router.get("/vcs/diff", operation_id="vcs.diff")
async def vcs_diff(
    request: Request,
    mode: Literal["git", "branch"],
    context: int | None = Query(default=None, ge=0, le=10_000),
) -> Response:
    """Changed files with patches: against HEAD (``git``), or against where the branch
    left the default branch (``branch``)."""
    found = await asyncio.to_thread(workspace.vcs_diff, _project(request), mode, context)
    return _json(found)


@router.get("/vcs/diff/raw", operation_id="vcs.diff.raw")
async def vcs_diff_raw(request: Request) -> Response:
    """The working tree's changes against HEAD as one unified diff (new files included)."""
    changed = await asyncio.to_thread(workspace.vcs_diff, _project(request), "git", None)
    text = "".join(entry["patch"] for entry in changed)
    return Response(text, media_type="text/x-diff; charset=utf-8")


class VcsApplyInput(WireModel):
    patch: str


@router.post("/vcs/apply", operation_id="vcs.apply")
async def vcs_apply(request: Request, body: VcsApplyInput) -> Response:
    """Apply a unified diff to the working tree (checked first: all of it or nothing)."""
    await asyncio.to_thread(workspace.apply_patch, _project(request), body.patch)
    return _json({"applied": True})


@router.post("/project/git/init", operation_id="project.initGit")
async def init_git(request: Request) -> Response:
    """Make the project a git repository (nothing happens in one already)."""
    project = _project(request)
    await asyncio.to_thread(workspace.init_git, project)
    return _json(await _info(request, project))


@router.get("/find/symbol", operation_id="find.symbols")
async def find_symbols(request: Request, query: str) -> Response:
    """Workspace symbols come from language servers, which partwire does not run."""
    return _json([])


@router.get("/project/{projectID}/directories", operation_id="project.directories")
async def project_directories(request: Request, projectID: str) -> Response:
    """The directories of a project: partwire serves each project from its one directory."""
    runtime = _runtime(request)
    sessions = await runtime.store.list_sessions()
    known = await asyncio.to_thread(
        _known_projects,
        runtime.settings.project_dir,
        list(runtime.projects),
        sessions,
        runtime.settings.data_dir,
    )
    for info in known:
        if info["id"] == projectID:
            directory = info["sandboxes"][0] if info["sandboxes"] else info["worktree"]
            return _json([{"directory": directory}])
    raise NotFoundError("Project", projectID)


# partwire has no LSP, formatter or MCP subsystems yet: truthful empty answers
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
async def commands(request: Request) -> Response:
    """The custom commands of the project (``partwire.commands``)."""
    found = await command_files.of_project(requested_project(request).settings)
    return _json([c.wire() for c in found])


@router.post("/instance/dispose", operation_id="instance.dispose")
async def dispose(request: Request) -> Response:
    """Dispose of the directory's instance: its runs stop, it is made anew on next use,
    and ``server.instance.disposed`` goes out (event streams stay open)."""
    await _runtime(request).dispose(_project(request))
    return _json(True)
