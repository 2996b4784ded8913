"""apply_patch: add, update, delete and move several files in one step; all or nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.tools.diff import file_diff
from partwire.tools.patch_format import FileChange, apply_hunks, parse
from partwire.tools.paths import relative, resolve_path


class ApplyPatchParams(BaseModel):
    patchText: str = Field(description="The full patch, from *** Begin Patch to *** End Patch")


@dataclass
class _Planned:
    """One file's state before and after; None means absent."""

    path: Path
    before: str | None
    after: str | None


async def _plan(change: FileChange, ctx: ToolContext) -> list[_Planned]:
    path = await resolve_path(ctx, change.path)
    exists = path.is_file()
    if change.kind == "add":
        if exists:
            raise ToolError(f"Cannot add {change.path}: it already exists (use Update File).")
        return [_Planned(path, None, change.content)]
    if not exists:
        raise ToolError(f"Cannot {change.kind} {change.path}: file not found.")
    before = await asyncio.to_thread(path.read_text)
    if change.kind == "delete":
        return [_Planned(path, before, None)]
    after = before
    if change.hunks:
        after = await asyncio.to_thread(apply_hunks, before, change.hunks, change.path)
    if change.move_to is None:
        return [_Planned(path, before, after)]
    target = await resolve_path(ctx, change.move_to)
    if target.exists():
        raise ToolError(f"Cannot move {change.path} to {change.move_to}: the target exists.")
    return [_Planned(path, before, None), _Planned(target, None, after)]


def _write(plan: list[_Planned]) -> None:
    """Apply every change; on any failure, put every file back as it was."""
    done: list[_Planned] = []
    try:
        for item in plan:
            if item.after is None:
                item.path.unlink()
            else:
                item.path.parent.mkdir(parents=True, exist_ok=True)
                item.path.write_text(item.after)
            done.append(item)
    except OSError as exc:
        for item in reversed(done):
            if item.before is None:
                item.path.unlink(missing_ok=True)
            else:
                item.path.write_text(item.before)
        raise ToolError(f"The patch could not be applied, nothing was changed: {exc}") from exc


def _diffs(names: list[str], plan: list[_Planned]) -> list[dict[str, Any]]:
    return [
        file_diff(name, item.before, item.after) for name, item in zip(names, plan, strict=True)
    ]


async def execute(args: ApplyPatchParams, ctx: ToolContext) -> ToolResult:
    changes = parse(args.patchText)
    plan = [item for change in changes for item in await _plan(change, ctx)]
    names = [relative(ctx.project_dir, item.path) for item in plan]
    diffs = await asyncio.to_thread(_diffs, names, plan)
    patch = "".join(d["patch"] for d in diffs)
    await ctx.ask("edit", names, metadata={"files": names, "diff": patch})
    await asyncio.to_thread(_write, plan)
    summary = "\n".join(f"{d['status'][0].upper()} {d['file']}" for d in diffs)
    return ToolResult(
        title=f"{len(names)} file{'s' if len(names) != 1 else ''}",
        output=f"Success. Updated the following files:\n{summary}",
        metadata={"diff": patch, "files": diffs},
    )


TOOL = Tool(
    id="apply_patch",
    description=(
        "Apply a patch that adds, updates, deletes or moves files, all at once or not at all. "
        "Format: '*** Begin Patch', then per file '*** Add File: p' (+lines), "
        "'*** Delete File: p', or '*** Update File: p' (optional '*** Move to: q') with "
        "hunks of ' context', '-old', '+new' lines (an optional '@@ anchor' line before each), "
        "and '*** End Patch'."
    ),
    parameters=ApplyPatchParams,
    execute=execute,
)
