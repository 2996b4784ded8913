"""opencode's sandbox worktrees (``/experimental/worktree``): list, create (then the
project's start command and the request's own run there, announced by
``worktree.ready`` or ``worktree.failed``), remove and reset; and moving a session
between the work trees of one repository (``/experimental/control-plane/move-session``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import Field

from partwire import workspace, worktrees
from partwire.errors import BadRequestError, NamedError
from partwire.runtime import Runtime
from partwire.schema.base import OsText, WireModel
from partwire.schema.event import (
    WorktreeFailed,
    WorktreeFailedProps,
    WorktreeReady,
    WorktreeReadyProps,
)
from partwire.server.routes.scope import requested_project, runtime_of
from partwire.session.sessions import project_id

router = APIRouter(prefix="/experimental", tags=["worktree"])


class WorktreeCreateInput(WireModel):
    name: str | None = None
    start_command: OsText | None = Field(default=None, alias="startCommand")


class WorktreeDirectory(WireModel):
    directory: OsText = Field(min_length=1)


def _json(value: Any) -> Response:
    return Response(json.dumps(value), media_type="application/json")


def _where(request: Request) -> tuple[Runtime, Path]:
    runtime = runtime_of(request)
    return runtime, requested_project(request).settings.project_dir


@router.get("/worktree", operation_id="worktree.list")
async def list_worktrees(request: Request) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    return _json(await asyncio.to_thread(worktrees.list_worktrees, project, data_dir))


@router.post("/worktree", operation_id="worktree.create")
async def create_worktree(request: Request, body: WorktreeCreateInput) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    tree = await asyncio.to_thread(worktrees.create, project, data_dir, body.name)
    commands = await asyncio.to_thread(_start_commands, project, data_dir, body.start_command)
    runtime.spawn(_start(runtime, tree, commands), name=f"worktree {tree.name}")
    return _json(tree.wire())


def _start_commands(project: Path, data_dir: Path, extra: str | None) -> list[str]:
    chosen = workspace.project_settings(data_dir).get(project_id(str(worktrees.primary(project))))
    start = ((chosen or {}).get("commands") or {}).get("start")
    return [c for c in (start, extra) if isinstance(c, str) and c.strip()]


async def _start(runtime: Runtime, tree: worktrees.Worktree, commands: list[str]) -> None:
    failure = await asyncio.to_thread(worktrees.run_start, tree.directory, commands)
    if failure is None:
        ready = WorktreeReady(WorktreeReadyProps(name=tree.name, branch=tree.branch))
        await runtime.store.publish([ready])
    else:
        await runtime.store.publish([WorktreeFailed(WorktreeFailedProps(message=failure))])


@router.delete("/worktree", operation_id="worktree.remove")
async def remove_worktree(request: Request, body: WorktreeDirectory) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    return _json(await asyncio.to_thread(worktrees.remove, project, data_dir, body.directory))


@router.post("/worktree/reset", operation_id="worktree.reset")
async def reset_worktree(request: Request, body: WorktreeDirectory) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    return _json(await asyncio.to_thread(worktrees.reset, project, data_dir, body.directory))


class MoveDestination(WireModel):
    directory: OsText = Field(min_length=1)


class MoveSession(WireModel):
    session_id: str = Field(alias="sessionID", pattern="^ses")
    destination: MoveDestination
    move_changes: bool | None = Field(default=None, alias="moveChanges")


def _destination(source: Path, given: str) -> Path:
    """The directory to move to: a work tree of the repository ``source`` is in."""
    destination = worktrees.resolved(given, "MoveSessionError")
    if not destination.is_dir():
        raise NamedError("MoveSessionError", f"{given} is not a directory")
    try:
        same = worktrees.primary(source) == worktrees.primary(destination)
    except NamedError:
        same = False
    if not same:
        raise NamedError("MoveSessionError", "Destination directory belongs to another project")
    return destination


@router.post(
    "/control-plane/move-session",
    operation_id="experimental.controlPlane.moveSession",
    status_code=204,
)
async def move_session(request: Request, body: MoveSession) -> Response:
    """Move an idle session to another work tree of its repository (a sandbox worktree,
    or back to the main checkout): its next prompts run there."""
    runtime = runtime_of(request)
    session = await runtime.store.get_session(body.session_id)
    if body.move_changes:
        raise BadRequestError(
            "moveChanges is not supported: commit the changes, or apply them with "
            "POST /vcs/apply in the destination",
            field="moveChanges",
        )
    source = Path(session.directory)
    destination = await asyncio.to_thread(_destination, source, body.destination.directory)
    await runtime.project(destination).sessions.move(session.id, destination)
    return Response(status_code=204)
