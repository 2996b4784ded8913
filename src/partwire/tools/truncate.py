"""Tool output over the size limit is cut, and the whole of it is kept in a file."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from partwire.tools.base import ToolContext, ToolResult

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


def _head(text: str) -> str:
    lines = text.splitlines(keepends=True)[:MAX_LINES]
    kept: list[str] = []
    size = 0
    for line in lines:
        size += len(line.encode())
        if size > MAX_BYTES:
            break
        kept.append(line)
    return "".join(kept)


def truncate(result: ToolResult, ctx: ToolContext) -> ToolResult:
    """The result itself when small enough; otherwise its head and a note on where the rest is."""
    output = result.output
    if len(output.encode()) <= MAX_BYTES and output.count("\n") < MAX_LINES:
        return result
    head = _head(output)
    where = "it was not kept"
    if ctx.output_dir is not None:
        ctx.output_dir.mkdir(parents=True, exist_ok=True)
        path = ctx.output_dir / f"{ctx.call_id}.txt"
        path.write_text(output)
        where = f"the full output is in {path}"
    note = (
        f"\n\n[output truncated: showed {len(head.encode())} of {len(output.encode())} bytes; "
        f"{where}. Use grep, or read with offset/limit, to see the rest.]"
    )
    metadata = {**result.metadata, "truncated": True}
    return replace(result, output=head + note, metadata=metadata)
