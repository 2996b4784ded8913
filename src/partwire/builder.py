"""StreamingMessageBuilder: calls describing one message as it streams → parts and frames.

The one owner of the part lifecycle. Every producer goes through it: partwire's own
processor, ``runtime.record()``, ingest and its converters, the user's shell commands,
and crash recovery closing what a crash left open. The builder does no I/O. Each call
changes the message and returns the frames it produced (schema/frames.py), so a caller
can send them on, store them (``session/writer.py``), or ignore them and call
:meth:`StreamingMessageBuilder.build` at the end.

Parts are kept in call order. Text and reasoning stream in one of two ways:

- unnamed: ``add_text_delta(text)``; a new part of another kind closes the part that was
  streaming (a text delta after a tool call starts a new text part);
- named (``stream_id``): ``start_text(id)``, deltas, ``end_text(id)``; several may be open
  at once and interleave, as a model's stream has them, and other parts leave them open.

Every tool state change is checked against the state machine (schema/tool_state.py).
Calls the message's state does not allow raise :class:`~partwire.errors.BuilderError`
and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from copy import deepcopy
from typing import Any, Literal

from partwire import builder_inputs as inputs
from partwire import ids
from partwire.clock import now_ms
from partwire.errors import BuilderError, IllegalTransitionError
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
from partwire.schema.message import (
    ABORTED_TOOL,
    MessageError,
    aborted_error,
    error_text,
    unknown_error,
)
from partwire.schema.part import (
    APIError,
    CreatedTime,
    FilePart,
    Part,
    PatchPart,
    ReasoningPart,
    RetryPart,
    StepFinishPart,
    StepStartPart,
    StreamTime,
    TextPart,
    ToolPart,
)
from partwire.schema.tool_state import (
    FinishedTime,
    RunningTime,
    ToolState,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    check_transition,
)

UNFINISHED_TOOL = "The message ended before this tool call returned a result"

StreamKind = Literal["text", "reasoning"]
BadArguments = Literal["raise", "error"]
_UNNAMED = ""  # the key of the unnamed stream


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
        self._streams: dict[str, int] = {}  # open stream key → part index
        self._chunks: dict[int, list[str]] = {}  # a streaming part's text, not yet joined
        self._calls: dict[str, int] = {}  # tool call id → part index
        self._raw: dict[str, list[str]] = {}  # a pending call's argument text so far
        self._step_open = False
        self.tokens = Tokens()
        self.cost = 0.0
        self.finish_reason: str | None = None
        self.error: MessageError | None = None

    @classmethod
    def resume(
        cls,
        message_id: str,
        parts: Iterable[Part],
        *,
        role: Role = "assistant",
        session_id: str = "",
        clock: Callable[[], int] = now_ms,
    ) -> StreamingMessageBuilder:
        """A builder over parts already stored (crash recovery): text and reasoning parts
        without an end time are streaming, tool calls keep their state."""
        builder = cls(message_id, role, session_id=session_id, clock=clock)
        builder._started = True
        for part in parts:
            index = len(builder._parts)
            builder._parts.append(part)
            if isinstance(part, TextPart | ReasoningPart) and part.time and part.time.end is None:
                builder._streams[f"{part.type}:{part.id}"] = index
                builder._chunks[index] = [part.text] if part.text else []
            elif isinstance(part, ToolPart):
                builder._calls[part.call_id] = index
                if isinstance(part.state, ToolStatePending):
                    builder._raw[part.call_id] = [part.state.raw] if part.state.raw else []
        return builder

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

    def open_calls(self) -> list[str]:
        """The ids of the tool calls that are pending or running."""
        return [
            call_id
            for call_id, index in self._calls.items()
            if self._current_tool(index).state.status in ("pending", "running")
        ]

    def _current(self, index: int) -> Part:
        part = self._parts[index]
        chunks = self._chunks.get(index)
        if chunks:
            assert isinstance(part, TextPart | ReasoningPart)
            return part.model_copy(update={"text": "".join(chunks)})
        if isinstance(part, ToolPart) and part.call_id in self._raw:
            raw = "".join(self._raw[part.call_id])
            return part.model_copy(update={"state": ToolStatePending(raw=raw)})
        return part

    def streamed_text(self, index: int) -> str:
        """The text of streaming part ``index`` so far ("" when it has none)."""
        chunks = self._chunks.get(index)
        if not chunks:
            return ""
        joined = "".join(chunks)
        self._chunks[index] = [joined]
        return joined

    # ---- seed 003's names -----------------------------------------------------------------

    @property
    def current_text(self) -> str:
        """The text of the text part still streaming without a stream id ("" when none)."""
        index = self._streams.get(_UNNAMED)
        if index is None or self._parts[index].type != "text":
            return ""
        return self.streamed_text(index)

    @property
    def current_part_index(self) -> int:
        """The index of the newest part (-1 before the first)."""
        return len(self._parts) - 1

    def finalize_text_part(self) -> list[Frame]:
        """End the text (or reasoning) part streaming without a stream id: the next delta
        begins a new part. Nothing to end is not an error."""
        self._check_open()
        return self._close_unnamed()

    # ---- text and reasoning --------------------------------------------------------------

    def add_text_delta(self, text: str, *, stream_id: str | None = None) -> list[Frame]:
        return self._delta_frames("text", text, stream_id)

    def add_reasoning_delta(self, text: str, *, stream_id: str | None = None) -> list[Frame]:
        self._assistant_only("reasoning")
        return self._delta_frames("reasoning", text, stream_id)

    def start_text(self, stream_id: str) -> list[Frame]:
        """Open the text part named ``stream_id`` (its deltas name it too)."""
        return self._open_named("text", stream_id)

    def start_reasoning(self, stream_id: str) -> list[Frame]:
        self._assistant_only("reasoning")
        return self._open_named("reasoning", stream_id)

    def end_text(self, stream_id: str, *, metadata: Mapping[str, Any] | None = None) -> list[Frame]:
        return self._end_named("text", stream_id, metadata)

    def end_reasoning(
        self, stream_id: str, *, metadata: Mapping[str, Any] | None = None
    ) -> list[Frame]:
        return self._end_named("reasoning", stream_id, metadata)

    def grow(self, kind: StreamKind, stream_id: str, text: str) -> int:
        """The hot path of a named stream: append ``text`` and return its part's index,
        making no frame (the writer's ``text_delta`` writes it). The processor calls this;
        everything else calls add_*_delta."""
        index = self._streams.get(f"{kind}:{stream_id}")
        if index is None:
            raise BuilderError(f"a {kind} delta for {stream_id!r} arrived before its start")
        self._chunks[index].append(text)
        return index

    def grow_unnamed(self, kind: StreamKind, text: str) -> int | None:
        """The hot path of the unnamed stream: when a ``kind`` part is streaming without a
        stream id, append ``text`` to it and return its index, making no frame (the
        writer's ``text_delta`` writes it). None, and nothing changed, when anything else
        must happen first (the part to open, the message ended, no text): the caller then
        takes ``add_*_delta``."""
        index = self._streams.get(_UNNAMED)
        if index is None or self._done or not isinstance(text, str) or not text:
            return None
        if self._parts[index].type != kind:
            return None
        self._chunks[index].append(text)
        return index

    def _delta_frames(self, kind: StreamKind, text: str, stream_id: str | None) -> list[Frame]:
        if not isinstance(text, str):
            raise BuilderError(f"a {kind} delta must be a string, not {type(text).__name__}")
        if stream_id is None:
            frames = self._open_unnamed(kind)
            index = self._streams[_UNNAMED]
        else:
            self._check_open()
            frames = []
            index = self._streams.get(f"{kind}:{stream_id}", -1)
            if index < 0:
                frames = self._open_named(kind, stream_id)
                index = len(self._parts) - 1
        if text:
            self._chunks[index].append(text)
            frames.append(PartDelta(message_id=self.message_id, part_index=index, delta=text))
        return frames

    def _open_unnamed(self, kind: StreamKind) -> list[Frame]:
        frames = self._begin()
        index = self._streams.get(_UNNAMED)
        if index is not None and self._parts[index].type == kind:
            return frames
        frames += self._close_unnamed()
        frames.append(self._new_stream(kind))
        self._streams[_UNNAMED] = len(self._parts) - 1
        return frames

    def _open_named(self, kind: StreamKind, stream_id: str) -> list[Frame]:
        if not isinstance(stream_id, str) or not stream_id:
            raise BuilderError(f"a {kind} stream needs a non-empty id")
        key = f"{kind}:{stream_id}"
        frames = self._begin()
        if key in self._streams:
            raise BuilderError(f"the {kind} stream {stream_id!r} is already open")
        frames.append(self._new_stream(kind))
        self._streams[key] = len(self._parts) - 1
        return frames

    def _new_stream(self, kind: StreamKind) -> PartStart:
        start = StreamTime(start=self._clock())
        part: Part = (
            TextPart(**self._base(), text="", time=start)
            if kind == "text"
            else ReasoningPart(**self._base(), text="", time=start)
        )
        start_frame = self._append(part)
        self._chunks[start_frame.part_index] = []
        return start_frame

    def _end_named(
        self, kind: StreamKind, stream_id: str, metadata: Mapping[str, Any] | None
    ) -> list[Frame]:
        self._check_open()
        index = self._streams.pop(f"{kind}:{stream_id}", None)
        if index is None:
            raise BuilderError(f"the {kind} stream {stream_id!r} is not open")
        return [self._close_stream(index, metadata)]

    def _close_unnamed(self) -> list[Frame]:
        index = self._streams.pop(_UNNAMED, None)
        return [] if index is None else [self._close_stream(index, None)]

    def _close_stream(self, index: int, metadata: Mapping[str, Any] | None) -> PartComplete:
        part = self._parts[index]
        assert isinstance(part, TextPart | ReasoningPart) and part.time is not None
        update: dict[str, Any] = {
            "text": "".join(self._chunks.pop(index, ())),
            "time": StreamTime(start=part.time.start, end=self._clock()),
        }
        if metadata:
            update["metadata"] = dict(metadata)
        ended = part.model_copy(update=update)
        self._parts[index] = ended
        return self._complete(index, ended)

    def _close_streams(self) -> list[Frame]:
        frames: list[Frame] = [self._close_stream(index, None) for index in self._streams.values()]
        self._streams.clear()
        return frames

    # ---- tool calls ----------------------------------------------------------------------

    def start_tool_call(self, call_id: str, name: str) -> list[Frame]:
        """A tool call whose arguments will stream (add_tool_args_delta) before add_tool_call."""
        self._assistant_only("tool calls")
        self._check_new_call(call_id, name)
        frames = self._begin() + self._close_unnamed()
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
        self,
        call_id: str | object,
        name: str | None = None,
        args: Mapping[str, Any] | str | None = None,
        *,
        bad_arguments: BadArguments = "raise",
    ) -> list[Frame]:
        """The call is complete: its arguments are ``args`` (an object, or its JSON text)
        and it runs until add_tool_result. A call started with start_tool_call keeps its
        part. Arguments that are not a JSON object raise BuilderError, or, with
        ``bad_arguments="error"``, end the call in error with a message for the model.

        As in seed 003, the call may instead be one ``ToolCallPart`` (a mapping or an
        object with ``toolCallId``, ``toolName`` and ``args``)."""
        if not isinstance(call_id, str):
            call_id, name, args = inputs.seed_call_of(call_id)
        if not isinstance(name, str) or not name:
            raise BuilderError(f"tool call {call_id!r} needs a tool name")
        self._assistant_only("tool calls")
        index = self._calls.get(call_id)
        if index is None:
            self._check_new_call(call_id, name)
        else:
            current = self._parts[index]
            assert isinstance(current, ToolPart)
            if call_id not in self._raw:
                raise BuilderError(f"tool call {call_id!r} was already made")
            if current.tool != name:
                raise BuilderError(
                    f"tool call {call_id!r} was started as {current.tool!r}, not {name!r}"
                )
        now = self._clock()
        state: ToolState
        parsed = inputs.arguments(args)
        if isinstance(parsed, dict):
            state = ToolStateRunning(input=parsed, time=RunningTime(start=now))
        elif bad_arguments == "raise":
            what = (
                f"arguments are not JSON ({parsed})" if parsed != inputs.NOT_AN_OBJECT else parsed
            )
            raise BuilderError(f"tool call {call_id!r}: {what}")
        else:
            message = f"The {name} tool input is not valid JSON ({parsed}); send an object."
            state = ToolStateError(input={}, error=message, time=FinishedTime(start=now, end=now))
        if index is None:
            frames = self._begin() + self._close_unnamed()
            index = self._append(
                ToolPart(**self._base(), call_id=call_id, tool=name, state=ToolStatePending())
            ).part_index
            self._calls[call_id] = index
            started = self._set_state(call_id, state)
            frames.append(PartStart(message_id=self.message_id, part_index=index, part=started))
            if isinstance(state, ToolStateError):
                frames.append(self._complete(index, started))
            return frames
        del self._raw[call_id]
        updated = self._set_state(call_id, state)
        if isinstance(state, ToolStateError):
            return [self._complete(index, updated)]
        return [PartUpdate(message_id=self.message_id, part_index=index, part=updated)]

    def accepts_arguments(self, call_id: str) -> bool:
        """Whether tool call ``call_id`` is pending, its arguments still streaming."""
        return call_id in self._raw

    def update_tool(
        self,
        call_id: str,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Frame]:
        """A running tool's live title and metadata (a command's output so far)."""
        part = self._known_call(call_id, "an update")
        state = part.state
        if not isinstance(state, ToolStateRunning):
            raise BuilderError(f"tool call {call_id!r} is {state.status}, not running")
        running = state.model_copy(
            update={
                "title": title or state.title,
                "metadata": dict(metadata) if metadata is not None else state.metadata,
            }
        )
        updated = self._set_state(call_id, running)
        index = self._calls[call_id]
        return [PartUpdate(message_id=self.message_id, part_index=index, part=updated)]

    def add_tool_result(
        self,
        call_id: str | object,
        output: Any = None,
        is_error: bool = False,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> list[Frame]:
        """The tool's result (text, or anything JSON can hold); ``is_error`` ends it in error.
        As in seed 003, the result may instead be one ``ToolResultPart`` (``toolCallId``,
        ``result``, and ``isError`` when it failed)."""
        if not isinstance(call_id, str):
            call_id, output, is_error = inputs.seed_result_of(call_id)
        part = self._known_call(call_id, "a result")
        state = part.state
        if isinstance(state, ToolStatePending):
            raise BuilderError(
                f"a result for tool call {call_id!r} arrived before the call was complete "
                "(call add_tool_call first)"
            )
        if not isinstance(state, ToolStateRunning):
            raise BuilderError(f"tool call {call_id!r} already has a result ({state.status})")
        text = inputs.output_text(output)
        finished = FinishedTime(start=state.time.start, end=self._clock())
        extra = dict(metadata or {})
        final = (
            ToolStateError(input=state.input, error=text, metadata=extra or None, time=finished)
            if is_error
            else ToolStateCompleted(
                input=state.input,
                output=text,
                title=title if title is not None else (state.title or part.tool),
                metadata=extra,
                time=finished,
                attachments=attachments or None,
            )
        )
        ended = self._set_state(call_id, final)
        return [self._complete(self._calls[call_id], ended)]

    def _set_state(self, call_id: str, state: ToolState) -> ToolPart:
        index = self._calls[call_id]
        part = self._current_tool(index)
        try:
            check_transition(part.state, state)
        except IllegalTransitionError as exc:
            raise BuilderError(f"tool call {call_id!r}: {exc}") from None
        updated = part.model_copy(update={"state": state})
        self._parts[index] = updated
        return updated

    def _current_tool(self, index: int) -> ToolPart:
        part = self._parts[index]
        assert isinstance(part, ToolPart)
        return part

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
        return self._current_tool(index)

    # ---- files, steps, retries, patches --------------------------------------------------

    def add_text(self, text: str, *, synthetic: bool = False) -> list[Frame]:
        """A text part that is whole at once (a prompt, a note)."""
        frames = self._begin() + self._close_unnamed()
        part = TextPart(**self._base(), text=text, synthetic=synthetic or None)
        return frames + self._whole(part)

    def add_part(self, part: Part) -> list[Frame]:
        """A part that is whole at once, made elsewhere: a prompt's text, file, agent or
        subtask part, a compaction request, a snapshot. It joins this message as it is
        (its id kept). Parts that stream or change state have calls of their own."""
        if part.type in _OWN_CALLS:
            raise BuilderError(f"a {part.type} part is made by its own calls, not add_part")
        if isinstance(part, TextPart) and part.time is not None and part.time.end is None:
            raise BuilderError("a text part that is still streaming is made by add_text_delta")
        frames = self._begin() + self._close_unnamed()
        whole = part.model_copy(
            update={"session_id": self.session_id, "message_id": self.message_id}
        )
        return frames + self._whole(whole)

    def add_file(self, mime: str, url: str, filename: str | None = None) -> list[Frame]:
        frames = self._begin() + self._close_unnamed()
        part = FilePart(**self._base(), mime=mime, url=url, filename=filename)
        return frames + self._whole(part)

    def start_step(self, *, snapshot: str | None = None) -> list[Frame]:
        self._assistant_only("steps")
        if self._step_open:
            raise BuilderError("a step is already open: call finish_step before start_step")
        frames = self._begin() + self._close_unnamed()
        self._step_open = True
        return frames + self._whole(StepStartPart(**self._base(), snapshot=snapshot))

    def finish_step(
        self,
        tokens: Tokens | Mapping[str, Any] | None = None,
        cost: float = 0.0,
        reason: str = "stop",
        *,
        snapshot: str | None = None,
    ) -> list[Frame]:
        """End the open step with its token use and cost (added to the message's totals)."""
        self._assistant_only("steps")
        if not self._step_open:
            raise BuilderError("finish_step without an open step: call start_step first")
        used = inputs.tokens(tokens)
        cost = inputs.cost(cost)
        frames = self._begin() + self._close_unnamed()
        self._step_open = False
        part = StepFinishPart(
            **self._base(), reason=reason, tokens=used, cost=float(cost), snapshot=snapshot
        )
        self.tokens = self.tokens.plus(used)
        self.cost += float(cost)
        self.finish_reason = reason
        return frames + self._whole(part)

    def add_patch(self, snapshot: str, files: list[str]) -> list[Frame]:
        """The files a step changed, against the snapshot taken when it started."""
        self._assistant_only("patches")
        frames = self._begin() + self._close_unnamed()
        return frames + self._whole(PatchPart(**self._base(), hash=snapshot, files=files))

    def add_retry(self, attempt: int, error: APIError) -> list[Frame]:
        """A failed model call that will be tried again: close what it left open (a step
        that never finished stays without its finish), then a retry part."""
        frames = self.close_open(_RETRIED_TOOL)
        self._step_open = False
        part = RetryPart(
            **self._base(), attempt=attempt, error=error, time=CreatedTime(created=self._clock())
        )
        return frames + self._whole(part)

    # ---- the end -------------------------------------------------------------------------

    def close_open(self, tool_error: str) -> list[Frame]:
        """Bring every open part to its end without ending the message: streams end, tool
        calls still pending or running end in error with ``tool_error``."""
        frames = self._begin() + self._close_streams()
        now = self._clock()
        for call_id in self.open_calls():
            index = self._calls[call_id]
            part = self._current_tool(index)
            state = part.state
            assert isinstance(state, ToolStatePending | ToolStateRunning)
            start = state.time.start if isinstance(state, ToolStateRunning) else now
            failed = ToolStateError(
                input=state.input, error=tool_error, time=FinishedTime(start=start, end=now)
            )
            self._raw.pop(call_id, None)
            frames.append(self._complete(index, self._set_state(call_id, failed)))
        return frames

    def add_usage(self, tokens: Tokens) -> None:
        """Tokens no step reported (an estimate for a step stopped before its end)."""
        self._check_open()
        self.tokens = self.tokens.plus(inputs.tokens(tokens))

    def set_finish_reason(self, reason: str) -> None:
        self._check_open()
        self.finish_reason = reason

    def finish(self, *, error: MessageError | None = None) -> list[Frame]:
        """End the message: a streaming part ends, a tool call without a result ends in error.
        ``error`` is how an answer that still ended normally fell short (cut at the
        output limit)."""
        return self._end(error, UNFINISHED_TOOL)

    def fail(
        self,
        message: str | MessageError,
        *,
        aborted: bool = False,
        tool_error: str | None = None,
    ) -> list[Frame]:
        """End the message with an error: ``message`` (an unknown error, or with ``aborted``
        the user stopped it), or a named MessageError. Open tool calls end in error with
        ``tool_error`` (by default: aborted, or the message)."""
        error: MessageError
        if isinstance(message, str):
            error = aborted_error(message) if aborted else unknown_error(message)
            text = message
        else:
            error = message
            text = error_text(message)
        default = ABORTED_TOOL if aborted or error.name == "MessageAbortedError" else text
        return self._end(error, tool_error or default)

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
        frames = self.close_open(tool_error)
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


_OWN_CALLS = frozenset({"tool", "reasoning", "step-start", "step-finish", "retry", "patch"})
_RETRIED_TOOL = "The model call failed before this tool ran; it was retried"
