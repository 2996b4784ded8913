"""Permission requests, question requests, todos and agents: wire types of the agent loop."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from partwire.schema.base import WireModel
from partwire.schema.session import PermissionRule

PermissionReply = Literal["once", "always", "reject"]


class ToolRef(WireModel):
    message_id: str = Field(alias="messageID")
    call_id: str = Field(alias="callID")


class PermissionRequest(WireModel):
    id: str = Field(pattern="^per")
    session_id: str = Field(alias="sessionID")
    permission: str
    patterns: list[str]
    metadata: dict[str, Any] = Field(default_factory=dict)
    always: list[str] = Field(default_factory=list)
    tool: ToolRef | None = None


class PermissionReplyInput(WireModel):
    """Body of POST /permission/{requestID}/reply."""

    reply: PermissionReply
    message: str | None = None


class LegacyPermissionReplyInput(WireModel):
    """Body of POST /session/{sessionID}/permissions/{permissionID}."""

    response: PermissionReply


class QuestionOption(WireModel):
    label: str
    description: str


class QuestionInfo(WireModel):
    question: str
    header: str = Field(max_length=30)
    options: list[QuestionOption]
    multiple: bool | None = None
    custom: bool | None = None


class QuestionRequest(WireModel):
    id: str = Field(pattern="^que")
    session_id: str = Field(alias="sessionID")
    questions: list[QuestionInfo]
    tool: ToolRef | None = None


class QuestionReplyInput(WireModel):
    """Body of POST /question/{requestID}/reply: one list of chosen labels per question."""

    answers: list[list[str]]


class Todo(WireModel):
    content: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed", "cancelled"]
    priority: Literal["high", "medium", "low"]


class AgentModel(WireModel):
    model_id: str = Field(alias="modelID")
    provider_id: str = Field(alias="providerID")


class Agent(WireModel):
    name: str
    description: str | None = None
    mode: Literal["subagent", "primary", "all"]
    native: bool | None = None
    hidden: bool | None = None
    permission: list[PermissionRule]
    model: AgentModel | None = None  # the model it answers with when a prompt names none
    prompt: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    steps: int | None = None
