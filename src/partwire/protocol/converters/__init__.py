"""Converters in: another runtime's stream → ingest events (the builder's calls).

Each converter is pure and keeps only the state its format needs (which block is open,
which tool call an index names). ``feed`` takes one item of the stream (a decoded JSON
line, or an in-process event object) and returns the ingest events it stands for;
``end`` closes what the stream left open. Feed the events to a recording
(``Recording.feed``) or send them to ``POST /session/{id}/ingest``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from partwire.schema.ingest import IngestEvent

if TYPE_CHECKING:
    from partwire.protocol.converters.pydantic_ai import RunMessages


class Converter(Protocol):
    def feed(self, item: object) -> list[IngestEvent]: ...
    def end(self) -> list[IngestEvent]: ...


def formats() -> dict[str, Callable[[], Converter]]:
    """The JSON-line formats ``partwire ingest --from`` reads, by name."""
    from partwire.protocol.converters.anthropic import AnthropicConverter
    from partwire.protocol.converters.claude_code import ClaudeCodeConverter
    from partwire.protocol.converters.frames import FramesConverter
    from partwire.protocol.converters.native import NativeConverter
    from partwire.protocol.converters.openai_chat import OpenAIChatConverter
    from partwire.protocol.converters.openai_responses import OpenAIResponsesConverter
    from partwire.protocol.converters.opencode import OpencodeConverter

    return {
        "partwire": NativeConverter,
        "openai-chat": OpenAIChatConverter,
        "openai-responses": OpenAIResponsesConverter,
        "anthropic": AnthropicConverter,
        "claude-code": ClaudeCodeConverter,
        "opencode": OpencodeConverter,
        "frames": FramesConverter,
    }


def converter(name: str, run: RunMessages | None = None) -> Converter:
    """A new converter for format ``name``: one of :func:`formats`, or ``pydantic-ai``
    (the events of ``agent.run_stream_events()``, in process; ``run`` is the handle it
    yields, which gives each step its usage and the message its model)."""
    if name == "pydantic-ai":
        from partwire.protocol.converters.pydantic_ai import PydanticAIConverter

        return PydanticAIConverter(run)
    if run is not None:
        raise ValueError(f"only the pydantic-ai converter reads a run, not {name!r}")
    made = formats().get(name)
    if made is None:
        known = ", ".join([*formats(), "pydantic-ai"])
        raise ValueError(f"no converter for {name!r}: use one of {known}")
    return made()
