"""The part-frame view of a session: its events → part frames, and a reducer of frames.

``SessionFrames`` turns one session's events (message.updated, message.part.updated,
message.part.delta) into frames. A part is numbered by its first appearance in its
message; it starts with ``part_start`` and, once final (text or reasoning with an end
time, a tool call completed or in error, any other part at once), ends with
``part_complete``; a change in between is ``part_update``, or ``part_delta`` when it
only appends (text deltas, a pending tool call's raw arguments). An assistant message
completes with its ``time.completed``; a user message, when the next message begins.
Removals (message.removed, message.part.removed) have no frame and are skipped.

``FrameReducer`` keeps every message it has seen frames for; it trusts nothing but the
frames' own content (a ``message_complete`` gives how the message ended, never its parts),
so reducing a builder's frames and calling the builder's ``build()`` must agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from partwire.schema.base import Tokens
from partwire.schema.event import Event, MessageInfo, PartDeltaProps, PartUpdatedProps
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
    StreamReset,
    content_of,
)
from partwire.schema.message import AssistantMessage, Message, MessageError, MessageWithParts
from partwire.schema.part import Part, ReasoningPart, TextPart, ToolPart, part_finished
from partwire.schema.tool_state import ToolStatePending


class FrameError(ValueError):
    """A frame that does not fit what came before it (an unknown message or part index)."""


@dataclass
class _Message:
    role: Role
    parts: list[Part] = field(default_factory=list)
    finish: str | None = None
    error: MessageError | None = None
    complete: bool = False
    # text streamed into a part since it was last copied, by part index: a delta is an
    # append, O(1), and the part is copied with its text once, when it is read
    grown: dict[int, list[str]] = field(default_factory=dict)

    def settled(self) -> list[Part]:
        """The parts, each with every delta streamed into it."""
        for index, chunks in self.grown.items():
            part = self.parts[index]
            assert isinstance(part, TextPart | ReasoningPart)
            self.parts[index] = part.model_copy(update={"text": part.text + "".join(chunks)})
        self.grown.clear()
        return self.parts


class FrameReducer:
    def __init__(self) -> None:
        self.messages: dict[str, _Message] = {}

    def apply(self, frame: Frame) -> None:
        if isinstance(frame, PartDelta):  # a streamed token: most frames, checked first
            self._delta(frame)
        elif isinstance(frame, StreamReset):
            self.messages.clear()
        elif isinstance(frame, MessageStart):
            self.messages.setdefault(frame.message_id, _Message(frame.role))
        elif isinstance(frame, MessageComplete):
            state = self._state(frame.message.id)
            state.finish, state.error = frame.message.finish, frame.message.error
            state.complete = True
        elif isinstance(frame, PartStart):
            parts = self._state(frame.message_id).parts
            if frame.part_index != len(parts):
                raise FrameError(f"part_start at index {frame.part_index}: expected {len(parts)}")
            parts.append(frame.part)
        else:  # a part_update or part_complete
            self._check_index(frame.message_id, frame.part_index)
            state = self._state(frame.message_id)
            state.parts[frame.part_index] = frame.part
            state.grown.pop(frame.part_index, None)

    def grow(self, message_id: str, index: int, text: str) -> None:
        """Apply a text ``part_delta``: part ``index`` of the message grows by ``text``."""
        message = self._state(message_id)
        parts = message.parts
        if not 0 <= index < len(parts):
            raise FrameError(f"message {message_id} has no part {index}")
        if not isinstance(parts[index], TextPart | ReasoningPart):
            raise FrameError(f"part_delta does not fit part {index} ({parts[index].type})")
        message.grown.setdefault(index, []).append(text)

    def _delta(self, frame: PartDelta) -> None:
        if frame.delta is not None:
            self.grow(frame.message_id, frame.part_index, frame.delta)
            return
        message = self._state(frame.message_id)
        parts = message.parts
        if not 0 <= frame.part_index < len(parts):
            raise FrameError(f"message {frame.message_id} has no part {frame.part_index}")
        part = parts[frame.part_index]
        if (
            frame.args_delta is not None
            and isinstance(part, ToolPart)
            and isinstance(part.state, ToolStatePending)
        ):
            state = ToolStatePending(raw=part.state.raw + frame.args_delta)
            parts[frame.part_index] = part.model_copy(update={"state": state})
        else:
            raise FrameError(f"part_delta does not fit part {frame.part_index} ({part.type})")

    def _state(self, message_id: str) -> _Message:
        state = self.messages.get(message_id)
        if state is None:
            raise FrameError(f"a frame for message {message_id} before its message_start")
        return state

    def _check_index(self, message_id: str, index: int) -> None:
        if not 0 <= index < len(self._state(message_id).parts):
            raise FrameError(f"message {message_id} has no part {index}")

    def part(self, message_id: str, index: int) -> Part:
        """Part ``index`` of the message, as the frames so far made it."""
        return self._state(message_id).settled()[index]

    def message(self, message_id: str) -> BuiltMessage:
        state = self._state(message_id)
        parts = state.settled()
        tokens, cost = Tokens(), 0.0
        for part in parts:
            if part.type == "step-finish":
                tokens, cost = tokens.plus(part.tokens), cost + part.cost
        return BuiltMessage(
            id=message_id,
            role=state.role,
            parts=list(parts),
            content=content_of(parts),
            tokens=tokens,
            cost=cost,
            finish=state.finish,
            error=state.error,
        )


def reduce_frames(frames: Iterable[Frame]) -> BuiltMessage:
    """The one message ``frames`` describe."""
    reducer = FrameReducer()
    for frame in frames:
        reducer.apply(frame)
    if len(reducer.messages) != 1:
        raise FrameError(f"expected frames of one message, got {len(reducer.messages)}")
    return reducer.message(next(iter(reducer.messages)))


class SessionFrames:
    """One session's events → part frames. Feed it events in log order."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._clear()

    def _clear(self) -> None:
        self.reducer = FrameReducer()
        self._index: dict[str, dict[str, int]] = {}  # message id → part id → part index
        self._final: set[tuple[str, int]] = set()
        self._complete: set[str] = set()
        self._open_user: list[str] = []

    def frames(self, event: Event) -> list[Frame]:
        props = event.properties
        if isinstance(props, PartDeltaProps):  # a streamed token: most events, checked first
            if props.session_id != self.session_id:
                return []
            return self._emit(self._delta(props))
        if event.session_id != self.session_id:
            return []
        match props:
            case PartUpdatedProps() as updated:
                return self._emit(self._part(updated.part))
            case MessageInfo() as message:
                return self._emit(self._message(message.info))
        return []

    def snapshot(self, messages: list[MessageWithParts], reason: str) -> list[Frame]:
        """A reset, then the frames that bring a client to ``messages`` (as stored)."""
        self._clear()
        frames: list[Frame] = [StreamReset(reason=reason)]
        for entry in messages:
            info = entry.info
            opening = info
            if isinstance(info, AssistantMessage) and info.time.completed is not None:
                unfinished = info.time.model_copy(update={"completed": None})
                opening = info.model_copy(update={"time": unfinished})
            frames += self._emit(self._message(opening))
            for part in entry.parts:
                frames += self._emit(self._part(part))
            if opening is not info:
                frames += self._emit(self._message(info))
        return frames

    def _emit(self, frames: list[Frame]) -> list[Frame]:
        for frame in frames:
            self.reducer.apply(frame)
        return frames

    def _message(self, info: Message) -> list[Frame]:
        frames: list[Frame] = []
        if info.id not in self._index:
            frames += self._close_users()
            self._index[info.id] = {}
            frames.append(MessageStart(message_id=info.id, role=info.role))
            if info.role == "user":
                self._open_user.append(info.id)
        if (
            isinstance(info, AssistantMessage)
            and info.time.completed is not None
            and info.id not in self._complete
        ):
            frames.append(self._completion(info.id, info.finish, info.error))
        return frames

    def _close_users(self) -> list[Frame]:
        closing, self._open_user = self._open_user, []
        return [self._completion(message_id, None, None) for message_id in closing]

    def _completion(
        self, message_id: str, finish: str | None, error: MessageError | None
    ) -> MessageComplete:
        self._complete.add(message_id)
        built = self.reducer.message(message_id) if message_id in self.reducer.messages else None
        parts = built.parts if built is not None else []
        role = built.role if built is not None else "assistant"
        message = BuiltMessage(
            id=message_id,
            role=role,
            parts=parts,
            content=content_of(parts),
            tokens=built.tokens if built is not None else Tokens(),
            cost=built.cost if built is not None else 0.0,
            finish=finish,
            error=error,
        )
        return MessageComplete(message=message)

    def _part(self, part: Part) -> list[Frame]:
        indexes = self._index.get(part.message_id)
        if indexes is None or part.message_id in self._complete:
            return []  # a part of a message this stream never began, or one already ended
        index = indexes.get(part.id)
        final = part_finished(part)
        if index is None:
            index = indexes[part.id] = len(indexes)
            frames: list[Frame] = [
                PartStart(message_id=part.message_id, part_index=index, part=part)
            ]
        else:
            frames = [self._change(part, index, final)]
        if final:
            self._final.add((part.message_id, index))
            if isinstance(frames[-1], PartStart):
                frames.append(PartComplete(message_id=part.message_id, part_index=index, part=part))
        return frames

    def _change(self, part: Part, index: int, final: bool) -> Frame:
        if final:
            return PartComplete(message_id=part.message_id, part_index=index, part=part)
        before = self.reducer.part(part.message_id, index)
        if (
            isinstance(part, ToolPart)
            and isinstance(part.state, ToolStatePending)
            and isinstance(before, ToolPart)
            and isinstance(before.state, ToolStatePending)
            and part.state.raw.startswith(before.state.raw)
            and part.state.input == before.state.input
        ):
            grown = part.state.raw[len(before.state.raw) :]
            return PartDelta(message_id=part.message_id, part_index=index, args_delta=grown)
        return PartUpdate(message_id=part.message_id, part_index=index, part=part)

    def grown(self, props: PartDeltaProps) -> int | None:
        """A streamed token's way without a frame object (one per token per stream): the
        index of the part ``props`` grows, folded in as its ``part_delta`` frame would
        be; None when it makes no frame. ``frames`` of the same event makes that frame."""
        if props.session_id != self.session_id:
            return None
        index = self._delta_index(props)
        if index is not None:
            self.reducer.grow(props.message_id, index, props.delta)
        return index

    def _delta(self, props: PartDeltaProps) -> list[Frame]:
        index = self._delta_index(props)
        if index is None:
            return []
        return [PartDelta(message_id=props.message_id, part_index=index, delta=props.delta)]

    def _delta_index(self, props: PartDeltaProps) -> int | None:
        index = self._index.get(props.message_id, {}).get(props.part_id)
        if index is None or props.field != "text" or (props.message_id, index) in self._final:
            return None
        return index
