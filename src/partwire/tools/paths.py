"""Resolving the paths a tool is given against the project directory.

A path that leads out of the project (``..``, an absolute path elsewhere, or a
symlink pointing outside) is not refused outright: it is a permission ask of
its own, ``external_directory``, on the directory it lands in.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from partwire.tools.base import ToolContext

IGNORED_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", ".mypy_cache",
     ".ruff_cache", ".pytest_cache", ".idea", ".vscode"}
)  # fmt: skip


def inside(project_dir: Path, path: Path) -> bool:
    return path.is_relative_to(project_dir.resolve())


async def resolve_path(ctx: ToolContext, path: str, *, directory: bool = False) -> Path:
    """The real path of ``path`` (symlinks followed); asks before leaving the project."""
    target = (ctx.project_dir.resolve() / path).resolve()
    if not inside(ctx.project_dir, target):
        folder = target if directory else target.parent
        await ctx.ask(
            "external_directory",
            [f"{folder}/*"],
            always=[f"{folder}/*"],
            metadata={"filepath": str(target), "parentDir": str(folder)},
        )
    return target


def relative(project_dir: Path, path: Path) -> str:
    try:
        return path.relative_to(project_dir.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def is_ignored(path: PurePath) -> bool:
    return any(part in IGNORED_DIRS for part in path.parts)
