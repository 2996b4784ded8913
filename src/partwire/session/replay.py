"""Replay a recorded session against another model, as a regression test: what a
replay session's loop needs (partwire/replays.py starts one).

A replay is a new session linked to the recorded one (``metadata.replayOf``) that is
sent each user prompt of the recording in turn, with the other model. With
``tools="recorded"`` the model's tool calls are answered from the recording where they
match one (the same tool with the same arguments, each recorded call once, in order);
a call the recording does not hold is answered with an error the model sees, and no
tool runs. With ``tools="live"`` the tools run, in a scratch git worktree of the
project (never in the user's files). Sessions recorded through ingest replay alike.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from partwire.errors import ToolError
from partwire.schema.input import PromptInput
from partwire.schema.message import MessageWithParts, UserMessage
from partwire.schema.part import CompactionPart, FilePart, TextPart, ToolPart
from partwire.schema.session import Session
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError
from partwire.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from partwire.storage.base import Store


ToolsMode = Literal["recorded", "live"]
NOT_RECORDED = (
    "This replay answers tool calls from a recording, and the recording has no {tool} "
    "call with these arguments: nothing was run. Recorded calls with other arguments "
    "cannot be answered."
)
ToolLookup = Callable[[str], Tool[Any] | None]


def call_key(tool: str, args: dict[str, Any]) -> tuple[str, str]:
    """A call's identity for matching: its tool and its arguments, key order aside."""
    return tool, json.dumps(args, sort_keys=True, ensure_ascii=False)


def finished_calls(history: list[MessageWithParts]) -> list[ToolPart]:
    """The tool calls of ``history`` that ended (completed or in error), in order."""
    return [
        part
        for entry in history
        for part in entry.parts
        if isinstance(part, ToolPart)
        and isinstance(part.state, ToolStateCompleted | ToolStateError)
    ]


@dataclass
class Recording:
    """The recorded calls not yet used, by call identity, oldest first."""

    unused: dict[tuple[str, str], deque[ToolPart]] = field(default_factory=dict)

    @classmethod
    def of(cls, recorded: list[ToolPart], answered: list[ToolPart]) -> Recording:
        """The calls of ``recorded`` less one for each call ``answered`` already used."""
        unused: dict[tuple[str, str], deque[ToolPart]] = defaultdict(deque)
        for part in recorded:
            unused[call_key(part.tool, part.state.input)].append(part)
        recording = cls(dict(unused))
        for part in answered:
            recording.take(part.tool, part.state.input)
        return recording

    def take(self, tool: str, args: dict[str, Any]) -> ToolPart | None:
        queue = self.unused.get(call_key(tool, args))
        return queue.popleft() if queue else None


@dataclass(frozen=True)
class RecordedTool(Tool[Any]):
    """A tool whose calls are answered from ``recording``, never run."""

    recording: Recording = field(default_factory=Recording)

    async def run(self, raw: dict[str, Any], ctx: ToolContext) -> ToolResult:
        found = self.recording.take(self.id, raw)
        if found is None:
            raise ToolError(NOT_RECORDED.format(tool=self.id))
        state = found.state
        if isinstance(state, ToolStateError):
            raise ToolError(state.error)
        assert isinstance(state, ToolStateCompleted)
        metadata = {**state.metadata, "replayed": found.id}
        return ToolResult(title=state.title, output=state.output, metadata=metadata)


def recorded_lookup(inner: ToolLookup, recording: Recording) -> ToolLookup:
    """``inner``'s tools, each answering from ``recording`` instead of running."""

    def lookup(name: str) -> Tool[Any] | None:
        tool = inner(name)
        if tool is None:
            return None
        return RecordedTool(tool.id, tool.description, tool.parameters, tool.execute, recording)

    return lookup


def replay_of(session: Session) -> dict[str, Any] | None:
    """``metadata.replayOf`` of a replay session: the recording and how it replays."""
    found = (session.metadata or {}).get("replayOf")
    return found if isinstance(found, dict) else None


async def recording_for(store: Store, session: Session) -> Recording | None:
    """For a session replaying with recorded tools: the recorded calls it has not used."""
    replay = replay_of(session)
    if replay is None or replay.get("tools") != "recorded":
        return None
    source = await store.list_messages(str(replay["sessionID"]))
    answered = finished_calls(await store.list_messages(session.id))
    return Recording.of(finished_calls(source), answered)


def prompts_of(history: list[MessageWithParts]) -> list[tuple[UserMessage, PromptInput]]:
    """Each user prompt of a recording, as it can be sent again: its text and files
    (synthetic text, compaction requests and prompts without content left out)."""
    prompts: list[tuple[UserMessage, PromptInput]] = []
    for entry in history:
        info = entry.info
        if not isinstance(info, UserMessage) or any(
            isinstance(p, CompactionPart) for p in entry.parts
        ):
            continue
        parts: list[dict[str, Any]] = []
        for part in entry.parts:
            if isinstance(part, TextPart) and not part.synthetic and part.text.strip():
                parts.append({"type": "text", "text": part.text})
            elif isinstance(part, FilePart):
                parts.append(
                    {"type": "file", "mime": part.mime, "url": part.url, "filename": part.filename}
                )
        if parts:
            prompts.append((info, PromptInput.model_validate({"parts": parts})))
    return prompts
