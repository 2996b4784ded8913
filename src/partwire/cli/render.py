"""Rendering a session's events in the terminal, part by part, as they arrive."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from partwire.schema.base import Tokens
from partwire.schema.event import (
    Event,
    MessageInfo,
    PartDeltaProps,
    PartUpdatedProps,
    SessionStatusProps,
)
from partwire.schema.message import AssistantMessage
from partwire.schema.part import Part, ReasoningPart, TextPart, ToolPart
from partwire.schema.session import StatusRetry

_TOOL_MARKS = {"completed": ("✓", "green"), "error": ("✗", "red")}


class Renderer:
    """Prints one session's assistant output: text streamed, reasoning dimmed, tools one line."""

    def __init__(self, console: Console, session_id: str) -> None:
        self.console = console
        self.session_id = session_id
        self.started = time.monotonic()
        self.assistant_ids: set[str] = set()
        self.parts: dict[str, Part] = {}
        self.tokens = Tokens()
        self.cost = 0.0
        self.model = ""  # provider/model of the last answer
        self.errors: list[str] = []
        self._open_line = False
        self._handlers: dict[str, Callable[[Any], None]] = {
            "message.updated": self._message,
            "message.part.updated": self._part,
            "message.part.delta": self._delta,
            "session.status": self._status,
        }

    def handle(self, event: Event) -> None:
        if event.session_id != self.session_id:
            return
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event.properties)

    def _message(self, props: MessageInfo) -> None:
        info = props.info
        if not isinstance(info, AssistantMessage):
            return
        self.assistant_ids.add(info.id)
        self.model = f"{info.provider_id}/{info.model_id}"
        if info.time.completed is not None:
            self.tokens = self.tokens.plus(info.tokens)
            self.cost += info.cost
            if info.error is not None:
                message = getattr(info.error.data, "message", info.error.name)
                self.errors.append(f"{info.error.name}: {message}")

    def _part(self, props: PartUpdatedProps) -> None:
        part = props.part
        if part.message_id not in self.assistant_ids:
            return
        self.parts[part.id] = part
        if isinstance(part, TextPart | ReasoningPart) and part.time and part.time.end:
            self._end_line()
        if isinstance(part, ToolPart) and part.state.status in _TOOL_MARKS:
            self._tool_line(part)

    def _delta(self, props: PartDeltaProps) -> None:
        part = self.parts.get(props.part_id)
        if part is None:
            return
        style = "dim italic" if isinstance(part, ReasoningPart) else ""
        self.console.print(Text(props.delta, style=style), end="", soft_wrap=True)
        self._open_line = not props.delta.endswith("\n")

    def _status(self, props: SessionStatusProps) -> None:
        status = props.status
        if not isinstance(status, StatusRetry):
            return
        self._end_line()
        wait = max(0.0, (status.next - time.time() * 1000) / 1000)
        self.console.print(
            Text(f"↻ retry {status.attempt} in {wait:.1f}s: {status.message}", style="yellow")
        )

    def _tool_line(self, part: ToolPart) -> None:
        self._end_line()
        mark, color = _TOOL_MARKS[part.state.status]
        state = part.state
        detail = getattr(state, "title", None) or getattr(state, "error", "")
        line = Text.assemble((f"{mark} ", color), (f"{part.tool:<8}", "bold"), " ", str(detail))
        self.console.print(line, soft_wrap=True)

    def _end_line(self) -> None:
        if self._open_line:
            self.console.print()
            self._open_line = False

    def summary(self, interrupted: bool = False) -> None:
        self._end_line()
        for error in self.errors:
            self.console.print(Text(error, style="red"))
        t = self.tokens
        elapsed = time.monotonic() - self.started
        status = "aborted · " if interrupted else ""
        model = f"{self.model} · " if self.model else ""
        self.console.print(
            Text(
                f"{status}{model}tokens in {t.input} · out {t.output} · reasoning {t.reasoning}"
                f" · ${self.cost:.4f} · {elapsed:.1f}s",
                style="dim",
            )
        )
