"""Resolving the paths a tool is given against the project directory."""

from __future__ import annotations

from pathlib import Path

from partwire.errors import ToolError

IGNORED_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        "dist",
        "build",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".idea",
        ".vscode",
    }
)


def resolve_in_project(project_dir: Path, path: str) -> Path:
    """The real path of ``path`` (relative to the project, or absolute) inside the project.

    Symlinks are followed before the check, so a link pointing out of the project
    is refused like ``..`` or an absolute path elsewhere.
    """
    root = project_dir.resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ToolError(
            f"{path} is outside the project directory {root}. "
            "Only paths inside the project can be used; pass a path relative to the project."
        )
    return target


def relative(project_dir: Path, path: Path) -> str:
    try:
        return path.relative_to(project_dir.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def is_ignored(path: Path) -> bool:
    return any(part in IGNORED_DIRS for part in path.parts)
