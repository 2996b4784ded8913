"""Part frames: one message as it streams, part by part (message_start, part_*, message_complete).

A client that knows nothing of partwire's event catalog can rebuild a message from these
alone: ``part_start`` carries the part as it begins, ``part_delta`` appends text (``delta``)
or a tool call's raw arguments (``argsDelta``), ``part_update`` replaces a part that changed
state without ending (a tool call whose arguments are complete and which now runs), and
``part_complete`` carries the part in its final form. Parts are addressed by their position
in the message (``partIndex``), which never changes once given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from partwire.schema.base import JSON, JSONObject, Tokens, WireModel, json_string
from partwire.schema.message import MessageError
from partwire.schema.part import Part, ReasoningPart, TextPart, ToolPart
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending

Role = Literal["user", "assistant"]


class BuiltMessage(WireModel):
    """A message as a builder or a frame reducer sees it: its parts in order, the totals of
    its steps, how it ended, and ``content``, a plain-text rendering for older clients."""

    id: str
    role: Role
    parts: list[Part] = Field(default_factory=list)
    content: str = ""
    tokens: Tokens = Tokens()
    cost: float = 0
    finish: str | None = None
    error: MessageError | None = None


class MessageStart(WireModel):
    type: Literal["message_start"] = "message_start"
    message_id: str = Field(alias="messageId")
    role: Role


class PartStart(WireModel):
    type: Literal["part_start"] = "part_start"
    message_id: str = Field(alias="messageId")
    part_index: int = Field(alias="partIndex")
    part: Part


class PartDelta(WireModel):
    type: Literal["part_delta"] = "part_delta"
    message_id: str = Field(alias="messageId")
    part_index: int = Field(alias="partIndex")
    delta: str | None = None
    args_delta: str | None = Field(default=None, alias="argsDelta")

    def wire_json(self) -> str:
        """A text delta's JSON written directly (one goes to every stream per token); the
        same text as the model's own serialization."""
        if self.delta is None or self.args_delta is not None:
            return super().wire_json()
        return text_delta_json(self.message_id, self.part_index, self.delta)


def text_delta_json(message_id: str, part_index: int, delta: str) -> str:
    """A text ``part_delta`` frame's wire JSON (``PartDelta.wire_json``), with no frame made."""
    return (
        f'{{"type":"part_delta","messageId":{json_string(message_id)},'
        f'"partIndex":{part_index},"delta":{json_string(delta)}}}'
    )


class PartUpdate(WireModel):
    type: Literal["part_update"] = "part_update"
    message_id: str = Field(alias="messageId")
    part_index: int = Field(alias="partIndex")
    part: Part


class PartComplete(WireModel):
    type: Literal["part_complete"] = "part_complete"
    message_id: str = Field(alias="messageId")
    part_index: int = Field(alias="partIndex")
    part: Part


class MessageComplete(WireModel):
    type: Literal["message_complete"] = "message_complete"
    message: BuiltMessage


class StreamReset(WireModel):
    """Forget every message: the session's messages follow from the start (a stream opened
    without a cursor, or one whose cursor the server can no longer resume from)."""

    type: Literal["reset"] = "reset"
    reason: str


Frame = Annotated[
    MessageStart
    | PartStart
    | PartDelta
    | PartUpdate
    | PartComplete
    | MessageComplete
    | StreamReset,
    Field(discriminator="type"),
]
frame_adapter: TypeAdapter[Frame] = TypeAdapter(Frame)


def content_of(parts: list[Part]) -> str:
    """A message as plain text for clients that know no parts, as seed 003's ``build()``
    makes it: the text parts joined, each tool result as ``"\n\nTool result: <result>\n"``,
    stripped."""
    return seed_content([seed for part in parts for seed in seed_parts(part)])


def seed_parts(part: Part) -> list[JSONObject]:
    """The seed parts a finished partwire part stands for (none for kinds it lacks)."""
    if isinstance(part, TextPart | ReasoningPart):
        return [{"type": part.type, "text": part.text}]
    if not isinstance(part, ToolPart):
        return []
    call: JSONObject = {
        "type": "tool-call",
        "toolCallId": part.call_id,
        "toolName": part.tool,
        "args": _arguments(part),
    }
    result = _result(part)
    return [call] if result is None else [call, result]


def seed_content(parts: list[JSONObject]) -> str:
    content = ""
    for part in parts:
        if part["type"] == "text":
            content += str(part["text"])
        elif part["type"] == "tool-result":
            content += f"\n\nTool result: {part['result']}\n"
    return content.strip()


def _arguments(part: ToolPart) -> JSON:
    state = part.state
    if isinstance(state, ToolStatePending) and not state.input:
        return arguments_object(state.raw) or {}
    return state.input


def _result(part: ToolPart) -> JSONObject | None:
    state = part.state
    if isinstance(state, ToolStateCompleted):
        output, failed = state.output, False
    elif isinstance(state, ToolStateError):
        output, failed = state.error, True
    else:
        return None
    return {
        "type": "tool-result",
        "toolCallId": part.call_id,
        "toolName": part.tool,
        "result": output,
        "isError": failed,
    }


def arguments_object(raw: str) -> JSONObject | None:
    """``raw`` as a JSON object, or None while it does not parse (yet)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ---- seed 003's tool parts, as its callers pass them --------------------------------------


def _field(part: object, names: tuple[str, ...]) -> object:
    for name in names:
        if isinstance(part, Mapping):
            if name in part:
                return part[name]
        elif hasattr(part, name):
            return getattr(part, name)
    return None


def seed_call(part: object) -> tuple[object, object, object]:
    """(call id, tool name, arguments) of a seed ``ToolCallPart``: a mapping or an object
    with ``toolCallId``/``tool_call_id``, ``toolName``/``tool_name`` and ``args``."""
    return (
        _field(part, ("toolCallId", "tool_call_id")),
        _field(part, ("toolName", "tool_name")),
        _field(part, ("args", "arguments")),
    )


def seed_result(part: object) -> tuple[object, object, bool]:
    """(call id, result, is error) of a seed ``ToolResultPart`` (``result``, and
    ``isError``/``is_error`` when it failed)."""
    return (
        _field(part, ("toolCallId", "tool_call_id")),
        _field(part, ("result", "output")),
        _field(part, ("isError", "is_error")) is True,
    )
