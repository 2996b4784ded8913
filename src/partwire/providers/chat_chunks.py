"""OpenAI Chat Completions streams decoded straight from the wire, one dict per chunk.

The SDK path builds a pydantic model per chunk and passes it through several async
generator layers before a delta reaches us; that was most of the server's CPU per streamed
token. Here the SSE bytes are split and ``json.loads``-ed, and each ``chat.completion.chunk``
maps onto our normalized stream events directly. The request is built and sent by
``openai_chat``.

What a chunk's ``choices[0].delta`` may carry, and how it maps:

- ``reasoning`` / ``reasoning_content`` (gpt-oss via Ollama and OpenRouter / DeepSeek):
  reasoning deltas;
- ``content``: text deltas; a text that opens with ``<think>`` streams as reasoning up
  to ``</think>`` (models served raw, as pydantic-ai's default profile also splits them);
- ``tool_calls[]``: fragments keyed by ``index``; the first names the call (``id``,
  ``function.name``), later ones append ``function.arguments``. Calls stay open until the
  stream ends, since providers may interleave parallel calls' fragments.

A chunk with ``usage`` carries the token counts; ``finish_reason`` the reason; a chunk
with ``error`` (some gateways report failures mid-stream that way) ends the stream.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from partwire.providers.stream import (
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StreamError,
    StreamEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_REASONING_FIELDS = ("reasoning", "reasoning_content")
_TEXT_ONLY = frozenset(("content", "role", "refusal"))  # a delta with only these: text
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}


# the decoder's C scanner (typeshed does not declare the attribute)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json_value(text: str) -> Any:
    """``json.loads``, in one call into the C scanner for the usual chunk (one value, no
    whitespace around it: what providers send), a third of ``loads``' cost; anything else
    goes through ``loads`` itself, which also gives the error."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


class SseSplitter:
    """Bytes in, the ``data`` of each complete server-sent event out."""

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        if (  # the usual chunk: one whole event of one data line
            not self._pending
            and not self._data
            and chunk.startswith(b"data: ")
            and chunk.find(b"\n") == len(chunk) - 2
            and chunk.endswith(b"\n\n")
        ):
            return [chunk[6:-2]]
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        events: list[bytes] = []
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            # comments (":"), "event:", "id:" and "retry:" lines carry nothing we use
        return events

    def close(self) -> list[bytes]:
        """What a stream that ended without a final blank line still holds."""
        return self.feed(b"\n\n") if self._pending or self._data else []


@dataclass
class _Tool:
    call_id: str
    name: str
    args: list[str] = field(default_factory=list)


@dataclass
class ChunkDecoder:
    """Maps decoded chunks onto stream events; ``finish()`` closes what is still open."""

    provider_name: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    error: StreamError | None = None
    _open: str | None = None  # key of the open text or reasoning part
    _open_kind: str = ""  # "text" | "reasoning" | "think" (reasoning inside <think> tags)
    _parts: int = 0
    _head: str = ""  # the first characters of the text, held until they rule out "<think>"
    _text_seen: bool = False
    _tail: str = ""  # inside <think>: characters that may begin "</think>"
    _after_think: bool = False  # the whitespace that follows "</think>" is not text
    _tools: dict[int, _Tool] = field(default_factory=dict)

    @property
    def called(self) -> bool:
        return bool(self._tools)

    def feed_data(self, data: bytes) -> list[StreamEvent]:
        if data == b"[DONE]":
            return []
        try:
            chunk = _json_value(data.decode())
        except ValueError:  # UnicodeDecodeError too
            self.error = StreamError(f"the provider sent a chunk that is not JSON: {data[:200]!r}")
            return []
        return self.feed(chunk) if isinstance(chunk, dict) else []

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        text = self._more_text(chunk)
        if text is not None:
            return [TextDelta(self._open, text)]  # type: ignore[arg-type]  # open: checked
        if chunk.get("error"):
            self.error = _stream_error(chunk["error"])
            return []
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            for name in _REASONING_FIELDS:
                value = delta.get(name)
                if value and isinstance(value, str):
                    events += self._reasoning(value)
                    break
            content = delta.get("content")
            if content and isinstance(content, str):
                events += self._content(content)
            for fragment in delta.get("tool_calls") or ():
                events += self._tool_fragment(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return events

    def _more_text(self, chunk: dict[str, Any]) -> str | None:
        """The text of a chunk that only carries more of the text part already open (most
        chunks: one per token), else None, and ``feed`` reads the chunk field by field."""
        if self._open_kind != "text" or self._after_think or chunk.get("usage"):
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1 or chunk.get("error"):
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("index", 0) != 0 or choice.get("finish_reason"):
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or not _TEXT_ONLY.issuperset(delta):
            return None
        content = delta.get("content")
        return content if type(content) is str and content else None

    def finish(self) -> list[StreamEvent]:
        events = self._flush_head()
        events += self._close_open()
        for tool in self._tools.values():
            events += [ToolInputEnd(tool.call_id), ToolCall(tool.call_id, tool.name, _args(tool))]
        self._tools = {}
        return events

    def reason(self) -> FinishReason:
        reason = _FINISH.get(self.finish_reason or "stop", "other")
        return "tool-calls" if self.called and reason == "stop" else reason

    # ---- parts ------------------------------------------------------------------------------

    def _switch(self, kind: str) -> list[StreamEvent]:
        """Close the open part unless it is of ``kind``; open one of ``kind`` if none is."""
        if self._open is not None and self._open_kind == kind:
            return []
        events = self._close_open()
        self._parts += 1
        self._open, self._open_kind = f"p{self._parts}", kind
        start: StreamEvent = TextStart(self._open) if kind == "text" else ReasoningStart(self._open)
        return [*events, start]

    def _close_open(self) -> list[StreamEvent]:
        if self._open is None:
            return []
        key, kind = self._open, self._open_kind
        events: list[StreamEvent] = []
        if kind == "think" and self._tail:
            events.append(ReasoningDelta(key, self._tail))
        self._open, self._open_kind, self._tail = None, "", ""
        if kind == "text":
            return [*events, TextEnd(key)]
        return [*events, ReasoningEnd(key, {"provider": self.provider_name})]

    def _reasoning(self, text: str) -> list[StreamEvent]:
        events = self._flush_head()
        events += self._switch("reasoning")
        assert self._open is not None
        return [*events, ReasoningDelta(self._open, text)]

    def _content(self, text: str) -> list[StreamEvent]:
        if self._open_kind == "think":
            return self._think(text)
        if self._after_think:
            text = text.lstrip()
            if not text:
                return []
            self._after_think = False
        if self._text_seen:
            return self._text(text)
        held, self._head = self._head + text, ""
        head = held.lstrip()
        if len(head) < len(THINK_OPEN) and THINK_OPEN.startswith(head):
            self._head = held  # could still become "<think>"
            return []
        if head.startswith(THINK_OPEN):
            self._text_seen = True
            rest = head[len(THINK_OPEN) :]
            return self._switch("think") + (self._think(rest) if rest else [])
        return self._text(held)

    def _text(self, text: str) -> list[StreamEvent]:
        self._text_seen = True
        events = self._switch("text")
        assert self._open is not None
        return [*events, TextDelta(self._open, text)]

    def _think(self, text: str) -> list[StreamEvent]:
        assert self._open is not None
        buffered = self._tail + text
        end = buffered.find(THINK_CLOSE)
        if end >= 0:
            inside, after = buffered[:end], buffered[end + len(THINK_CLOSE) :]
            self._tail = ""
            events: list[StreamEvent] = [ReasoningDelta(self._open, inside)] if inside else []
            events += self._close_open()
            self._after_think = True
            return events + (self._content(after) if after else [])
        keep = _partial_suffix(buffered, THINK_CLOSE)
        self._tail = buffered[len(buffered) - keep :] if keep else ""
        emit = buffered[: len(buffered) - keep]
        return [ReasoningDelta(self._open, emit)] if emit else []

    def _flush_head(self) -> list[StreamEvent]:
        """Text held to rule out ``<think>`` goes out as text once something else comes."""
        if not self._head:
            return []
        text, self._head = self._head, ""
        return self._text(text)

    def _tool_fragment(self, fragment: dict[str, Any]) -> list[StreamEvent]:
        index = fragment.get("index", 0)
        function = fragment.get("function") or {}
        args = function.get("arguments") or ""
        tool = self._tools.get(index)
        events: list[StreamEvent] = []
        if tool is None:
            events = self._flush_head() + self._close_open()
            call_id = fragment.get("id") or f"call_{secrets.token_hex(12)}"
            tool = self._tools[index] = _Tool(call_id, function.get("name") or "")
            events.append(ToolInputStart(call_id, tool.name))
        elif function.get("name") and not tool.name:
            tool.name = function["name"]
        if args and isinstance(args, str):
            tool.args.append(args)
            events.append(ToolInputDelta(tool.call_id, args))
        return events


def _partial_suffix(text: str, marker: str) -> int:
    """How many trailing characters of ``text`` could begin ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


def _args(tool: _Tool) -> str:
    raw = "".join(tool.args)
    return raw if raw.strip() else "{}"


def _usage(raw: dict[str, Any]) -> Usage:
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        input=int(raw.get("prompt_tokens") or 0),
        output=int(raw.get("completion_tokens") or 0),
        reasoning=int(completion_details.get("reasoning_tokens") or 0),
        cache_read=int(prompt_details.get("cached_tokens") or 0),
    )


def _stream_error(raw: Any) -> StreamError:
    if not isinstance(raw, dict):
        return StreamError(f"the provider reported an error mid-stream: {raw}")
    message = str(raw.get("message") or raw)
    code = raw.get("code")
    status = code if isinstance(code, int) else None
    if "context_length" in str(code) or "context_length" in str(raw.get("type")):
        return StreamError(message, status_code=status, kind="context_overflow")
    retryable = status is not None and (status == 429 or status >= 500)
    return StreamError(message, retryable=retryable, status_code=status)
