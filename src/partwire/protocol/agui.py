"""AG-UI: one turn of a session as AG-UI events, made with ``ag-ui-protocol``'s own models.

``AguiView`` translates the turn's UI message chunks (``protocol.aisdk.UIChunks`` decides
what a turn is, and when it waits) into AG-UI events:

- a response opens with ``RUN_STARTED`` and ``STATE_SNAPSHOT`` (``{todos}``); a turn that
  ends → ``RUN_FINISHED`` (``result``: finish reason, tokens, cost; ``usage``), a stopped
  run → ``RUN_FINISHED`` with outcome ``cancelled``, a failed one → ``RUN_ERROR``; a
  turn that waits for permission asks → ``RUN_FINISHED`` with outcome ``interrupt``, one
  interrupt per ask, answered by the next run's ``resume`` entries;
- steps → ``STEP_STARTED`` / ``STEP_FINISHED`` (the step's assistant message id);
- text → ``TEXT_MESSAGE_*`` and reasoning → ``REASONING_*`` (message ids: part ids);
- a tool call → ``TOOL_CALL_START`` (its parent message is the step's assistant
  message), ``TOOL_CALL_ARGS`` as the arguments stream, ``TOOL_CALL_END``, then
  ``TOOL_CALL_RESULT`` (``metadata``: ``{status, title, metadata}``);
- the todo list → ``STATE_DELTA`` (a JSON patch of ``/todos``);
- ``CUSTOM`` for the rest: ``partwire.turn`` (model, agent), ``partwire.usage`` after each
  step, ``partwire.permission.asked`` / ``.replied``, ``partwire.question``,
  ``partwire.file`` and ``partwire.part`` (agent, subtask, retry, snapshot, patch,
  compaction parts).

A response that begins mid-turn re-opens what is open there (the step, a text or
reasoning message, a tool call), so the client's verifier accepts what follows.
``agui_messages`` gives a ``MESSAGES_SNAPSHOT``'s messages from stored messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Interrupt,
    Message,
    ReasoningEndEvent,
    ReasoningMessage,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.encoder import EventEncoder

from partwire.protocol.aisdk import Chunk, UIChunks
from partwire.protocol.jsonread import int_of, map_of, text_of
from partwire.protocol.uimessages import Approval
from partwire.schema.base import JSON, JSONObject
from partwire.schema.message import AssistantMessage as StoredAssistant
from partwire.schema.message import MessageWithParts
from partwire.schema.part import ReasoningPart, TextPart, ToolPart
from partwire.schema.permission import PermissionRequest, Todo
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending

DENIED = "The user rejected this call."
_ENCODER = EventEncoder()


def result_id(call_id: str) -> str:
    return f"{call_id}:result"


def interrupt_of(request: PermissionRequest) -> Interrupt:
    subjects = ", ".join(request.patterns)
    return Interrupt(
        id=request.id,
        reason="permission",
        message=f"{request.permission}: {subjects}" if subjects else request.permission,
        tool_call_id=request.tool.call_id if request.tool is not None else None,
        metadata={
            "permission": request.permission,
            "patterns": request.patterns,
            "always": request.always,
            "replies": ["once", "always", "reject"],
        },
    )


def usage_of(metadata: Mapping[str, JSON], model: Mapping[str, JSON]) -> TokenUsage:
    tokens = map_of(metadata, "tokens")
    cache = map_of(tokens, "cache")
    total = tokens.get("total")
    return TokenUsage(
        provider=text_of(model, "providerID") or None,
        model=text_of(model, "modelID") or None,
        input_tokens=int_of(tokens, "input"),
        output_tokens=int_of(tokens, "output"),
        reasoning_tokens=int_of(tokens, "reasoning"),
        cached_input_tokens=int_of(cache, "read"),
        cache_write_input_tokens=int_of(cache, "write"),
        total_tokens=total if isinstance(total, int) else None,
    )


@dataclass(frozen=True)
class AguiItem:
    """One AG-UI event and its SSE text (encoded once)."""

    event: BaseEvent
    sse: str


@dataclass
class _Open:
    """What the client has opened and not yet closed."""

    step: str | None = None
    messages: dict[str, str] = field(default_factory=dict)  # id → "text" | "reasoning"
    calls: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id → name, parent
    with_args: set[str] = field(default_factory=set)


class AguiView:
    """The AG-UI view of a turn stream (see ``server.turnstream``); items are events."""

    def __init__(self, thread_id: str, run_id: str, todos: list[Todo]) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.todos: Sequence[JSON] = [t.wire() for t in todos]
        self.open = _Open()
        self.usage: Mapping[str, JSON] = {}
        self.model: Mapping[str, JSON] = {}
        self.error: str | None = None

    # ---- the View protocol -------------------------------------------------------------

    def translate(self, chunks: list[Chunk], source: UIChunks) -> list[AguiItem]:
        events: list[BaseEvent] = []
        for chunk in chunks:
            events += self._events(chunk, source)
        return [self.item(e) for e in events]

    def encode(self, item: AguiItem) -> str:
        return item.sse

    def beginning(self, source: UIChunks) -> list[AguiItem]:
        events: list[BaseEvent] = [
            RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id),
            StateSnapshotEvent(snapshot={"todos": self.todos}),
        ]
        return [self.item(e) for e in events + self._reopen()]

    def waiting(self, source: UIChunks) -> list[AguiItem]:
        interrupts = [interrupt_of(source.asks[a]) for a in source.pending_approvals()]
        outcome = {"type": "interrupt", "interrupts": interrupts}
        finished = RunFinishedEvent.model_validate(
            {"threadId": self.thread_id, "runId": self.run_id, "outcome": outcome}
        )
        return [self.item(e) for e in [*self._close_all(), finished]]

    def closing(self) -> str:
        return ""

    @property
    def transport(self) -> str:
        return "agui"

    @property
    def loose_asks_wait(self) -> bool:
        return True  # a budget ask is an interrupt too

    @property
    def headers(self) -> dict[str, str]:
        return {}

    # ---- chunks → events ---------------------------------------------------------------

    def item(self, event: BaseEvent) -> AguiItem:
        return AguiItem(event, _ENCODER.encode(event))

    def _events(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        kind = text_of(chunk, "type")
        handler = _CHUNKS.get(kind)
        if handler is not None:
            made: list[BaseEvent] = handler(self, chunk, source)
            return made
        if kind.startswith("data-"):
            return self._data(kind[5:], chunk)
        return []

    def _start(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        self.usage, self.error = {}, None
        metadata = map_of(chunk, "messageMetadata")
        self.model = map_of(metadata, "model")
        value = {"messageId": text_of(chunk, "messageId"), **metadata}
        return [CustomEvent(name="partwire.turn", value=value)]

    def _step(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        out = self._close_step()
        turn = source.turn
        self.open.step = turn.step_message if turn is not None else None
        if self.open.step is not None:
            out.append(StepStartedEvent(step_name=self.open.step))
        return out

    def _step_end(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        return self._close_step()

    def _metadata(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        self.usage = map_of(chunk, "messageMetadata")
        return [CustomEvent(name="partwire.usage", value=self.usage)]

    def _text(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        kind, _, stage = text_of(chunk, "type").partition("-")
        message_id = text_of(chunk, "id")
        if stage == "start":
            self.open.messages[message_id] = kind
            return self._opening(message_id, kind)
        if message_id not in self.open.messages:
            return []
        if stage == "delta":
            delta = text_of(chunk, "delta")
            if not delta:
                return []
            if kind == "text":
                return [TextMessageContentEvent(message_id=message_id, delta=delta)]
            return [ReasoningMessageContentEvent(message_id=message_id, delta=delta)]
        return self._closing(message_id)

    def _opening(self, message_id: str, kind: str) -> list[BaseEvent]:
        if kind == "text":
            return [TextMessageStartEvent(message_id=message_id, role="assistant")]
        return [
            ReasoningStartEvent(message_id=message_id),
            ReasoningMessageStartEvent(message_id=message_id, role="reasoning"),
        ]

    def _closing(self, message_id: str) -> list[BaseEvent]:
        kind = self.open.messages.pop(message_id, None)
        if kind == "text":
            return [TextMessageEndEvent(message_id=message_id)]
        if kind == "reasoning":
            return [
                ReasoningMessageEndEvent(message_id=message_id),
                ReasoningEndEvent(message_id=message_id),
            ]
        return []

    def _call(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        call_id, name = text_of(chunk, "toolCallId"), text_of(chunk, "toolName")
        turn = source.turn
        parent = turn.step_message if turn is not None else None
        self.open.calls[call_id] = (name, parent)
        return [
            ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=parent)
        ]

    def _args(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        call_id, delta = text_of(chunk, "toolCallId"), text_of(chunk, "inputTextDelta")
        if call_id not in self.open.calls or not delta:
            return []
        self.open.with_args.add(call_id)
        return [ToolCallArgsEvent(tool_call_id=call_id, delta=delta)]

    def _ready(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        call_id = text_of(chunk, "toolCallId")
        if call_id not in self.open.calls:
            return []
        out: list[BaseEvent] = []
        if call_id not in self.open.with_args:
            out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(chunk["input"])))
        return [*out, *self._end_call(call_id)]

    def _end_call(self, call_id: str) -> list[BaseEvent]:
        self.open.calls.pop(call_id, None)
        self.open.with_args.discard(call_id)
        return [ToolCallEndEvent(tool_call_id=call_id)]

    def _result(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        call_id = text_of(chunk, "toolCallId")
        out = self._end_call(call_id) if call_id in self.open.calls else []
        kind = chunk["type"]
        meta: dict[str, JSON]
        if kind == "tool-output-available":
            content = text_of(chunk, "output")
            meta = {"status": "completed", **map_of(chunk, "toolMetadata")}
        elif kind == "tool-output-error":
            content, meta = text_of(chunk, "errorText"), {"status": "error"}
        else:
            content, meta = DENIED, {"status": "denied"}
        result = ToolCallResultEvent(
            message_id=result_id(call_id), tool_call_id=call_id, content=content, role="tool"
        )
        result.metadata = meta
        return [*out, result]

    def _asked(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        approval_id = text_of(chunk, "approvalId")
        request = source.asks.get(approval_id)
        value = request.wire() if request is not None else {"id": approval_id}
        return [CustomEvent(name="partwire.permission.asked", value=value)]

    def _replied(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        value = {"id": chunk["approvalId"], "approved": chunk["approved"]}
        return [CustomEvent(name="partwire.permission.replied", value=value)]

    def _file(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        value = {"url": chunk["url"], "mediaType": chunk["mediaType"]}
        return [CustomEvent(name="partwire.file", value=value)]

    def _data(self, name: str, chunk: Chunk) -> list[BaseEvent]:
        if name == "todo":
            todos = chunk.get("data")
            self.todos = todos if isinstance(todos, Sequence) else []
            patch = [{"op": "replace", "path": "/todos", "value": self.todos}]
            return [StateDeltaEvent.model_validate({"delta": patch})]
        if name in ("permission", "question"):
            return [CustomEvent(name=f"partwire.{name}", value=chunk["data"])]
        return [CustomEvent(name="partwire.part", value=chunk["data"])]

    def _failed(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        self.error = text_of(chunk, "errorText")
        return []

    def _finish(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        out = self._close_all()
        if self.error is not None:
            return [*out, RunErrorEvent(message=self.error)]
        result = {"finishReason": chunk["finishReason"], **self.usage}
        usage = [usage_of(self.usage, self.model)] if self.usage else None
        finished = RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, result=result, usage=usage
        )
        return [*out, finished]

    def _abort(self, chunk: Chunk, source: UIChunks) -> list[BaseEvent]:
        cancelled = RunFinishedEvent.model_validate(
            {"threadId": self.thread_id, "runId": self.run_id, "outcome": {"type": "cancelled"}}
        )
        return [*self._close_all(), cancelled]

    # ---- what is open ------------------------------------------------------------------

    def _close_step(self) -> list[BaseEvent]:
        step, self.open.step = self.open.step, None
        return [StepFinishedEvent(step_name=step)] if step is not None else []

    def _close_all(self) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for message_id in list(self.open.messages):
            out += self._closing(message_id)
        for call_id in list(self.open.calls):
            out += self._end_call(call_id)
        return out + self._close_step()

    def _reopen(self) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self.open.step is not None:
            out.append(StepStartedEvent(step_name=self.open.step))
        for message_id, kind in self.open.messages.items():
            out += self._opening(message_id, kind)
        for call_id, (name, parent) in self.open.calls.items():
            out.append(
                ToolCallStartEvent(
                    tool_call_id=call_id, tool_call_name=name, parent_message_id=parent
                )
            )
        return out


_CHUNKS: dict[str, Callable[[AguiView, Chunk, UIChunks], list[BaseEvent]]] = {
    "start": AguiView._start,
    "start-step": AguiView._step,
    "finish-step": AguiView._step_end,
    "message-metadata": AguiView._metadata,
    "text-start": AguiView._text,
    "text-delta": AguiView._text,
    "text-end": AguiView._text,
    "reasoning-start": AguiView._text,
    "reasoning-delta": AguiView._text,
    "reasoning-end": AguiView._text,
    "tool-input-start": AguiView._call,
    "tool-input-delta": AguiView._args,
    "tool-input-available": AguiView._ready,
    "tool-output-available": AguiView._result,
    "tool-output-error": AguiView._result,
    "tool-output-denied": AguiView._result,
    "tool-approval-request": AguiView._asked,
    "tool-approval-response": AguiView._replied,
    "file": AguiView._file,
    "error": AguiView._failed,
    "finish": AguiView._finish,
    "abort": AguiView._abort,
}

# ---- stored messages → a MESSAGES_SNAPSHOT ---------------------------------------------------


def _user_text(message: MessageWithParts) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)


def _tool_result(part: ToolPart, approval: Approval | None) -> ToolMessage | None:
    state = part.state
    if isinstance(state, ToolStateCompleted):
        content: str = state.output
        meta: JSONObject = {
            "status": "completed",
            "title": state.title,
            "metadata": state.metadata,
        }
    elif isinstance(state, ToolStateError):
        denied = approval is not None and approval.approved is False
        content = DENIED if denied else state.error
        meta = {"status": "denied" if denied else "error"}
    else:
        return None
    return ToolMessage(
        id=result_id(part.call_id), tool_call_id=part.call_id, content=content, metadata=meta
    )


def _step_messages(message: MessageWithParts, approvals: dict[str, Approval]) -> list[Message]:
    out: list[Message] = []
    calls: AssistantMessage | None = None
    results: list[ToolMessage] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append(AssistantMessage(id=part.id, content=part.text))
        elif isinstance(part, ReasoningPart):
            out.append(ReasoningMessage(id=part.id, content=part.text))
        elif isinstance(part, ToolPart):
            if calls is None:
                calls = AssistantMessage(id=message.info.id, tool_calls=[])
                out.append(calls)
            state = part.state
            arguments = (
                state.raw if isinstance(state, ToolStatePending) else json.dumps(state.input)
            )
            call = ToolCall(
                id=part.call_id, function=FunctionCall(name=part.tool, arguments=arguments)
            )
            assert calls.tool_calls is not None
            calls.tool_calls.append(call)
            result = _tool_result(part, approvals.get(part.call_id))
            if result is not None:
                results.append(result)
    if calls is not None:
        at = out.index(calls) + 1
        out[at:at] = results
    return out


def agui_messages(
    messages: list[MessageWithParts], approvals: dict[str, Approval] | None = None
) -> list[Message]:
    """Stored messages as AG-UI messages, in the order a client that saw them live has."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message.info, StoredAssistant):
            out += _step_messages(message, approvals or {})
        else:
            out.append(UserMessage(id=message.info.id, content=_user_text(message)))
    return out
