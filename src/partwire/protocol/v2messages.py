"""Stored messages as opencode v2's ``SessionMessage`` projection (``/api/session/{id}/
message`` and ``/context``): a user message → ``user`` (its words, files and agents; a
synthetic one → ``synthetic``), a compaction request and its summary → ``compaction``,
an assistant message → ``assistant`` with its text, reasoning and tool calls as content.
Steps, patches, snapshots and retries are not part of v2's projection.
"""

from __future__ import annotations

from partwire.schema.base import JSONObject, Tokens
from partwire.schema.message import AssistantMessage, MessageWithParts, UserMessage, error_text
from partwire.schema.part import (
    AgentPart,
    CompactionPart,
    FilePart,
    ReasoningPart,
    TextPart,
    ToolPart,
)
from partwire.schema.tool_state import (
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
)


def tokens_v2(tokens: Tokens) -> JSONObject:
    """Token counts in v2's shape (sessions, assistant messages, step ends)."""
    return {
        "input": tokens.input,
        "output": tokens.output,
        "reasoning": tokens.reasoning,
        "cache": {"read": tokens.cache.read, "write": tokens.cache.write},
    }


def _user(message: MessageWithParts) -> JSONObject:
    info = message.info
    texts = [p for p in message.parts if isinstance(p, TextPart)]
    words = "\n".join(p.text for p in texts if not p.synthetic)
    base: JSONObject = {"id": info.id, "time": {"created": info.time.created}}
    if texts and all(p.synthetic for p in texts):
        return {**base, "sessionID": info.session_id, "type": "synthetic",
                "text": "\n".join(p.text for p in texts)}  # fmt: skip
    files = [
        {"uri": p.url, "mime": p.mime, **({"name": p.filename} if p.filename else {})}
        for p in message.parts
        if isinstance(p, FilePart)
    ]
    agents = [{"name": p.name} for p in message.parts if isinstance(p, AgentPart)]
    user: JSONObject = {**base, "type": "user", "text": words}
    if files:
        user["files"] = files
    if agents:
        user["agents"] = agents
    return user


def _tool_state(part: ToolPart) -> JSONObject:
    state = part.state
    if isinstance(state, ToolStatePending):
        return {"status": "pending", "input": state.raw}
    if isinstance(state, ToolStateRunning):
        return {"status": "running", "input": state.input, "structured": {}, "content": []}
    if isinstance(state, ToolStateCompleted):
        return {
            "status": "completed",
            "input": state.input,
            "content": [{"type": "text", "text": state.output}],
            "structured": state.metadata,
        }
    assert isinstance(state, ToolStateError)
    return {
        "status": "error",
        "input": state.input,
        "content": [],
        "structured": state.metadata or {},
        "error": {"type": "unknown", "message": state.error},
    }


def _tool(part: ToolPart) -> JSONObject:
    state = part.state
    started = getattr(getattr(state, "time", None), "start", None)
    ended = getattr(getattr(state, "time", None), "end", None)
    when: JSONObject = {"created": started or 0}
    if started is not None:
        when["ran"] = started
    if ended is not None:
        when["completed"] = ended
    return {
        "type": "tool",
        "id": part.call_id,
        "name": part.tool,
        "state": _tool_state(part),
        "time": when,
    }


def _assistant(message: MessageWithParts) -> JSONObject:
    info = message.info
    assert isinstance(info, AssistantMessage)
    content: list[JSONObject] = []
    for part in message.parts:
        if isinstance(part, TextPart) and not part.synthetic:
            content.append({"type": "text", "id": part.id, "text": part.text})
        elif isinstance(part, ReasoningPart):
            timing: JSONObject = {"created": part.time.start}
            if part.time.end is not None:
                timing["completed"] = part.time.end
            content.append({"type": "reasoning", "id": part.id, "text": part.text, "time": timing})
        elif isinstance(part, ToolPart):
            content.append(_tool(part))
    times: JSONObject = {"created": info.time.created}
    if info.time.completed is not None:
        times["completed"] = info.time.completed
    result: JSONObject = {
        "id": info.id,
        "time": times,
        "type": "assistant",
        "agent": info.agent,
        "model": {"id": info.model_id, "providerID": info.provider_id},
        "content": content,
        "cost": info.cost,
        "tokens": tokens_v2(info.tokens),
    }
    if info.finish is not None:
        result["finish"] = info.finish
    if info.error is not None:
        result["error"] = {"type": "unknown", "message": error_text(info.error)}
    return result


def v2_messages(messages: list[MessageWithParts]) -> list[JSONObject]:
    """The projection of ``messages``, in order."""
    out: list[JSONObject] = []
    compaction: JSONObject | None = None
    for message in messages:
        info = message.info
        if isinstance(info, UserMessage):
            requested = next((p for p in message.parts if isinstance(p, CompactionPart)), None)
            if requested is not None:
                compaction = {
                    "type": "compaction",
                    "reason": "auto" if requested.auto else "manual",
                    "summary": "",
                    "recent": "",
                    "id": info.id,
                    "time": {"created": info.time.created},
                }
                out.append(compaction)
            else:
                out.append(_user(message))
        elif isinstance(info, AssistantMessage) and info.summary and compaction is not None:
            words = [p.text for p in message.parts if isinstance(p, TextPart)]
            compaction["summary"] = "\n".join(words)
            compaction = None
        else:
            out.append(_assistant(message))
    return out


def context_messages(messages: list[MessageWithParts]) -> list[JSONObject]:
    """What the model works from: everything from the last compaction on."""
    projected = v2_messages(messages)
    last = max((n for n, m in enumerate(projected) if m["type"] == "compaction"), default=0)
    return projected[last:]
