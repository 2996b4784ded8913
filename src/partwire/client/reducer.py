"""reduce(state, event) → state: the client-side view of sessions, messages and parts.

The state is normalized the way opencode's clients keep it: sessions by id,
status by session, messages in history order per session, parts in order per
message. History order is the order the server first stored each message or part,
which is the order their first events arrive in; ids are never compared (a client
may have minted them with another scheme). Applying every event of a session in
order yields exactly what ``GET /session/{id}/message`` returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from partwire.schema.event import (
    Event,
    MessageInfo,
    MessageRef,
    PartDeltaProps,
    PartRef,
    PartUpdatedProps,
    PermissionRepliedProps,
    QuestionRef,
    QuestionRepliedProps,
    SessionInfo,
    SessionStatusProps,
)
from partwire.schema.message import Message, MessageWithParts
from partwire.schema.part import Part
from partwire.schema.permission import PermissionRequest, QuestionRequest
from partwire.schema.session import Session, SessionStatus


@dataclass
class ClientState:
    session: dict[str, Session] = field(default_factory=dict)
    session_status: dict[str, SessionStatus] = field(default_factory=dict)
    message: dict[str, list[Message]] = field(default_factory=dict)
    part: dict[str, list[Part]] = field(default_factory=dict)
    permission: dict[str, PermissionRequest] = field(default_factory=dict)  # pending, by id
    question: dict[str, QuestionRequest] = field(default_factory=dict)  # pending, by id
    last_event_id: str | None = None

    def load(self, session_id: str, messages: list[MessageWithParts]) -> None:
        """Start from an HTTP snapshot (then apply the events after it)."""
        self.message[session_id] = [m.info for m in messages]
        for entry in messages:
            self.part[entry.info.id] = list(entry.parts)

    def messages(self, session_id: str) -> list[MessageWithParts]:
        """The session's messages with their parts, shaped like the HTTP response."""
        return [
            MessageWithParts(info=info, parts=list(self.part.get(info.id, [])))
            for info in self.message.get(session_id, [])
        ]


def _upsert(items: list[Any], item: Any) -> None:
    """Replace by id in place, or append: a new item is the newest in history order."""
    for index in range(len(items) - 1, -1, -1):
        if items[index].id == item.id:
            items[index] = item
            return
    items.append(item)


def _remove(items: list[Any], item_id: str) -> None:
    items[:] = [existing for existing in items if existing.id != item_id]


def _session_updated(state: ClientState, props: SessionInfo) -> None:
    state.session[props.info.id] = props.info


def _session_deleted(state: ClientState, props: SessionInfo) -> None:
    state.session.pop(props.info.id, None)
    state.session_status.pop(props.info.id, None)
    for message in state.message.pop(props.info.id, []):
        state.part.pop(message.id, None)


def _status(state: ClientState, props: SessionStatusProps) -> None:
    if props.status.type == "idle":  # as GET /session/status: only sessions at work
        state.session_status.pop(props.session_id, None)
    else:
        state.session_status[props.session_id] = props.status


def _permission_asked(state: ClientState, props: PermissionRequest) -> None:
    state.permission[props.id] = props


def _permission_replied(state: ClientState, props: PermissionRepliedProps) -> None:
    state.permission.pop(props.request_id, None)


def _question_asked(state: ClientState, props: QuestionRequest) -> None:
    state.question[props.id] = props


def _question_closed(state: ClientState, props: QuestionRef | QuestionRepliedProps) -> None:
    state.question.pop(props.request_id, None)


def _message_updated(state: ClientState, props: MessageInfo) -> None:
    _upsert(state.message.setdefault(props.session_id, []), props.info)


def _message_removed(state: ClientState, props: MessageRef) -> None:
    _remove(state.message.get(props.session_id, []), props.message_id)
    state.part.pop(props.message_id, None)


def _part_updated(state: ClientState, props: PartUpdatedProps) -> None:
    _upsert(state.part.setdefault(props.part.message_id, []), props.part)


def _part_delta(state: ClientState, props: PartDeltaProps) -> None:
    parts = state.part.get(props.message_id, [])
    for index, part in enumerate(parts):
        if part.id == props.part_id:
            current = getattr(part, props.field, "") or ""
            parts[index] = part.model_copy(update={props.field: current + props.delta})
            return


def _part_removed(state: ClientState, props: PartRef) -> None:
    _remove(state.part.get(props.message_id, []), props.part_id)


_REDUCERS: dict[str, Callable[[ClientState, Any], None]] = {
    "session.created": _session_updated,
    "session.updated": _session_updated,
    "session.deleted": _session_deleted,
    "session.status": _status,
    "message.updated": _message_updated,
    "message.removed": _message_removed,
    "message.part.updated": _part_updated,
    "message.part.delta": _part_delta,
    "message.part.removed": _part_removed,
    "permission.asked": _permission_asked,
    "permission.replied": _permission_replied,
    "question.asked": _question_asked,
    "question.replied": _question_closed,
    "question.rejected": _question_closed,
}


def reduce(state: ClientState, event: Event) -> ClientState:
    """Apply one event in place and return the state (events it does not know are ignored)."""
    reducer = _REDUCERS.get(event.type)
    if reducer is not None:
        reducer(state, event.properties)
    if event.id.startswith("evt_") and event.type not in ("server.connected", "server.heartbeat"):
        state.last_event_id = event.id
    return state
