"""StreamingMessageBuilder: calls describing one message as it streams → parts and frames.

The builder does no I/O. Each call changes the message and returns the frames it
produced (schema/frames.py), so a caller can send them on, store them, or ignore them
and call :meth:`StreamingMessageBuilder.build` at the end. Parts are kept in call order:
a text delta after a tool call starts a new text part, and a new part of another kind
closes the text or reasoning part that was streaming. Calls the message's state does not
allow raise :class:`~partwire.errors.BuilderError` and change nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from copy import deepcopy
from typing import Any

from partwire import ids
from partwire.clock import now_ms
from partwire.errors import BuilderError
from partwire.schema.base import Tokens
from partwire.schema.frames import (
    BuiltMessage,
    Frame,
    MessageComplete,
    MessageStart,
    PartComplete,
    PartDelta,
    PartStart,
    PartUpdate,
    Role,
    content_of,
)
from partwire.schema.message import ABORTED_TOOL, MessageError, aborted_error, unknown_error
from partwire.schema.part import (
    FilePart,
    Part,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    StreamTime,
    TextPart,
    ToolPart,
)
from partwire.schema.tool_state import (
    FinishedTime,
    RunningTime,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
)

UNFINISHED_TOOL = "The message ended before this tool call returned a result"


class StreamingMessageBuilder:
    """Builds one message (``role`` user or assistant) from calls made while it streams."""

    def __init__(
        self,
        message_id: str,
        role: Role = "assistant",
        *,
        session_id: str = "",
        clock: Callable[[], int] = now_ms,
    ) -> None:
        if role not in ("user", "assistant"):
            raise BuilderError(f"role must be 'user' or 'assistant', not {role!r}")
        self.message_id = message_id
        self.role: Role = role
        self.session_id = session_id
        self._clock = clock
        self._parts: list[Part] = []
        self._started = False
        self._done = False
        self._streaming: int | None = None  # index of the text or reasoning part streaming
        self._chunks: list[str] = []  # its text, not yet joined into the part
        self._calls: dict[str, int] = {}  # tool call id → part index
        self._raw: dict[str, list[str]] = {}  # a pending call's argument text so far
        self._step_open = False
        self.tokens = Tokens()
        self.cost = 0.0
        self.finish_reason: str | None = None
        self.error: MessageError | None = None

    # ---- state ---------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._done

    @property
    def parts(self) -> list[Part]:
        """The parts so far, as they stand now (streaming text included)."""
        return [self._current(index) for index in range(len(self._parts))]

    def part(self, index: int) -> Part:
        return self._current(index)

    def stored_part(self, index: int) -> Part:
        """Part ``index`` as last written down, without the text still streaming into it
        (cheap: nothing is joined)."""
        return self._parts[index]

    def tool_part(self, call_id: str) -> ToolPart:
        """The part of tool call ``call_id``; BuilderError if there is no such call."""
        index = self._calls.get(call_id)
        if index is None:
            raise BuilderError(f"there is no tool call {call_id!r} in this message")
        part = self._current(index)
        assert isinstance(part, ToolPart)
        return part

    def _current(self, index: int) -> Part:
        part = self._parts[index]
        if index == self._streaming and self._chunks:
            assert isinstance(part, TextPart | ReasoningPart)
            return part.model_copy(update={"text": "".join(self._chunks)})
        if isinstance(part, ToolPart) and part.call_id in self._raw:
            raw = "".join(self._raw[part.call_id])
            return part.model_copy(update={"state": ToolStatePending(raw=raw)})
        return part

    def streamed_text(self) -> str:
        """The text of the part that is streaming now ("" when none is)."""
        joined = "".join(self._chunks)
        self._chunks = [joined] if joined else []
        return joined

    # ---- text and reasoning --------------------------------------------------------------

    def add_text_delta(self, text: str) -> list[Frame]:
        return self._stream("text", text)

    def add_reasoning_delta(self, text: str) -> list[Frame]:
        self._assistant_only("reasoning")
        return self._stream("reasoning", text)

    def _stream(self, kind: str, text: str) -> list[Frame]:
        if not isinstance(text, str):
            raise BuilderError(f"a {kind} delta must be a string, not {type(text).__name__}")
        frames = self._begin()
        index = self._streaming
        if index is None or self._parts[index].type != kind:
            frames += self._close_stream()
            start = StreamTime(start=self._clock())
            part: Part = (
                TextPart(**self._base(), text="", time=start)
                if kind == "text"
                else ReasoningPart(**self._base(), text="", time=start)
            )
            frames.append(self._append(part))
            index = self._streaming = len(self._parts) - 1
        if text:
            self._chunks.append(text)
            frames.append(PartDelta(message_id=self.message_id, part_index=index, delta=text))
        return frames

    def _close_stream(self) -> list[Frame]:
        index = self._streaming
        if index is None:
            return []
        part = self._parts[index]
        assert isinstance(part, TextPart | ReasoningPart) and part.time is not None
        ended = part.model_copy(
            update={
                "text": "".join(self._chunks),
                "time": StreamTime(start=part.time.start, end=self._clock()),
            }
        )
        self._parts[index] = ended
        self._streaming = None
        self._chunks = []
        return [self._complete(index, ended)]

    # ---- tool calls ----------------------------------------------------------------------

    def start_tool_call(self, call_id: str, name: str) -> list[Frame]:
        """A tool call whose arguments will stream (add_tool_args_delta) before add_tool_call."""
        self._assistant_only("tool calls")
        self._check_new_call(call_id, name)
        frames = self._begin() + self._close_stream()
        part = ToolPart(**self._base(), call_id=call_id, tool=name, state=ToolStatePending())
        frames.append(self._append(part))
        self._calls[call_id] = len(self._parts) - 1
        self._raw[call_id] = []
        return frames

    def add_tool_args_delta(self, call_id: str, delta: str) -> list[Frame]:
        part = self._known_call(call_id, "arguments")
        if call_id not in self._raw:
            raise BuilderError(
                f"arguments for tool call {call_id!r} arrived after they were complete "
                f"(its state is {part.state.status})"
            )
        if not isinstance(delta, str):
            raise BuilderError(f"tool arguments must stream as text, not {type(delta).__name__}")
        self._raw[call_id].append(delta)
        index = self._calls[call_id]
        return [PartDelta(message_id=self.message_id, part_index=index, args_delta=delta)]

    def add_tool_call(
        self, call_id: str, name: str, args: Mapping[str, Any] | str | None = None
    ) -> list[Frame]:
        """The call is complete: its arguments are ``args`` (an object, or its JSON text)
        and it runs until add_tool_result. A call started with start_tool_call keeps its part."""
        self._assistant_only("tool calls")
        parsed = _arguments(call_id, args)
        running = ToolStateRunning(input=parsed, time=RunningTime(start=self._clock()))
        index = self._calls.get(call_id)
        if index is None:
            self._check_new_call(call_id, name)
            frames = self._begin() + self._close_stream()
            part = ToolPart(**self._base(), call_id=call_id, tool=name, state=running)
            frames.append(self._append(part))
            self._calls[call_id] = len(self._parts) - 1
            return frames
        current = self._parts[index]
        assert isinstance(current, ToolPart)
        if call_id not in self._raw:
            raise BuilderError(f"tool call {call_id!r} was already made")
        if current.tool != name:
            raise BuilderError(
                f"tool call {call_id!r} was started as {current.tool!r}, not {name!r}"
            )
        del self._raw[call_id]
        updated = current.model_copy(update={"state": running})
        self._parts[index] = updated
        return [PartUpdate(message_id=self.message_id, part_index=index, part=updated)]

    def add_tool_result(
        self,
        call_id: str,
        output: Any,
        is_error: bool = False,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Frame]:
        """The tool's result (text, or anything JSON can hold); ``is_error`` ends it in error."""
        part = self._known_call(call_id, "a result")
        state = part.state
        if isinstance(state, ToolStatePending):
            raise BuilderError(
                f"a result for tool call {call_id!r} arrived before the call was complete "
                "(call add_tool_call first)"
            )
        if not isinstance(state, ToolStateRunning):
            raise BuilderError(f"tool call {call_id!r} already has a result ({state.status})")
        text = _output_text(output)
        finished = FinishedTime(start=state.time.start, end=self._clock())
        extra = dict(metadata or {})
        final = (
            ToolStateError(input=state.input, error=text, metadata=extra or None, time=finished)
            if is_error
            else ToolStateCompleted(
                input=state.input,
                output=text,
                title=title if title is not None else part.tool,
                metadata=extra,
                time=finished,
            )
        )
        index = self._calls[call_id]
        ended = part.model_copy(update={"state": final})
        self._parts[index] = ended
        return [self._complete(index, ended)]

    def _check_new_call(self, call_id: str, name: str) -> None:
        if not isinstance(call_id, str) or not call_id:
            raise BuilderError("a tool call needs a non-empty call id")
        if not isinstance(name, str) or not name:
            raise BuilderError(f"tool call {call_id!r} needs a tool name")
        if call_id in self._calls:
            raise BuilderError(f"tool call {call_id!r} was already started")

    def _known_call(self, call_id: str, what: str) -> ToolPart:
        self._check_open()
        index = self._calls.get(call_id)
        if index is None:
            raise BuilderError(f"{what} for tool call {call_id!r} arrived before the call")
        part = self._parts[index]
        assert isinstance(part, ToolPart)
        return part

    # ---- files and steps -----------------------------------------------------------------

    def add_file(self, mime: str, url: str, filename: str | None = None) -> list[Frame]:
        frames = self._begin() + self._close_stream()
        part = FilePart(**self._base(), mime=mime, url=url, filename=filename)
        return frames + self._whole(part)

    def start_step(self) -> list[Frame]:
        self._assistant_only("steps")
        if self._step_open:
            raise BuilderError("a step is already open: call finish_step before start_step")
        frames = self._begin() + self._close_stream()
        self._step_open = True
        return frames + self._whole(StepStartPart(**self._base()))

    def finish_step(
        self,
        tokens: Tokens | Mapping[str, Any] | None = None,
        cost: float = 0.0,
        reason: str = "stop",
    ) -> list[Frame]:
        """End the open step with its token use and cost (added to the message's totals)."""
        self._assistant_only("steps")
        if not self._step_open:
            raise BuilderError("finish_step without an open step: call start_step first")
        used = _tokens(tokens)
        cost = _cost(cost)
        frames = self._begin() + self._close_stream()
        self._step_open = False
        part = StepFinishPart(**self._base(), reason=reason, tokens=used, cost=float(cost))
        self.tokens = self.tokens.plus(used)
        self.cost += float(cost)
        self.finish_reason = reason
        return frames + self._whole(part)

    # ---- the end -------------------------------------------------------------------------

    def finish(self) -> list[Frame]:
        """End the message: a streaming part ends, a tool call without a result ends in error."""
        return self._end(None, UNFINISHED_TOOL)

    def fail(self, message: str, *, aborted: bool = False) -> list[Frame]:
        """End the message with an error (``aborted``: the user stopped it)."""
        error = aborted_error(message) if aborted else unknown_error(message)
        return self._end(error, ABORTED_TOOL if aborted else message)

    def build(self) -> BuiltMessage:
        """The message as finished. It changes nothing: a message still open is finished on
        a copy, so the builder stays open for its owner (a recording writes what its own
        ``finish`` returns) and no frame is lost to a caller that never called ``finish``."""
        if self._done:
            return self._message()
        copy = deepcopy(self)
        copy.finish()
        return copy._message()

    def _end(self, error: MessageError | None, tool_error: str) -> list[Frame]:
        frames = self._begin() + self._close_stream()
        now = self._clock()
        for call_id, index in self._calls.items():
            part = self._current(index)
            assert isinstance(part, ToolPart)
            state = part.state
            if isinstance(state, ToolStatePending | ToolStateRunning):
                start = state.time.start if isinstance(state, ToolStateRunning) else now
                failed = ToolStateError(
                    input=state.input, error=tool_error, time=FinishedTime(start=start, end=now)
                )
                ended = part.model_copy(update={"state": failed})
                self._parts[index] = ended
                self._raw.pop(call_id, None)
                frames.append(self._complete(index, ended))
        self.error = error
        self._done = True
        frames.append(MessageComplete(message=self._message()))
        return frames

    def _message(self) -> BuiltMessage:
        parts = self.parts
        return BuiltMessage(
            id=self.message_id,
            role=self.role,
            parts=parts,
            content=content_of(parts),
            tokens=self.tokens,
            cost=self.cost,
            finish=self.finish_reason,
            error=self.error,
        )

    # ---- helpers -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._done:
            raise BuilderError(f"message {self.message_id} is complete: it takes no more calls")

    def _begin(self) -> list[Frame]:
        self._check_open()
        if self._started:
            return []
        self._started = True
        return [MessageStart(message_id=self.message_id, role=self.role)]

    def _assistant_only(self, what: str) -> None:
        self._check_open()
        if self.role != "assistant":
            raise BuilderError(f"a {self.role} message has no {what}")

    def _base(self) -> dict[str, str]:
        return {"id": ids.part_id(), "session_id": self.session_id, "message_id": self.message_id}

    def _append(self, part: Part) -> PartStart:
        self._parts.append(part)
        return PartStart(message_id=self.message_id, part_index=len(self._parts) - 1, part=part)

    def _complete(self, index: int, part: Part) -> PartComplete:
        return PartComplete(message_id=self.message_id, part_index=index, part=part)

    def _whole(self, part: Part) -> list[Frame]:
        """A part that is complete as soon as it exists: its start and its completion."""
        start = self._append(part)
        return [start, self._complete(start.part_index, part)]


def _arguments(call_id: str, args: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except ValueError as exc:
            raise BuilderError(f"tool call {call_id!r}: arguments are not JSON ({exc})") from None
    if not isinstance(args, Mapping):
        raise BuilderError(f"tool call {call_id!r}: arguments must be a JSON object")
    return dict(args)


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise BuilderError(f"a tool result must be text or JSON-serializable: {exc}") from None


def _tokens(tokens: Tokens | Mapping[str, Any] | None) -> Tokens:
    if tokens is None:
        return Tokens()
    try:
        used = tokens if isinstance(tokens, Tokens) else Tokens.model_validate(dict(tokens))
    except ValueError as exc:
        raise BuilderError(f"tokens: {exc}") from None
    counts = {
        "input": used.input,
        "output": used.output,
        "reasoning": used.reasoning,
        "cache.read": used.cache.read,
        "cache.write": used.cache.write,
        "total": used.total or 0,
    }
    for name, count in counts.items():
        if count < 0:
            raise BuilderError(f"tokens.{name} is {count}: token counts are never negative")
    if used.total is None:
        used = used.model_copy(update={"total": used.input + used.output + used.reasoning})
    return used


def _cost(cost: Any) -> float:
    """A step's cost: a finite number, not below zero (NaN would make the message
    unreadable once stored)."""
    try:
        value = float(cost)
    except (TypeError, ValueError):
        raise BuilderError(f"cost is {cost!r}: give a number of USD") from None
    if not math.isfinite(value) or value < 0:
        raise BuilderError(f"cost is {cost!r}: give a finite number of USD, 0 or more")
    return value
