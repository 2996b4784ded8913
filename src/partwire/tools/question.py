"""question: ask the user one or more multiple-choice questions and wait for the answers."""

from __future__ import annotations

from pydantic import BaseModel, Field

from partwire.schema.permission import QuestionInfo
from partwire.tools.base import Tool, ToolContext, ToolResult


class QuestionParams(BaseModel):
    questions: list[QuestionInfo] = Field(min_length=1, description="Questions to ask")


async def execute(args: QuestionParams, ctx: ToolContext) -> ToolResult:
    answers = await ctx.questions(args.questions)
    pairs = [
        f'"{q.question}"="{", ".join(a) if a else "Unanswered"}"'
        for q, a in zip(args.questions, answers, strict=True)
    ]
    output = (
        f"User has answered your questions: {', '.join(pairs)}. "
        "You can now continue with the user's answers in mind."
    )
    title = f"Asked {len(args.questions)} question{'s' if len(args.questions) > 1 else ''}"
    return ToolResult(title=title, output=output, metadata={"answers": answers})


TOOL = Tool(
    id="question",
    description=(
        "Ask the user questions when you need a decision or information only they have. "
        "Each question has a short header and 2-5 options; the user may pick one "
        "(or several when multiple is true)."
    ),
    parameters=QuestionParams,
    execute=execute,
)
