"""opencode's project copies (``/experimental/project/{id}/copy``): partwire makes them
with the ``worktree`` strategy, as sandbox worktrees of the project's repository."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import Field

from partwire import worktrees
from partwire.errors import NamedError, NotFoundError
from partwire.schema.base import OsText, WireModel
from partwire.server.routes.scope import runtime_of
from partwire.session.sessions import project_id, random_slug

router = APIRouter(prefix="/experimental/project/{projectID}/copy", tags=["project"])
STRATEGIES = ("worktree",)
_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "for",
        "in",
        "on",
        "and",
        "or",
        "with",
        "from",
        "into",
        "this",
        "that",
        "it",
        "is",
        "be",
    ]
)


class CopyCreate(WireModel):
    strategy: str
    directory: OsText = Field(min_length=1)
    name: str | None = None


class CopyRemove(WireModel):
    directory: OsText = Field(min_length=1)
    force: bool


class NameContext(WireModel):
    context: str | None = None


def _json(value: Any) -> Response:
    return Response(json.dumps(value), media_type="application/json")


async def _project(request: Request, wanted: str) -> Path:
    """The directory of a project this server knows, by id (404 otherwise)."""
    runtime = runtime_of(request)
    directories = {str(runtime.settings.project_dir), *map(str, runtime.projects)}
    directories |= {s.directory for s in await runtime.store.list_sessions()}
    for directory in directories:
        if project_id(directory) == wanted:
            return Path(directory)
    raise NotFoundError("Project", wanted)


def _copy(project: Path, data_dir: Path, body: CopyCreate) -> worktrees.Worktree:
    if body.strategy not in STRATEGIES:
        raise NamedError("ProjectCopyError", f"Project copy strategy unavailable: {body.strategy}")
    source = worktrees.resolved(body.directory, "ProjectCopyError")
    if not source.is_dir():
        raise NamedError("ProjectCopyError", f"{body.directory} is not a directory")
    if worktrees.primary(source) != worktrees.primary(project):
        raise NamedError("ProjectCopyError", f"{body.directory} is not in this project")
    return worktrees.create(source, data_dir, body.name)


@router.post("", operation_id="v2.projectCopy.create")
async def create_copy(request: Request, projectID: str, body: CopyCreate) -> Response:
    project = await _project(request, projectID)
    data_dir = runtime_of(request).settings.data_dir
    tree = await asyncio.to_thread(_copy, project, data_dir, body)
    return _json({"directory": str(tree.directory)})


def _remove_copy(project: Path, data_dir: Path, body: CopyRemove) -> None:
    target = worktrees.resolved(body.directory, "ProjectCopyError")
    if not body.force and target.is_dir() and worktrees.changes(target):
        raise NamedError(
            "ProjectCopyError",
            f"{body.directory} has uncommitted changes: remove it with force",
            forceRequired=True,
        )
    worktrees.remove(project, data_dir, body.directory)


@router.delete("", operation_id="v2.projectCopy.remove", status_code=204)
async def remove_copy(request: Request, projectID: str, body: CopyRemove) -> Response:
    project = await _project(request, projectID)
    data_dir = runtime_of(request).settings.data_dir
    await asyncio.to_thread(_remove_copy, project, data_dir, body)
    return Response(status_code=204)


@router.post("/refresh", operation_id="v2.projectCopy.refresh", status_code=204)
async def refresh_copies(request: Request, projectID: str) -> Response:
    """Copies are git worktrees: they read the repository live, nothing to refresh."""
    await _project(request, projectID)
    return Response(status_code=204)


@router.post("/generate-name", operation_id="experimental.projectCopy.generateName")
async def generate_name(request: Request, projectID: str, body: NameContext) -> Response:
    """A short name from the task's words (the first few that say something), else two
    random words."""
    await _project(request, projectID)
    words = re.findall(r"[a-z0-9]+", (body.context or "").lower())
    telling = [w for w in words if w not in _FILLER and len(w) > 1][:3]
    name = "-".join(telling)[:40].strip("-") or random_slug()
    return _json({"name": name})
