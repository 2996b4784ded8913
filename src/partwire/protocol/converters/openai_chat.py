"""OpenAI Chat Completions stream chunks (``chat.completion.chunk`` objects) → ingest events.

One converter per model call: the call is one step, begun by its first chunk and finished
at ``end`` with the usage (``stream_options.include_usage``) and finish reason it reported.
"""

from __future__ import annotations

import json

from partwire.protocol.converters.stream_events import StreamEventConverter
from partwire.providers import stream as provider
from partwire.providers.chat_chunks import ChunkDecoder
from partwire.schema import ingest
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef


class OpenAIChatConverter:
    def __init__(self) -> None:
        self._decoder = ChunkDecoder("openai")
        self._events = StreamEventConverter()
        self._started = False

    def feed(self, item: object) -> list[IngestEvent]:
        if hasattr(item, "model_dump"):  # an SDK ChatCompletionChunk
            item = item.model_dump(exclude_none=True)
        if not isinstance(item, dict) or not ("choices" in item or "error" in item):
            return []
        out = self._start(item.get("model"))
        for event in self._decoder.feed(item):
            out += self._events.feed(event)
        if self._decoder.error is not None:
            out.append(ingest.StreamError(message=self._decoder.error.message))
            self._decoder.error = None
        return out

    def end(self) -> list[IngestEvent]:
        out = self._start()
        for event in self._decoder.finish():
            if isinstance(event, provider.ToolCall) and not _whole_json(event.input):
                continue  # cut off mid-arguments: the call stays unmade, and ends in error
            out += self._events.feed(event)
        finished = provider.FinishStep(self._decoder.reason(), self._decoder.usage)
        return out + self._events.feed(finished)

    def _start(self, model: object = None) -> list[IngestEvent]:
        if self._started:
            return []
        self._started = True
        if isinstance(model, str) and model:  # the first chunk names the model
            named = ModelRef(provider_id="openai", model_id=model)
            return [ingest.IngestStart(model=named), ingest.StepStart()]
        return [ingest.StepStart()]


def _whole_json(raw: str | None) -> bool:
    try:
        json.loads(raw or "{}")
    except ValueError:
        return False
    return True
