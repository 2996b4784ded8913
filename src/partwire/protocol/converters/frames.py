"""Part frames (what a StreamingMessageBuilder returns, ``?parts=partwire`` of
``GET /session/{id}/stream``) → ingest events: what a builder emits in one process can be
posted to another, where the same calls are made again.

One message's frames, in order. A ``message_start`` first stands for the ingest start
line (its role and message id); parts map to the builder's calls by kind: text and
reasoning stream (a part's end is ``text-end``), a tool call starts, takes its arguments
and its result, files and steps are whole at once. Part kinds the ingest vocabulary has no
call for (patches, snapshots, agents, subtasks, retries, compaction) are refused, as is a
frame that names a part it never started.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from partwire.schema import ingest
from partwire.schema.frames import (
    MessageComplete,
    MessageStart,
    PartComplete,
    PartDelta,
    PartStart,
    PartUpdate,
    StreamReset,
    frame_adapter,
)
from partwire.schema.ingest import IngestEvent
from partwire.schema.message import error_text
from partwire.schema.part import (
    FilePart,
    Part,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
)
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending

FRAME_TYPES = frozenset(
    {"message_start", "part_start", "part_delta", "part_update", "part_complete",
     "message_complete", "reset"}
)  # fmt: skip


@dataclass
class _Part:
    kind: str  # text | reasoning | tool | whole
    sent: int = 0  # text and reasoning: characters sent
    call_id: str = ""
    tool: str = ""
    status: str = "pending"  # tool: pending | running | done


@dataclass
class _State:
    parts: dict[int, _Part] = field(default_factory=dict)
    streaming: int | None = None  # the text or reasoning part streaming now


class FramesConverter:
    def __init__(self) -> None:
        self._state = _State()
        self.message_id: str | None = None

    def feed(self, item: object) -> list[IngestEvent]:
        """One frame (a parsed one, or its JSON object); ValueError when it does not fit."""
        frame = item if isinstance(item, _FRAME_CLASSES) else frame_adapter.validate_python(item)
        match frame:
            case MessageStart():
                if self.message_id not in (None, frame.message_id):
                    raise ValueError(f"a second message ({frame.message_id}) in one ingest")
                self.message_id = frame.message_id
                return []
            case StreamReset():
                raise ValueError("a reset frame cannot be ingested: send one message's frames")
            case MessageComplete():
                error = frame.message.error
                return [ingest.StreamError(message=error_text(error))] if error else []
            case PartStart():
                return self._start(frame.part_index, frame.part)
            case PartDelta():
                return self._delta(frame)
            case PartUpdate():
                return self._tool(self._known(frame.part_index), frame.part)
            case PartComplete():
                return self._complete(frame.part_index, frame.part)
        return []

    def end(self) -> list[IngestEvent]:
        return []

    def _known(self, index: int) -> _Part:
        part = self._state.parts.get(index)
        if part is None:
            raise ValueError(f"part {index} was never started (part_start comes first)")
        return part

    def _start(self, index: int, part: Part) -> list[IngestEvent]:
        if index in self._state.parts:
            raise ValueError(f"part {index} was started already")
        out = self._end_streaming()
        if isinstance(part, TextPart | ReasoningPart):
            self._state.parts[index] = _Part(part.type)
            self._state.streaming = index
            return out + self._text(self._state.parts[index], part.text)
        if isinstance(part, ToolPart):
            known = self._state.parts[index] = _Part("tool", call_id=part.call_id, tool=part.tool)
            out.append(ingest.ToolCallStart(call_id=part.call_id, tool=part.tool))
            return out + self._tool(known, part)
        self._state.parts[index] = _Part("whole")
        return [*out, _whole(part)]

    def _delta(self, frame: PartDelta) -> list[IngestEvent]:
        part = self._known(frame.part_index)
        if frame.delta is not None and part.kind in ("text", "reasoning"):
            part.sent += len(frame.delta)
            return [_piece(part.kind, frame.delta)] if frame.delta else []
        if frame.args_delta is not None and part.kind == "tool" and part.status == "pending":
            return [ingest.ToolArgsDelta(call_id=part.call_id, delta=frame.args_delta)]
        raise ValueError(f"part_delta does not fit part {frame.part_index} ({part.kind})")

    def _complete(self, index: int, part: Part) -> list[IngestEvent]:
        known = self._known(index)
        if isinstance(part, TextPart | ReasoningPart):
            out = self._text(known, part.text)
            if self._state.streaming == index:
                out += self._end_streaming()
            return out
        if isinstance(part, ToolPart):
            return self._tool(known, part)
        return []

    def _text(self, part: _Part, text: str) -> list[IngestEvent]:
        """What ``text`` (the part's whole text so far) adds to what was sent."""
        grown = text[part.sent :]
        part.sent = max(part.sent, len(text))
        return [_piece(part.kind, grown)] if grown else []

    def _end_streaming(self) -> list[IngestEvent]:
        if self._state.streaming is None:
            return []
        self._state.streaming = None
        return [ingest.TextEnd()]

    def _tool(self, known: _Part, part: Part) -> list[IngestEvent]:
        if not isinstance(part, ToolPart) or known.kind != "tool":
            raise ValueError("a tool frame for a part that is not a tool call")
        state = part.state
        out: list[IngestEvent] = []
        if isinstance(state, ToolStatePending):
            if state.raw and known.status == "pending":
                out.append(ingest.ToolArgsDelta(call_id=part.call_id, delta=state.raw))
            return out
        if known.status == "pending":
            known.status = "running"
            out.append(ingest.ToolCall(call_id=part.call_id, tool=part.tool, input=state.input))
        if isinstance(state, ToolStateCompleted | ToolStateError) and known.status == "running":
            known.status = "done"
            failed = isinstance(state, ToolStateError)
            out.append(
                ingest.ToolResult(
                    call_id=part.call_id,
                    output=state.error if isinstance(state, ToolStateError) else state.output,
                    is_error=failed,
                    title=None if isinstance(state, ToolStateError) else state.title,
                    metadata=state.metadata or None,
                )
            )
        return out


def _piece(kind: str, text: str) -> IngestEvent:
    return ingest.TextDelta(delta=text) if kind == "text" else ingest.ReasoningDelta(delta=text)


def _whole(part: Part) -> IngestEvent:
    if isinstance(part, FilePart):
        return ingest.FileAdded(mime=part.mime, url=part.url, filename=part.filename)
    if isinstance(part, StepStartPart):
        return ingest.StepStart()
    if isinstance(part, StepFinishPart):
        return ingest.StepFinish(tokens=part.tokens, cost=part.cost, reason=part.reason)
    raise ValueError(f"a {part.type} part cannot be ingested")


_FRAME_CLASSES = (
    MessageStart, PartStart, PartDelta, PartUpdate, PartComplete, MessageComplete, StreamReset,
)  # fmt: skip
