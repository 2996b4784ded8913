"""Parts: the typed, ordered pieces of a message, each with its own id and lifecycle."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from partwire.schema.base import Tokens, WireModel
from partwire.schema.tool_state import ToolState


class PartBase(WireModel):
    id: str
    session_id: str = Field(alias="sessionID")
    message_id: str = Field(alias="messageID")


class StreamTime(WireModel):
    start: int
    end: int | None = None


class TextPart(PartBase):
    type: Literal["text"] = "text"
    text: str = ""
    synthetic: bool | None = None
    ignored: bool | None = None
    time: StreamTime | None = None
    metadata: dict[str, Any] | None = None


class ReasoningPart(PartBase):
    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    metadata: dict[str, Any] | None = None
    time: StreamTime


class FileSourceText(WireModel):
    value: str
    start: int
    end: int


class FileSource(WireModel):
    type: Literal["file"] = "file"
    path: str
    text: FileSourceText


class FilePart(PartBase):
    type: Literal["file"] = "file"
    mime: str
    filename: str | None = None
    url: str
    source: FileSource | None = None


class AgentSource(WireModel):
    value: str
    start: int
    end: int


class AgentPart(PartBase):
    type: Literal["agent"] = "agent"
    name: str
    source: AgentSource | None = None


class ToolPart(PartBase):
    type: Literal["tool"] = "tool"
    call_id: str = Field(alias="callID")
    tool: str
    state: ToolState
    metadata: dict[str, Any] | None = None


class ModelRef(WireModel):
    provider_id: str = Field(alias="providerID")
    model_id: str = Field(alias="modelID")


class SubtaskPart(PartBase):
    type: Literal["subtask"] = "subtask"
    prompt: str
    description: str
    agent: str
    model: ModelRef | None = None
    command: str | None = None


class StepStartPart(PartBase):
    type: Literal["step-start"] = "step-start"
    snapshot: str | None = None


class StepFinishPart(PartBase):
    type: Literal["step-finish"] = "step-finish"
    reason: str
    snapshot: str | None = None
    cost: float = 0
    tokens: Tokens = Tokens()


class SnapshotPart(PartBase):
    type: Literal["snapshot"] = "snapshot"
    snapshot: str


class PatchPart(PartBase):
    type: Literal["patch"] = "patch"
    hash: str
    files: list[str]


class APIErrorData(WireModel):
    message: str
    status_code: int | None = Field(default=None, alias="statusCode")
    is_retryable: bool = Field(alias="isRetryable")
    response_headers: dict[str, str] | None = Field(default=None, alias="responseHeaders")
    response_body: str | None = Field(default=None, alias="responseBody")
    metadata: dict[str, str] | None = None


class APIError(WireModel):
    name: Literal["APIError"] = "APIError"
    data: APIErrorData


class CreatedTime(WireModel):
    created: int


class RetryPart(PartBase):
    type: Literal["retry"] = "retry"
    attempt: int
    error: APIError
    time: CreatedTime


class CompactionPart(PartBase):
    type: Literal["compaction"] = "compaction"
    auto: bool
    overflow: bool | None = None
    tail_start_id: str | None = None


Part = Annotated[
    TextPart
    | ReasoningPart
    | FilePart
    | AgentPart
    | ToolPart
    | SubtaskPart
    | StepStartPart
    | StepFinishPart
    | SnapshotPart
    | PatchPart
    | RetryPart
    | CompactionPart,
    Field(discriminator="type"),
]
part_adapter: TypeAdapter[Part] = TypeAdapter(Part)


def part_finished(part: Part) -> bool:
    """Whether a part has reached its end: text and reasoning with an end time (or none
    kept), a tool call completed or in error; every other part is whole at once."""
    if isinstance(part, TextPart | ReasoningPart):
        return part.time is None or part.time.end is not None
    if isinstance(part, ToolPart):
        return part.state.status in ("completed", "error")
    return True
