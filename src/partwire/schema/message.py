"""Messages: a user message or an assistant message (discriminated by ``role``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from partwire import ids
from partwire.clock import now_ms
from partwire.schema.base import Tokens, WireModel
from partwire.schema.part import APIError, ModelRef, Part


class ProviderAuthErrorData(WireModel):
    provider_id: str = Field(alias="providerID")
    message: str


class ProviderAuthError(WireModel):
    name: Literal["ProviderAuthError"] = "ProviderAuthError"
    data: ProviderAuthErrorData


class MessageData(WireModel):
    message: str


class UnknownErrorData(WireModel):
    message: str
    ref: str | None = None


class UnknownError(WireModel):
    name: Literal["UnknownError"] = "UnknownError"
    data: UnknownErrorData


class OutputLengthData(WireModel):
    pass


class MessageOutputLengthError(WireModel):
    name: Literal["MessageOutputLengthError"] = "MessageOutputLengthError"
    data: OutputLengthData = OutputLengthData()


class MessageAbortedError(WireModel):
    name: Literal["MessageAbortedError"] = "MessageAbortedError"
    data: MessageData


class ContextOverflowData(WireModel):
    message: str
    response_body: str | None = Field(default=None, alias="responseBody")


class ContextOverflowError(WireModel):
    name: Literal["ContextOverflowError"] = "ContextOverflowError"
    data: ContextOverflowData


class ContentFilterError(WireModel):
    name: Literal["ContentFilterError"] = "ContentFilterError"
    data: MessageData


MessageError = Annotated[
    ProviderAuthError
    | UnknownError
    | MessageOutputLengthError
    | MessageAbortedError
    | ContextOverflowError
    | ContentFilterError
    | APIError,
    Field(discriminator="name"),
]


# What a stopped run's open tool calls and its message say (a user pressed Stop).
ABORTED_TOOL = "Tool execution aborted"
ABORTED_MESSAGE = "The session was aborted."

# What a run the server's own stop or restart ended says (not a Stop a user pressed).
RESTART_INTERRUPTED = "Interrupted by a server restart: the server stopped before this finished."
TOOL_RESTART_INTERRUPTED = (
    "Tool execution was interrupted by a server restart; it may or may not have taken "
    "effect. Check its effects before you run it again."
)


def aborted_error(message: str = ABORTED_MESSAGE) -> MessageAbortedError:
    return MessageAbortedError(data=MessageData(message=message))


def unknown_error(message: str) -> UnknownError:
    return UnknownError(data=UnknownErrorData(message=message))


class UserTime(WireModel):
    created: int


class UserSummary(WireModel):
    title: str | None = None
    body: str | None = None
    diffs: list[dict[str, Any]] = Field(default_factory=list)


class UserMessage(WireModel):
    id: str
    session_id: str = Field(alias="sessionID")
    role: Literal["user"] = "user"
    time: UserTime
    summary: UserSummary | None = None
    agent: str
    model: ModelRef
    system: str | None = None
    tools: dict[str, bool] | None = None


class AssistantTime(WireModel):
    created: int
    completed: int | None = None


class MessagePath(WireModel):
    cwd: str
    root: str


class AssistantMessage(WireModel):
    id: str
    session_id: str = Field(alias="sessionID")
    role: Literal["assistant"] = "assistant"
    time: AssistantTime
    error: MessageError | None = None
    parent_id: str = Field(alias="parentID")
    model_id: str = Field(alias="modelID")
    provider_id: str = Field(alias="providerID")
    mode: str
    agent: str
    path: MessagePath
    summary: bool | None = None
    cost: float = 0
    tokens: Tokens = Tokens()
    finish: str | None = None


def error_text(error: MessageError) -> str:
    """What an error says, for a client that shows text: its message, else its name."""
    message = getattr(error.data, "message", None) if hasattr(error, "data") else None
    return str(message) if message else error.name


def new_assistant_message(
    *,
    session_id: str,
    parent_id: str,
    provider_id: str,
    model_id: str,
    agent: str,
    root: str,
    message_id: str | None = None,
    mode: str | None = None,
    summary: bool | None = None,
) -> AssistantMessage:
    """An assistant message as it begins (every producer's: our loop, a recording, a
    shell command): created now, in ``root``, answering ``parent_id``."""
    return AssistantMessage(
        id=message_id or ids.message_id(),
        session_id=session_id,
        time=AssistantTime(created=now_ms()),
        parent_id=parent_id,
        model_id=model_id,
        provider_id=provider_id,
        mode=mode or agent,
        agent=agent,
        path=MessagePath(cwd=root, root=root),
        summary=summary,
    )


Message = Annotated[UserMessage | AssistantMessage, Field(discriminator="role")]
message_adapter: TypeAdapter[Message] = TypeAdapter(Message)


class MessageWithParts(WireModel):
    """One message and its parts in order: the body of GET /session/{id}/message."""

    info: Message
    parts: list[Part]


class AssistantWithParts(WireModel):
    info: AssistantMessage
    parts: list[Part]
