"""task: delegate work to a sub-agent that runs in a child session."""

from __future__ import annotations

from pydantic import BaseModel, Field

from partwire.tools.base import Tool, ToolContext, ToolResult


class TaskParams(BaseModel):
    description: str = Field(description="A short (3-5 words) description of the task")
    prompt: str = Field(min_length=1, description="The task for the agent to perform")
    subagent_type: str = Field(default="general", description="The sub-agent to use")


async def execute(args: TaskParams, ctx: ToolContext) -> ToolResult:
    await ctx.ask("task", [args.subagent_type], metadata={"description": args.description})
    child_id, text = await ctx.subtasks(
        agent=args.subagent_type, description=args.description, prompt=args.prompt
    )
    output = f"{text}\n\n<task_metadata>\nsession_id: {child_id}\n</task_metadata>"
    return ToolResult(title=args.description, output=output, metadata={"sessionId": child_id})


TOOL = Tool(
    id="task",
    description=(
        "Launch a sub-agent to handle a multi-step task on its own, in a child session. "
        "Give a short description and a complete prompt; its final answer comes back as "
        "this tool's output. Sub-agents: general."
    ),
    parameters=TaskParams,
    execute=execute,
)
