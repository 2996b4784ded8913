"""todowrite / todoread: the session's todo list (published as todo.updated)."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from partwire.schema.permission import Todo
from partwire.tools.base import Tool, ToolContext, ToolResult
from partwire.words import plural


class TodoWriteParams(BaseModel):
    todos: list[Todo] = Field(description="The updated todo list (replaces the old one)")


class TodoReadParams(BaseModel):
    pass


def _title(total: int, still_open: int) -> str:
    """``3 todos, 2 open``; ``3 todos`` while all are open."""
    return plural(total, "todo") + (f", {still_open} open" if still_open < total else "")


def _result(todos: list[Todo]) -> ToolResult:
    open_count = sum(1 for t in todos if t.status not in ("completed", "cancelled"))
    body = json.dumps([t.wire() for t in todos], indent=2)
    return ToolResult(
        title=plural(len(todos), "todo")
        + (f", {open_count} open" if open_count < len(todos) else ""),
        output=body,
        metadata={"todos": [t.wire() for t in todos]},
    )


async def write(args: TodoWriteParams, ctx: ToolContext) -> ToolResult:
    await ctx.ask("todowrite", ["*"])
    await ctx.todos.set(args.todos)
    return _result(args.todos)


async def read(args: TodoReadParams, ctx: ToolContext) -> ToolResult:
    await ctx.ask("todoread", ["*"])
    return _result(await ctx.todos.get())


WRITE = Tool(
    id="todowrite",
    description=(
        "Create and update the todo list for this session: send the whole list each time. "
        "Status: pending, in_progress, completed, cancelled; priority: high, medium, low."
    ),
    parameters=TodoWriteParams,
    execute=write,
)
READ = Tool(
    id="todoread",
    description="Read the session's todo list.",
    parameters=TodoReadParams,
    execute=read,
)
