"""OpenAI Responses API stream events (``response.*``) → ingest events.

One response is one step: ``response.created`` begins it; ``response.completed``,
``response.incomplete`` or ``response.failed`` ends it. Function calls stream their
arguments and are complete at their ``response.output_item.done``.
"""

from __future__ import annotations

from typing import Any

from partwire.schema import ingest
from partwire.schema.base import Tokens
from partwire.schema.ingest import IngestEvent

TEXT = ("response.output_text.delta", "response.refusal.delta")
REASONING = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class OpenAIResponsesConverter:
    def __init__(self) -> None:
        self._calls: dict[str, str] = {}  # output item id → call id
        self._done: set[str] = set()
        self._open_step = False
        self._called = False

    def feed(self, item: object) -> list[IngestEvent]:
        if hasattr(item, "model_dump"):  # an SDK event object
            item = item.model_dump(exclude_none=True)
        if not isinstance(item, dict):
            return []
        kind = str(item.get("type", ""))
        opens = kind == "response.created" or kind in TEXT or kind in REASONING
        out = self._step() if opens and not self._open_step else []
        if kind == "response.output_item.added" and not self._open_step:
            out = self._step()
        if kind in TEXT and item.get("delta"):
            out.append(ingest.TextDelta(delta=str(item["delta"])))
        elif kind in REASONING and item.get("delta"):
            out.append(ingest.ReasoningDelta(delta=str(item["delta"])))
        elif kind == "response.output_item.added":
            out += self._call_added(item.get("item") or {})
        elif kind == "response.function_call_arguments.delta":
            call_id = self._calls.get(str(item.get("item_id")))
            if call_id is not None and item.get("delta"):
                out.append(ingest.ToolArgsDelta(call_id=call_id, delta=str(item["delta"])))
        elif kind == "response.output_item.done":
            out += self._call_done(item.get("item") or {})
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            out += self._finish(item.get("response") or {}, kind)
        elif kind == "error":
            out.append(ingest.StreamError(message=str(item.get("message") or "error")))
        return out

    def end(self) -> list[IngestEvent]:
        if not self._open_step:
            return []
        self._open_step = False
        return [ingest.StepFinish(reason="tool-calls" if self._called else "stop")]

    def _step(self) -> list[IngestEvent]:
        self._open_step, self._called = True, False
        return [ingest.StepStart()]

    def _call_added(self, item: dict[str, Any]) -> list[IngestEvent]:
        if item.get("type") != "function_call":
            return []
        call_id = str(item.get("call_id") or item.get("id"))
        self._calls[str(item.get("id", call_id))] = call_id
        self._called = True
        return [ingest.ToolCallStart(call_id=call_id, tool=str(item.get("name")))]

    def _call_done(self, item: dict[str, Any]) -> list[IngestEvent]:
        if item.get("type") != "function_call":
            return []
        call_id = str(item.get("call_id") or item.get("id"))
        out = [] if call_id in self._calls.values() else self._call_added(item)
        self._done.add(call_id)
        args = str(item.get("arguments") or "{}")
        return [*out, ingest.ToolCall(call_id=call_id, tool=str(item.get("name")), input=args)]

    def _finish(self, response: dict[str, Any], kind: str) -> list[IngestEvent]:
        out: list[IngestEvent] = []
        if kind == "response.failed":
            error = response.get("error") or {}
            out.append(ingest.StreamError(message=str(error.get("message") or "response failed")))
        usage = response.get("usage") or {}
        details = usage.get("output_tokens_details") or {}
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
        tokens = Tokens(
            total=usage.get("total_tokens"),
            input=usage.get("input_tokens", 0),
            output=usage.get("output_tokens", 0),
            reasoning=details.get("reasoning_tokens", 0),
            cache=Tokens.Cache(read=cached or 0),
        )
        reason = "tool-calls" if self._called else "stop"
        incomplete = (response.get("incomplete_details") or {}).get("reason")
        if kind == "response.incomplete":
            reason = "length" if incomplete == "max_output_tokens" else "content-filter"
        self._open_step = False
        if kind == "response.failed":
            return out
        return [*out, ingest.StepFinish(tokens=tokens, reason=reason)]
