"""A project as opencode's /project routes and ``project.updated`` describe it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from partwire.schema.base import WireModel


class ProjectIcon(WireModel):
    url: str | None = None
    override: str | None = None
    color: str | None = None


class ProjectCommands(WireModel):
    start: str | None = None


class ProjectTime(WireModel):
    created: int
    updated: int


class ProjectInfo(WireModel):
    id: str
    worktree: str
    vcs: Literal["git"] | None = None
    name: str | None = None
    icon: ProjectIcon | None = None
    commands: ProjectCommands | None = None
    time: ProjectTime
    sandboxes: list[str] = Field(default_factory=list)


class ProjectUpdateInput(WireModel):
    """Body of PATCH /project/{id}: what the user may set (kept in the data dir)."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    icon: ProjectIcon | None = None
    commands: ProjectCommands | None = None
