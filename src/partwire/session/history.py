"""Stored messages → the provider-neutral turns a model request carries."""

from __future__ import annotations

from partwire.providers.stream import (
    AssistantTurn,
    FileRef,
    ReasoningRecord,
    ToolCallRecord,
    ToolResultTurn,
    Turn,
    UserTurn,
)
from partwire.schema.message import AssistantMessage, MessageWithParts
from partwire.schema.part import (
    AgentPart,
    FilePart,
    Part,
    ReasoningPart,
    RetryPart,
    TextPart,
    ToolPart,
)
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError
from partwire.session.agents import AGENTS
from partwire.session.compaction import CLEARED, compaction_part, filter_compacted
from partwire.session.mentions import is_local_file


def _user_text(entry: MessageWithParts) -> str:
    lines = [p.text for p in entry.parts if isinstance(p, TextPart) and not p.ignored and p.text]
    for part in entry.parts:
        if not isinstance(part, AgentPart):
            continue
        agent = AGENTS.get(part.name)
        if agent is not None and agent.mode != "primary":
            lines.append(
                "Use the above message and context to write a prompt and call the task tool "
                f"with subagent_type: {part.name}"
            )
    return "\n".join(lines)


COMPACTION_QUESTION = "What did we do so far?"


def _user_turn(entry: MessageWithParts) -> UserTurn:
    files = tuple(
        FileRef(mime=p.mime, url=p.url, filename=p.filename)
        for p in entry.parts
        if isinstance(p, FilePart) and not is_local_file(p)  # its text is a synthetic part
    )
    return UserTurn(_user_text(entry), files)


def since_last_retry(parts: list[Part]) -> list[Part]:
    """The parts of the attempt that counted: a failed attempt's text and tool calls stay
    in the message for people to see, but never reach the model again."""
    retries = [i for i, part in enumerate(parts) if isinstance(part, RetryPart)]
    return parts[retries[-1] + 1 :] if retries else parts


def _assistant_turns(entry: MessageWithParts) -> list[Turn]:
    parts = since_last_retry(entry.parts)
    text = "".join(p.text for p in parts if isinstance(p, TextPart))
    reasoning = tuple(
        ReasoningRecord(p.text, p.metadata) for p in parts if isinstance(p, ReasoningPart)
    )
    calls: list[ToolCallRecord] = []
    results: list[Turn] = []
    for part in parts:
        if not isinstance(part, ToolPart):
            continue
        state = part.state
        if isinstance(state, ToolStateCompleted):
            output = CLEARED if state.time.compacted is not None else state.output
            results.append(ToolResultTurn(part.call_id, part.tool, output))
        elif isinstance(state, ToolStateError):
            results.append(ToolResultTurn(part.call_id, part.tool, state.error, is_error=True))
        else:
            continue
        calls.append(ToolCallRecord(part.call_id, part.tool, state.input))
    return [AssistantTurn(text, tuple(calls), reasoning), *results]


def to_turns(history: list[MessageWithParts]) -> tuple[Turn, ...]:
    """The turns a model sees: from the last compaction on, old tool outputs cleared."""
    turns: list[Turn] = []
    for entry in filter_compacted(history):
        if isinstance(entry.info, AssistantMessage):
            turns.extend(_assistant_turns(entry))
        elif compaction_part(entry) is not None:
            turns.append(UserTurn(COMPACTION_QUESTION))
        else:
            turns.append(_user_turn(entry))
    return tuple(turns)
