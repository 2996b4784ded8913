"""The ingest vocabulary: one JSON object per line, each a call of StreamingMessageBuilder.

``POST /session/{id}/ingest`` and ``partwire ingest`` take these. An optional first line
``{"type": "start", …}`` says what the message answers and which model made it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from partwire.schema.base import Tokens, WireModel
from partwire.schema.part import ModelRef


class IngestStart(WireModel):
    type: Literal["start"] = "start"
    role: Literal["user", "assistant"] = "assistant"
    prompt: str | None = None
    parent_id: str | None = Field(default=None, alias="parentID", pattern="^msg")
    message_id: str | None = Field(default=None, alias="messageID", pattern="^msg")
    model: ModelRef | None = None
    agent: str | None = None


class TextDelta(WireModel):
    type: Literal["text-delta"] = "text-delta"
    delta: str


class ReasoningDelta(WireModel):
    type: Literal["reasoning-delta"] = "reasoning-delta"
    delta: str


class TextEnd(WireModel):
    """The text (or reasoning) part streaming now ends: the next delta begins another
    (the builder's ``finalize_text_part``)."""

    type: Literal["text-end"] = "text-end"


class ToolCallStart(WireModel):
    type: Literal["tool-call-start"] = "tool-call-start"
    call_id: str = Field(alias="callID", min_length=1)
    tool: str = Field(min_length=1)


class ToolArgsDelta(WireModel):
    type: Literal["tool-args-delta"] = "tool-args-delta"
    call_id: str = Field(alias="callID", min_length=1)
    delta: str


class ToolCall(WireModel):
    type: Literal["tool-call"] = "tool-call"
    call_id: str = Field(alias="callID", min_length=1)
    tool: str = Field(min_length=1)
    input: dict[str, Any] | str = Field(default_factory=dict)


class ToolResult(WireModel):
    type: Literal["tool-result"] = "tool-result"
    call_id: str = Field(alias="callID", min_length=1)
    output: Any
    is_error: bool = Field(default=False, alias="isError")
    title: str | None = None
    metadata: dict[str, Any] | None = None


class FileAdded(WireModel):
    type: Literal["file"] = "file"
    mime: str
    url: str
    filename: str | None = None


class StepStart(WireModel):
    type: Literal["step-start"] = "step-start"


class StepFinish(WireModel):
    type: Literal["step-finish"] = "step-finish"
    tokens: Tokens | None = None
    cost: float | None = None  # none given: the price catalogue's for the message's model
    reason: str = "stop"


class StreamError(WireModel):
    """The external loop failed: the message ends with this error."""

    type: Literal["error"] = "error"
    message: str


class SubagentEvent(WireModel):
    """An event of a sub-agent's own message: the sub-agent the parent's tool call
    ``callID`` runs (Claude Code's Task, an opencode child session). Its first event opens
    a child session linked from that call (a ``start`` gives its prompt and model); the
    call's result ends it."""

    type: Literal["subagent"] = "subagent"
    call_id: str = Field(alias="callID", min_length=1)
    event: IngestEvent


IngestEvent = Annotated[
    IngestStart
    | SubagentEvent
    | TextDelta
    | ReasoningDelta
    | TextEnd
    | ToolCallStart
    | ToolArgsDelta
    | ToolCall
    | ToolResult
    | FileAdded
    | StepStart
    | StepFinish
    | StreamError,
    Field(discriminator="type"),
]
SubagentEvent.model_rebuild()
ingest_adapter: TypeAdapter[IngestEvent] = TypeAdapter(IngestEvent)
