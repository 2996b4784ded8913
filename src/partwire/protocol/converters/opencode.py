"""opencode's ``/event`` stream → ingest events, so a partwire server can mirror an
opencode session. Each message of the mirrored session begins with a ``start`` event
(role, model): a caller sends each message as its own ingest stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partwire.schema import ingest
from partwire.schema.base import Tokens
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef


@dataclass
class _Streamed:
    kind: str  # "text" | "reasoning"
    sent: int = 0  # characters already sent as deltas


class OpencodeConverter:
    """Follows one opencode session: ``session_id``, or the first one with a message."""

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        self._messages: set[str] = set()
        self._current: str | None = None
        self._streams: dict[str, _Streamed] = {}
        self._tools: dict[str, str] = {}  # call id → status sent

    def feed(self, item: Any) -> list[IngestEvent]:
        if not isinstance(item, dict):
            return []
        if "payload" in item and "type" not in item:  # /global/event wraps each event
            item = item["payload"]
        props = item.get("properties") or {}
        kind = item.get("type")
        if kind == "message.updated":
            return self._message(props.get("info") or {})
        if kind == "message.part.updated":
            return self._part(props.get("part") or {})
        if kind == "message.part.delta":
            return self._delta(props)
        return []

    def end(self) -> list[IngestEvent]:
        return []

    def _ours(self, session_id: Any, message_id: Any) -> bool:
        if self.session_id is None:
            self.session_id = str(session_id)
        return bool(session_id == self.session_id and message_id == self._current)

    def _message(self, info: dict[str, Any]) -> list[IngestEvent]:
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
            if role == "assistant" and info.get("providerID") and info.get("modelID"):
                model = ModelRef(provider_id=info["providerID"], model_id=info["modelID"])
            out.append(ingest.IngestStart(role=role, model=model))
        error = info.get("error")
        if message_id == self._current and error and (info.get("time") or {}).get("completed"):
            message = (error.get("data") or {}).get("message") or error.get("name") or "error"
            out.append(ingest.StreamError(message=str(message)))
        return out

    def _part(self, part: dict[str, Any]) -> list[IngestEvent]:
        if not self._ours(part.get("sessionID"), part.get("messageID")):
            return []
        kind = part.get("type")
        if kind in ("text", "reasoning"):
            return self._text_part(str(part.get("id")), kind, str(part.get("text", "")))
        if kind == "tool":
            return self._tool(part)
        if kind == "step-start":
            return [ingest.StepStart()]
        if kind == "step-finish":
            tokens = Tokens.model_validate(part.get("tokens") or {})
            reason = str(part.get("reason") or "stop")
            return [ingest.StepFinish(tokens=tokens, cost=part.get("cost") or 0, reason=reason)]
        if kind == "file":
            return [
                ingest.FileAdded(
                    mime=str(part.get("mime")),
                    url=str(part.get("url")),
                    filename=part.get("filename"),
                )
            ]
        return []

    def _text_part(self, part_id: str, kind: str, text: str) -> list[IngestEvent]:
        stream = self._streams.setdefault(part_id, _Streamed(kind))
        missing = text[stream.sent :]  # text that came whole rather than as deltas
        stream.sent = max(stream.sent, len(text))
        return [self._piece(kind, missing)] if missing else []

    def _delta(self, props: dict[str, Any]) -> list[IngestEvent]:
        if not self._ours(props.get("sessionID"), props.get("messageID")):
            return []
        stream = self._streams.get(str(props.get("partID")))
        if stream is None or props.get("field", "text") != "text":
            return []
        delta = str(props.get("delta", ""))
        stream.sent += len(delta)
        return [self._piece(stream.kind, delta)] if delta else []

    @staticmethod
    def _piece(kind: str, text: str) -> IngestEvent:
        return ingest.TextDelta(delta=text) if kind == "text" else ingest.ReasoningDelta(delta=text)

    def _tool(self, part: dict[str, Any]) -> list[IngestEvent]:
        call_id, name = str(part.get("callID")), str(part.get("tool"))
        state = part.get("state") or {}
        status = state.get("status")
        sent = self._tools.get(call_id)
        out: list[IngestEvent] = []
        if sent is None:
            out.append(ingest.ToolCallStart(call_id=call_id, tool=name))
            self._tools[call_id] = sent = "pending"
        if status in ("running", "completed", "error") and sent == "pending":
            out.append(ingest.ToolCall(call_id=call_id, tool=name, input=state.get("input") or {}))
            self._tools[call_id] = sent = "running"
        if status in ("completed", "error") and sent == "running":
            failed = status == "error"
            output = state.get("error") if failed else state.get("output")
            out.append(
                ingest.ToolResult(
                    call_id=call_id,
                    output=output or "",
                    is_error=failed,
                    title=None if failed else state.get("title"),
                    metadata=state.get("metadata") or None,
                )
            )
            self._tools[call_id] = "done"
        return out
