"""edit: replace an exact string in a file; it must match once unless replaceAll."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.diff import file_diff
from partwire.tools.paths import relative, resolve_path


class EditParams(BaseModel):
    filePath: str = Field(description="The path of the file to modify")
    oldString: str = Field(description="The exact text to replace (empty: create the file)")
    newString: str = Field(description="The text to replace it with")
    replaceAll: bool = Field(default=False, description="Replace every occurrence")


def _replace(content: str, args: EditParams, name: str) -> str:
    if args.oldString == args.newString:
        raise ToolError("oldString and newString are the same; there is nothing to change.")
    count = content.count(args.oldString)
    if count == 0:
        raise ToolError(
            f"oldString was not found in {name}. Read the file and copy the exact text, "
            "including whitespace and indentation."
        )
    if count > 1 and not args.replaceAll:
        raise ToolError(
            f"oldString was found {count} times in {name}. Include more surrounding lines "
            "to make it unique, or set replaceAll to change every occurrence."
        )
    return content.replace(args.oldString, args.newString)


def _has_content(path: Path) -> bool:
    return path.exists() and bool(path.read_text())


async def execute(args: EditParams, ctx: ToolContext) -> ToolResult:
    path = await resolve_path(ctx, args.filePath)
    name = relative(ctx.project_dir, path)
    if args.oldString == "":
        if await asyncio.to_thread(_has_content, path):
            raise ToolError(
                f"{name} already exists and is not empty; give an oldString to edit it."
            )
        before, after = None, args.newString
    else:
        if not path.is_file():
            raise ToolError(f"File not found: {args.filePath}")
        before = await asyncio.to_thread(path.read_text)
        after = await asyncio.to_thread(_replace, before, args, name)
    diff = await asyncio.to_thread(file_diff, name, before, after)
    await ctx.ask("edit", [name], metadata={"filepath": str(path), "diff": diff["patch"]})
    path.parent.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(path.write_text, after)
    return ToolResult(
        title=name,
        output="Edit applied successfully.",
        metadata={"filepath": str(path), "diff": diff["patch"], "filediff": diff},
    )


TOOL = Tool(
    id="edit",
    description=(
        "Replace an exact string in a file. oldString must match exactly once (including "
        "whitespace) unless replaceAll is true; an empty oldString creates a new file."
    ),
    parameters=EditParams,
    execute=execute,
)
