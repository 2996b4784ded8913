"""Request drafts: what a client sends. No server-owned ids are required here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from partwire.ids import CLIENT_MESSAGE_ID, CLIENT_PART_ID
from partwire.schema.base import WireModel
from partwire.schema.part import AgentSource, FileSource, ModelRef
from partwire.schema.session import Budget, PermissionRule, SessionModel

# Limits on one prompt (each breach is a 400 naming the field).
MAX_PROMPT_PARTS = 100
MAX_TEXT_CHARS = 1_000_000  # one text part
MAX_URL_CHARS = 8_000_000  # one file part's URL (a data: URL of about 6 MB)


class TextPartInput(WireModel):
    id: str | None = Field(default=None, pattern=CLIENT_PART_ID)
    type: Literal["text"] = "text"
    text: str = Field(max_length=MAX_TEXT_CHARS)
    synthetic: bool | None = None
    ignored: bool | None = None
    metadata: dict[str, Any] | None = None


class FilePartInput(WireModel):
    id: str | None = Field(default=None, pattern=CLIENT_PART_ID)
    type: Literal["file"] = "file"
    mime: str
    filename: str | None = None
    url: str = Field(max_length=MAX_URL_CHARS)
    source: FileSource | None = None


class AgentPartInput(WireModel):
    id: str | None = Field(default=None, pattern=CLIENT_PART_ID)
    type: Literal["agent"] = "agent"
    name: str
    source: AgentSource | None = None


class SubtaskPartInput(WireModel):
    id: str | None = Field(default=None, pattern=CLIENT_PART_ID)
    type: Literal["subtask"] = "subtask"
    prompt: str
    description: str
    agent: str
    model: ModelRef | None = None
    command: str | None = None


PartInput = Annotated[
    TextPartInput | FilePartInput | AgentPartInput | SubtaskPartInput,
    Field(discriminator="type"),
]


class PromptInput(WireModel):
    """Body of POST /session/{id}/message and /prompt_async."""

    message_id: str | None = Field(default=None, alias="messageID", pattern=CLIENT_MESSAGE_ID)
    model: ModelRef | None = None
    agent: str | None = None
    no_reply: bool | None = Field(default=None, alias="noReply")
    tools: dict[str, bool] | None = None
    system: str | None = None
    variant: str | None = None
    parts: list[PartInput] = Field(max_length=MAX_PROMPT_PARTS)

    @field_validator("parts")
    @classmethod
    def _not_empty(cls, parts: list[PartInput]) -> list[PartInput]:
        if not parts:
            raise ValueError("a prompt needs at least one part")
        if all(isinstance(p, TextPartInput) and not p.text.strip() for p in parts):
            raise ValueError("the prompt is empty; send at least one non-blank text part")
        return parts


class SessionCreateInput(WireModel):
    """Body of POST /session."""

    parent_id: str | None = Field(default=None, alias="parentID", pattern="^ses")
    title: str | None = None
    agent: str | None = None
    model: SessionModel | None = None
    metadata: dict[str, Any] | None = None
    permission: list[PermissionRule] | None = None
    # partwire's: what the session may spend (kept in metadata.budget)
    budget: Budget | None = None


class SummarizeInput(WireModel):
    """Body of POST /session/{id}/summarize."""

    provider_id: str = Field(alias="providerID")
    model_id: str = Field(alias="modelID")
    auto: bool | None = None


class RevertInput(WireModel):
    """Body of POST /session/{id}/revert."""

    message_id: str = Field(alias="messageID", pattern=CLIENT_MESSAGE_ID)
    part_id: str | None = Field(default=None, alias="partID", pattern="^prt")


class ForkInput(WireModel):
    """Body of POST /session/{id}/fork: opencode's ``messageID`` (the fork holds the
    messages before it), or partwire's ``partID`` (the fork holds everything up to that
    part: with it, ``cut`` "after", the default, or without it, "before")."""

    message_id: str | None = Field(default=None, alias="messageID", pattern=CLIENT_MESSAGE_ID)
    part_id: str | None = Field(default=None, alias="partID", pattern="^prt")
    cut: Literal["after", "before"] | None = None


class ReplayInput(WireModel):
    """Body of POST /session/{id}/replay (partwire's): the model to replay the session's
    prompts with, and whether tool calls are answered from the recording or run."""

    model: ModelRef
    tools: Literal["recorded", "live"] = "recorded"


class SessionTimeUpdate(WireModel):
    archived: float | None = None


class SessionUpdateInput(WireModel):
    """Body of PATCH /session/{id}."""

    title: str | None = Field(default=None, min_length=1)
    metadata: dict[str, Any] | None = None
    permission: list[PermissionRule] | None = None
    time: SessionTimeUpdate | None = None
    # partwire's: a new budget; null drops the session's own (its project's applies)
    budget: Budget | None = None


class InitInput(WireModel):
    """Body of POST /session/{id}/init."""

    model_id: str = Field(alias="modelID")
    provider_id: str = Field(alias="providerID")
    message_id: str = Field(alias="messageID", pattern=CLIENT_MESSAGE_ID)


class ShellInput(WireModel):
    """Body of POST /session/{id}/shell."""

    message_id: str | None = Field(default=None, alias="messageID", pattern=CLIENT_MESSAGE_ID)
    agent: str
    model: ModelRef | None = None
    command: str = Field(min_length=1)


class CommandInput(WireModel):
    """Body of POST /session/{id}/command."""

    message_id: str | None = Field(default=None, alias="messageID", pattern=CLIENT_MESSAGE_ID)
    agent: str | None = None
    model: str | None = None
    arguments: str = ""
    command: str
    variant: str | None = None
    parts: list[dict[str, Any]] | None = None
