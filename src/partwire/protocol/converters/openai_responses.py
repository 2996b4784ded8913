"""OpenAI Responses API stream events (``response.*``) → ingest events.

One response is one step: ``response.created`` begins it; ``response.completed``,
``response.incomplete`` or ``response.failed`` ends it. Function calls stream their
arguments and are complete at their ``response.output_item.done``.
"""

from __future__ import annotations

from partwire.protocol.jsonread import JSONMap, as_map, int_of, map_of, text_of
from partwire.providers.stream import Usage
from partwire.schema import ingest
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef

TEXT = ("response.output_text.delta", "response.refusal.delta")
REASONING = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class OpenAIResponsesConverter:
    def __init__(self) -> None:
        self._named = False  # the first response named its model (a start event)
        self._calls: dict[str, str] = {}  # output item id → call id
        self._done: set[str] = set()
        self._open_step = False
        self._called = False

    def feed(self, item: object) -> list[IngestEvent]:
        item = as_map(item)  # a decoded JSON line, or an SDK event object
        kind = text_of(item, "type")
        opens = kind == "response.created" or kind in TEXT or kind in REASONING
        out = self._step() if opens and not self._open_step else []
        model = text_of(map_of(item, "response"), "model")
        if kind == "response.created" and model and not self._named:
            self._named = True
            named = ModelRef(provider_id="openai", model_id=model)
            out.insert(0, ingest.IngestStart(model=named))
        if kind == "response.output_item.added" and not self._open_step:
            out = self._step()
        delta = text_of(item, "delta")
        if kind in TEXT and delta:
            out.append(ingest.TextDelta(delta=delta))
        elif kind in REASONING and delta:
            out.append(ingest.ReasoningDelta(delta=delta))
        elif kind == "response.output_item.added":
            out += self._call_added(map_of(item, "item"))
        elif kind == "response.function_call_arguments.delta":
            call_id = self._calls.get(str(item.get("item_id")))
            if call_id is not None and delta:
                out.append(ingest.ToolArgsDelta(call_id=call_id, delta=delta))
        elif kind == "response.output_item.done":
            out += self._call_done(map_of(item, "item"))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            out += self._finish(map_of(item, "response"), kind)
        elif kind == "error":
            out.append(ingest.StreamError(message=text_of(item, "message") or "error"))
        return out

    def end(self) -> list[IngestEvent]:
        if not self._open_step:
            return []
        self._open_step = False
        return [ingest.StepFinish(reason="tool-calls" if self._called else "stop")]

    def _step(self) -> list[IngestEvent]:
        self._open_step, self._called = True, False
        return [ingest.StepStart()]

    def _call_added(self, item: JSONMap) -> list[IngestEvent]:
        if item.get("type") != "function_call":
            return []
        call_id = str(item.get("call_id") or item.get("id"))
        self._calls[str(item.get("id", call_id))] = call_id
        self._called = True
        return [ingest.ToolCallStart(call_id=call_id, tool=str(item.get("name")))]

    def _call_done(self, item: JSONMap) -> list[IngestEvent]:
        if item.get("type") != "function_call":
            return []
        call_id = str(item.get("call_id") or item.get("id"))
        out = [] if call_id in self._calls.values() else self._call_added(item)
        self._done.add(call_id)
        args = text_of(item, "arguments") or "{}"
        return [*out, ingest.ToolCall(call_id=call_id, tool=str(item.get("name")), input=args)]

    def _finish(self, response: JSONMap, kind: str) -> list[IngestEvent]:
        out: list[IngestEvent] = []
        if kind == "response.failed":
            message = text_of(map_of(response, "error"), "message")
            out.append(ingest.StreamError(message=message or "response failed"))
        usage = map_of(response, "usage")
        total = usage.get("total_tokens")
        # OpenAI's input counts the cached prompt, its output the reasoning: each once here
        tokens = Usage(
            input=int_of(usage, "input_tokens"),
            output=int_of(usage, "output_tokens"),
            reasoning=int_of(map_of(usage, "output_tokens_details"), "reasoning_tokens"),
            cache_read=int_of(map_of(usage, "input_tokens_details"), "cached_tokens"),
            cache_write=int_of(map_of(usage, "input_tokens_details"), "cache_write_tokens"),
        ).tokens(total if isinstance(total, int) else None)
        reason = "tool-calls" if self._called else "stop"
        incomplete = map_of(response, "incomplete_details").get("reason")
        if kind == "response.incomplete":
            reason = "length" if incomplete == "max_output_tokens" else "content-filter"
        self._open_step = False
        if kind == "response.failed":
            return out
        return [*out, ingest.StepFinish(tokens=tokens, reason=reason)]
