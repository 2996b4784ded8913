"""Seed 004's ConversationBlocks of partwire's parts and stored messages.

``block_of`` is the block a part is (text → ``assistant_text`` or ``user_message``,
reasoning → ``thinking``, a tool call → ``tool_use``, retries and compaction → ``system``),
``result_of`` a finished call's ``tool_result``, ``error_block`` the ``error`` of a message
that ended with one. A sub-agent call (its metadata names a child session; the task
tool's) is a ``subagent`` block instead. ``blocks_of`` and ``conversation_of`` give what the
shared reducer holds after a session's stored messages; timestamps are the times the store
keeps (a part's start, else its message's creation; a result's end), so a fold of the live
events (protocol/blocks.py) equals them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from partwire.protocol.session_state import ConversationState, SubagentState
from partwire.schema.base import WireModel
from partwire.schema.message import AssistantMessage, Message, MessageWithParts, error_text
from partwire.schema.part import (
    CompactionPart,
    FilePart,
    Part,
    ReasoningPart,
    RetryPart,
    TextPart,
    ToolPart,
    part_finished,
)
from partwire.schema.session_events import (
    AssistantTextBlock,
    ErrorBlock,
    ImageContent,
    ImageSource,
    SubagentBlock,
    SubagentCompleted,
    SubagentSpawned,
    SystemBlock,
    TextContent,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessageBlock,
    iso,
)


def _meta(part: Part) -> dict[str, Any]:
    return {"messageId": part.message_id}


def block_of(part: Part, role: str, created: int, model: str | None) -> WireModel | None:
    """The block a part is (None: a part that is no block). ``created``: its message's
    creation time; ``model``: the model that wrote it (assistant text)."""
    if isinstance(part, TextPart | ReasoningPart):
        at = iso(part.time.start if part.time is not None else created)
        status = "complete" if part_finished(part) or role == "user" else "pending"
        if role == "user":
            if isinstance(part, ReasoningPart) or part.synthetic or part.ignored:
                return None
            return UserMessageBlock(
                id=part.id, timestamp=at, status="complete", metadata=_meta(part),
                content=part.text,
            )  # fmt: skip
        if isinstance(part, ReasoningPart):
            return ThinkingBlock(
                id=part.id, timestamp=at, status=status, metadata=_meta(part), content=part.text
            )
        return AssistantTextBlock(
            id=part.id, timestamp=at, status=status, metadata=_meta(part), content=part.text,
            model=model,
        )  # fmt: skip
    if isinstance(part, FilePart) and role == "user":
        if part.mime.startswith("image/"):
            source = ImageSource(type="url", data=part.url, media_type=part.mime)
            content: list[TextContent | ImageContent] = [ImageContent(source=source)]
        else:
            content = [TextContent(text=f"[file] {part.filename or part.url}")]
        return UserMessageBlock(
            id=part.id, timestamp=iso(created), status="complete", metadata=_meta(part),
            content=content,
        )  # fmt: skip
    if isinstance(part, RetryPart):
        message = f"retry {part.attempt}: {part.error.data.message}"
        return SystemBlock(
            id=part.id, timestamp=iso(part.time.created), status="complete",
            metadata=_meta(part), subtype="status", message=message,
        )  # fmt: skip
    if isinstance(part, CompactionPart):
        return SystemBlock(
            id=part.id, timestamp=iso(created), status="complete", metadata=_meta(part),
            subtype="status", message="The conversation was compacted",
        )  # fmt: skip
    if isinstance(part, ToolPart) and child_of(part) is None:
        state = part.state
        status = {"completed": "complete", "error": "error"}.get(state.status, "pending")
        return ToolUseBlock(
            id=part.id, timestamp=iso(created), status=status, metadata=_meta(part),
            tool_name=part.tool, tool_use_id=part.call_id, input=state.input,
            display_name=getattr(state, "title", None) or None,
        )  # fmt: skip
    return None


def result_of(part: ToolPart) -> ToolResultBlock | None:
    """A finished tool call's ``tool_result`` block (None: not finished)."""
    state = part.state
    if state.status == "completed":
        output, failed = state.output, False
    elif state.status == "error":
        output, failed = state.error, True
    else:
        return None
    return ToolResultBlock(
        id=f"result-{part.id}", timestamp=iso(state.time.end), status="complete",
        metadata=_meta(part), tool_use_id=part.call_id, output=output, is_error=failed,
        duration_ms=state.time.end - state.time.start,
    )  # fmt: skip


def child_of(part: ToolPart) -> str | None:
    """The session a sub-agent call runs in (its metadata names it), or None."""
    metadata = getattr(part.state, "metadata", None) or {}
    child = metadata.get("sessionId")
    if isinstance(child, str) and child:
        return child
    return "" if part.tool.lower() == "task" else None  # a task call whose child is not made yet


def spawned_of(part: ToolPart) -> SubagentSpawned:
    given = part.state.input
    prompt = given.get("prompt") or given.get("description") or ""
    kind, about = given.get("subagent_type"), given.get("description")
    return SubagentSpawned(
        tool_use_id=part.call_id, agent_id=child_of(part) or None, prompt=str(prompt),
        subagent_type=kind if isinstance(kind, str) else None,
        description=about if isinstance(about, str) else None,
    )  # fmt: skip


def completed_of(part: ToolPart) -> SubagentCompleted | None:
    state = part.state
    if state.status not in ("completed", "error"):
        return None
    done = state.status == "completed"
    return SubagentCompleted(
        tool_use_id=part.call_id, agent_id=child_of(part) or None,
        status="completed" if done else "failed",
        output=state.output if state.status == "completed" else state.error,
        duration_ms=state.time.end - state.time.start,
    )  # fmt: skip


def in_call_order(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``blocks`` with each ``tool_result`` right after its ``tool_use``. Results arrive
    as their tools finish (parallel calls finish in any order); the store keeps them with
    their calls."""
    calls = {b.get("toolUseId") for b in blocks if b.get("type") == "tool_use"}
    results = {b.get("toolUseId"): b for b in blocks if b.get("type") == "tool_result"}
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "tool_result" and block.get("toolUseId") in calls:
            continue
        out.append(block)
        if block.get("type") == "tool_use" and (
            result := results.pop(block.get("toolUseId"), None)
        ):
            out.append(result)
    return out + list(results.values())


def error_block(info: Message) -> ErrorBlock | None:
    """The ``error`` block of an assistant message that ended with an error."""
    if not isinstance(info, AssistantMessage) or info.error is None:
        return None
    ended = info.time.completed or info.time.created
    return ErrorBlock(
        id=f"error-{info.id}", timestamp=iso(ended), status="complete",
        metadata={"messageId": info.id}, message=error_text(info.error), code=info.error.name,
    )  # fmt: skip


def _empty_text(block: Mapping[str, Any]) -> bool:
    kind, content = block.get("type"), block.get("content")
    return kind in ("assistant_text", "thinking") and not str(content or "").strip()


def blocks_of(messages: Iterable[MessageWithParts]) -> list[dict[str, Any]]:
    """One conversation's blocks after its stored messages, results with their calls, as
    the shared reducer holds them once the session is idle."""
    out: list[dict[str, Any]] = []
    for entry in messages:
        info = entry.info
        model = info.model_id if isinstance(info, AssistantMessage) else None
        for part in entry.parts:
            block = block_of(part, info.role, info.time.created, model)
            if block is not None and not _empty_text(wired := block.wire()):
                out.append(wired)
            if isinstance(part, ToolPart) and child_of(part) is not None:
                out.append(_subagent_block(part, info.time.created))
            elif isinstance(part, ToolPart) and (result := result_of(part)) is not None:
                out.append(result.wire())
        if (failed := error_block(info)) is not None:
            out.append(failed.wire())
    return out


def _subagent_block(part: ToolPart, created: int) -> dict[str, Any]:
    spawned, completed = spawned_of(part), completed_of(part)
    block = SubagentBlock(
        id=f"subagent-block-{part.call_id}", timestamp=iso(created), status="pending",
        tool_use_id=part.call_id, name=spawned.subagent_type, input=spawned.prompt,
    )  # fmt: skip
    if completed is not None:
        block.status = "complete" if completed.status == "completed" else "error"
        block.output, block.duration_ms = completed.output, completed.duration_ms
        if completed.agent_id:
            block.subagent_id = f"agent-{completed.agent_id}"
    return block.wire()


def conversation_of(
    session_id: str, messages: Mapping[str, list[MessageWithParts]]
) -> ConversationState:
    """The reducer's ``{blocks, subagents}`` of a session and its sub-agents' sessions
    (``messages``: each session's stored messages, by session id)."""
    state: ConversationState = {"blocks": blocks_of(messages.get(session_id, [])), "subagents": []}
    pending = [session_id]
    while pending:
        for entry in messages.get(pending.pop(), []):
            for part in entry.parts:
                if not isinstance(part, ToolPart) or not (child := child_of(part)):
                    continue
                state["subagents"].append(_subagent_state(part, child, messages))
                pending.append(child)
    return state


def _subagent_state(
    part: ToolPart, child: str, messages: Mapping[str, list[MessageWithParts]]
) -> SubagentState:
    spawned, completed = spawned_of(part), completed_of(part)
    entry: SubagentState = {
        "toolUseId": part.call_id,
        "agentId": child,
        "blocks": blocks_of(messages.get(child, [])),
        "status": "running",
        "prompt": spawned.prompt,
    }
    if completed is not None:
        entry["status"] = "success" if completed.status == "completed" else "error"
        if completed.output is not None:
            entry["output"] = completed.output
        if completed.duration_ms is not None:
            entry["durationMs"] = completed.duration_ms
    return entry
