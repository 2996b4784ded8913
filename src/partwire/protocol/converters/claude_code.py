"""Claude Code's ``--output-format stream-json --include-partial-messages`` lines → ingest events.

Lines are the claude-agent-sdk message types. ``stream_event`` lines carry the Anthropic
stream of each model call (converted as such); an ``assistant`` line repeats a message
whole, so it is used only for messages whose stream was not seen (Claude Code run without
partial messages). ``user`` lines carry tool results; a ``result`` line that is an error
ends the message with it. Lines of a sub-agent (``parent_tool_use_id`` set) are skipped:
the sub-agent's work shows as its Task tool call and result.
"""

from __future__ import annotations

from typing import Any

from partwire.protocol.converters.anthropic import AnthropicConverter
from partwire.schema import ingest
from partwire.schema.ingest import IngestEvent


class ClaudeCodeConverter:
    def __init__(self) -> None:
        self._stream = AnthropicConverter()
        self._streamed: set[str] = set()  # message ids whose stream events were seen

    def feed(self, item: object) -> list[IngestEvent]:
        if not isinstance(item, dict) or item.get("parent_tool_use_id"):
            return []
        kind = item.get("type")
        if kind == "stream_event":
            event = item.get("event") or {}
            if event.get("type") == "message_start":
                self._streamed.add(str((event.get("message") or {}).get("id")))
            return self._stream.feed(event)
        if kind == "assistant":
            return self._whole(item.get("message") or {})
        if kind == "user":
            return self._results(item.get("message") or {})
        if kind == "result" and item.get("is_error"):
            detail = item.get("result") or item.get("subtype") or "Claude Code failed"
            return [*self._stream.end(), ingest.StreamError(message=str(detail))]
        return []

    def end(self) -> list[IngestEvent]:
        return self._stream.end()

    def _whole(self, message: dict[str, Any]) -> list[IngestEvent]:
        if str(message.get("id")) in self._streamed:
            return []
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": {"id": message.get("id"), "usage": {}}}
        ]
        for index, block in enumerate(message.get("content") or ()):
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            events.append({"type": "content_block_stop", "index": index})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason")},
                "usage": message.get("usage") or {},
            }
        )
        events.append({"type": "message_stop"})
        out: list[IngestEvent] = []
        for event in events:
            out += self._stream.feed(event)
        return out

    def _results(self, message: dict[str, Any]) -> list[IngestEvent]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        out: list[IngestEvent] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(
                    ingest.ToolResult(
                        call_id=str(block.get("tool_use_id")),
                        output=_text(block.get("content")),
                        is_error=bool(block.get("is_error")),
                    )
                )
        return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "" if content is None else str(content)
