"""opencode v2's durable session events (``session.next.*``) made from partwire's event
log: what ``/api/session/{id}/history`` pages through and ``/api/session/{id}/event``
streams.

``DurableEvents`` is pure: feed it one session's events in log order, from the session's
start; each durable event it makes gets the session's next ``seq`` (1, 2, …), so the same
log always gives the same sequence and a client resumes after any ``seq``. Mapping:

- a prompt → ``prompted`` (its words and files); a synthetic one → ``synthetic``; a
  compaction request → ``compaction.started``, its summary → ``compaction.ended``;
- an assistant message → ``step.started``, then ``step.ended`` (finish, cost, tokens) or
  ``step.failed`` (its error);
- text and reasoning → ``text|reasoning.started`` / ``.ended`` (with the whole text);
- a tool call → ``tool.input.started``, ``tool.input.ended`` and ``tool.called`` when it
  runs, then ``tool.success`` or ``tool.failed``;
- a retry part → ``retried``.
Deltas are not durable: the live ``/api/event`` stream carries them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from partwire.clock import now_ms
from partwire.protocol.sent import SentText
from partwire.protocol.v2messages import tokens_v2
from partwire.schema.base import JSON, JSONObject
from partwire.schema.event import Event, MessageInfo, PartDeltaProps, PartUpdatedProps
from partwire.schema.message import AssistantMessage, UserMessage, error_text
from partwire.schema.part import (
    CompactionPart,
    FilePart,
    Part,
    ReasoningPart,
    RetryPart,
    TextPart,
    ToolPart,
    part_finished,
)
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending

DURABLE_SOURCES = ("message.updated", "message.part.updated")
LIVE_SOURCES = (*DURABLE_SOURCES, "message.part.delta")
PROVIDER: JSONObject = {"executed": False}

# one made event: its kind (after ``session.next.``), its time and its data
Made = tuple[str, int, Mapping[str, JSON]]


@dataclass
class _Seen:
    messages: dict[str, str] = field(default_factory=dict)  # id → role
    ended: set[str] = field(default_factory=set)  # assistant messages done
    prompted: set[str] = field(default_factory=set)
    compactions: dict[str, str] = field(default_factory=dict)  # user message id → reason
    parts: set[str] = field(default_factory=set)  # text/reasoning begun
    closed: set[str] = field(default_factory=set)  # text/reasoning ended, retries seen
    calls: dict[str, str] = field(default_factory=dict)  # call id → last status


def seq_of(made: JSONObject) -> int:
    """A durable event's place in its session's sequence (0 for a live delta)."""
    durable = made.get("durable")
    seq = durable.get("seq") if isinstance(durable, Mapping) else None
    return seq if isinstance(seq, int) else 0


class DurableEvents:
    """One session's events → opencode v2's durable session events."""

    def __init__(self, session_id: str, directory: str, *, live: bool = False) -> None:
        """``live`` adds the deltas (text, reasoning, a call's arguments): not durable, so
        without a ``durable`` field and a ``seq``; the live ``/api/event`` wants them."""
        self.session_id = session_id
        self.location = {"directory": directory}
        self.live = live
        self.seq = 0
        self._seen = _Seen()
        self._user_parts: dict[str, list[Part]] = {}
        self._kinds: dict[str, str] = {}  # text/reasoning part id → which
        self._raw = SentText()  # a pending call's arguments so far

    def copy(self) -> DurableEvents:
        """A projection at the same point that folds on apart from this one (the parts it
        keeps are shared: they are never changed, only replaced)."""
        twin = DurableEvents(self.session_id, self.location["directory"], live=self.live)
        seen = self._seen
        twin.seq = self.seq
        twin._seen = _Seen(
            dict(seen.messages),
            set(seen.ended),
            set(seen.prompted),
            dict(seen.compactions),
            set(seen.parts),
            set(seen.closed),
            dict(seen.calls),
        )
        twin._user_parts = {key: list(parts) for key, parts in self._user_parts.items()}
        twin._kinds = dict(self._kinds)
        twin._raw = self._raw.copy()
        return twin

    def durable(self, event: Event) -> list[JSONObject]:
        if event.session_id != self.session_id:
            return []
        made: list[Made] = []
        match event.properties:
            case PartDeltaProps() as delta if self.live:
                made = self._delta(delta)
            case PartUpdatedProps() as updated:
                made = self._part(updated)
            case MessageInfo() as message:
                made = self._message(message)
        return [self._wrap(event, n, made_one) for n, made_one in enumerate(made)]

    def _wrap(self, event: Event, n: int, made: Made) -> JSONObject:
        kind, stamp, data = made
        wrapped: JSONObject = {
            "id": f"{event.id}.{n}" if n else event.id,
            "type": f"session.next.{kind}",
        }
        if not kind.endswith(".delta"):
            self.seq += 1
            wrapped["durable"] = {"aggregateID": self.session_id, "seq": self.seq, "version": 1}
        wrapped["location"] = self.location
        wrapped["data"] = {"timestamp": stamp, "sessionID": self.session_id, **data}
        return wrapped

    def _delta(self, props: PartDeltaProps) -> list[Made]:
        kind = self._kinds.get(props.part_id)
        if kind is None or props.field != "text" or props.part_id in self._seen.closed:
            return []
        key = "textID" if kind == "text" else "reasoningID"
        data: JSONObject = {
            "assistantMessageID": props.message_id,
            key: props.part_id,
            "delta": props.delta,
        }
        return [(f"{kind}.delta", now_ms(), data)]

    # ---- messages ----------------------------------------------------------------------

    def _message(self, props: MessageInfo) -> list[Made]:
        info = props.info
        seen = self._seen
        if isinstance(info, UserMessage):
            seen.messages.setdefault(info.id, "user")
            return []
        assert isinstance(info, AssistantMessage)
        out: list[Made] = []
        if info.id not in seen.messages:
            seen.messages[info.id] = "assistant"
            if not info.summary:
                model = {"id": info.model_id, "providerID": info.provider_id}
                data: JSONObject = {"assistantMessageID": info.id, "agent": info.agent}
                data["model"] = model
                out.append(("step.started", info.time.created, data))
        if info.time.completed is None or info.id in seen.ended:
            return out
        seen.ended.add(info.id)
        stamp = info.time.completed
        if info.summary and info.parent_id in seen.compactions:
            return [*out, self._compacted(info, stamp)]
        if info.error is not None and info.error.name != "MessageOutputLengthError":
            error = {"type": "unknown", "message": error_text(info.error)}
            out.append(("step.failed", stamp, {"assistantMessageID": info.id, "error": error}))
        else:
            ended: JSONObject = {
                "assistantMessageID": info.id,
                "finish": info.finish or "unknown",
                "cost": info.cost,
                "tokens": tokens_v2(info.tokens),
            }
            out.append(("step.ended", stamp, ended))
        return out

    def _compacted(self, info: AssistantMessage, stamp: int) -> Made:
        summary = self._user_parts.get(info.id, [])
        text = "\n".join(p.text for p in summary if isinstance(p, TextPart))
        reason = self._seen.compactions[info.parent_id]
        data = {"messageID": info.parent_id, "reason": reason, "text": text, "recent": ""}
        return "compaction.ended", stamp, data

    # ---- parts -------------------------------------------------------------------------

    def _part(self, props: PartUpdatedProps) -> list[Made]:
        part = props.part
        role = self._seen.messages.get(part.message_id)
        if role == "user":
            return self._user_part(part, props.time)
        if role != "assistant":
            return []
        self._user_parts.setdefault(part.message_id, [])
        if isinstance(part, TextPart):
            self._keep(part)
        if isinstance(part, TextPart | ReasoningPart):
            return self._streamed(part, props.time)
        if isinstance(part, ToolPart):
            return self._tool(part, props.time)
        if isinstance(part, RetryPart) and part.id not in self._seen.closed:
            self._seen.closed.add(part.id)
            error: JSONObject = {
                "message": part.error.data.message,
                "isRetryable": part.error.data.is_retryable,
            }
            return [("retried", props.time, {"attempt": part.attempt, "error": error})]
        return []

    def _keep(self, part: TextPart) -> None:
        kept = self._user_parts[part.message_id]
        self._user_parts[part.message_id] = [p for p in kept if p.id != part.id] + [part]

    def _user_part(self, part: Part, stamp: int) -> list[Made]:
        seen = self._seen
        message_id = part.message_id
        if isinstance(part, CompactionPart) and message_id not in seen.compactions:
            seen.compactions[message_id] = "auto" if part.auto else "manual"
            seen.prompted.add(message_id)
            data = {"messageID": message_id, "reason": seen.compactions[message_id]}
            return [("compaction.started", stamp, data)]
        kept = self._user_parts.setdefault(message_id, [])
        kept.append(part)
        if not isinstance(part, TextPart) or message_id in seen.prompted:
            return []
        seen.prompted.add(message_id)
        if part.synthetic:
            return [("synthetic", stamp, {"messageID": message_id, "text": part.text})]
        files: list[JSONObject] = [
            {"uri": p.url, "mime": p.mime, **({"name": p.filename} if p.filename else {})}
            for p in kept
            if isinstance(p, FilePart)
        ]
        prompt: JSONObject = {"text": part.text}
        if files:
            prompt["files"] = files
        return [
            ("prompted", stamp, {"messageID": message_id, "prompt": prompt, "delivery": "steer"})
        ]

    def _streamed(self, part: TextPart | ReasoningPart, stamp: int) -> list[Made]:
        kind = "text" if isinstance(part, TextPart) else "reasoning"
        key = "textID" if kind == "text" else "reasoningID"
        base: JSONObject = {"assistantMessageID": part.message_id, key: part.id}
        out: list[Made] = []
        if part.id not in self._seen.parts:
            self._seen.parts.add(part.id)
            self._kinds[part.id] = kind
            out.append((f"{kind}.started", stamp, base))
        if part_finished(part) and part.id not in self._seen.closed:
            self._seen.closed.add(part.id)
            out.append((f"{kind}.ended", stamp, {**base, "text": part.text}))
        return out

    def _input_delta(self, part: ToolPart, raw: str, stamp: int) -> list[Made]:
        grown = self._raw.catch_up(part.call_id, raw)
        if not grown:
            return []
        data = {"assistantMessageID": part.message_id, "callID": part.call_id, "delta": grown}
        return [("tool.input.delta", stamp, data)]

    def _tool(self, part: ToolPart, stamp: int) -> list[Made]:
        state = part.state
        before = self._seen.calls.get(part.call_id)
        if isinstance(state, ToolStatePending) and before == "pending" and self.live:
            return self._input_delta(part, state.raw, stamp)
        if before == state.status or before in ("completed", "error"):
            return []
        self._seen.calls[part.call_id] = state.status
        base: JSONObject = {"assistantMessageID": part.message_id, "callID": part.call_id}
        out: list[Made] = []
        if before is None:
            out.append(("tool.input.started", stamp, {**base, "name": part.tool}))
        if isinstance(state, ToolStatePending):
            return out + (self._input_delta(part, state.raw, stamp) if self.live else [])
        if before in (None, "pending"):
            raw = json.dumps(state.input)
            out.append(("tool.input.ended", stamp, {**base, "text": raw}))
            called = {**base, "tool": part.tool, "input": state.input, "provider": PROVIDER}
            out.append(("tool.called", stamp, called))
        if isinstance(state, ToolStateCompleted):
            content = [{"type": "text", "text": state.output}]
            success = {**base, "structured": state.metadata, "content": content}
            out.append(("tool.success", stamp, {**success, "provider": PROVIDER}))
        elif isinstance(state, ToolStateError):
            error = {"type": "unknown", "message": state.error}
            out.append(("tool.failed", stamp, {**base, "error": error, "provider": PROVIDER}))
        return out
