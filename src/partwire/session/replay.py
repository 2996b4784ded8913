"""Replay a recorded session against another model, as a regression test.

``start_replay`` makes a new session linked to the recorded one (``metadata.replayOf``)
and sends it each user prompt of the recording in turn, with the other model. With
``tools="recorded"`` the model's tool calls are answered from the recording where they
match one (the same tool with the same arguments, each recorded call once, in order);
a call the recording does not hold is answered with an error the model sees, and no
tool runs. With ``tools="live"`` the tools run, in a scratch git worktree of the
project (never in the user's files). Sessions recorded through ingest replay alike.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from partwire.errors import BadRequestError, ToolError
from partwire.schema.input import PromptInput, SessionCreateInput
from partwire.schema.message import MessageWithParts, UserMessage
from partwire.schema.part import CompactionPart, FilePart, ModelRef, TextPart, ToolPart
from partwire.schema.session import Session
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError
from partwire.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from partwire.runtime import Runtime
    from partwire.storage.base import Store

log = logging.getLogger(__name__)

ToolsMode = Literal["recorded", "live"]
NOT_RECORDED = (
    "This replay answers tool calls from a recording, and the recording has no {tool} "
    "call with these arguments: nothing was run. Recorded calls with other arguments "
    "cannot be answered."
)
_running: set[asyncio.Task[None]] = set()
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


async def start_replay(
    runtime: Runtime, source_id: str, model: ModelRef, tools: ToolsMode
) -> Session:
    """Make the replay session and start sending it the recording's prompts (in the
    background: follow its events, or wait with ``wait_replayed``)."""
    from partwire import worktrees
    from partwire.providers.registry import resolve_model

    source = await runtime.store.get_session(source_id)
    prompts = prompts_of(await runtime.store.list_messages(source_id))
    if not prompts:
        raise BadRequestError(f"session {source_id} has no prompt to replay", field="sessionID")
    project = runtime.project_of(source)
    resolve_model(model.provider_id, model.model_id, project.settings)  # a 400 if unknown
    if tools == "live":
        scratch = await asyncio.to_thread(
            worktrees.create, project.settings.project_dir, runtime.settings.data_dir, None
        )
        project = runtime.project(scratch.directory)
    name = f"{model.provider_id}/{model.model_id}"
    origin = {"sessionID": source_id, "model": name, "tools": tools, "prompts": len(prompts)}
    session = await project.sessions.create(
        SessionCreateInput(title=f"{source.title} (replay: {name})", metadata={"replayOf": origin})
    )
    task = asyncio.create_task(_send_all(project.loop, session.id, prompts, model))
    _running.add(task)
    task.add_done_callback(_running.discard)
    return session


async def _send_all(
    loop: Any, session_id: str, prompts: list[tuple[UserMessage, PromptInput]], model: ModelRef
) -> None:
    for recorded, body in prompts:
        sent = body.model_copy(update={"model": model, "agent": recorded.agent})
        try:
            await loop.prompt(session_id, sent)
        except Exception:  # deleted meanwhile, a store failure: the replay ends here
            log.exception("replay %s: a prompt failed; the replay stops", session_id)
            return
