"""Claude Code's ``--output-format stream-json --include-partial-messages`` lines → ingest events.

Lines are the claude-agent-sdk message types. ``stream_event`` lines carry the Anthropic
stream of each model call (converted as such); an ``assistant`` line repeats a message
whole, so it is used only for messages whose stream was not seen (Claude Code run without
partial messages). ``user`` lines carry tool results; a ``result`` line that is an error
ends the message with it. Lines of a sub-agent (``parent_tool_use_id`` set) are skipped:
the sub-agent's work shows as its Task tool call and result.
"""

from __future__ import annotations

from collections.abc import Mapping

from partwire.protocol.converters.anthropic import AnthropicConverter
from partwire.protocol.jsonread import JSONMap, as_map, list_of, map_of, text_of
from partwire.schema import ingest
from partwire.schema.base import JSON
from partwire.schema.ingest import IngestEvent


class ClaudeCodeConverter:
    def __init__(self) -> None:
        self._stream = AnthropicConverter()
        self._streamed: set[str] = set()  # message ids whose stream events were seen

    def feed(self, item: object) -> list[IngestEvent]:
        line = as_map(item)
        if line.get("parent_tool_use_id"):
            return []
        kind = line.get("type")
        if kind == "stream_event":
            event = map_of(line, "event")
            if event.get("type") == "message_start":
                self._streamed.add(str(map_of(event, "message").get("id")))
            return self._stream.feed(event)
        if kind == "assistant":
            return self._whole(map_of(line, "message"))
        if kind == "user":
            return self._results(map_of(line, "message"))
        if kind == "result" and line.get("is_error"):
            detail = text_of(line, "result") or text_of(line, "subtype") or "Claude Code failed"
            return [*self._stream.end(), ingest.StreamError(message=detail)]
        return []

    def end(self) -> list[IngestEvent]:
        return self._stream.end()

    def _whole(self, message: JSONMap) -> list[IngestEvent]:
        if str(message.get("id")) in self._streamed:
            return []
        events: list[JSONMap] = [
            {"type": "message_start", "message": {"id": message.get("id"), "usage": {}}}
        ]
        for index, block in enumerate(list_of(message, "content")):
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            events.append({"type": "content_block_stop", "index": index})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason")},
                "usage": map_of(message, "usage"),
            }
        )
        events.append({"type": "message_stop"})
        out: list[IngestEvent] = []
        for event in events:
            out += self._stream.feed(event)
        return out

    def _results(self, message: JSONMap) -> list[IngestEvent]:
        out: list[IngestEvent] = []
        for block in list_of(message, "content"):
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                out.append(
                    ingest.ToolResult(
                        call_id=str(block.get("tool_use_id")),
                        output=_text(block.get("content")),
                        is_error=bool(block.get("is_error")),
                    )
                )
        return out


def _text(content: JSON) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(block, "text") for block in content if isinstance(block, Mapping))
    return "" if content is None else str(content)
