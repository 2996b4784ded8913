"""Part frames as seed 003's frontend reads them: a pure fold over partwire's own frames.

The seed's frontend switches on the SSE event's name and reads the data as the part's
fields::

    case "part_start":    message.parts[data.partIndex] = { type: data.type, ...data.initialData }
    case "part_delta":    part.text += data.delta   (text)
                          part.args = JSON.parse(part.argsText + data.argsDelta)   (tool-call)
    case "part_complete": message.parts[data.partIndex] = data.part

so every frame here is ``(name, data)`` and ``data.type`` is the *part's* type. Parts are
the seed's (the AI SDK's) kinds:

- text and reasoning → ``text`` / ``reasoning`` parts, ``{type, text}``, their text
  streamed as ``delta``;
- a tool call → a ``tool-call`` part ``{type, toolCallId, toolName, args}``. The seed's
  frontend parses ``argsText + argsDelta`` and never grows ``argsText`` (it starts as
  ``""``), so each ``argsDelta`` here is the arguments so far, whole: sent while they
  stream whenever what has arrived parses as JSON, and once more when they are complete;
- its result → a ``tool-result`` part right after it is known, at the next free index:
  ``{type, toolCallId, toolName, result, isError}``;
- partwire's other parts (steps, files, patches, snapshots, agents, subtasks, retries,
  compaction) have no seed kind and are left out (``?parts=partwire`` has them all).

``message_complete`` carries ``{id, role, content, parts}`` with ``content`` built as the
seed's ``build()`` builds it: the text parts joined, each tool result as
``"\\n\\nTool result: <result>\\n"``, stripped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from partwire.schema.base import JSONObject
from partwire.schema.frames import (
    Frame,
    MessageComplete,
    MessageStart,
    PartComplete,
    PartDelta,
    PartStart,
    PartUpdate,
    StreamReset,
    arguments_object,
    seed_content,
    seed_parts,
)
from partwire.schema.message import MessageWithParts
from partwire.schema.part import Part, ReasoningPart, TextPart, ToolPart
from partwire.schema.tool_state import ToolStatePending

SeedFrame = tuple[str, JSONObject]  # the SSE event's name, and its data


def seed_message(message: MessageWithParts) -> JSONObject:
    """A stored message as the seed's ``build()`` returns it."""
    parts = [seed for part in message.parts for seed in seed_parts(part)]
    return _built(message.info.id, message.info.role, parts)


def _built(message_id: str, role: str, parts: list[JSONObject]) -> JSONObject:
    return {"id": message_id, "role": role, "content": seed_content(parts), "parts": parts}


@dataclass
class _Message:
    role: str
    indexes: dict[int, int] = field(default_factory=dict)  # partwire index → seed index
    results: set[int] = field(default_factory=set)  # partwire indexes whose result is sent
    args: dict[int, str] = field(default_factory=dict)  # the arguments last sent, as JSON
    raw: dict[int, list[str]] = field(default_factory=dict)  # a pending call's raw arguments
    done: dict[int, JSONObject] = field(default_factory=dict)  # seed index → final part
    count: int = 0  # seed parts started


class SeedFrames:
    """partwire frames (one session's, in order) → seed 003 frames."""

    def __init__(self) -> None:
        self._messages: dict[str, _Message] = {}

    def fold(self, frames: list[Frame]) -> list[SeedFrame]:
        out: list[SeedFrame] = []
        for frame in frames:
            out += self._one(frame)
        return out

    def _one(self, frame: Frame) -> list[SeedFrame]:
        if isinstance(frame, PartDelta):  # a streamed token: most frames, checked first
            message = self._messages.get(frame.message_id)
            return [] if message is None else self._delta(frame, message)
        match frame:
            case StreamReset():
                self._messages.clear()
                return [("reset", {"reason": frame.reason})]
            case MessageStart():
                self._messages[frame.message_id] = _Message(frame.role)
                return [("message_start", {"messageId": frame.message_id, "role": frame.role})]
            case MessageComplete():
                return self._complete(frame)
        message = self._messages.get(frame.message_id)
        if message is None:
            return []
        match frame:
            case PartStart():
                return self._start(frame.message_id, message, frame.part_index, frame.part)
            case PartUpdate():
                return self._arguments(frame.message_id, message, frame.part_index, frame.part)
            case PartComplete():
                return self._end(frame.message_id, message, frame.part_index, frame.part)
        return []

    def _start(self, message_id: str, message: _Message, index: int, part: Part) -> list[SeedFrame]:
        if isinstance(part, TextPart | ReasoningPart):
            initial: JSONObject = {"text": part.text}
        elif isinstance(part, ToolPart):
            initial = {
                "toolCallId": part.call_id,
                "toolName": part.tool,
                "argsText": "",
                "args": {},
            }
            if isinstance(part.state, ToolStatePending):
                message.raw[index] = [part.state.raw]
        else:
            return []
        seed_type = "tool-call" if isinstance(part, ToolPart) else part.type
        message.indexes[index] = at = self._next(message)
        start: SeedFrame = (
            "part_start",
            {"messageId": message_id, "partIndex": at, "type": seed_type, "initialData": initial},
        )
        return [start, *self._arguments(message_id, message, index, part)]

    def text_delta_index(self, message_id: str, index: int) -> int | None:
        """The seed index a text ``part_delta`` of partwire part ``index`` goes to (None:
        the seed shows no such part). A text delta changes nothing here: its seed frame
        is ``("part_delta", {"messageId", "partIndex": <this>, "delta"})``."""
        message = self._messages.get(message_id)
        return None if message is None else message.indexes.get(index)

    def _delta(self, frame: PartDelta, message: _Message) -> list[SeedFrame]:
        at = message.indexes.get(frame.part_index)
        if at is None:
            return []
        head: JSONObject = {"messageId": frame.message_id, "partIndex": at}
        if frame.delta is not None:
            return [("part_delta", {**head, "delta": frame.delta})]
        pieces = message.raw.setdefault(frame.part_index, [])
        pieces.append(frame.args_delta or "")
        if not pieces[-1].rstrip().endswith("}"):
            return []  # an object cannot parse yet: spare the join and parse on every delta
        arguments = arguments_object("".join(pieces))
        return self._send_arguments(frame.message_id, message, frame.part_index, arguments)

    def _arguments(
        self, message_id: str, message: _Message, index: int, part: Part
    ) -> list[SeedFrame]:
        """The call's arguments, when they parse and differ from those last sent."""
        if not isinstance(part, ToolPart):
            return []
        state = part.state
        if isinstance(state, ToolStatePending) and not state.input:
            return self._send_arguments(message_id, message, index, arguments_object(state.raw))
        return self._send_arguments(message_id, message, index, state.input)

    def _send_arguments(
        self, message_id: str, message: _Message, index: int, arguments: JSONObject | None
    ) -> list[SeedFrame]:
        at = message.indexes.get(index)
        if arguments is None or at is None:
            return []
        whole = json.dumps(arguments, separators=(",", ":"))
        if message.args.get(index) == whole:
            return []
        message.args[index] = whole
        return [("part_delta", {"messageId": message_id, "partIndex": at, "argsDelta": whole})]

    def _end(self, message_id: str, message: _Message, index: int, part: Part) -> list[SeedFrame]:
        out: list[SeedFrame] = []
        if index not in message.indexes:
            out += self._start(message_id, message, index, part)
        at = message.indexes.get(index)
        seeds = seed_parts(part)
        if at is None or not seeds:
            return out
        out += self._arguments(message_id, message, index, part)
        message.done[at] = seeds[0]
        out.append(("part_complete", {"messageId": message_id, "partIndex": at, "part": seeds[0]}))
        if len(seeds) > 1 and index not in message.results:
            message.results.add(index)
            result = seeds[1]
            after = self._next(message)
            initial = {k: v for k, v in result.items() if k != "type"}
            head: JSONObject = {"messageId": message_id, "partIndex": after}
            message.done[after] = result
            out.append(("part_start", {**head, "type": "tool-result", "initialData": initial}))
            out.append(("part_complete", {**head, "part": result}))
        return out

    def _complete(self, frame: MessageComplete) -> list[SeedFrame]:
        """The message as built, its parts in the order the client got them (a result
        takes the next free index when it comes: after a parallel call, not beside its
        own)."""
        built = frame.message
        followed = self._messages.get(built.id)
        if followed is not None and len(followed.done) == followed.count:
            parts = [followed.done[at] for at in sorted(followed.done)]
        else:
            parts = [seed for part in built.parts for seed in seed_parts(part)]
        return [("message_complete", {"message": _built(built.id, built.role, parts)})]

    @staticmethod
    def _next(message: _Message) -> int:
        message.count += 1
        return message.count - 1
