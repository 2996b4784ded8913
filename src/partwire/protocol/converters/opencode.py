"""opencode's ``/event`` stream → ingest events, so a partwire server can mirror an
opencode session. Each message of the mirrored session begins with a ``start`` event
(role, model): a caller sends each message as its own ingest stream.

A sub-agent's session (the task tool's child: its call's metadata names it) is mirrored
too, as ``subagent`` events of that call: its prompt (the child's user message) starts
it, and its assistant messages become the steps of one answer in a child session linked
from the call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from partwire.protocol.jsonread import JSONMap, as_map, map_of, number_of, text_of
from partwire.schema import ingest
from partwire.schema.base import JSON, Tokens
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef


@dataclass
class _Streamed:
    kind: str  # "text" | "reasoning"
    sent: int = 0  # characters already sent as deltas


@dataclass
class _Child:
    """A sub-agent's session, mirrored as the ``subagent`` events of its call."""

    call_id: str
    follow: _Follow
    prompt: list[str] = field(default_factory=list)  # its user message's text
    asking: str | None = None  # the id of that user message
    started: bool = False


class OpencodeConverter:
    """Follows one opencode session (``session_id``, or the first one with a message)
    and the sub-agents' sessions its task calls make."""

    def __init__(self, session_id: str | None = None) -> None:
        self._main = _Follow(session_id, self._child_of)
        self._children: dict[str, _Child] = {}  # child session id → its mirror

    @property
    def session_id(self) -> str | None:
        return self._main.session_id

    def _child_of(self, session_id: str, call_id: str) -> None:
        if session_id not in self._children:
            self._children[session_id] = _Child(call_id, _Follow(session_id, self._child_of))

    def feed(self, item: object) -> list[IngestEvent]:
        event = as_map(item)
        if "payload" in event and "type" not in event:  # /global/event wraps each event
            event = map_of(event, "payload")
        props = map_of(event, "properties")
        kind = event.get("type")
        owner = props.get("sessionID") or map_of(props, "info").get("sessionID")
        owner = owner or map_of(props, "part").get("sessionID")
        child = self._children.get(str(owner))
        if child is not None:
            return self._child_event(child, str(kind), props)
        return self._main.feed(str(kind), props)

    def _child_event(self, child: _Child, kind: str, props: JSONMap) -> list[IngestEvent]:
        info = map_of(props, "info")
        if kind == "message.updated" and info.get("role") == "user":
            child.asking = str(info.get("id"))
            return []
        part = map_of(props, "part")
        if kind == "message.part.updated" and part.get("messageID") == child.asking:
            if part.get("type") == "text" and text_of(part, "text"):
                child.prompt = [text_of(part, "text")]
            return []
        made = child.follow.feed(kind, props)
        out: list[IngestEvent] = []
        for event in made:
            if isinstance(event, ingest.IngestStart):
                if child.started:
                    continue  # its next message: more steps of the one answer
                child.started = True
                event = event.model_copy(update={"prompt": "\n".join(child.prompt) or None})
            out.append(ingest.SubagentEvent(call_id=child.call_id, event=event))
        return out

    def end(self) -> list[IngestEvent]:
        return []


class _Follow:
    """One opencode session's messages → ingest events."""

    def __init__(self, session_id: str | None, on_child: Callable[[str, str], None]) -> None:
        self.session_id = session_id
        self._on_child = on_child
        self._messages: set[str] = set()
        self._current: str | None = None
        self._streams: dict[str, _Streamed] = {}
        self._tools: dict[str, str] = {}  # call id → status sent

    def feed(self, kind: str, props: JSONMap) -> list[IngestEvent]:
        if kind == "message.updated":
            return self._message(map_of(props, "info"))
        if kind == "message.part.updated":
            return self._part(map_of(props, "part"))
        if kind == "message.part.delta":
            return self._delta(props)
        return []

    def _ours(self, session_id: JSON, message_id: JSON) -> bool:
        if self.session_id is None:
            self.session_id = str(session_id)
        return bool(session_id == self.session_id and message_id == self._current)

    def _message(self, info: JSONMap) -> list[IngestEvent]:
        if self.session_id is None:
            self.session_id = str(info.get("sessionID"))
        if info.get("sessionID") != self.session_id:
            return []
        message_id = str(info.get("id"))
        out: list[IngestEvent] = []
        if message_id not in self._messages:
            self._messages.add(message_id)
            self._current = message_id
            self._streams.clear()
            self._tools.clear()
            role = "user" if info.get("role") == "user" else "assistant"
            model = None
            provider, model_id = text_of(info, "providerID"), text_of(info, "modelID")
            if role == "assistant" and provider and model_id:
                model = ModelRef(provider_id=provider, model_id=model_id)
            out.append(ingest.IngestStart(role=role, model=model))
        error = map_of(info, "error")
        if message_id == self._current and error and map_of(info, "time").get("completed"):
            message = text_of(map_of(error, "data"), "message") or text_of(error, "name")
            out.append(ingest.StreamError(message=message or "error"))
        return out

    def _part(self, part: JSONMap) -> list[IngestEvent]:
        if not self._ours(part.get("sessionID"), part.get("messageID")):
            return []
        kind = part.get("type")
        if kind in ("text", "reasoning"):
            return self._text_part(str(part.get("id")), kind, text_of(part, "text"))
        if kind == "tool":
            return self._tool(part)
        if kind == "step-start":
            return [ingest.StepStart()]
        if kind == "step-finish":
            tokens = Tokens.model_validate(map_of(part, "tokens"))
            reason = text_of(part, "reason") or "stop"
            cost = number_of(part, "cost") or 0
            return [ingest.StepFinish(tokens=tokens, cost=cost, reason=reason)]
        if kind == "file":
            return [
                ingest.FileAdded(
                    mime=str(part.get("mime")),
                    url=str(part.get("url")),
                    filename=text_of(part, "filename") or None,
                )
            ]
        return []

    def _text_part(self, part_id: str, kind: str, text: str) -> list[IngestEvent]:
        stream = self._streams.setdefault(part_id, _Streamed(kind))
        missing = text[stream.sent :]  # text that came whole rather than as deltas
        stream.sent = max(stream.sent, len(text))
        return [self._piece(kind, missing)] if missing else []

    def _delta(self, props: JSONMap) -> list[IngestEvent]:
        if not self._ours(props.get("sessionID"), props.get("messageID")):
            return []
        stream = self._streams.get(str(props.get("partID")))
        if stream is None or text_of(props, "field", "text") != "text":
            return []
        delta = text_of(props, "delta")
        stream.sent += len(delta)
        return [self._piece(stream.kind, delta)] if delta else []

    @staticmethod
    def _piece(kind: str, text: str) -> IngestEvent:
        return ingest.TextDelta(delta=text) if kind == "text" else ingest.ReasoningDelta(delta=text)

    def _tool(self, part: JSONMap) -> list[IngestEvent]:
        call_id, name = str(part.get("callID")), str(part.get("tool"))
        state = map_of(part, "state")
        status = state.get("status")
        child = map_of(state, "metadata").get("sessionId")
        if isinstance(child, str) and child:  # a sub-agent runs in that session
            self._on_child(child, call_id)
        sent = self._tools.get(call_id)
        out: list[IngestEvent] = []
        if sent is None:
            out.append(ingest.ToolCallStart(call_id=call_id, tool=name))
            self._tools[call_id] = sent = "pending"
        if status in ("running", "completed", "error") and sent == "pending":
            arguments = dict(map_of(state, "input"))
            out.append(ingest.ToolCall(call_id=call_id, tool=name, input=arguments))
            self._tools[call_id] = sent = "running"
        if status in ("completed", "error") and sent == "running":
            failed = status == "error"
            output = text_of(state, "error" if failed else "output")
            out.append(
                ingest.ToolResult(
                    call_id=call_id,
                    output=output,
                    is_error=failed,
                    title=None if failed else text_of(state, "title") or None,
                    metadata=dict(map_of(state, "metadata")) or None,
                )
            )
            self._tools[call_id] = "done"
        return out
