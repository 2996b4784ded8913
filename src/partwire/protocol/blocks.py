"""partwire's events as seed 004's SessionEvents and ConversationBlocks.

``SessionEvents(root)`` is a pure fold from partwire events (in log order) to the seed's
``{type, payload, context}`` events of one session and of its sub-agents' sessions; each
carries ``id`` ``<event id>:<n>`` so a client resumes after exactly the one it saw. The
blocks themselves are made in protocol/conversation.py, which also gives what a reducer
holds after a session's stored messages.

Mapping (the seed's own opencode converter reads opencode's events the same way):

- a user's text → ``user_message`` (an image it attached: image content); assistant text
  → ``assistant_text``; reasoning → ``thinking``: upserted when the part starts, streamed
  with ``block:delta``, upserted whole (``complete``) when it ends;
- a tool call → ``tool_use`` (pending → complete | error), its result ``tool_result``
  (``result-<part id>``, output or error, ``isError``, ``durationMs``) when it finishes;
- a sub-agent call (a tool whose metadata names a child session: the task tool) →
  ``subagent:spawned`` / ``subagent:completed``; the child session's own events follow in
  the same stream with ``conversationId`` = the child's session id (the spawned event's
  ``agentId``), as the seed's reducer routes them;
- ``session.status`` → ``status`` and ``query:started``; ``session.idle`` →
  ``session:idle`` and ``query:completed`` | ``query:failed``; a completed assistant
  message → ``metadata:update`` (its usage and cost; ``session`` holds the totals so far);
  a user message naming a new model → ``options:update``; ``session.created`` →
  ``ee:creating``, ``session:initialized``, ``ee:ready``; ``session.deleted`` →
  ``ee:terminated``; write / edit / apply_patch / patch parts → ``file:*``; retries and
  compaction → ``log``; ``session.error`` → ``error``.

Block and sub-agent timestamps are the times the store keeps (a part's start, else its
message's creation; a result's end), so a fold of the events equals the stored blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from partwire.protocol.conversation import (
    block_of,
    child_of,
    completed_of,
    error_block,
    result_of,
    spawned_of,
)
from partwire.protocol.jsonread import list_of, text_of
from partwire.schema.base import Tokens, WireModel
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
from partwire.schema.message import AssistantMessage, Message, error_text
from partwire.schema.part import (
    Part,
    ReasoningPart,
    TextPart,
    ToolPart,
    part_finished,
)
from partwire.schema.session_events import (
    ActiveQuery,
    BlockDelta,
    BlockUpsert,
    EnvironmentCreating,
    EnvironmentReady,
    EnvironmentState,
    EnvironmentTerminated,
    ErrorPayload,
    FileChanged,
    FileDeleted,
    Log,
    MetadataUpdate,
    OptionsUpdate,
    QueryCompleted,
    QueryFailed,
    QueryStarted,
    RuntimeStatus,
    SessionEvent,
    SessionEventContext,
    SessionIdle,
    SessionInitialized,
    SessionMetadata,
    SessionOptions,
    Source,
    Status,
    TokenUsage,
    WorkspaceFile,
    iso,
)

FILE_TOOLS = ("write", "edit", "apply_patch")
# what the runner (the agent's execution) says; the rest is the server's
RUNNER_EVENTS = frozenset(
    ("block:upsert", "block:delta", "metadata:update", "subagent:spawned",
     "subagent:completed", "log", "error", "session:idle")
)  # fmt: skip
# what a sub-agent's session adds to its parent's stream: its conversation, not its runtime
SUBAGENT_EVENTS = RUNNER_EVENTS - {"metadata:update"} | {
    "file:created", "file:modified", "file:deleted"
}  # fmt: skip

# one SessionEvent in the making: its type, payload and (for a sub-agent block) timestamp
Made = tuple[str, WireModel, str | None]


# ---- the adapter --------------------------------------------------------------------------


@dataclass
class _Session:
    conversation: str  # "main", or the session id a sub-agent's events are routed by
    directory: str = ""
    roles: dict[str, str] = field(default_factory=dict)  # message id → role
    created: dict[str, int] = field(default_factory=dict)  # message id → creation time
    models: dict[str, str] = field(default_factory=dict)  # assistant message id → model id
    parts: dict[str, Part] = field(default_factory=dict)  # part id → latest part
    totals: dict[str, tuple[Tokens, float]] = field(default_factory=dict)
    user_text: dict[str, str] = field(default_factory=dict)  # user message id → its text
    last_user: str | None = None
    model: str | None = None  # provider/model the last prompt named
    busy_since: int | None = None
    failure: str | None = None
    agents: dict[str, str | None] = field(default_factory=dict)  # call id → child announced
    timestamp: int = 0


class SessionEvents:
    """partwire events → SessionEvents of one session (``root``) and its sub-agents'
    sessions; feed it events in log order (other sessions' are ignored)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._sessions: dict[str, _Session] = {root: _Session("main")}

    def convert(self, event: Event) -> list[SessionEvent]:
        session_id = event.session_id
        state = self._sessions.get(session_id) if session_id is not None else None
        if state is None:
            return []
        made = self._made(event, state)
        if state.conversation != "main":
            made = [m for m in made if m[0] in SUBAGENT_EVENTS]
        return [
            SessionEvent(
                id=f"{event.id}:{n}",
                type=kind,
                payload=payload.wire(),
                context=SessionEventContext(
                    session_id=self.root,
                    conversation_id=state.conversation,
                    source=_source(kind),
                    timestamp=at or iso(state.timestamp),
                ),
            )
            for n, (kind, payload, at) in enumerate(made)
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
                return self._idle(event, state)
            case SessionErrorProps() as failed:
                error = failed.error
                message = error_text(error) if error is not None else "error"
                state.failure = message
                return [("error", ErrorPayload(message=message, code=error and error.name), None)]
            case SessionInfo() as session:
                return self._session(event.type, session, state)
        return []

    def _session(self, kind: str, props: SessionInfo, state: _Session) -> list[Made]:
        info = props.info
        if kind == "session.created":
            state.timestamp, state.directory = info.time.created, info.directory
            opening = EnvironmentCreating(status_message=f"opening {info.directory}")
            new = SessionInitialized(
                is_new=True, has_transcript=False, workspace_file_count=0, block_count=0
            )
            ready = EnvironmentReady(ee_id=info.directory)
            return [("ee:creating", opening, None), ("session:initialized", new, None),
                    ("ee:ready", ready, None)]  # fmt: skip
        if kind == "session.deleted":
            return [("ee:terminated", EnvironmentTerminated(reason="manual"), None)]
        return []

    def _delta(self, props: PartDeltaProps, state: _Session) -> list[Made]:
        part = state.parts.get(props.part_id)
        if not isinstance(part, TextPart | ReasoningPart) or props.field != "text":
            return []
        if state.roles.get(part.message_id) == "user":
            return []
        return [("block:delta", BlockDelta(block_id=props.part_id, delta=props.delta), None)]

    def _runtime(self, state: _Session, message: str | None = None) -> Status:
        environment = EnvironmentState(id=state.directory, status="ready", status_message=message)
        query = None if state.busy_since is None else ActiveQuery(started_at=state.busy_since)
        runtime = RuntimeStatus(
            is_loaded=True, execution_environment=environment, active_query=query
        )
        return Status(runtime=runtime)

    def _status(self, props: SessionStatusProps, state: _Session) -> list[Made]:
        out: list[Made] = []
        status = props.status
        if status.type != "idle" and state.busy_since is None:
            state.busy_since, state.failure = state.timestamp, None
            text = state.user_text.get(state.last_user or "", "")
            out.append(("query:started", QueryStarted(message=text), None))
        message = getattr(status, "message", None) if status.type == "retry" else None
        out.insert(0, ("status", self._runtime(state, message), None))
        return out

    def _idle(self, event: Event, state: _Session) -> list[Made]:
        out: list[Made] = []
        if state.busy_since is not None:
            took = max(0, state.timestamp - state.busy_since)
            state.busy_since = None
            if state.failure is not None:
                out.append(("query:failed", QueryFailed(error=state.failure), None))
            else:
                out.append(("query:completed", QueryCompleted(duration_ms=took), None))
            out.append(("status", self._runtime(state), None))
        # last: a client that waits for idle has everything the run made
        out.append(("session:idle", SessionIdle(session_id=event.session_id or ""), None))
        return out

    def _message(self, info: Message, state: _Session) -> list[Made]:
        first = info.id not in state.roles
        state.roles[info.id] = info.role
        state.created[info.id] = info.time.created
        state.timestamp = max(state.timestamp, info.time.created)
        if info.role == "user":
            state.last_user = info.id
            model = f"{info.model.provider_id}/{info.model.model_id}"
            if not first or model == state.model:
                return []
            state.model = model
            return [("options:update", OptionsUpdate(options=SessionOptions(model=model)), None)]
        assert isinstance(info, AssistantMessage)
        state.models[info.id] = info.model_id
        if info.time.completed is None or info.id in state.totals:
            return []
        out: list[Made] = []
        if (failed := error_block(info)) is not None:
            state.failure = failed.message
            out.append(("block:upsert", BlockUpsert(block=failed.wire()), None))
        state.timestamp = max(state.timestamp, info.time.completed)
        state.totals[info.id] = (info.tokens, info.cost)
        return [*out, ("metadata:update", _metadata(info, state), None)]

    def _part(self, part: Part, state: _Session) -> list[Made]:
        role = state.roles.get(part.message_id, "assistant")
        before = state.parts.get(part.id)
        state.parts[part.id] = part
        created = state.created.get(part.message_id, state.timestamp)
        out: list[Made] = []
        if role == "user" and isinstance(part, TextPart) and not part.synthetic:
            text = state.user_text.get(part.message_id)
            state.user_text[part.message_id] = part.text if text is None else f"{text}\n{part.text}"
        block = block_of(part, role, created, state.models.get(part.message_id))
        if block is not None:
            out.append(("block:upsert", BlockUpsert(block=block.wire()), None))
        if isinstance(part, ToolPart):
            out += self._tool(part, before, state, created)
        elif part.type == "patch":
            out += [("file:modified", _file(path), None) for path in part.files]
        elif part.type == "retry":
            message = f"retry {part.attempt}: {part.error.data.message}"
            out.append(("log", Log(level="warn", message=message), None))
        elif part.type == "compaction":
            out.append(("log", Log(level="info", message="the session was compacted"), None))
        return out

    def _tool(
        self, part: ToolPart, before: Part | None, state: _Session, created: int
    ) -> list[Made]:
        out: list[Made] = []
        child = child_of(part)
        announced = state.agents.get(part.call_id, "-")
        if child is not None and part.state.status != "pending" and announced != child:
            # announced once its input is whole, and again once its session is known
            state.agents[part.call_id] = child
            if child and child not in self._sessions:
                self._sessions[child] = _Session(child)
            out.append(("subagent:spawned", spawned_of(part), iso(created)))
        was_done = isinstance(before, ToolPart) and part_finished(before)
        if not part_finished(part) or was_done:
            return out
        if child is not None:
            completed = completed_of(part)
            assert completed is not None
            return [*out, ("subagent:completed", completed, None)]
        result = result_of(part)
        assert result is not None
        out.append(("block:upsert", BlockUpsert(block=result.wire()), None))
        if part.state.status == "completed" and part.tool in FILE_TOOLS:
            out += _file_changes(part)
        return out


def _source(kind: str) -> Source:
    return "runner" if kind in RUNNER_EVENTS else "server"


def _usage(tokens: Tokens) -> TokenUsage:
    counted = tokens.input + tokens.output + tokens.reasoning + tokens.cache.read
    total = tokens.total if tokens.total is not None else counted + tokens.cache.write
    return TokenUsage(
        input_tokens=tokens.input, output_tokens=tokens.output,
        cache_read_tokens=tokens.cache.read, cache_write_tokens=tokens.cache.write,
        thinking_tokens=tokens.reasoning, total_tokens=total,
    )  # fmt: skip


def _metadata(info: AssistantMessage, state: _Session) -> MetadataUpdate:
    """The usage and cost of the response that just ended, the model that gave it, and
    (``session``, a key the seed's metadata allows) the session's totals so far."""
    total, cost = Tokens(), 0.0
    for used, spent in state.totals.values():
        total, cost = total.plus(used), cost + spent
    so_far = {"usage": _usage(total).wire(), "costUSD": cost}
    metadata = SessionMetadata(
        usage=_usage(info.tokens), cost_usd=info.cost, model=info.model_id, session=so_far
    )
    return MetadataUpdate(metadata=metadata)


def _file(path: str) -> FileChanged:
    return FileChanged(file=WorkspaceFile(path=path))


def _file_changes(part: ToolPart) -> list[Made]:
    metadata = getattr(part.state, "metadata", None) or {}
    if part.tool == "apply_patch":
        out: list[Made] = []
        for change in list_of(metadata, "files"):
            if not isinstance(change, Mapping):
                continue
            path, status = text_of(change, "file"), text_of(change, "status")
            if status == "deleted":
                out.append(("file:deleted", FileDeleted(path=path), None))
            else:
                kind = "file:created" if status == "added" else "file:modified"
                out.append((kind, _file(path), None))
        return out
    named = metadata.get("filepath") or part.state.input.get("filePath")
    if not isinstance(named, str):
        return []
    created = part.tool == "write" and metadata.get("exists") is False
    return [("file:created" if created else "file:modified", _file(named), None)]
