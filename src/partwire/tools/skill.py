"""skill: load a skill's instructions (``partwire.skills``) into the conversation."""

from __future__ import annotations

from pydantic import BaseModel, Field

from partwire.errors import ToolError
from partwire.tools.base import Tool, ToolContext, ToolResult


class SkillParams(BaseModel):
    name: str = Field(description="The skill's name, as the system prompt lists it")


async def execute(args: SkillParams, ctx: ToolContext) -> ToolResult:
    skills = {skill.name: skill for skill in await ctx.skills()}
    skill = skills.get(args.name)
    if skill is None:
        known = ", ".join(skills) or "none"
        raise ToolError(f"No skill named {args.name!r}. Available: {known}.")
    await ctx.ask("skill", [skill.name], metadata={"name": skill.name})
    base = skill.location.parent
    output = (
        f'<skill name="{skill.name}">\n'
        f"Base directory of this skill (its other files are relative to it): {base}\n\n"
        f"{skill.content}\n</skill>"
    )
    return ToolResult(
        title=skill.name, output=output, metadata={"name": skill.name, "dir": str(base)}
    )


TOOL = Tool(
    id="skill",
    description=(
        "Load a skill: instructions for a kind of task, written by the user or the project. "
        "The skills there are, with what each is for, are listed in the system prompt; load "
        "one when the task at hand matches its description."
    ),
    parameters=SkillParams,
    execute=execute,
)
