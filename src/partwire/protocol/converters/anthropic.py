"""Anthropic Messages stream events (message_start … message_stop) → ingest events.

Each message of the stream is one step: ``message_start`` begins it and ``message_stop``
finishes it with the usage and stop reason that ``message_delta`` reported. Text,
thinking and tool_use blocks become text, reasoning and tool-call events; a tool_use
block's input streams as argument deltas and is complete at its ``content_block_stop``. A
server tool (``server_tool_use``: web search, code execution) is a call whose result
block (``…_tool_result``) follows in the same message. Usage follows Anthropic's
definitions: ``input_tokens`` leave out cache reads and writes, which are their own fields,
and the total is all four.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from partwire.protocol.jsonread import JSONMap, as_map, int_of, map_of, text_of
from partwire.schema import ingest
from partwire.schema.base import Tokens
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
    "refusal": "content-filter",
    "pause_turn": "other",
}


@dataclass
class _ToolBlock:
    call_id: str
    name: str
    args: list[str] = field(default_factory=list)


class AnthropicConverter:
    def __init__(self, *, announce_model: bool = True) -> None:
        # the first message names the model (a start event), unless a caller does
        self._announce = announce_model
        self._tools: dict[int, _ToolBlock] = {}
        self._usage: dict[str, int] = {}
        self._stop: str | None = None
        self._open_step = False

    def feed(self, item: object) -> list[IngestEvent]:
        event = as_map(item)  # a decoded JSON line, or an SDK event object
        kind = event.get("type")
        index = int_of(event, "index")
        if kind == "message_start":
            return self._message_start(map_of(event, "message"))
        if kind == "content_block_start":
            return self._block_start(index, map_of(event, "content_block"))
        if kind == "content_block_delta":
            return self._block_delta(index, map_of(event, "delta"))
        if kind == "content_block_stop":
            return self._block_stop(index)
        if kind == "message_delta":
            self._stop = text_of(map_of(event, "delta"), "stop_reason") or self._stop
            self._usage.update(_ints(map_of(event, "usage")))
            return []
        if kind == "message_stop":
            return self._finish_step()
        if kind == "error":
            error = event.get("error")
            message = text_of(error, "message") if isinstance(error, Mapping) else str(error or "")
            self._tools.clear()  # the message ends with the error: nothing is left open
            self._open_step = False
            return [ingest.StreamError(message=message or "error")]
        return []

    def end(self) -> list[IngestEvent]:
        out: list[IngestEvent] = []
        for index in list(self._tools):
            out += self._block_stop(index)
        return out + (self._finish_step() if self._open_step else [])

    def _message_start(self, message: JSONMap) -> list[IngestEvent]:
        out = self._finish_step() if self._open_step else []
        if self._announce and (model := text_of(message, "model")):
            self._announce = False
            out.append(ingest.IngestStart(model=ModelRef(provider_id="anthropic", model_id=model)))
        self._open_step = True
        self._usage = _ints(map_of(message, "usage"))
        self._stop = None
        return [*out, ingest.StepStart()]

    def _block_start(self, index: int, block: JSONMap) -> list[IngestEvent]:
        out = [] if self._open_step else self._message_start({})
        kind = block.get("type")
        if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            tool = self._tools[index] = _ToolBlock(str(block.get("id")), str(block.get("name")))
            out.append(ingest.ToolCallStart(call_id=tool.call_id, tool=tool.name))
            if block.get("input"):
                tool.args.append(json.dumps(block["input"]))
        elif isinstance(kind, str) and kind.endswith("_tool_result") and block.get("tool_use_id"):
            out.append(_server_result(block))  # a server tool (web search…) ran: its result
        elif kind == "text" and (text := text_of(block, "text")):
            out.append(ingest.TextDelta(delta=text))
        elif kind == "thinking" and (thinking := text_of(block, "thinking")):
            out.append(ingest.ReasoningDelta(delta=thinking))
        return out

    def _block_delta(self, index: int, delta: JSONMap) -> list[IngestEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            return [ingest.TextDelta(delta=text_of(delta, "text"))]
        if kind == "thinking_delta":
            return [ingest.ReasoningDelta(delta=text_of(delta, "thinking"))]
        tool = self._tools.get(index)
        if kind == "input_json_delta" and tool is not None:
            chunk = text_of(delta, "partial_json")
            tool.args.append(chunk)
            return [ingest.ToolArgsDelta(call_id=tool.call_id, delta=chunk)] if chunk else []
        return []

    def _block_stop(self, index: int) -> list[IngestEvent]:
        tool = self._tools.pop(index, None)
        if tool is None:
            return []
        args = "".join(tool.args) or "{}"
        return [ingest.ToolCall(call_id=tool.call_id, tool=tool.name, input=args)]

    def _finish_step(self) -> list[IngestEvent]:
        self._open_step = False
        usage = self._usage
        cache = Tokens.Cache(
            read=usage.get("cache_read_input_tokens", 0),
            write=usage.get("cache_creation_input_tokens", 0),
        )
        # Anthropic's input_tokens leave out the cached ones: each is counted once, in its field
        tokens = Tokens(
            total=usage.get("input_tokens", 0)
            + usage.get("output_tokens", 0)
            + cache.read
            + cache.write,
            input=usage.get("input_tokens", 0),
            output=usage.get("output_tokens", 0),
            cache=cache,
        )
        reason = STOP_REASONS.get(self._stop or "end_turn", "other")
        return [ingest.StepFinish(tokens=tokens, reason=reason)]


def _ints(raw: JSONMap) -> dict[str, int]:
    return {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}


def _server_result(block: JSONMap) -> IngestEvent:
    """A server tool's result block (``web_search_tool_result`` and the like)."""
    content = block.get("content")
    failed = isinstance(content, Mapping) and str(content.get("type", "")).endswith("_error")
    output = content if isinstance(content, str) else json.dumps(content)
    return ingest.ToolResult(call_id=str(block.get("tool_use_id")), output=output, is_error=failed)
