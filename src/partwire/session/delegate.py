"""A prompt's subtask parts (``SubtaskPartInput``: a custom command with ``subtask``, or a
client that delegates directly) run as the ``task`` tool, before the model is asked.

``Delegation`` is a LanguageModel that answers one call with that task call, so the step
goes through the processor like any other: the assistant message, the tool part, the
child session and the permission checks are the usual ones. The model then sees the
sub-agent's answer on the next step.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from partwire.providers.base import LanguageModel
from partwire.providers.stream import (
    Finish,
    FinishStep,
    ModelRequest,
    StartStep,
    StreamEvent,
    StreamStart,
    ToolCall,
    ToolInputStart,
    Usage,
)
from partwire.schema.message import MessageWithParts, UserMessage
from partwire.schema.part import SubtaskPart, ToolPart


def call_id(part: SubtaskPart) -> str:
    return f"call_subtask_{part.id}"


def pending_subtask(user: UserMessage, history: list[MessageWithParts]) -> SubtaskPart | None:
    """The user message's first subtask part that no task call has run yet."""
    mine = next((m for m in history if m.info.id == user.id), None)
    if mine is None:
        return None
    ran = {p.call_id for m in history for p in m.parts if isinstance(p, ToolPart)}
    for part in mine.parts:
        if isinstance(part, SubtaskPart) and call_id(part) not in ran:
            return part
    return None


class Delegation:
    """Stands in for the model for one step: it calls ``task`` with the subtask."""

    def __init__(self, part: SubtaskPart, model: LanguageModel) -> None:
        self.part = part
        self.provider_id = model.provider_id
        self.model_id = model.model_id
        self.context_limit = model.context_limit

    def cost(self, usage: Usage) -> float:
        return 0.0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        arguments = {
            "description": self.part.description,
            "prompt": self.part.prompt,
            "subagent_type": self.part.agent,
        }
        call = call_id(self.part)
        yield StreamStart()
        yield StartStep()
        yield ToolInputStart(call, "task")
        yield ToolCall(call, "task", json.dumps(arguments))
        yield FinishStep("tool-calls", Usage())
        yield Finish("tool-calls")
