"""Typed shapes of the project routes' plain JSON answers (opencode's schemas)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class PathInfo(TypedDict):
    home: str
    state: str
    config: str
    worktree: str
    directory: str


class ProjectTime(TypedDict):
    created: int
    updated: int


class ProjectInfo(TypedDict):
    id: str
    worktree: str
    name: NotRequired[str]
    vcs: NotRequired[Literal["git"]]
    time: ProjectTime
    sandboxes: list[str]


class FileNode(TypedDict):
    name: str
    path: str
    absolute: str
    type: Literal["file", "directory"]
    ignored: bool


class FileContent(TypedDict):
    type: Literal["text", "binary"]
    content: str


class FileChange(TypedDict):
    path: str
    added: int
    removed: int
    status: Literal["added", "deleted", "modified"]


class Text(TypedDict):
    text: str


class Submatch(TypedDict):
    match: Text
    start: int
    end: int


class TextMatch(TypedDict):
    path: Text
    lines: Text
    line_number: int
    absolute_offset: int
    submatches: list[Submatch]


class VcsInfo(TypedDict, total=False):
    branch: str


class Health(TypedDict):
    healthy: bool
    version: str
