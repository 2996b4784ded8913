"""The event registry and catalog: each event type is declared exactly once, here.

An event on the wire is ``{"id": "evt_…", "type": "<noun.verb>", "properties": {…}}``.
The bus, the SSE route, the client parser and the OpenAPI union all derive from
:data:`REGISTRY`.
"""

from __future__ import annotations

import builtins
import functools
import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, cast

from pydantic import Field, TypeAdapter, create_model

from partwire.access import acting
from partwire.schema.base import WireModel, json_string
from partwire.schema.message import Message, MessageError
from partwire.schema.part import Part
from partwire.schema.permission import PermissionReply, PermissionRequest, QuestionRequest, Todo
from partwire.schema.project import ProjectInfo
from partwire.schema.pty import PtyInfo
from partwire.schema.session import Session, SessionStatus, SnapshotFileDiff

P = TypeVar("P", bound=WireModel)


@dataclass(frozen=True)
class EventDefinition(Generic[P]):
    """One event type. ``logged`` events go to the event log and can be replayed."""

    type: str
    properties: builtins.type[P]
    logged: bool = True

    def __call__(self, properties: P) -> Draft:
        return Draft(self.type, properties)


@dataclass(frozen=True)
class Draft:
    """An event that has no id yet: ids are given in publish order by whoever logs it."""

    type: str
    properties: WireModel

    def with_id(self, event_id: str) -> Event:
        return Event(event_id, self.type, self.properties)

    def announced(self, event_id: str) -> Event:
        """This event published without being logged (Store.announce)."""
        return AnnouncedEvent(event_id, self.type, self.properties)

    @property
    def session_id(self) -> str | None:
        value = getattr(self.properties, "session_id", None)
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Event:
    """A published event; ``json`` is serialized once and shared by every transport."""

    id: str
    type: str
    properties: WireModel
    json: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.json:
            body = self.properties.wire_json()
            object.__setattr__(self, "json", event_json(self.id, self.type, body))

    @property
    def in_log(self) -> bool:
        """Whether this event has a place in the event log: a client may resume after it,
        and a stream orders and skips events by it."""
        return REGISTRY[self.type].logged

    @property
    def properties_json(self) -> str:
        """The properties' JSON, cut out of ``json`` (the event log keeps only this)."""
        return self.json[_JSON_HEAD + len(self.id) + len(self.type) : -1]

    @property
    def session_id(self) -> str | None:
        value = getattr(self.properties, "session_id", None)
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class AnnouncedEvent(Event):
    """An event published while the store took no write (Store.announce): its id is no
    place in the log, so no cursor may stand on it."""

    @property
    def in_log(self) -> bool:
        return False


_JSON_HEAD = len('{"id":"","type":"","properties":')


def event_json(event_id: str, event_type: str, properties_json: str) -> str:
    """An event's wire JSON: the one place its envelope is written."""
    return f'{{"id":"{event_id}","type":"{event_type}","properties":{properties_json}}}'


REGISTRY: dict[str, EventDefinition[Any]] = {}


def define(event_type: str, properties: type[P], *, logged: bool = True) -> EventDefinition[P]:
    if event_type in REGISTRY:
        raise ValueError(f"event type {event_type!r} is already defined")
    definition = EventDefinition(event_type, properties, logged)
    REGISTRY[event_type] = definition
    return definition


def parse_event(raw: str | bytes | dict[str, Any]) -> Event:
    """Parse a wire event into an :class:`Event` with typed properties (through the one
    discriminated union of :func:`event_union`)."""
    data = json.loads(raw) if isinstance(raw, str | bytes) else raw
    if not isinstance(data, dict) or data.get("type") not in REGISTRY:
        kind = data.get("type") if isinstance(data, dict) else None
        raise ValueError(f"unknown event type {kind!r}")
    try:
        envelope = event_union().validate_python(data)
    except ValueError as error:
        raise ValueError(f"not an event of this server: {error}") from None
    return Event(envelope.id, envelope.type, envelope.properties)


def parse_logged(framed: Event) -> Event:
    """An event read back from the log (its wire JSON only) with typed properties: they
    are validated straight from their JSON, and the JSON is kept, not written again."""
    definition = REGISTRY.get(framed.type)
    if definition is None:
        raise ValueError(f"unknown event type {framed.type!r}")
    properties = definition.properties.model_validate_json(framed.properties_json)
    return Event(framed.id, framed.type, properties, json=framed.json)


class EventEnvelope(WireModel):
    """An event as it goes on the wire; one subclass per registered type."""

    id: str
    type: str
    properties: WireModel


@functools.cache
def envelope_models() -> tuple[type[EventEnvelope], ...]:
    """One envelope model per registered event, named like opencode's (EventMessagePartDelta)."""
    models: list[type[EventEnvelope]] = []
    for definition in REGISTRY.values():
        name = "Event" + "".join(word.capitalize() for word in definition.type.split("."))
        models.append(
            create_model(
                name,
                __base__=EventEnvelope,
                id=(str, Field(pattern="^evt_")),
                type=(cast(Any, Literal[definition.type]), ...),
                properties=(definition.properties, ...),
            )
        )
    return tuple(models)


@functools.cache
def event_union() -> TypeAdapter[EventEnvelope]:
    """Every event of the registry as one union discriminated by ``type``: the one parser
    of events from the wire (built on first use, to keep start-up lean)."""
    union: Any = Union[envelope_models()]  # noqa: UP007
    return TypeAdapter(Annotated[union, Field(discriminator="type")])


# ---- the catalog -------------------------------------------------------------------------


class Empty(WireModel):
    pass


class SessionInfo(WireModel):
    session_id: str = Field(alias="sessionID")
    info: Session


class SessionRef(WireModel):
    session_id: str = Field(alias="sessionID")


class Watcher(WireModel):
    """One client following a session: who (a user's name, "local", "share"), with what
    (``client``: web, cli, acp, opencode, …) and over which transport."""

    user: str
    client: str
    transport: str
    since: int


class SessionPresenceProps(WireModel):
    session_id: str = Field(alias="sessionID")
    instance_id: str = Field(alias="instanceID")  # the server these watchers are on
    watchers: list[Watcher]


class AskAnsweredProps(WireModel):
    """Who answered a permission or question ask (opencode's replied events say what)."""

    session_id: str = Field(alias="sessionID")
    request_id: str = Field(alias="requestID")
    by: str
    client: str | None = None


class SessionStatusProps(WireModel):
    session_id: str = Field(alias="sessionID")
    status: SessionStatus


class SessionDiffProps(WireModel):
    session_id: str = Field(alias="sessionID")
    diff: list[SnapshotFileDiff]


class SessionErrorProps(WireModel):
    session_id: str | None = Field(default=None, alias="sessionID")
    error: MessageError | None = None


class MessageInfo(WireModel):
    session_id: str = Field(alias="sessionID")
    info: Message


class MessageRef(WireModel):
    session_id: str = Field(alias="sessionID")
    message_id: str = Field(alias="messageID")


class PartUpdatedProps(WireModel):
    session_id: str = Field(alias="sessionID")
    part: Part
    time: int


class PartDeltaProps(WireModel):
    session_id: str = Field(alias="sessionID")
    message_id: str = Field(alias="messageID")
    part_id: str = Field(alias="partID")
    field: str
    delta: str

    @classmethod
    def streamed(
        cls, session_id: str, message_id: str, part_id: str, delta: str, field: str = "text"
    ) -> PartDeltaProps:
        """One streamed token's properties, made without validation (the way
        ``model_construct`` makes a model, without its per-field Python): the ids are a
        stored part's and the delta is decoded text, all str already. A paced token
        finds the CPU's caches cold, and validating one ran pydantic's code through them
        for nothing."""
        props = _new_model(cls)
        _set_attribute(
            props,
            "__dict__",
            {
                "session_id": session_id,
                "message_id": message_id,
                "part_id": part_id,
                "field": field,
                "delta": delta,
            },
        )
        _set_attribute(props, "__pydantic_fields_set__", set(_DELTA_FIELDS))
        _set_attribute(props, "__pydantic_extra__", None)
        _set_attribute(props, "__pydantic_private__", None)
        return props

    def wire_json(self) -> str:
        """Written directly (one is logged per token); the same text as the model's own
        serialization."""
        return (
            f'{{"sessionID":{json_string(self.session_id)},'
            f'"messageID":{json_string(self.message_id)},"partID":{json_string(self.part_id)},'
            f'"field":{json_string(self.field)},"delta":{json_string(self.delta)}}}'
        )


_new_model = PartDeltaProps.__new__
_set_attribute = object.__setattr__
_DELTA_FIELDS = frozenset(PartDeltaProps.model_fields)


class PartRef(WireModel):
    session_id: str = Field(alias="sessionID")
    message_id: str = Field(alias="messageID")
    part_id: str = Field(alias="partID")


class PermissionRepliedProps(WireModel):
    session_id: str = Field(alias="sessionID")
    request_id: str = Field(alias="requestID")
    reply: PermissionReply


class QuestionRepliedProps(WireModel):
    session_id: str = Field(alias="sessionID")
    request_id: str = Field(alias="requestID")
    answers: list[list[str]]


class QuestionRef(WireModel):
    session_id: str = Field(alias="sessionID")
    request_id: str = Field(alias="requestID")


class TodoProps(WireModel):
    session_id: str = Field(alias="sessionID")
    todos: list[Todo]


class EditorReadProps(WireModel):
    """A tool wants a file's text as the user's editor has it (unsaved changes too)."""

    id: str = Field(pattern="^edr")
    session_id: str = Field(alias="sessionID")
    path: str


class TuiPromptProps(WireModel):
    text: str


class TuiCommandProps(WireModel):
    command: str = Field(min_length=1)


class TuiToastProps(WireModel):
    title: str | None = None
    message: str
    variant: Literal["info", "success", "warning", "error"]
    duration: int | None = Field(default=None, gt=0)


class TuiSessionProps(WireModel):
    session_id: str = Field(alias="sessionID", pattern="^ses")


class PtyInfoProps(WireModel):
    info: PtyInfo


class PtyExitedProps(WireModel):
    id: str = Field(pattern="^pty")
    exit_code: int = Field(ge=0, alias="exitCode")


class PtyRefProps(WireModel):
    id: str = Field(pattern="^pty")


class WorktreeReadyProps(WireModel):
    name: str
    branch: str | None = None


class WorktreeFailedProps(WireModel):
    message: str


class InstanceDisposedProps(WireModel):
    directory: str


class ResyncProps(WireModel):
    """The client asked to resume from an event the log no longer holds."""

    last_event_id: str = Field(alias="lastEventID")
    oldest_event_id: str | None = Field(default=None, alias="oldestEventID")
    message: str


class ConnectedProps(WireModel):
    """``instanceID`` is new each time the server starts: a client that reconnects and
    sees another one knows the server restarted (its resume was still served from the
    log, or a ``server.resync`` follows when the log could not bridge the gap)."""

    instance_id: str = Field(alias="instanceID")


ServerConnected = define("server.connected", ConnectedProps, logged=False)
ServerHeartbeat = define("server.heartbeat", Empty, logged=False)
ServerInstanceDisposed = define("server.instance.disposed", InstanceDisposedProps, logged=False)
ServerResync = define("server.resync", ResyncProps, logged=False)
SessionCreated = define("session.created", SessionInfo)
SessionUpdated = define("session.updated", SessionInfo)
SessionDeleted = define("session.deleted", SessionInfo)
# partwire's: who may read or write the session changed (it was shared or unshared)
SessionAccessChanged = define("session.access", SessionRef)
# partwire's: who follows the session now, on one server (not kept: it is live only)
SessionPresence = define("session.presence", SessionPresenceProps, logged=False)
# partwire's: who answered an ask (kept beside opencode's permission/question.replied)
AskAnswered = define("ask.answered", AskAnsweredProps)


def answered_by(session_id: str, request_id: str) -> list[Draft]:
    """``ask.answered`` naming who is acting (``partwire.access.acting``), when known."""
    actor = acting.get()
    if actor is None:
        return []
    props = AskAnsweredProps(
        session_id=session_id,
        request_id=request_id,
        by=actor.principal.name,
        client=actor.client,
    )
    return [AskAnswered(props)]


SessionStatusChanged = define("session.status", SessionStatusProps)
SessionIdle = define("session.idle", SessionRef)
SessionError = define("session.error", SessionErrorProps)
SessionCompacted = define("session.compacted", SessionRef)
SessionDiff = define("session.diff", SessionDiffProps)
MessageUpdated = define("message.updated", MessageInfo)
MessageRemoved = define("message.removed", MessageRef)
MessagePartUpdated = define("message.part.updated", PartUpdatedProps)
MessagePartDelta = define("message.part.delta", PartDeltaProps)
MessagePartRemoved = define("message.part.removed", PartRef)
PermissionAsked = define("permission.asked", PermissionRequest)
PermissionReplied = define("permission.replied", PermissionRepliedProps)
QuestionAsked = define("question.asked", QuestionRequest)
QuestionReplied = define("question.replied", QuestionRepliedProps)
QuestionRejected = define("question.rejected", QuestionRef)
TodoUpdated = define("todo.updated", TodoProps)
EditorRead = define("editor.read", EditorReadProps, logged=False)
ProjectUpdated = define("project.updated", ProjectInfo)
WorktreeReady = define("worktree.ready", WorktreeReadyProps)
WorktreeFailed = define("worktree.failed", WorktreeFailedProps)
# terminals end with the process that serves them: their events are not logged
PtyCreated = define("pty.created", PtyInfoProps, logged=False)
PtyUpdated = define("pty.updated", PtyInfoProps, logged=False)
PtyExited = define("pty.exited", PtyExitedProps, logged=False)
PtyDeleted = define("pty.deleted", PtyRefProps, logged=False)
# commands for a TUI attached to this server (opencode's /tui routes); nothing to keep
TuiPromptAppend = define("tui.prompt.append", TuiPromptProps, logged=False)
TuiCommandExecute = define("tui.command.execute", TuiCommandProps, logged=False)
TuiToastShow = define("tui.toast.show", TuiToastProps, logged=False)
TuiSessionSelect = define("tui.session.select", TuiSessionProps, logged=False)
