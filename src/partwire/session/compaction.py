"""Compaction: keep the history the model sees inside its context window.

When a step's tokens pass the model's usable context, the loop stores a user
message holding a compaction part; the next decision runs a summary step on
it (an assistant message with ``summary: true``). From then on the history a
model sees starts at that compaction message: its summary stands in for
everything before. Before summarizing, the outputs of old tool calls are
pruned (``time.compacted`` is set and the model sees a placeholder).
"""

from __future__ import annotations

from partwire import ids
from partwire.clock import now_ms
from partwire.providers.base import LanguageModel
from partwire.schema.message import AssistantMessage, MessageWithParts, UserMessage
from partwire.schema.part import CompactionPart, ToolPart
from partwire.schema.tool_state import ToolStateCompleted
from partwire.session.writer import save_part
from partwire.storage.base import Store

OUTPUT_RESERVE = 20_000  # tokens kept free for the answer
PRUNE_PROTECT = 40_000  # tokens of recent tool output that are never pruned
PRUNE_MINIMUM = 20_000  # prune only when it frees at least this much
PROTECTED_TURNS = 2  # the tool calls answering the last N user messages are kept
CLEARED = "[Old tool result content cleared]"


def usable_context(model: LanguageModel) -> int:
    return model.context_limit - min(OUTPUT_RESERVE, model.context_limit // 5)


def overflows(message: AssistantMessage, model: LanguageModel) -> bool:
    tokens = message.tokens
    used = tokens.input + tokens.cache.read + tokens.output
    return message.error is None and used > usable_context(model)


def compaction_part(message: MessageWithParts) -> CompactionPart | None:
    for part in message.parts:
        if isinstance(part, CompactionPart):
            return part
    return None


def summary_for(history: list[MessageWithParts], request_id: str) -> AssistantMessage | None:
    """The finished summary that answers the compaction request ``request_id``."""
    for entry in history:
        info = entry.info
        if (
            isinstance(info, AssistantMessage)
            and info.summary
            and info.parent_id == request_id
            and info.time.completed is not None
            and info.error is None
        ):
            return info
    return None


def filter_compacted(history: list[MessageWithParts]) -> list[MessageWithParts]:
    """The history from the newest compaction that has a summary on (opencode's filterCompacted)."""
    for index in range(len(history) - 1, -1, -1):
        entry = history[index]
        is_request = isinstance(entry.info, UserMessage) and compaction_part(entry) is not None
        if is_request and summary_for(history, entry.info.id) is not None:
            return history[index:]
    return history


def pending_compaction(history: list[MessageWithParts]) -> MessageWithParts | None:
    """The newest user message, if it asks for a compaction nobody has answered yet."""
    for entry in reversed(history):
        if isinstance(entry.info, UserMessage):
            if compaction_part(entry) is not None and summary_for(history, entry.info.id) is None:
                failed = any(
                    isinstance(e.info, AssistantMessage) and e.info.parent_id == entry.info.id
                    for e in history
                )
                return None if failed else entry
            return None
    return None


def estimate_tokens(chars: int) -> int:
    """Tokens in ``chars`` characters of text, estimated (about four a token)."""
    return chars // 4


def _estimate(text: str) -> int:
    return estimate_tokens(len(text))


async def prune(store: Store, history: list[MessageWithParts]) -> int:
    """Mark old completed tool outputs compacted; returns how many parts were pruned."""
    turns = 0
    protected = 0
    candidates: list[ToolPart] = []
    for entry in reversed(history):
        if isinstance(entry.info, UserMessage):
            turns += 1
            continue
        if turns < PROTECTED_TURNS:
            continue
        for part in reversed(entry.parts):
            if not isinstance(part, ToolPart) or not isinstance(part.state, ToolStateCompleted):
                continue
            if part.state.time.compacted is not None:
                break
            size = _estimate(part.state.output)
            if protected < PRUNE_PROTECT:
                protected += size
                continue
            candidates.append(part)
    freed = sum(
        _estimate(p.state.output) for p in candidates if isinstance(p.state, ToolStateCompleted)
    )
    if freed < PRUNE_MINIMUM:
        return 0
    now = now_ms()
    for part in candidates:
        assert isinstance(part.state, ToolStateCompleted)
        state = part.state.model_copy(
            update={"time": part.state.time.model_copy(update={"compacted": now})}
        )
        await save_part(store, part.model_copy(update={"state": state}), time=now)
    return len(candidates)


def new_compaction_part(
    session_id: str, message_id: str, *, auto: bool, overflow: bool
) -> CompactionPart:
    return CompactionPart(
        id=ids.part_id(), session_id=session_id, message_id=message_id, auto=auto, overflow=overflow
    )
