"""glob: files matching a pattern such as ``**/*.py``, newest first."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.paths import is_ignored, relative, resolve_path
from partwire.tools.textsearch import contained

LIMIT = 100


class GlobParams(BaseModel):
    pattern: str = Field(description="Glob pattern, e.g. **/*.py")
    path: str | None = Field(default=None, description="Directory to search (default: project)")


def _match(root: Path, pattern: str) -> list[Path]:
    if pattern.startswith("/") or ".." in Path(pattern).parts:
        raise ToolError(f"Pattern {pattern} must be relative and stay inside the searched folder.")
    found = [
        p
        for p in root.glob(pattern)
        if p.is_file() and not is_ignored(p.relative_to(root)) and contained(root, p)
    ]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


async def execute(args: GlobParams, ctx: ToolContext) -> ToolResult:
    root = await resolve_path(ctx, args.path or ".", directory=True)
    await ctx.ask("glob", [args.pattern], metadata={"path": str(root)})
    if not root.is_dir():
        raise ToolError(f"{args.path} is not a directory in the project.")
    matches = await asyncio.to_thread(_match, root, args.pattern)
    shown = matches[:LIMIT]
    output = "\n".join(str(p) for p in shown) if shown else "No files found"
    if len(matches) > LIMIT:
        output += f"\n\n(Showing {LIMIT} of {len(matches)}; use a narrower pattern or path.)"
    return ToolResult(
        title=relative(ctx.project_dir, root),
        output=output,
        metadata={"count": len(matches), "truncated": len(matches) > LIMIT},
    )


TOOL = Tool(
    id="glob",
    description="Find files in the project by glob pattern (e.g. **/*.py), newest first.",
    parameters=GlobParams,
    execute=execute,
)
