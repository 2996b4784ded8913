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
from dataclasses import dataclass, field
from typing import Any

from partwire.clock import now_ms
from partwire.protocol.v2messages import tokens_v2
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
)
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending

DURABLE_SOURCES = ("message.updated", "message.part.updated")
LIVE_SOURCES = (*DURABLE_SOURCES, "message.part.delta")
PROVIDER = {"executed": False}


@dataclass
class _Seen:
    messages: dict[str, str] = field(default_factory=dict)  # id → role
    ended: set[str] = field(default_factory=set)  # assistant messages done
    prompted: set[str] = field(default_factory=set)
    compactions: dict[str, str] = field(default_factory=dict)  # user message id → reason
    parts: set[str] = field(default_factory=set)  # text/reasoning begun
    closed: set[str] = field(default_factory=set)  # text/reasoning ended, retries seen
    calls: dict[str, str] = field(default_factory=dict)  # call id → last status


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
        self._raw: dict[str, str] = {}  # a pending call's arguments so far

    def durable(self, event: Event) -> list[dict[str, Any]]:
        props: Any = event.properties
        if getattr(props, "session_id", None) != self.session_id:
            return []
        made: list[tuple[str, dict[str, Any]]] = []
        if isinstance(props, MessageInfo):
            made = self._message(props)
        elif isinstance(props, PartUpdatedProps):
            made = self._part(props)
        elif isinstance(props, PartDeltaProps) and self.live:
            made = self._delta(props)
        return [self._wrap(event, n, kind, data) for n, (kind, data) in enumerate(made)]

    def _wrap(self, event: Event, n: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        stamp = int(data.pop("_time", 0))
        wrapped: dict[str, Any] = {
            "id": f"{event.id}.{n}" if n else event.id,
            "type": f"session.next.{kind}",
        }
        if not kind.endswith(".delta"):
            self.seq += 1
            wrapped["durable"] = {"aggregateID": self.session_id, "seq": self.seq, "version": 1}
        wrapped["location"] = self.location
        wrapped["data"] = {"timestamp": stamp, "sessionID": self.session_id, **data}
        return wrapped

    def _delta(self, props: PartDeltaProps) -> list[tuple[str, dict[str, Any]]]:
        kind = self._kinds.get(props.part_id)
        if kind is None or props.field != "text" or props.part_id in self._seen.closed:
            return []
        key = "textID" if kind == "text" else "reasoningID"
        data = {"assistantMessageID": props.message_id, key: props.part_id, "delta": props.delta}
        return [(f"{kind}.delta", {**data, "_time": now_ms()})]

    # ---- messages ----------------------------------------------------------------------

    def _message(self, props: MessageInfo) -> list[tuple[str, dict[str, Any]]]:
        info = props.info
        seen = self._seen
        if isinstance(info, UserMessage):
            seen.messages.setdefault(info.id, "user")
            return []
        assert isinstance(info, AssistantMessage)
        out: list[tuple[str, dict[str, Any]]] = []
        if info.id not in seen.messages:
            seen.messages[info.id] = "assistant"
            if not info.summary:
                model = {"id": info.model_id, "providerID": info.provider_id}
                data = {"assistantMessageID": info.id, "agent": info.agent, "model": model}
                out.append(("step.started", {**data, "_time": info.time.created}))
        if info.time.completed is None or info.id in seen.ended:
            return out
        seen.ended.add(info.id)
        stamp = info.time.completed
        if info.summary and info.parent_id in seen.compactions:
            return [*out, self._compacted(info, stamp)]
        if info.error is not None and info.error.name != "MessageOutputLengthError":
            error = {
                "type": "unknown",
                "message": error_text(info.error) if info.error is not None else "",
            }
            out.append(("step.failed", {"assistantMessageID": info.id, "error": error,
                                        "_time": stamp}))  # fmt: skip
        else:
            ended: dict[str, Any] = {
                "assistantMessageID": info.id,
                "finish": info.finish or "unknown",
                "cost": info.cost,
                "tokens": tokens_v2(info.tokens),
                "_time": stamp,
            }
            out.append(("step.ended", ended))
        return out

    def _compacted(self, info: AssistantMessage, stamp: int) -> tuple[str, dict[str, Any]]:
        summary = self._user_parts.get(info.id, [])
        text = "\n".join(p.text for p in summary if isinstance(p, TextPart))
        reason = self._seen.compactions[info.parent_id]
        data = {"messageID": info.parent_id, "reason": reason, "text": text, "recent": ""}
        return "compaction.ended", {**data, "_time": stamp}

    # ---- parts -------------------------------------------------------------------------

    def _part(self, props: PartUpdatedProps) -> list[tuple[str, dict[str, Any]]]:
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
            error = {
                "message": part.error.data.message,
                "isRetryable": part.error.data.is_retryable,
            }
            return [("retried", {"attempt": part.attempt, "error": error, "_time": props.time})]
        return []

    def _keep(self, part: TextPart) -> None:
        kept = self._user_parts[part.message_id]
        self._user_parts[part.message_id] = [p for p in kept if p.id != part.id] + [part]

    def _user_part(self, part: Part, stamp: int) -> list[tuple[str, dict[str, Any]]]:
        seen = self._seen
        message_id = part.message_id
        if isinstance(part, CompactionPart) and message_id not in seen.compactions:
            seen.compactions[message_id] = "auto" if part.auto else "manual"
            seen.prompted.add(message_id)
            data = {"messageID": message_id, "reason": seen.compactions[message_id]}
            return [("compaction.started", {**data, "_time": stamp})]
        kept = self._user_parts.setdefault(message_id, [])
        kept.append(part)
        if not isinstance(part, TextPart) or message_id in seen.prompted:
            return []
        seen.prompted.add(message_id)
        if part.synthetic:
            synthetic: dict[str, Any] = {"messageID": message_id, "text": part.text}
            return [("synthetic", {**synthetic, "_time": stamp})]
        files = [
            {"uri": p.url, "mime": p.mime, **({"name": p.filename} if p.filename else {})}
            for p in kept
            if isinstance(p, FilePart)
        ]
        prompt: dict[str, Any] = {"text": part.text}
        if files:
            prompt["files"] = files
        prompted: dict[str, Any] = {"messageID": message_id, "prompt": prompt}
        return [("prompted", {**prompted, "delivery": "steer", "_time": stamp})]

    def _streamed(
        self, part: TextPart | ReasoningPart, stamp: int
    ) -> list[tuple[str, dict[str, Any]]]:
        kind = "text" if isinstance(part, TextPart) else "reasoning"
        key = "textID" if kind == "text" else "reasoningID"
        base = {"assistantMessageID": part.message_id, key: part.id, "_time": stamp}
        out: list[tuple[str, dict[str, Any]]] = []
        if part.id not in self._seen.parts:
            self._seen.parts.add(part.id)
            self._kinds[part.id] = kind
            out.append((f"{kind}.started", dict(base)))
        ended = part.time is None or part.time.end is not None
        if ended and part.id not in self._seen.closed:
            self._seen.closed.add(part.id)
            out.append((f"{kind}.ended", {**base, "text": part.text}))
        return out

    def _input_delta(
        self, part: ToolPart, raw: str, stamp: int
    ) -> list[tuple[str, dict[str, Any]]]:
        sent = self._raw.get(part.call_id, "")
        if len(raw) <= len(sent) or not raw.startswith(sent):
            return []
        self._raw[part.call_id] = raw
        data = {"assistantMessageID": part.message_id, "callID": part.call_id}
        return [("tool.input.delta", {**data, "delta": raw[len(sent) :], "_time": stamp})]

    def _tool(self, part: ToolPart, stamp: int) -> list[tuple[str, dict[str, Any]]]:
        state = part.state
        before = self._seen.calls.get(part.call_id)
        if isinstance(state, ToolStatePending) and before == "pending" and self.live:
            return self._input_delta(part, state.raw, stamp)
        if before == state.status or before in ("completed", "error"):
            return []
        self._seen.calls[part.call_id] = state.status
        base = {"assistantMessageID": part.message_id, "callID": part.call_id, "_time": stamp}
        out: list[tuple[str, dict[str, Any]]] = []
        if before is None:
            out.append(("tool.input.started", {**base, "name": part.tool}))
        if isinstance(state, ToolStatePending):
            return out + (self._input_delta(part, state.raw, stamp) if self.live else [])
        if before in (None, "pending"):
            raw = json.dumps(state.input)
            out.append(("tool.input.ended", {**base, "text": raw}))
            called = {**base, "tool": part.tool, "input": state.input, "provider": PROVIDER}
            out.append(("tool.called", called))
        if isinstance(state, ToolStateCompleted):
            content = [{"type": "text", "text": state.output}]
            success = {**base, "structured": state.metadata, "content": content}
            out.append(("tool.success", {**success, "provider": PROVIDER}))
        elif isinstance(state, ToolStateError):
            error = {"type": "unknown", "message": state.error}
            out.append(("tool.failed", {**base, "error": error, "provider": PROVIDER}))
        return out
