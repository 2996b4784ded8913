"""Part frames: one message as it streams, part by part (message_start, part_*, message_complete).

A client that knows nothing of partwire's event catalog can rebuild a message from these
alone: ``part_start`` carries the part as it begins, ``part_delta`` appends text (``delta``)
or a tool call's raw arguments (``argsDelta``), ``part_update`` replaces a part that changed
state without ending (a tool call whose arguments are complete and which now runs), and
``part_complete`` carries the part in its final form. Parts are addressed by their position
in the message (``partIndex``), which never changes once given.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from partwire.schema.base import Tokens, WireModel
from partwire.schema.message import MessageError
from partwire.schema.part import Part

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

SUMMARY_CHARS = 200


def content_of(parts: list[Part]) -> str:
    """A message as plain text for clients that know no parts: its text, and one line per
    finished tool call (``[tool] output``, ``[tool error] message``)."""
    blocks: list[str] = []
    for part in parts:
        if part.type == "text" and part.text:
            blocks.append(part.text)
        elif part.type == "tool" and part.state.status == "completed":
            blocks.append(f"[{part.tool}] {_summary(part.state.output)}".rstrip())
        elif part.type == "tool" and part.state.status == "error":
            blocks.append(f"[{part.tool} error] {_summary(part.state.error)}".rstrip())
    return "\n\n".join(blocks)


def _summary(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SUMMARY_CHARS else flat[: SUMMARY_CHARS - 1] + "…"
