"""Tool part lifecycle: pending → running → completed | error, and nothing else."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from partwire.errors import IllegalTransitionError
from partwire.schema.base import WireModel


class ToolStatePending(WireModel):
    status: Literal["pending"] = "pending"
    input: dict[str, Any] = Field(default_factory=dict)
    raw: str = ""


class RunningTime(WireModel):
    start: int


class ToolStateRunning(WireModel):
    status: Literal["running"] = "running"
    input: dict[str, Any]
    title: str | None = None
    metadata: dict[str, Any] | None = None
    time: RunningTime


class FinishedTime(WireModel):
    start: int
    end: int
    compacted: int | None = None


class ToolStateCompleted(WireModel):
    status: Literal["completed"] = "completed"
    input: dict[str, Any]
    output: str
    title: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    time: FinishedTime
    # FilePart attachments; typed loosely here to keep part.py → tool_state.py one-way.
    attachments: list[dict[str, Any]] | None = None


class ToolStateError(WireModel):
    status: Literal["error"] = "error"
    input: dict[str, Any]
    error: str
    metadata: dict[str, Any] | None = None
    time: FinishedTime


ToolState = Annotated[
    ToolStatePending | ToolStateRunning | ToolStateCompleted | ToolStateError,
    Field(discriminator="status"),
]
tool_state_adapter: TypeAdapter[ToolState] = TypeAdapter(ToolState)

_LEGAL = {
    ("pending", "pending"),
    ("pending", "running"),
    ("pending", "error"),
    ("running", "running"),
    ("running", "completed"),
    ("running", "error"),
}


def check_transition(current: ToolState, target: ToolState) -> None:
    """Raise IllegalTransitionError unless current → target is a legal edge.

    pending → pending (raw input grows) and running → running (live metadata) are
    updates in place; pending → error covers a call whose arguments never parsed.
    """
    if (current.status, target.status) not in _LEGAL:
        raise IllegalTransitionError("tool state", current.status, target.status)
