"""write: create or overwrite a file with the given content."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.diff import file_diff
from partwire.tools.paths import relative, resolve_path


class WriteParams(BaseModel):
    filePath: str = Field(description="The path of the file to write (relative to the project)")
    content: str = Field(description="The full content to write")


async def execute(args: WriteParams, ctx: ToolContext) -> ToolResult:
    path = await resolve_path(ctx, args.filePath)
    if path.is_dir():
        raise ToolError(f"{args.filePath} is a directory; give the path of a file.")
    name = relative(ctx.project_dir, path)
    before = await asyncio.to_thread(path.read_text) if path.exists() else None
    diff = await asyncio.to_thread(file_diff, name, before, args.content)
    await ctx.ask("edit", [name], metadata={"filepath": str(path), "diff": diff["patch"]})
    path.parent.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(path.write_text, args.content)
    verb = "Wrote" if before is None else "Overwrote"
    return ToolResult(
        title=name,
        output=f"{verb} {name} ({len(args.content.splitlines())} lines).",
        metadata={
            "filepath": str(path),
            "exists": before is not None,
            "diff": diff["patch"],
            "filediff": diff,
        },
    )


TOOL = Tool(
    id="write",
    description="Write a file in the project, creating it (and its folders) or replacing it.",
    parameters=WriteParams,
    execute=execute,
)
