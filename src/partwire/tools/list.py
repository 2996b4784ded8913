"""list: the files and folders under a directory, as an indented tree."""

from __future__ import annotations

import asyncio
import fnmatch
from pathlib import Path

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.paths import IGNORED_DIRS, relative, resolve_path

LIMIT = 200


class ListParams(BaseModel):
    path: str = Field(default=".", description="Directory to list (relative to the project)")
    ignore: list[str] = Field(default_factory=list, description="Glob patterns to leave out")


def _walk(root: Path, ignore: list[str]) -> tuple[list[str], bool]:
    lines: list[str] = []

    def visit(directory: Path, depth: int) -> bool:
        entries = sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        for entry in entries:
            if entry.name in IGNORED_DIRS or any(fnmatch.fnmatch(entry.name, g) for g in ignore):
                continue
            if len(lines) >= LIMIT:
                return False
            is_dir = entry.is_dir() and not entry.is_symlink()
            lines.append(f"{'  ' * depth}{entry.name}{'/' if is_dir else ''}")
            if is_dir and not visit(entry, depth + 1):
                return False
        return True

    complete = visit(root, 1)
    return lines, not complete


async def execute(args: ListParams, ctx: ToolContext) -> ToolResult:
    root = await resolve_path(ctx, args.path, directory=True)
    await ctx.ask("list", [str(root)])
    if not root.is_dir():
        raise ToolError(f"{args.path} is not a directory in the project.")
    lines, truncated = await asyncio.to_thread(_walk, root, args.ignore)
    note = f"\n(Stopped at {LIMIT} entries; list a subdirectory to see more.)" if truncated else ""
    output = f"{root}/\n" + "\n".join(lines) + note
    return ToolResult(
        title=relative(ctx.project_dir, root),
        output=output,
        metadata={"count": len(lines), "truncated": truncated},
    )


TOOL = Tool(
    id="list",
    description="List files and directories under a path in the project, as a tree.",
    parameters=ListParams,
    execute=execute,
)
