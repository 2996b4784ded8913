"""Seed 004's SessionEvents and ConversationBlocks, field for field.

The shapes its clients are written against (the ``session-events.ts`` and
``conversation-blocks.ts`` types of that system): an event is ``{type, payload, context:
{sessionId, conversationId?, source?: runner | server, timestamp?: ISO-8601}}`` (partwire
adds ``id``, the cursor a client resumes from), each payload exactly as the seed's
``SessionEventPayloads`` defines it, and blocks are the seed's ``ConversationBlock`` union.
``create_session_event`` and ``enrich_event_context`` are the seed's factory and enricher;
``is_conversation_event`` says which events the shared reducer folds.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, ValidationError, field_validator

from partwire.schema.base import WireModel

BlockStatus = Literal["pending", "complete", "error"]
BlockType = Literal[
    "user_message", "assistant_text", "tool_use", "tool_result", "thinking", "system",
    "subagent", "error", "skill_load",
]  # fmt: skip
Source = Literal["runner", "server"]


@lru_cache(maxsize=256)  # every event of a stream carries one; most repeat the last
def iso(ms: int | float) -> str:
    """An epoch-milliseconds time as the seed writes timestamps (``…T…:…:….123Z``)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---- blocks -------------------------------------------------------------------------------


class BaseBlock(WireModel):
    id: str
    timestamp: str
    status: BlockStatus | None = None
    metadata: dict[str, Any] | None = None


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str


class ImageSource(WireModel):
    type: Literal["base64", "url"]
    data: str
    media_type: str | None = Field(default=None, alias="mediaType")


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    source: ImageSource


ContentPart = Annotated[TextContent | ImageContent, Field(discriminator="type")]


class UserMessageBlock(BaseBlock):
    type: Literal["user_message"] = "user_message"
    content: str | list[ContentPart]


class AssistantTextBlock(BaseBlock):
    type: Literal["assistant_text"] = "assistant_text"
    content: str
    model: str | None = None


class ToolUseBlock(BaseBlock):
    type: Literal["tool_use"] = "tool_use"
    tool_name: str = Field(alias="toolName")
    tool_use_id: str = Field(alias="toolUseId")
    input: dict[str, Any]
    display_name: str | None = Field(default=None, alias="displayName")
    description: str | None = None


class ToolResultBlock(BaseBlock):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str = Field(alias="toolUseId")
    output: Any
    is_error: bool = Field(alias="isError")
    duration_ms: int | None = Field(default=None, alias="durationMs")
    render_output_as_markdown: bool | None = Field(default=None, alias="renderOutputAsMarkdown")


class ThinkingBlock(BaseBlock):
    type: Literal["thinking"] = "thinking"
    content: str
    summary: str | None = None


SystemSubtype = Literal[
    "session_start", "session_end", "error", "status", "hook_response", "auth_status", "log"
]


class SystemBlock(BaseBlock):
    type: Literal["system"] = "system"
    subtype: SystemSubtype
    message: str


class SubagentBlock(BaseBlock):
    type: Literal["subagent"] = "subagent"
    subagent_id: str | None = Field(default=None, alias="subagentId")
    tool_use_id: str | None = Field(default=None, alias="toolUseId")
    name: str | None = None
    input: str
    description: str | None = None
    output: str | None = None
    duration_ms: int | None = Field(default=None, alias="durationMs")


class ErrorBlock(BaseBlock):
    type: Literal["error"] = "error"
    message: str
    code: str | None = None


class SkillLoadBlock(BaseBlock):
    type: Literal["skill_load"] = "skill_load"
    skill_name: str = Field(alias="skillName")
    content: str


ConversationBlock = Annotated[
    UserMessageBlock | AssistantTextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock
    | SystemBlock | SubagentBlock | ErrorBlock | SkillLoadBlock,
    Field(discriminator="type"),
]  # fmt: skip


# ---- payloads -----------------------------------------------------------------------------


class TokenUsage(WireModel):
    input_tokens: int = Field(alias="inputTokens")
    output_tokens: int = Field(alias="outputTokens")
    cache_read_tokens: int | None = Field(default=None, alias="cacheReadTokens")
    cache_write_tokens: int | None = Field(default=None, alias="cacheWriteTokens")
    thinking_tokens: int | None = Field(default=None, alias="thinkingTokens")
    total_tokens: int = Field(alias="totalTokens")


class SessionMetadata(WireModel):
    """The seed allows more keys beside these three (``[key: string]: unknown``)."""

    model_config = {**WireModel.model_config, "extra": "allow"}
    usage: TokenUsage | None = None
    cost_usd: float | None = Field(default=None, alias="costUSD")
    model: str | None = None


class BlockUpsert(WireModel):
    block: dict[str, Any]  # a partial block: id and type required, the rest merged

    @field_validator("block")
    @classmethod
    def _id_and_type(cls, block: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(block.get("id"), str) or not block["id"]:
            raise ValueError("a block needs an id (a non-empty string)")
        if block.get("type") not in get_args(BlockType):
            raise ValueError(f"a block's type is one of {', '.join(get_args(BlockType))}")
        return block


class BlockDelta(WireModel):
    block_id: str = Field(alias="blockId")
    delta: str


class MetadataUpdate(WireModel):
    metadata: SessionMetadata


class ActiveQuery(WireModel):
    started_at: int = Field(alias="startedAt")


class EnvironmentError_(WireModel):
    message: str
    code: str | None = None
    timestamp: int


EnvironmentStatus = Literal["inactive", "starting", "ready", "error", "terminated"]


class EnvironmentState(WireModel):
    """``Partial<ExecutionEnvironmentState>``: every field may be left out."""

    id: str | None = None
    status: EnvironmentStatus | None = None
    status_message: str | None = Field(default=None, alias="statusMessage")
    last_health_check: int | None = Field(default=None, alias="lastHealthCheck")
    restart_count: int | None = Field(default=None, alias="restartCount")
    last_error: EnvironmentError_ | None = Field(default=None, alias="lastError")


class RuntimeStatus(WireModel):
    is_loaded: bool = Field(alias="isLoaded")
    execution_environment: EnvironmentState = Field(alias="executionEnvironment")
    active_query: ActiveQuery | None = Field(default=None, alias="activeQuery")


class Status(WireModel):
    runtime: RuntimeStatus


class WorkspaceFile(WireModel):
    path: str
    content: str | None = None


class FileChanged(WireModel):
    file: WorkspaceFile


class FileDeleted(WireModel):
    path: str


class TranscriptChanged(WireModel):
    content: str


class Empty(WireModel):
    pass


class SubagentSpawned(WireModel):
    tool_use_id: str = Field(alias="toolUseId")
    agent_id: str | None = Field(default=None, alias="agentId")
    prompt: str
    subagent_type: str | None = Field(default=None, alias="subagentType")
    description: str | None = None


class SubagentCompleted(WireModel):
    tool_use_id: str = Field(alias="toolUseId")
    agent_id: str | None = Field(default=None, alias="agentId")
    status: Literal["completed", "failed"]
    output: str | None = None
    duration_ms: int | None = Field(default=None, alias="durationMs")


class Log(WireModel):
    level: Literal["debug", "info", "warn", "error"] | None = None
    message: str
    data: dict[str, Any] | None = None


class ErrorPayload(WireModel):
    message: str
    code: str | None = None
    data: dict[str, Any] | None = None


class SessionOptions(WireModel):
    model: str | None = None


class OptionsUpdate(WireModel):
    options: SessionOptions


class SessionInitialized(WireModel):
    is_new: bool = Field(alias="isNew")
    has_transcript: bool = Field(alias="hasTranscript")
    workspace_file_count: int = Field(alias="workspaceFileCount")
    block_count: int = Field(alias="blockCount")


class SessionIdle(WireModel):
    session_id: str = Field(alias="sessionId")


class EnvironmentCreating(WireModel):
    status_message: str | None = Field(default=None, alias="statusMessage")


class EnvironmentReady(WireModel):
    ee_id: str = Field(alias="eeId")


class EnvironmentTerminated(WireModel):
    reason: Literal["manual", "unhealthy", "idle"]


class EnvironmentFailed(WireModel):
    message: str
    code: str | None = None


class HealthCheck(WireModel):
    timestamp: int


class QueryStarted(WireModel):
    message: str


class QueryCompleted(WireModel):
    duration_ms: int = Field(alias="durationMs")


class QueryFailed(WireModel):
    error: str


# the seed's SessionEventPayloads: every event type and the model of its payload
PAYLOADS: dict[str, type[WireModel]] = {
    "block:upsert": BlockUpsert,
    "block:delta": BlockDelta,
    "metadata:update": MetadataUpdate,
    "status": Status,
    "file:created": FileChanged,
    "file:modified": FileChanged,
    "file:deleted": FileDeleted,
    "transcript:changed": TranscriptChanged,
    "transcript:written": Empty,
    "subagent:spawned": SubagentSpawned,
    "subagent:completed": SubagentCompleted,
    "log": Log,
    "error": ErrorPayload,
    "options:update": OptionsUpdate,
    "session:initialized": SessionInitialized,
    "session:idle": SessionIdle,
    "ee:creating": EnvironmentCreating,
    "ee:ready": EnvironmentReady,
    "ee:terminated": EnvironmentTerminated,
    "ee:error": EnvironmentFailed,
    "ee:health_check": HealthCheck,
    "query:started": QueryStarted,
    "query:completed": QueryCompleted,
    "query:failed": QueryFailed,
}
CONVERSATION_EVENTS = frozenset(
    ("block:upsert", "block:delta", "subagent:spawned", "subagent:completed", "session:idle")
)


# ---- the event ----------------------------------------------------------------------------


class SessionEventContext(WireModel):
    session_id: str = Field(alias="sessionId")
    conversation_id: str | None = Field(default=None, alias="conversationId")
    source: Source | None = None
    timestamp: str | None = None


class SessionEvent(WireModel):
    id: str | None = None  # partwire's: the cursor to resume after this event
    type: str
    payload: dict[str, Any]
    context: SessionEventContext

    @field_validator("type")
    @classmethod
    def _known(cls, kind: str) -> str:
        if kind not in PAYLOADS:
            raise ValueError(f"unknown SessionEvent type {kind!r}")
        return kind


def create_session_event(
    kind: str,
    payload: WireModel | Mapping[str, Any],
    context: Mapping[str, Any] | None = None,
    *,
    event_id: str | None = None,
) -> SessionEvent:
    """The seed's ``createSessionEvent``: the payload checked against its type's model, the
    context's ``sessionId`` defaulting to "" (the server fills it) and its ``timestamp``
    to now. ValueError names what is wrong."""
    model = PAYLOADS.get(kind)
    if model is None:
        raise ValueError(f"unknown SessionEvent type {kind!r}")
    try:
        checked = payload if isinstance(payload, model) else model.model_validate(payload)
    except ValidationError as exc:
        raise ValueError(f"{kind} payload: {exc.errors()[0]['msg']}") from exc
    given = dict(context or {})
    given.setdefault("sessionId", "")
    given.setdefault("timestamp", iso(datetime.now(UTC).timestamp() * 1000))
    return SessionEvent(
        id=event_id,
        type=kind,
        payload=checked.wire(),
        context=SessionEventContext.model_validate(given),
    )


def enrich_event_context(event: SessionEvent, additions: Mapping[str, Any]) -> SessionEvent:
    """The seed's ``enrichEventContext``: the same event with context fields added or
    replaced (wire names: ``sessionId``, ``conversationId``, ``source``, ``timestamp``)."""
    context = {**event.context.wire(), **additions}
    return event.model_copy(update={"context": SessionEventContext.model_validate(context)})


def is_conversation_event(event: SessionEvent | Mapping[str, Any]) -> bool:
    """Whether the shared reducer folds this event (blocks, sub-agents, idle)."""
    kind = event.type if isinstance(event, SessionEvent) else event.get("type")
    return kind in CONVERSATION_EVENTS
