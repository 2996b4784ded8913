"""The AI SDK UI message stream: partwire's events → ``ai`` 7.x UI message chunks.

One *turn* — every assistant message answering the same user message (opencode makes
one per step) — is one ``UIMessage``, whose id is the turn's first assistant message.

Mapping, part by part:

- the turn's first assistant message → ``start`` (with metadata: model, agent); the
  session going idle → ``finish`` (``finishReason`` from the last step), or ``abort``
  when the run was stopped; a failed step → ``error``;
- step-start / step-finish → ``start-step`` / ``finish-step``, and after each step
  ``message-metadata`` with the turn's tokens and cost so far;
- text and reasoning → ``text-*`` / ``reasoning-*`` (ids are the part ids);
- a tool call → ``tool-input-start`` and ``tool-input-delta`` while its arguments
  stream, ``tool-input-available`` when it runs, then ``tool-output-available`` (its
  output, with ``toolMetadata`` ``{title, metadata}``) or ``tool-output-error``;
  a permission ask on a call → ``tool-approval-request`` (the approval id is the
  permission's id) and its answer → ``tool-approval-response``; a rejected call ends
  ``tool-output-denied``;
- a file → ``file``;
- partwire's own parts (agent, subtask, retry, snapshot, patch, compaction) →
  ``data-<type>`` with the part as ``data``; and, as transient data (``onData``, not
  kept in the message): a permission ask on no known call → ``data-permission`` (for AG-UI,
  one on no call at all, a budget, holds the turn as an approval does), a
  question and its answer → ``data-question``, the todo list → ``data-todo``.

``UIChunks`` is pure: feed it one session's events in log order. It only speaks for
turns whose first assistant message it saw, so it may start anywhere in the log.
``protocol.uimessages`` gives the same ``UIMessage``s from stored messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from partwire.protocol.sent import SentText
from partwire.schema.base import JSON, JSONObject, Tokens
from partwire.schema.event import (
    Event,
    MessageInfo,
    PartDeltaProps,
    PartUpdatedProps,
    PermissionRepliedProps,
    QuestionRef,
    QuestionRepliedProps,
    SessionRef,
    TodoProps,
)
from partwire.schema.message import AssistantMessage, Message, error_text
from partwire.schema.part import (
    FilePart,
    Part,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    part_finished,
)
from partwire.schema.permission import PermissionRequest, QuestionRequest, Todo
from partwire.schema.tool_state import (
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
)

Chunk = JSONObject

# the events the stream is made from (a route subscribes to these)
UI_EVENTS = (
    "message.updated",
    "message.part.updated",
    "message.part.delta",
    "permission.asked",
    "permission.replied",
    "question.asked",
    "question.replied",
    "question.rejected",
    "todo.updated",
    "session.idle",
)
HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
FINISH_REASONS = {"stop", "length", "content-filter", "tool-calls", "error", "other"}


def finish_reason(finish: str | None) -> str:
    """partwire's (opencode's) finish → one of the AI SDK's finish reasons."""
    if finish is None:
        return "other"
    return finish if finish in FINISH_REASONS else "other"


def model_metadata(info: AssistantMessage) -> JSONObject:
    return {
        "model": {"providerID": info.provider_id, "modelID": info.model_id},
        "agent": info.agent,
    }


def usage_metadata(tokens: Tokens, cost: float) -> JSONObject:
    return {"tokens": tokens.wire(), "cost": cost}


def data_chunk(part: Part) -> Chunk:
    return {"type": f"data-{part.type}", "id": part.id, "data": part.wire()}


@dataclass
class _Tool:
    started: bool = False
    available: bool = False
    ended: bool = False
    approval: str | None = None  # the permission asked on this call, until answered
    denied: bool = False


@dataclass
class _Turn:
    """One UIMessage in the making."""

    parent_id: str
    ui_id: str
    messages: set[str] = field(default_factory=set)
    step_message: str | None = None  # the assistant message of the step in progress
    sent: SentText = field(default_factory=SentText)  # text, reasoning and tool arguments
    kinds: dict[str, str] = field(default_factory=dict)  # text/reasoning part id: which one
    closed: set[str] = field(default_factory=set)
    tools: dict[str, _Tool] = field(default_factory=dict)  # by call id
    step_calls: list[str] = field(default_factory=list)
    tokens: Tokens = field(default_factory=Tokens)
    cost: float = 0.0
    finish: str | None = None
    aborted: str | None = None
    done: bool = False
    loose: list[str] = field(default_factory=list)  # asks on no call (a budget), unanswered


class UIChunks:
    """One session's events → UI message chunks."""

    def __init__(self, session_id: str, *, loose_asks_wait: bool = False) -> None:
        self.session_id = session_id
        # an ask on no call (a budget) ends the response as an approval does (AG-UI's
        # interrupts); else it is data-permission and the response goes on (the AI SDK)
        self.loose_asks_wait = loose_asks_wait
        self.turn: _Turn | None = None
        # after an event that began a new turn while one was open: the open one's parent
        # and how many of the chunks made (its end) belong to it
        self.ended: tuple[str, int] | None = None
        self._calls: dict[str, str] = {}  # permission id → call id
        self.asks: dict[str, PermissionRequest] = {}  # every ask seen, by id

    # ---- what a route asks -------------------------------------------------------------

    @property
    def waiting(self) -> bool:
        """The turn can go no further until its pending approvals are answered: one is
        asked, and every call of the step in progress has ended or waits for one."""
        turn = self.turn
        if turn is None or turn.done:
            return False
        calls = [turn.tools[c] for c in turn.step_calls]
        asked = (self.loose_asks_wait and bool(turn.loose)) or any(t.approval for t in calls)
        return asked and all(t.ended or t.approval for t in calls)

    def pending_approvals(self) -> list[str]:
        turn = self.turn
        if turn is None:
            return []
        tied = [t.approval for t in turn.tools.values() if t.approval is not None]
        return [*tied, *turn.loose] if self.loose_asks_wait else tied

    # ---- events → chunks ---------------------------------------------------------------

    def chunks(self, event: Event) -> list[Chunk]:
        self.ended = None
        if event.session_id != self.session_id:
            return []
        match event.properties:
            case PartDeltaProps() as delta:
                return self._delta(delta)
            case PartUpdatedProps() as updated:
                return self._part(updated.part)
            case MessageInfo() as message:
                return self._message(message.info)
            case PermissionRequest() as request:
                return self._asked(request)
            case PermissionRepliedProps() as reply:
                return self._replied(reply)
            case QuestionRequest() as question:
                return self._question(question)
            case QuestionRepliedProps() | QuestionRef() as answer:
                return self._answered(answer)
            case TodoProps() as todos:
                return self._todos(todos.todos)
            case SessionRef() if event.type == "session.idle":
                return self._idle()
        return []

    def _message(self, info: Message) -> list[Chunk]:
        if not isinstance(info, AssistantMessage):
            return []
        turn = self.turn
        out: list[Chunk] = []
        if turn is None or turn.parent_id != info.parent_id:
            if turn is not None and not turn.done:
                out += self._end(turn)
                self.ended = (turn.parent_id, len(out))
            turn = self.turn = _Turn(parent_id=info.parent_id, ui_id=info.id)
            out.append({"type": "start", "messageId": turn.ui_id, **_meta(model_metadata(info))})
        if info.id not in turn.messages:
            turn.messages.add(info.id)
            turn.step_message, turn.step_calls = info.id, []
        if turn.done or info.time.completed is None:
            return out
        if info.finish is not None:
            turn.finish = info.finish
        if info.error is not None:
            text = error_text(info.error)
            if info.error.name == "MessageAbortedError":
                turn.aborted = text
            elif info.id not in turn.closed:
                out.append({"type": "error", "errorText": text})
        turn.closed.add(info.id)
        return out

    def _own(self, message_id: str) -> _Turn | None:
        turn = self.turn
        if turn is None or turn.done or message_id not in turn.messages:
            return None
        return turn

    def _part(self, part: Part) -> list[Chunk]:
        turn = self._own(part.message_id)
        if turn is None:
            return []
        if isinstance(part, TextPart | ReasoningPart):
            return self._streamed(turn, part)
        if isinstance(part, ToolPart):
            return self._tool(turn, part)
        if isinstance(part, StepStartPart | StepFinishPart | FilePart):
            if part.id in turn.closed:
                return []  # these are whole at once: a later update changes nothing shown
            turn.closed.add(part.id)
        if isinstance(part, StepStartPart):
            return [{"type": "start-step"}]
        if isinstance(part, StepFinishPart):
            turn.tokens, turn.cost = turn.tokens.plus(part.tokens), turn.cost + part.cost
            meta = usage_metadata(turn.tokens, turn.cost)
            return [{"type": "finish-step"}, {"type": "message-metadata", "messageMetadata": meta}]
        if isinstance(part, FilePart):
            return [{"type": "file", "url": part.url, "mediaType": part.mime}]
        return [data_chunk(part)]

    def _streamed(self, turn: _Turn, part: TextPart | ReasoningPart) -> list[Chunk]:
        kind = "text" if isinstance(part, TextPart) else "reasoning"
        if part.id in turn.closed:
            return []
        out: list[Chunk] = []
        if turn.sent.start(part.id):
            turn.kinds[part.id] = kind
            out.append({"type": f"{kind}-start", "id": part.id})
        if grown := turn.sent.catch_up(part.id, part.text):
            out.append({"type": f"{kind}-delta", "id": part.id, "delta": grown})
        if part_finished(part):
            turn.closed.add(part.id)
            out.append({"type": f"{kind}-end", "id": part.id})
        return out

    def _delta(self, props: PartDeltaProps) -> list[Chunk]:
        turn = self._own(props.message_id)
        kind = turn.kinds.get(props.part_id) if turn is not None else None
        if turn is None or kind is None or props.field != "text" or props.part_id in turn.closed:
            return []
        turn.sent.append(props.part_id, props.delta)
        return [{"type": f"{kind}-delta", "id": props.part_id, "delta": props.delta}]

    def _tool(self, turn: _Turn, part: ToolPart) -> list[Chunk]:
        tool = turn.tools.get(part.call_id)
        if tool is None:
            tool = turn.tools[part.call_id] = _Tool()
            turn.step_calls.append(part.call_id)
        if tool.ended:
            return []
        call: JSONObject = {"toolCallId": part.call_id}
        out: list[Chunk] = []
        if not tool.started:
            tool.started = True
            out.append({"type": "tool-input-start", **call, "toolName": part.tool})
        state = part.state
        if isinstance(state, ToolStatePending):
            if grown := turn.sent.catch_up(part.call_id, state.raw):
                out.append({"type": "tool-input-delta", **call, "inputTextDelta": grown})
            return out
        if not tool.available:
            tool.available = True
            out.append(
                {
                    "type": "tool-input-available",
                    **call,
                    "toolName": part.tool,
                    "input": state.input,
                }
            )
        if isinstance(state, ToolStateCompleted):
            tool.ended = True
            details: JSONObject = {"title": state.title, "metadata": state.metadata}
            out.append(
                {
                    "type": "tool-output-available",
                    **call,
                    "output": state.output,
                    "toolMetadata": details,
                }
            )
        elif isinstance(state, ToolStateError):
            tool.ended = True
            if tool.denied:
                out.append({"type": "tool-output-denied", **call})
            else:
                out.append({"type": "tool-output-error", **call, "errorText": state.error})
        return out

    def _asked(self, request: PermissionRequest) -> list[Chunk]:
        self.asks[request.id] = request
        turn = self.turn
        tool = None
        if request.tool is not None and turn is not None and not turn.done:
            tool = turn.tools.get(request.tool.call_id)
        if turn is None or turn.done:
            return []
        if tool is None or tool.ended:
            if request.tool is None:  # the run waits between steps for it (a budget)
                turn.loose.append(request.id)
            return [_transient("permission", request.id, request.wire())]
        tool.approval = request.id
        self._calls[request.id] = request.tool.call_id if request.tool else ""
        return [
            {
                "type": "tool-approval-request",
                "approvalId": request.id,
                "toolCallId": self._calls[request.id],
            }
        ]

    def _replied(self, props: PermissionRepliedProps) -> list[Chunk]:
        call_id = self._calls.pop(props.request_id, None)
        turn = self.turn
        if turn is not None and props.request_id in turn.loose:
            turn.loose.remove(props.request_id)
        if call_id is None or turn is None or turn.done:
            return []
        tool = turn.tools[call_id]
        tool.approval = None
        tool.denied = props.reply == "reject"
        approved = props.reply != "reject"
        return [
            {"type": "tool-approval-response", "approvalId": props.request_id, "approved": approved}
        ]

    def _question(self, request: QuestionRequest) -> list[Chunk]:
        if self.turn is None or self.turn.done:
            return []
        return [_transient("question", request.id, request.wire())]

    def _answered(self, props: QuestionRepliedProps | QuestionRef) -> list[Chunk]:
        if self.turn is None or self.turn.done:
            return []
        answers = props.answers if isinstance(props, QuestionRepliedProps) else None
        data = {"id": props.request_id, "answers": answers, "rejected": answers is None}
        return [_transient("question", props.request_id, data)]

    def _todos(self, todos: list[Todo]) -> list[Chunk]:
        if self.turn is None or self.turn.done:
            return []
        return [_transient("todo", "todo", [t.wire() for t in todos])]

    def _idle(self) -> list[Chunk]:
        turn = self.turn
        return self._end(turn) if turn is not None and not turn.done else []

    def _end(self, turn: _Turn) -> list[Chunk]:
        """The turn's last chunks: open text and reasoning end, then finish or abort."""
        turn.done = True
        out: list[Chunk] = [
            {"type": f"{kind}-end", "id": p}
            for p, kind in turn.kinds.items()
            if p not in turn.closed
        ]
        if turn.aborted is not None:
            return [*out, {"type": "abort", "reason": turn.aborted}]
        return [*out, {"type": "finish", "finishReason": finish_reason(turn.finish)}]


def _transient(name: str, key: str, data: JSON) -> Chunk:
    """State that is not part of the message (asks, the todo list): ``onData`` only."""
    return {"type": f"data-{name}", "id": key, "data": data, "transient": True}


def _meta(metadata: JSONObject) -> JSONObject:
    return {"messageMetadata": metadata}
