"""Rendering a session's events in the terminal, part by part, as they arrive.

Standard output holds only the answer: markdown rendered on a terminal, the model's own
text when piped. Everything else (reasoning, tool lines, retries, the summary) goes to
standard error, with a spinner and live tool output when that is a terminal."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from partwire.clock import now_ms
from partwire.schema.base import Tokens
from partwire.schema.event import (
    AskAnsweredProps,
    Event,
    MessageInfo,
    PartDeltaProps,
    PartUpdatedProps,
    SessionErrorProps,
    SessionInfo,
    SessionPresenceProps,
    SessionStatusProps,
)
from partwire.schema.message import AssistantMessage
from partwire.schema.part import Part, ReasoningPart, RetryPart, TextPart, ToolPart
from partwire.schema.session import StatusRetry

_TOOL_MARKS = {"completed": ("✓", "green"), "error": ("✗", "red")}
TAIL_LINES = 6  # lines of a running tool's output kept on screen


def split_complete_markdown(text: str) -> tuple[str, str]:
    """(blocks that are finished, the block still growing): a block ends at a blank
    line outside a code fence, so finished blocks can be printed once and for all."""
    cut = 0
    fenced = False
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.strip() and line.endswith("\n"):
            cut = position
    return text[:cut], text[cut:]


class LiveSlot:
    """At most one live region on the terminal at a time (two would overwrite each
    other), keyed by what it shows."""

    def __init__(self) -> None:
        self.key: object = None
        self._live: Live | None = None

    def show(self, key: object, console: Console, renderable: Any, *, transient: bool) -> None:
        if self._live is not None and self.key == key:
            self._live.update(renderable)
            return
        self.stop()
        self._live = Live(renderable, console=console, transient=transient, refresh_per_second=8)
        self._live.start()
        self.key = key

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
        self._live = None
        self.key = None


class _Waiting:
    """A spinner with the seconds waited so far, worked out at each refresh."""

    def __init__(self, label: str) -> None:
        self.since = time.monotonic()
        self.spinner = Spinner("dots", style="cyan")
        self.label = label

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.spinner.text = Text(f"{self.label} {time.monotonic() - self.since:.1f}s", "dim")
        yield self.spinner


class _Retry:
    """A retry under way: attempt, countdown, cause, and how long retries go on."""

    def __init__(self, status: StatusRetry, plan: dict[str, str]) -> None:
        self.status = status
        self.most = f" of {plan['maxAttempts']}" if "maxAttempts" in plan else ""
        seconds = plan.get("retryingForS")
        self.until = time.time() + float(seconds) if seconds else None

    def line(self, *, repeat: bool = False) -> Text:
        now = time.time()
        wait = max(0.0, self.status.next / 1000 - now)
        cause = "the same error" if repeat else self.status.message
        gives_up = ""
        if self.until is not None:
            gives_up = f" · gives up within {max(0.0, self.until - now):.0f}s"
        return Text(
            f"↻ retry {self.status.attempt}{self.most} in {wait:.1f}s{gives_up}: {cause}",
            style="yellow",
        )

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.line()


class _RunningTool:
    """A running tool: its name, title and time, then the tail of its output so far."""

    def __init__(self, part: ToolPart, indent: str) -> None:
        self.part = part
        self.indent = indent
        self.spinner = Spinner("dots", style="yellow")
        self.since = time.monotonic()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        state = self.part.state
        title = subject(self.part)
        elapsed = f"{time.monotonic() - self.since:.1f}s"
        self.spinner.text = Text.assemble(
            (f"{self.part.tool:<8}", "bold"), " ", title, " ", (elapsed, "dim")
        )
        metadata = getattr(state, "metadata", None) or {}
        output = str(metadata.get("output") or "")
        tail = output.rstrip("\n").splitlines()[-TAIL_LINES:]
        lines = [Text(f"{self.indent}  │ {line}", "dim", no_wrap=True) for line in tail]
        yield Group(Text(self.indent, end=""), self.spinner, *lines)


def subject(part: ToolPart) -> str:
    """What a tool works on, for its line: its title, else the telling part of its input."""
    state = part.state
    title = getattr(state, "title", None)
    if title:
        return str(title)
    for key in ("description", "command", "filePath", "pattern", "path", "url"):
        value = state.input.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _indent(depth: int) -> str:
    return "  " * depth


class Renderer:
    """Follows one session (and the sub-agent sessions it starts) and prints it."""

    def __init__(self, out: Console, err: Console, session_id: str) -> None:
        self.out = out
        self.err = err
        self.session_id = session_id
        self.markdown = out.is_terminal
        self.live = err.is_terminal
        self.slot = LiveSlot()
        self.started = time.monotonic()
        self.depth: dict[str, int] = {session_id: 0}
        self.assistant_ids: set[str] = set()
        self.parts: dict[str, Part] = {}
        self.texts: dict[str, str] = {}  # text still to be rendered, by part id
        self.tokens = Tokens()
        self.cost = 0.0
        self.model = ""  # provider/model of the last answer
        self.errors: list[str] = []
        self.estimated = False  # some token counts are estimates (a stopped step)
        self.retry_plan: dict[str, str] = {}  # the last retry part's: attempts, how long
        self.retries = 0
        self._last_cause = ""
        self._open_line: Console | None = None
        self._running: _RunningTool | None = None
        self._handlers: dict[str, Callable[[Any], None]] = {
            "message.updated": self._message,
            "message.part.updated": self._part,
            "message.part.delta": self._delta,
            "session.status": self._status,
            "session.error": self._session_error,
            "session.presence": self._presence,
            "ask.answered": self._answered,
        }
        self._watchers: dict[str, str] = {}  # the last line said, by server

    def handle(self, event: Event) -> None:
        if isinstance(event.properties, SessionInfo) and event.type == "session.created":
            self._child(event.properties)
        if event.session_id not in self.depth:
            return
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event.properties)

    def waiting(self, label: str = "waiting for the model…") -> None:
        """Show a spinner with elapsed time until something arrives (terminal only)."""
        if self.live and self.slot.key is None:
            self.slot.show("wait", self.err, _Waiting(label), transient=True)

    def pause(self) -> None:
        """End the live region before something else writes (an ask, Ctrl-C's notice).
        Text it was drawing stays on screen as drawn, so it counts as shown: what follows
        of that text is drawn after it, never the whole of it again."""
        if isinstance(self.slot.key, tuple) and self.slot.key[0] == "text":
            self.texts[self.slot.key[1]] = ""
        self.slot.stop()
        self._end_line()

    def _child(self, props: SessionInfo) -> None:
        parent = props.info.parent_id
        if parent is not None and parent in self.depth:
            self.depth[props.info.id] = self.depth[parent] + 1

    def _message(self, props: MessageInfo) -> None:
        info = props.info
        if not isinstance(info, AssistantMessage):
            return
        self.assistant_ids.add(info.id)
        if info.session_id == self.session_id:
            self.model = f"{info.provider_id}/{info.model_id}"
        if info.time.completed is None:
            return
        self.tokens = self.tokens.plus(info.tokens)
        self.cost += info.cost
        if info.error is not None and info.session_id == self.session_id:
            message = getattr(info.error.data, "message", info.error.name)
            self.errors.append(f"{info.error.name}: {message}")
            # a stopped step's usage was never reported: the server estimates it
            self.estimated |= info.error.name == "MessageAbortedError"

    def _part(self, props: PartUpdatedProps) -> None:
        part = props.part
        if part.message_id not in self.assistant_ids:
            return
        self.parts[part.id] = part
        if isinstance(part, RetryPart) and part.session_id == self.session_id:
            self.retry_plan = part.error.data.metadata or {}
            self.retries += 1
        main = part.session_id == self.session_id
        if isinstance(part, TextPart | ReasoningPart) and part.time and part.time.end and main:
            self._text_ended(part)
        if isinstance(part, ToolPart):
            self._tool(part)

    def _delta(self, props: PartDeltaProps) -> None:
        part = self.parts.get(props.part_id)
        if part is None or part.session_id != self.session_id:
            return  # a sub-agent's words stay in its own session; its tools are shown
        if isinstance(part, ReasoningPart):
            self._write(self.err, props.delta, "dim italic")
        elif self.markdown:
            self._stream_markdown(part.id, props.delta)
        else:
            self._write(self.out, props.delta, "")

    def _write(self, console: Console, text: str, style: str) -> None:
        self.slot.stop()
        if self._open_line is not None and self._open_line is not console:
            self._end_line()
        console.print(Text(text, style=style), end="", soft_wrap=True)
        self._open_line = None if text.endswith("\n") else console

    def _stream_markdown(self, part_id: str, delta: str) -> None:
        if self._open_line is not None:
            self.slot.stop()
            self._end_line()
        done, growing = split_complete_markdown(self.texts.get(part_id, "") + delta)
        if done.strip():
            self._finish_blocks(part_id, done)
        self.texts[part_id] = growing
        if growing.strip():
            self.slot.show(("text", part_id), self.out, Markdown(growing), transient=False)

    def _finish_blocks(self, part_id: str, blocks: str) -> None:
        """Show finished blocks once: the live region that was drawing them gets their
        final form and stays as it is; without one they are printed."""
        if self.slot.key == ("text", part_id):
            self.slot.show(("text", part_id), self.out, Markdown(blocks), transient=False)
            self.slot.stop()
        elif blocks.strip():
            self.slot.stop()
            self.out.print(Markdown(blocks))

    def _text_ended(self, part: TextPart | ReasoningPart) -> None:
        self._finish_blocks(part.id, self.texts.pop(part.id, ""))
        self._end_line()
        self.waiting()

    def _tool(self, part: ToolPart) -> None:
        indent = _indent(self.depth.get(part.session_id, 0))
        status = part.state.status
        if status == "running" and self.live:
            key = ("tool", part.id)
            if self.slot.key == key and self._running is not None:
                self._running.part = part  # redrawn at the next refresh
                return
            self._end_line()
            self._running = _RunningTool(part, indent)
            self.slot.show(key, self.err, self._running, transient=True)
        elif status in _TOOL_MARKS:
            if self.slot.key == ("tool", part.id) or self.slot.key == "wait":
                self.slot.stop()
            self._tool_line(part, indent)
            if part.session_id == self.session_id:
                self.waiting()

    def _tool_line(self, part: ToolPart, indent: str) -> None:
        self.slot.stop()
        self._end_line()
        mark, color = _TOOL_MARKS[part.state.status]
        detail = getattr(part.state, "error", None) or subject(part)
        line = Text.assemble(
            indent, (f"{mark} ", color), (f"{part.tool:<8}", "bold"), " ", str(detail)
        )
        self.err.print(line, soft_wrap=True)

    def _status(self, props: SessionStatusProps) -> None:
        """A retry is one line: on a terminal a live one, counting down; piped, a line an
        attempt, the cause said once."""
        status = props.status
        if not isinstance(status, StatusRetry) or props.session_id != self.session_id:
            return
        retry = _Retry(status, self.retry_plan)
        if self.live:
            self._end_line()
            self.slot.show("wait", self.err, retry, transient=True)
            return
        self._end_line()
        same = status.message == self._last_cause
        self._last_cause = status.message
        self.err.print(retry.line(repeat=same), soft_wrap=True)

    def _session_error(self, props: SessionErrorProps) -> None:
        """Shown from the message's own error at the end; nothing to print here."""

    def _presence(self, props: SessionPresenceProps) -> None:
        """Who follows the session (on the server that tells), when that changes."""
        if props.session_id != self.session_id:
            return
        names = sorted({f"{w.user} ({w.client})" for w in props.watchers})
        line = ", ".join(names) or "nobody"
        if self._watchers.get(props.instance_id) != line:
            self._watchers[props.instance_id] = line
            self._note(f"watching: {line}")

    def _answered(self, props: AskAnsweredProps) -> None:
        via = f" ({props.client})" if props.client else ""
        self._note(f"{props.by}{via} answered {props.request_id}")

    def _note(self, text: str) -> None:
        self.slot.stop()
        self._end_line()
        self.err.print(f"[dim]{text}[/dim]", highlight=False)

    def _end_line(self) -> None:
        if self._open_line is not None:
            self._open_line.print()
            self._open_line = None

    def summary(self, interrupted: bool = False) -> None:
        self.slot.stop()
        self._end_line()
        for error in self.errors:
            tried = f" (gave up after {self.retries + 1} attempts)" if self.retries else ""
            self.err.print(Text(error + tried, style="red"))
        if any(not e.startswith("MessageAbortedError") for e in self.errors):
            hint = f'to try again: partwire run -s {self.session_id} "…the same prompt…"'
            self.err.print(Text(hint, style="dim"))
        t = self.tokens
        elapsed = time.monotonic() - self.started
        status = "aborted · " if interrupted else ""
        model = f"{self.model} · " if self.model else ""
        about = "~" if self.estimated else ""
        note = " (estimated: stopped before the model reported them)" if self.estimated else ""
        self.err.print(
            Text(
                f"{status}{model}tokens in {about}{t.input} · out {about}{t.output}{note} · "
                f"reasoning {t.reasoning} · ${self.cost:.4f} · {elapsed:.1f}s",
                style="dim",
            )
        )


_JSON_TYPES = {"step-start": "step_start", "step-finish": "step_finish"}


class JsonLines(Renderer):
    """``--format json``: one JSON object a line on stdout, in opencode's ``run`` shape:
    ``{type, timestamp, sessionID, part | error}`` for finished text and reasoning,
    finished tools (``tool_use``), steps, and errors. Nothing else is printed."""

    def __init__(self, stream: TextIO, err: Console, session_id: str) -> None:
        super().__init__(Console(file=stream), err, session_id)
        self.stream = stream
        self.live = False

    def _line(self, kind: str, **fields: Any) -> None:
        record = {"type": kind, "timestamp": now_ms()}
        record["sessionID"] = self.session_id
        self.stream.write(json.dumps({**record, **fields}, ensure_ascii=False) + "\n")
        self.stream.flush()

    def _part(self, props: PartUpdatedProps) -> None:
        part = props.part
        if part.message_id not in self.assistant_ids or part.session_id != self.session_id:
            return
        self.parts[part.id] = part
        kind = _JSON_TYPES.get(part.type)
        if isinstance(part, TextPart | ReasoningPart) and part.time and part.time.end:
            kind = part.type
        if isinstance(part, ToolPart) and part.state.status in _TOOL_MARKS:
            kind = "tool_use"
        if kind is not None:
            self._line(kind, part=part.wire())

    def _delta(self, props: PartDeltaProps) -> None:
        return

    def _status(self, props: SessionStatusProps) -> None:
        return

    def _session_error(self, props: SessionErrorProps) -> None:
        if props.session_id == self.session_id and props.error is not None:
            self._line("error", error=props.error.wire())

    def summary(self, interrupted: bool = False) -> None:
        return
