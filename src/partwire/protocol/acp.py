"""The Agent Client Protocol view: partwire's events → ACP ``session/update`` payloads, made
with the ``agent-client-protocol`` package's own models.

- text → ``agent_message_chunk``, reasoning → ``agent_thought_chunk`` (as they stream;
  the message id is the partwire message's);
- a tool call → ``tool_call`` when it appears (its ``kind`` from the tool, ``locations``
  from its path arguments), then ``tool_call_update`` when its status, input or title
  changes, and when it ends: ``completed`` with the output as content (and a ``diff``
  for edit and write), or ``failed`` with the error;
- the todo list → ``plan``.

``AcpUpdates`` is pure: feed it one session's events in log order. ``stored_updates``
gives the updates that replay stored messages (``session/load``): the user's words as
``user_message_chunk``, every part whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypedDict

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from partwire.protocol.sent import SentText
from partwire.schema.event import Event, MessageInfo, PartDeltaProps, PartUpdatedProps, TodoProps
from partwire.schema.message import AssistantMessage, MessageWithParts
from partwire.schema.part import Part, ReasoningPart, TextPart, ToolPart
from partwire.schema.permission import Todo
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)
ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
Status = Literal["pending", "in_progress", "completed", "failed"]

ACP_EVENTS = ("message.updated", "message.part.updated", "message.part.delta", "todo.updated")
KINDS: dict[str, ToolKind] = {
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "apply_patch": "edit",
    "bash": "execute",
    "grep": "search",
    "glob": "search",
    "list": "search",
    "webfetch": "fetch",
    "task": "think",
    "todowrite": "think",
    "todoread": "think",
}
PATH_ARGUMENTS = ("filePath", "path")


def tool_kind(tool: str) -> ToolKind:
    return KINDS.get(tool, "other")


def status_of(part: ToolPart) -> Status:
    state = part.state
    if isinstance(state, ToolStatePending):
        return "pending"
    if isinstance(state, ToolStateCompleted):
        return "completed"
    if isinstance(state, ToolStateError):
        return "failed"
    return "in_progress"


def locations(part: ToolPart, root: Path) -> list[ToolCallLocation] | None:
    found = []
    for key in PATH_ARGUMENTS:
        value = part.state.input.get(key)
        if isinstance(value, str) and value:
            found.append(ToolCallLocation(path=str(root / value)))
    return found or None


def title_of(part: ToolPart) -> str:
    title = getattr(part.state, "title", None)
    return title if isinstance(title, str) and title else part.tool


def text(value: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=value)


ToolContent = ContentToolCallContent | FileEditToolCallContent


def tool_content(part: ToolPart, root: Path) -> list[ToolContent] | None:
    """The content of an ended call: a diff for edit and write, then the output (or the
    error) as text."""
    state = part.state
    out: list[ToolContent] = []
    if isinstance(state, ToolStateCompleted):
        arguments = state.input
        path = arguments.get("filePath")
        if part.tool == "edit" and isinstance(path, str):
            out.append(
                FileEditToolCallContent(
                    type="diff",
                    path=str(root / path),
                    old_text=str(arguments.get("oldString", "")),
                    new_text=str(arguments.get("newString", "")),
                )
            )
        elif part.tool == "write" and isinstance(path, str):
            content = str(arguments.get("content", ""))
            out.append(
                FileEditToolCallContent(
                    type="diff", path=str(root / path), old_text=None, new_text=content
                )
            )
        out.append(ContentToolCallContent(type="content", content=text(state.output)))
    elif isinstance(state, ToolStateError):
        out.append(ContentToolCallContent(type="content", content=text(state.error)))
    return out or None


def plan_of(todos: list[Todo]) -> AgentPlanUpdate:
    entries = [
        PlanEntry(
            content=todo.content,
            priority=todo.priority if todo.priority in ("high", "medium", "low") else "medium",
            status=todo.status if todo.status in ("pending", "in_progress") else "completed",
        )
        for todo in todos
        if todo.status != "cancelled"
    ]
    return AgentPlanUpdate(session_update="plan", entries=entries)


class AcpUpdates:
    """One session's events → ACP session updates."""

    def __init__(self, session_id: str, root: Path) -> None:
        self.session_id = session_id
        self.root = root
        self._assistant: set[str] = set()  # assistant message ids
        self._sent = SentText()  # text and reasoning parts
        self._reasoning: set[str] = set()
        self._calls: dict[str, tuple[Status, str, str]] = {}  # call id → status, title, input

    def updates(self, event: Event) -> list[Update]:
        if event.session_id != self.session_id:
            return []
        match event.properties:
            case PartDeltaProps() as delta:
                return self._delta(delta)
            case PartUpdatedProps() as updated:
                return self._part(updated.part)
            case MessageInfo(info=AssistantMessage() as info):
                self._assistant.add(info.id)
            case TodoProps() as todos:
                return [plan_of(todos.todos)]
        return []

    def _part(self, part: Part) -> list[Update]:
        if part.message_id not in self._assistant:
            return []
        if isinstance(part, TextPart | ReasoningPart):
            if isinstance(part, ReasoningPart):
                self._reasoning.add(part.id)
            grown = self._sent.catch_up(part.id, part.text)
            return [self._chunk(part.id, part.message_id, grown)] if grown else []
        if isinstance(part, ToolPart):
            return self._tool(part)
        return []

    def _delta(self, props: PartDeltaProps) -> list[Update]:
        if props.field != "text" or not props.delta:
            return []
        if not self._sent.append(props.part_id, props.delta):
            return []
        return [self._chunk(props.part_id, props.message_id, props.delta)]

    def _chunk(self, part_id: str, message_id: str, delta: str) -> Update:
        if part_id in self._reasoning:
            return AgentThoughtChunk(
                session_update="agent_thought_chunk", content=text(delta), message_id=message_id
            )
        return AgentMessageChunk(
            session_update="agent_message_chunk", content=text(delta), message_id=message_id
        )

    def _tool(self, part: ToolPart) -> list[Update]:
        status, title = status_of(part), title_of(part)
        arguments = "" if status == "pending" else repr(sorted(part.state.input.items()))
        seen = self._calls.get(part.call_id)
        self._calls[part.call_id] = (status, title, arguments)
        if seen is None:
            return [start_of(part, self.root)]
        if seen == (status, title, arguments):
            return []  # arguments still streaming, or metadata only
        return [progress_of(part, self.root)]


class _CallFields(TypedDict):
    tool_call_id: str
    title: str
    kind: ToolKind
    status: Status
    locations: list[ToolCallLocation] | None
    raw_input: dict[str, object] | None
    content: list[ToolContent] | None
    raw_output: str | None


def _call(part: ToolPart, root: Path) -> _CallFields:
    state = part.state
    return _CallFields(
        tool_call_id=part.call_id,
        title=title_of(part),
        kind=tool_kind(part.tool),
        status=status_of(part),
        locations=locations(part, root),
        raw_input=state.input or None,
        content=tool_content(part, root),
        raw_output=state.output if isinstance(state, ToolStateCompleted) else None,
    )


def start_of(part: ToolPart, root: Path) -> ToolCallStart:
    return ToolCallStart(session_update="tool_call", **_call(part, root))


def progress_of(part: ToolPart, root: Path) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", **_call(part, root))


def stored_updates(messages: list[MessageWithParts], todos: list[Todo], root: Path) -> list[Update]:
    """The updates that bring an editor to ``messages`` (``session/load``)."""
    out: list[Update] = []
    for message in messages:
        user = not isinstance(message.info, AssistantMessage)
        for part in message.parts:
            if isinstance(part, TextPart) and part.text and not part.synthetic:
                if user:
                    out.append(
                        UserMessageChunk(
                            session_update="user_message_chunk",
                            content=text(part.text),
                            message_id=message.info.id,
                        )
                    )
                else:
                    out.append(
                        AgentMessageChunk(
                            session_update="agent_message_chunk",
                            content=text(part.text),
                            message_id=message.info.id,
                        )
                    )
            elif isinstance(part, ReasoningPart) and part.text and not user:
                out.append(
                    AgentThoughtChunk(
                        session_update="agent_thought_chunk",
                        content=text(part.text),
                        message_id=message.info.id,
                    )
                )
            elif isinstance(part, ToolPart):
                out.append(start_of(part, root))
    if todos:
        out.append(plan_of(todos))
    return out
