"""opencode's sandbox worktrees (``/experimental/worktree``): list, create (then the
project's start command and the request's own run there, announced by
``worktree.ready`` or ``worktree.failed``), remove and reset."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import Field

from partwire import workspace, worktrees
from partwire.runtime import Runtime
from partwire.schema.base import WireModel
from partwire.schema.event import (
    WorktreeFailed,
    WorktreeFailedProps,
    WorktreeReady,
    WorktreeReadyProps,
)
from partwire.server.routes.scope import requested_project, runtime_of
from partwire.session.sessions import project_id

router = APIRouter(prefix="/experimental/worktree", tags=["worktree"])


class WorktreeCreateInput(WireModel):
    name: str | None = None
    start_command: str | None = Field(default=None, alias="startCommand")


class WorktreeDirectory(WireModel):
    directory: str = Field(min_length=1)


def _json(value: Any) -> Response:
    return Response(json.dumps(value), media_type="application/json")


def _where(request: Request) -> tuple[Runtime, Path]:
    runtime = runtime_of(request)
    return runtime, requested_project(request).settings.project_dir


@router.get("", operation_id="worktree.list")
async def list_worktrees(request: Request) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    return _json(await asyncio.to_thread(worktrees.list_worktrees, project, data_dir))


@router.post("", operation_id="worktree.create")
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


@router.delete("", operation_id="worktree.remove")
async def remove_worktree(request: Request, body: WorktreeDirectory) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    return _json(await asyncio.to_thread(worktrees.remove, project, data_dir, body.directory))


@router.post("/reset", operation_id="worktree.reset")
async def reset_worktree(request: Request, body: WorktreeDirectory) -> Response:
    runtime, project = _where(request)
    data_dir = runtime.settings.data_dir
    return _json(await asyncio.to_thread(worktrees.reset, project, data_dir, body.directory))
