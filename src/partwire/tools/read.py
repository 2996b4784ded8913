"""read: a text file with line numbers, a window of it with offset/limit."""

from __future__ import annotations

import asyncio
import base64
import difflib
from pathlib import Path

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Attachment, Tool, ToolContext, ToolResult
from partwire.tools.paths import relative, resolve_path

DEFAULT_LIMIT = 2000
MAX_ATTACHMENT = 5 * 1024 * 1024
ATTACHABLE = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}
MAX_LINE = 2000


class ReadParams(BaseModel):
    filePath: str = Field(description="The path of the file to read (relative to the project)")
    offset: int | None = Field(default=None, ge=0, description="Line number to start at (0-based)")
    limit: int | None = Field(default=None, ge=1, description="Number of lines to read")


def _missing(path: Path, given: str) -> ToolError:
    siblings = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
    close = difflib.get_close_matches(path.name, siblings, n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ToolError(f"File not found: {given}.{hint}")


def read_window(path: Path, given: str, offset: int, limit: int) -> tuple[str, int]:
    """Numbered lines ``offset``…``offset+limit`` of a text file, and its line count."""
    if not path.exists():
        raise _missing(path, given)
    if path.is_dir():
        raise ToolError(f"{given} is a directory; use the list tool to see what it holds.")
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise ToolError(f"{given} is a binary file; it cannot be read as text.")
    return number_lines(data.decode("utf-8", errors="replace"), offset, limit)


def number_lines(text: str, offset: int, limit: int) -> tuple[str, int]:
    """Numbered lines ``offset``…``offset+limit`` of ``text``, and its line count."""
    lines = text.splitlines()
    window = lines[offset : offset + limit]
    numbered = [
        f"{offset + i + 1:05d}| {line[:MAX_LINE]}{'…' if len(line) > MAX_LINE else ''}"
        for i, line in enumerate(window)
    ]
    tail = ""
    if offset + limit < len(lines):
        nxt = offset + limit
        tail = f"\n\n(File has more lines. Use offset={nxt} to read beyond line {nxt}.)"
    return "<file>\n" + "\n".join(numbered) + tail + "\n</file>", len(lines)


def _attachment(path: Path, mime: str) -> ToolResult:
    data = path.read_bytes()
    if len(data) > MAX_ATTACHMENT:
        raise ToolError(f"{path.name} is {len(data)} bytes; files over 5 MB are not attached.")
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    kind = "PDF" if mime == "application/pdf" else "Image"
    return ToolResult(
        title=path.name,
        output=f"{kind} read successfully ({len(data)} bytes, {mime}); it is attached.",
        metadata={"mime": mime, "bytes": len(data)},
        attachments=(Attachment(mime=mime, url=url, filename=path.name),),
    )


async def execute(args: ReadParams, ctx: ToolContext) -> ToolResult:
    path = await resolve_path(ctx, args.filePath)
    await ctx.ask("read", [str(path)], metadata={"filepath": str(path)})
    mime = ATTACHABLE.get(path.suffix.lower())
    if mime is not None and path.is_file():
        result = await asyncio.to_thread(_attachment, path, mime)
        return ToolResult(
            title=relative(ctx.project_dir, path),
            output=result.output,
            metadata=result.metadata,
            attachments=result.attachments,
        )
    offset, limit = args.offset or 0, args.limit or DEFAULT_LIMIT
    edited = await ctx.editor_text(path)  # the user's editor may hold unsaved changes
    if edited is not None:
        output, total = number_lines(edited, offset, limit)
    else:
        output, total = await asyncio.to_thread(read_window, path, args.filePath, offset, limit)
    return ToolResult(
        title=relative(ctx.project_dir, path),
        output=output,
        metadata={"lines": total, "preview": output[:400]},
    )


TOOL = Tool(
    id="read",
    description=(
        "Read a text file from the project. Lines come numbered; use offset and limit "
        "to read a window of a long file."
    ),
    parameters=ReadParams,
    execute=execute,
)
