"""Normalized stream events: every provider's stream is mapped to these.

They are in-process values (never on the wire), so they are plain frozen
dataclasses: the text-delta path is hot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from partwire.schema.base import Tokens

FinishReason = Literal["stop", "length", "tool-calls", "content-filter", "error", "other"]


@dataclass(frozen=True, slots=True)
class Usage:
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def tokens(self, total: int | None = None) -> Tokens:
        """As a message counts them, each token once (opencode's fields): ``input``
        without the cached prompt, ``output`` without the reasoning, which have their own
        fields; the total is the provider's (``total``), else prompt plus completion.
        Here, as the providers and the price catalogue count, ``input`` is the whole
        prompt and ``output`` the whole completion."""
        cached = self.cache_read + self.cache_write
        reasoning = min(self.reasoning, self.output)
        return Tokens(
            total=total if total is not None else self.input + self.output,
            input=max(0, self.input - cached),
            output=self.output - reasoning,
            reasoning=reasoning,
            cache=Tokens.Cache(read=self.cache_read, write=self.cache_write),
        )


@dataclass(frozen=True, slots=True)
class StreamStart:
    type: Literal["start"] = "start"


@dataclass(frozen=True, slots=True)
class StartStep:
    type: Literal["start-step"] = "start-step"


@dataclass(frozen=True, slots=True)
class TextStart:
    id: str
    type: Literal["text-start"] = "text-start"


@dataclass(frozen=True, slots=True)
class TextDelta:
    id: str
    delta: str
    type: Literal["text-delta"] = "text-delta"


@dataclass(frozen=True, slots=True)
class TextEnd:
    id: str
    type: Literal["text-end"] = "text-end"


@dataclass(frozen=True, slots=True)
class ReasoningStart:
    id: str
    type: Literal["reasoning-start"] = "reasoning-start"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    id: str
    delta: str
    type: Literal["reasoning-delta"] = "reasoning-delta"


@dataclass(frozen=True, slots=True)
class ReasoningEnd:
    """``metadata`` keeps what the provider needs back next turn (e.g. a signature)."""

    id: str
    metadata: dict[str, Any] | None = None
    type: Literal["reasoning-end"] = "reasoning-end"


@dataclass(frozen=True, slots=True)
class ToolInputStart:
    id: str
    tool_name: str
    type: Literal["tool-input-start"] = "tool-input-start"


@dataclass(frozen=True, slots=True)
class ToolInputDelta:
    id: str
    delta: str
    type: Literal["tool-input-delta"] = "tool-input-delta"


@dataclass(frozen=True, slots=True)
class ToolInputEnd:
    id: str
    type: Literal["tool-input-end"] = "tool-input-end"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model's finished call. ``input`` is the raw JSON text; the tool validates it."""

    call_id: str
    tool_name: str
    input: str
    type: Literal["tool-call"] = "tool-call"


@dataclass(frozen=True, slots=True)
class FinishStep:
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    type: Literal["finish-step"] = "finish-step"


@dataclass(frozen=True, slots=True)
class Finish:
    finish_reason: FinishReason
    type: Literal["finish"] = "finish"


@dataclass(frozen=True, slots=True)
class StreamError:
    message: str
    retryable: bool = False
    status_code: int | None = None
    retry_after_s: float | None = None
    kind: Literal[
        "api", "auth", "context_overflow", "output_length", "content_filter", "unreachable"
    ] = "api"
    type: Literal["error"] = "error"


StreamEvent = (
    StreamStart
    | StartStep
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolInputEnd
    | ToolCall
    | FinishStep
    | Finish
    | StreamError
)

# A consumer's way to take events in the read that brought them, with no task woken per
# token (a model's stream offers it through ``stream_taking``): called from the
# connection's read, it returns None (taken), an awaitable (taken: await it before the
# next event), or NOT_TAKEN (this event and every later one come through the stream as
# usual). It is only called while the stream's reader waits for bytes, so every event
# before it was already handled.
NOT_TAKEN: Final = object()
TakeNow = Callable[[StreamEvent], object]  # None, an Awaitable[None], or NOT_TAKEN


# ---- the request side -------------------------------------------------------------------

SUMMARY_PROMPT = (
    "Summarize the conversation so far for a colleague who will continue the work: the goal, "
    "what was done, which files were read or changed, what is left, and any decisions made."
)


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file the user attached: a data: URL or an http(s) URL."""

    mime: str
    url: str
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class UserTurn:
    text: str
    files: tuple[FileRef, ...] = ()
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class ReasoningRecord:
    text: str
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    call_id: str
    tool: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    text: str
    tool_calls: tuple[ToolCallRecord, ...] = ()
    reasoning: tuple[ReasoningRecord, ...] = ()
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResultTurn:
    call_id: str
    tool: str
    output: str
    is_error: bool = False
    role: Literal["tool"] = "tool"


Turn = UserTurn | AssistantTurn | ToolResultTurn


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    messages: tuple[Turn, ...]
    tools: tuple[ToolSpec, ...] = ()
