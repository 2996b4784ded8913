"""SessionEvent blocks: partwire's events as ``{type, payload, context}`` conversation events.

``SessionEvents`` is a pure adapter from partwire events (all sessions, in log order) to
SessionEvents; each carries ``id`` ``<event id>:<n>`` so a client resumes after exactly the
one it saw. ``reduce_session_event`` is the reducer every client shares (the TypeScript
one in clients/js does the same), and ``blocks_of`` gives the blocks of stored messages.

Mapping: text → ``text`` block, reasoning → ``thinking``, a tool call → ``tool_use`` (its
result adds ``tool_result``), an image file → ``image``; text and reasoning stream as
``block:delta``; ``block:upsert`` may name the block it goes ``after`` (a tool result
follows its call). Blocks are ``pending`` until their part ends; ``session:idle`` completes
any left pending. Status, queries (one per prompt run), sub-agents (from the task tool),
files (write, edit, apply_patch, patch parts), transcript changes, the session's tool
environment (ee:*, with the session), errors, logs (retries, compaction) and session
options follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from pydantic import Field

from partwire.protocol.jsonread import JSONMap, list_of, map_of, text_of
from partwire.schema.base import JSON, JSONObject, Tokens, WireModel
from partwire.schema.event import (
    Event,
    MessageInfo,
    PartDeltaProps,
    PartUpdatedProps,
    SessionErrorProps,
    SessionInfo,
    SessionRef,
    SessionStatusProps,
)
from partwire.schema.message import AssistantMessage, Message, MessageWithParts, error_text
from partwire.schema.part import FilePart, Part, ReasoningPart, TextPart, ToolPart, part_finished
from partwire.schema.session import Session

BlockType = Literal["text", "thinking", "tool_use", "tool_result", "image"]
BLOCK_EVENTS = ("block:upsert", "block:delta")
FILE_TOOLS = ("write", "edit", "apply_patch")


Source = Literal["user", "assistant", "tool", "system"]
# one SessionEvent in the making: its type, payload and source
Made = tuple[str, JSONMap, Source]


def _source(role: str) -> Source:
    return "user" if role == "user" else "assistant"


class SessionEventContext(WireModel):
    session_id: str = Field(alias="sessionId")
    conversation_id: str = Field(alias="conversationId")
    source: Source
    timestamp: int


class SessionEvent(WireModel):
    id: str
    type: str
    payload: dict[str, Any]
    context: SessionEventContext


def is_conversation_event(event: SessionEvent | JSONMap) -> bool:
    """Whether the event changes the conversation's blocks (the transcript a UI draws)."""
    kind = event.type if isinstance(event, SessionEvent) else event.get("type")
    return kind in BLOCK_EVENTS or kind == "session:idle"


# ---- blocks -------------------------------------------------------------------------------


def _block(part: Part, role: str) -> JSONObject | None:
    """The block a part is, or None for parts that are not blocks."""
    base = {"id": part.id, "messageId": part.message_id, "role": role}
    if isinstance(part, TextPart | ReasoningPart):
        ended = part_finished(part)
        kind = "text" if isinstance(part, TextPart) else "thinking"
        return {
            **base,
            "type": kind,
            "status": "complete" if ended else "pending",
            "text": part.text,
        }
    if isinstance(part, ToolPart):
        done = part_finished(part)
        return {
            **base,
            "type": "tool_use",
            "status": "complete" if done else "pending",
            "toolUseId": part.call_id,
            "name": part.tool,
            "input": part.state.input,
        }
    if isinstance(part, FilePart) and part.mime.startswith("image/"):
        return {**base, "type": "image", "status": "complete", "mime": part.mime, "url": part.url}
    return None


def _result_block(part: ToolPart, role: str) -> JSONObject | None:
    state = part.state
    if state.status not in ("completed", "error"):
        return None
    failed = state.status == "error"
    content = getattr(state, "error" if failed else "output")
    return {
        "id": f"{part.id}:result",
        "messageId": part.message_id,
        "role": role,
        "type": "tool_result",
        "status": "complete",
        "toolUseId": part.call_id,
        "content": content,
        "isError": failed,
    }


def blocks_of(messages: list[MessageWithParts]) -> list[JSONObject]:
    """The blocks of stored messages, as a reducer that saw their events holds them."""
    out: list[JSONObject] = []
    for entry in messages:
        for part in entry.parts:
            block = _block(part, entry.info.role)
            if block is not None:
                out.append(block)
            if isinstance(part, ToolPart) and (result := _result_block(part, "tool")):
                out.append(result)
    return out


# ---- the adapter --------------------------------------------------------------------------


@dataclass
class _Session:
    roles: dict[str, str] = field(default_factory=dict)  # message id → role
    parts: dict[str, Part] = field(default_factory=dict)  # part id → latest part
    totals: dict[str, tuple[Tokens, float]] = field(default_factory=dict)
    query: str | None = None
    failed: bool = False
    busy: bool = False
    last_user: str | None = None
    spawned: set[str] = field(default_factory=set)
    timestamp: int = 0


class SessionEvents:
    """partwire events → SessionEvents, for every session; feed events in log order."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def convert(self, event: Event) -> list[SessionEvent]:
        session_id = event.session_id
        if session_id is None:
            return []
        state = self._sessions.setdefault(session_id, _Session())
        made = self._made(event, state)
        return [
            SessionEvent(
                id=f"{event.id}:{n}",
                type=kind,
                payload=payload,
                context=SessionEventContext(
                    session_id=session_id,
                    conversation_id=session_id,
                    source=source,
                    timestamp=state.timestamp,
                ),
            )
            for n, (kind, payload, source) in enumerate(made)
        ]

    def _made(self, event: Event, state: _Session) -> list[Made]:
        match event.properties:
            case PartDeltaProps() as delta:
                return self._delta(delta, state)
            case PartUpdatedProps() as updated:
                state.timestamp = max(state.timestamp, updated.time)
                return self._part(updated.part, state)
            case MessageInfo() as updated_message:
                return self._message(updated_message.info, state)
            case SessionStatusProps() as status:
                return self._status(status, state)
            case SessionRef() if event.type == "session.idle":
                return self._idle(state)
            case SessionErrorProps() as failed:
                state.failed = True
                name = failed.error.name if failed.error is not None else None
                message = error_text(failed.error) if failed.error is not None else "error"
                return [("error", {"name": name, "message": message}, "system")]
            case SessionInfo() as session:
                return self._session(event.type, session.info, state)
        return []

    def _session(self, kind: str, info: Session, state: _Session) -> list[Made]:
        if kind == "session.created":
            state.timestamp = info.time.created
            ready = {"directory": info.directory}
            init = {"title": info.title, "parentId": info.parent_id, "directory": info.directory}
            return [("ee:creating", ready, "system"), ("session:initialized", init, "system"),
                    ("ee:ready", ready, "system")]  # fmt: skip
        if kind == "session.updated":
            state.timestamp = max(state.timestamp, info.time.updated)
            rules = [r.wire() for r in info.permission or []]
            return [("options:update", {"title": info.title, "permission": rules}, "system")]
        return [("ee:terminated", {"directory": info.directory}, "system")]

    def _delta(self, props: PartDeltaProps, state: _Session) -> list[Made]:
        part = state.parts.get(props.part_id)
        if not isinstance(part, TextPart | ReasoningPart) or props.field != "text":
            return []
        source: Source = "user" if state.roles.get(part.message_id) == "user" else "assistant"
        return [("block:delta", {"blockId": props.part_id, "delta": props.delta}, source)]

    def _status(self, props: SessionStatusProps, state: _Session) -> list[Made]:
        status = props.status.wire()
        out: list[Made] = [("status", {"status": status}, "system")]
        if props.status.type != "idle" and not state.busy:
            state.busy, state.failed, state.query = True, False, state.last_user or ""
            out.append(("query:started", {"queryId": state.query}, "system"))
        return out

    def _idle(self, state: _Session) -> list[Made]:
        out: list[Made] = [("session:idle", {}, "system")]
        if state.busy:
            state.busy = False
            ended = "query:failed" if state.failed else "query:completed"
            out.append((ended, {"queryId": state.query}, "system"))
        return out

    def _message(self, info: Message, state: _Session) -> list[Made]:
        state.roles[info.id] = info.role
        state.timestamp = max(state.timestamp, info.time.created)
        if info.role == "user":
            state.last_user = info.id
            return [("transcript:changed", {"messageId": info.id}, "user")]
        assert isinstance(info, AssistantMessage)
        out: list[Made] = [("transcript:changed", {"messageId": info.id}, "assistant")]
        if info.time.completed is not None:
            state.failed = state.failed or info.error is not None
            state.timestamp = max(state.timestamp, info.time.completed)
            state.totals[info.id] = (info.tokens, info.cost)
            out.append(("transcript:written", {"messageId": info.id}, "assistant"))
            out.append(("metadata:update", _metadata(info, state), "system"))
        return out

    def _part(self, part: Part, state: _Session) -> list[Made]:
        role = state.roles.get(part.message_id, "assistant")
        before = state.parts.get(part.id)
        state.parts[part.id] = part
        out: list[Made] = []
        block = _block(part, role)
        source: Source = "tool" if isinstance(part, ToolPart) else _source(role)
        if block is not None:
            out.append(("block:upsert", {"block": block}, source))
        if isinstance(part, ToolPart):
            out += self._tool(part, before, state)
        elif part.type == "patch":
            out += [("file:modified", {"path": path}, "tool") for path in part.files]
        elif part.type == "retry":
            message = f"retry {part.attempt}: {part.error.data.message}"
            out.append(("log", {"level": "warn", "message": message}, "system"))
        elif part.type == "compaction":
            out.append(("log", {"level": "info", "message": "the session was compacted"}, "system"))
        return out

    def _tool(self, part: ToolPart, before: Part | None, state: _Session) -> list[Made]:
        out: list[Made] = []
        was_done = isinstance(before, ToolPart) and part_finished(before)
        metadata: JSONMap = getattr(part.state, "metadata", None) or {}
        child = metadata.get("sessionId")
        if part.tool == "task" and isinstance(child, str) and child not in state.spawned:
            state.spawned.add(child)
            out.append(
                ("subagent:spawned", {"sessionId": child, "toolUseId": part.call_id}, "tool")
            )
        if not part_finished(part) or was_done:
            return out
        result = _result_block(part, "tool")
        assert result is not None
        # a result sits right after its call, wherever the call is (as in the store)
        out.append(("block:upsert", {"block": result, "after": part.id}, "tool"))
        if part.tool == "task" and isinstance(child, str):
            out.append(
                ("subagent:completed", {"sessionId": child, "toolUseId": part.call_id}, "tool")
            )
        if part.state.status == "completed" and part.tool in FILE_TOOLS:
            out += [(kind, {"path": path}, "tool") for kind, path in _file_changes(part, metadata)]
        return out


def _metadata(info: AssistantMessage, state: _Session) -> JSONObject:
    """The session's token and cost totals so far, and the model that answered last."""
    total, cost = Tokens(), 0.0
    for used, spent in state.totals.values():
        total, cost = total.plus(used), cost + spent
    tokens: JSONObject = {
        "input": total.input,
        "output": total.output,
        "reasoning": total.reasoning,
        "cache": {"read": total.cache.read, "write": total.cache.write},
    }
    model = {"providerID": info.provider_id, "modelID": info.model_id}
    return {"tokens": tokens, "cost": cost, "model": model}


def _file_changes(part: ToolPart, metadata: JSONMap) -> list[tuple[str, str]]:
    if part.tool == "apply_patch":
        kinds = {"added": "file:created", "deleted": "file:deleted"}
        return [
            (kinds.get(text_of(d, "status"), "file:modified"), text_of(d, "file"))
            for d in list_of(metadata, "files")
            if isinstance(d, Mapping)
        ]
    path = metadata.get("filepath") or part.state.input.get("filePath")
    if not isinstance(path, str):
        return []
    created = part.tool == "write" and metadata.get("exists") is False
    return [("file:created" if created else "file:modified", path)]


# ---- the reducer --------------------------------------------------------------------------


class SessionState(TypedDict):
    """What a client holds of one session, as the reducer keeps it."""

    blocks: list[JSONObject]
    status: JSON
    metadata: JSON
    queries: dict[str, str]
    subagents: dict[str, str]
    files: dict[str, str]
    transcript: dict[str, str]
    environment: str | None
    initialized: JSON
    options: JSONObject
    errors: list[JSON]
    logs: list[JSON]
    lastEventId: str | None


def empty_state() -> SessionState:
    return {
        "blocks": [],
        "status": {"type": "idle"},
        "metadata": None,
        "queries": {},
        "subagents": {},
        "files": {},
        "transcript": {},
        "environment": None,
        "initialized": None,
        "options": {},
        "errors": [],
        "logs": [],
        "lastEventId": None,
    }


# families whose events record a verb under a key: query:started → queries[queryId] = "started"
_KEYED = {
    "query": ("queries", "queryId"),
    "subagent": ("subagents", "sessionId"),
    "file": ("files", "path"),
    "transcript": ("transcript", "messageId"),
}


def reduce_session_event(state: SessionState, event: SessionEvent | JSONMap) -> SessionState:
    """One session's state after ``event``: ``state``, changed in place and returned (a
    copy per event would cost the whole transcript per delta). The TypeScript reducer in
    clients/js follows exactly these rules."""
    data = event.wire() if isinstance(event, SessionEvent) else event
    kind, payload = text_of(data, "type"), map_of(data, "payload")
    state["lastEventId"] = text_of(data, "id")
    family, _, verb = kind.partition(":")
    if family in _KEYED:
        name, key = _KEYED[family]
        keyed = {
            "queries": state["queries"],
            "subagents": state["subagents"],
            "files": state["files"],
            "transcript": state["transcript"],
        }[name]
        keyed[str(payload.get(key))] = verb
    elif family == "ee":
        state["environment"] = verb
    elif family == "block" or kind == "session:idle":
        _reduce_blocks(state["blocks"], kind, payload)
    elif kind == "status":
        state["status"] = payload.get("status")
    elif kind == "metadata:update":
        state["metadata"] = payload
    elif kind == "session:initialized":
        state["initialized"] = payload
    elif kind == "options:update":
        state["options"] = {**state["options"], **payload}
    elif kind in ("error", "log"):
        state["errors" if kind == "error" else "logs"].append(payload.get("message"))
    return state


def _index(blocks: list[JSONObject], block_id: JSON) -> int | None:
    return next((i for i, b in enumerate(blocks) if b["id"] == block_id), None)


def _reduce_blocks(blocks: list[JSONObject], kind: str, payload: JSONMap) -> None:
    if kind == "block:upsert":
        block = dict(map_of(payload, "block"))  # a copy: deltas change the state, never the event
        index = _index(blocks, block.get("id"))
        if index is not None:
            blocks[index] = block
            return
        after = _index(blocks, payload.get("after"))
        blocks.insert(len(blocks) if after is None else after + 1, block)
    elif kind == "block:delta":
        for block in blocks:
            text = block.get("text")
            if block.get("id") == payload.get("blockId") and isinstance(text, str):
                block["text"] = text + text_of(payload, "delta")
    else:  # session:idle: whatever is still pending is as final as it will get
        for block in blocks:
            block["status"] = "complete"
