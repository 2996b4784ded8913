"""partwire's provider stream events (providers/stream.py) → ingest events.

This is the converter partwire's own model calls would go through; the OpenAI Chat
Completions converter decodes chunks with the provider decoder and then uses it.
"""

from __future__ import annotations

from partwire.providers import stream as provider
from partwire.schema import ingest
from partwire.schema.ingest import IngestEvent


class StreamEventConverter:
    def feed(self, item: provider.StreamEvent) -> list[IngestEvent]:
        match item:
            case provider.StartStep():
                return [ingest.StepStart()]
            case provider.TextDelta(delta=delta):
                return [ingest.TextDelta(delta=delta)]
            case provider.ReasoningDelta(delta=delta):
                return [ingest.ReasoningDelta(delta=delta)]
            case provider.ToolInputStart(id=call_id, tool_name=name):
                return [ingest.ToolCallStart(call_id=call_id, tool=name)]
            case provider.ToolInputDelta(id=call_id, delta=delta):
                return [ingest.ToolArgsDelta(call_id=call_id, delta=delta)]
            case provider.ToolCall(call_id=call_id, tool_name=name, input=raw):
                return [ingest.ToolCall(call_id=call_id, tool=name, input=raw or "{}")]
            case provider.FinishStep(finish_reason=reason, usage=usage):
                return [ingest.StepFinish(tokens=usage.tokens(), reason=reason)]
            case provider.StreamError(message=message):
                return [ingest.StreamError(message=message)]
        return []

    def end(self) -> list[IngestEvent]:
        return []
