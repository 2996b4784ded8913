"""The seed's shared conversation reducer: ``reduce_session_event(state, event)`` over
``{blocks, subagents}``, with its semantics, so a Python client and the TypeScript one in
clients/js rebuild a session alike.

- ``block:upsert`` merges the (partial) block into the block with its id, or appends it
  filled with the type's defaults; ``block:delta`` appends to a block's ``content``;
- both go to the conversation their ``context.conversationId`` names: ``main`` (or none)
  is the session's own, anything else a sub-agent's (found by toolUseId, then agentId; a
  block for one not spawned yet makes it);
- ``subagent:spawned`` adds a ``subagent`` block where it was spawned and the sub-agent's
  own conversation; ``subagent:completed`` finishes both;
- ``session:idle`` completes the conversation's pending blocks and drops its empty text
  and thinking blocks.

A new state is returned; the one given is never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict

from partwire.schema.session_events import SessionEvent, is_conversation_event, iso

Block = dict[str, Any]
SubagentStatus = Literal["pending", "running", "success", "error"]


class SubagentState(TypedDict):
    toolUseId: str
    agentId: NotRequired[str]
    blocks: list[Block]
    status: SubagentStatus
    prompt: NotRequired[str]
    output: NotRequired[str]
    durationMs: NotRequired[int]


class ConversationState(TypedDict):
    blocks: list[Block]
    subagents: list[SubagentState]


def initial_state() -> ConversationState:
    return {"blocks": [], "subagents": []}


# what a block made from a partial one holds where the partial says nothing
_DEFAULTS: dict[str, Block] = {
    "assistant_text": {"content": ""},
    "thinking": {"content": ""},
    "user_message": {"content": ""},
    "tool_use": {"toolName": "", "toolUseId": "", "input": {}},
    "tool_result": {"toolUseId": "", "output": None, "isError": False},
    "system": {"subtype": "status", "message": ""},
    "subagent": {"input": ""},
    "error": {"message": ""},
    "skill_load": {"skillName": "", "content": ""},
}


def _now() -> str:
    return iso(datetime.now(UTC).timestamp() * 1000)


def find_subagent(state: ConversationState, ref: str) -> int:
    """The index of the sub-agent whose toolUseId (first) or agentId is ``ref``; -1: none."""
    for key in ("toolUseId", "agentId"):
        for index, subagent in enumerate(state["subagents"]):
            if subagent.get(key) == ref:
                return index
    return -1


def reduce_session_event(
    state: ConversationState, event: SessionEvent | Mapping[str, Any]
) -> ConversationState:
    """The conversation after ``event`` (events the reducer does not fold return ``state``)."""
    data = event.wire() if isinstance(event, SessionEvent) else event
    if not is_conversation_event(data):
        return state
    kind, payload = data["type"], data.get("payload") or {}
    context = data.get("context") or {}
    conversation = context.get("conversationId") or "main"
    if kind == "block:upsert":
        block = payload["block"]
        return _in_conversation(state, conversation, lambda blocks: _upsert(blocks, block))
    if kind == "block:delta":
        if not payload.get("delta"):
            return state
        return _in_conversation(
            state,
            conversation,
            lambda blocks: _append(blocks, payload["blockId"], payload["delta"]),
        )
    if kind == "subagent:spawned":
        return _spawned(state, payload, conversation, context.get("timestamp") or _now())
    if kind == "subagent:completed":
        return _completed(state, payload)
    return _idle(state, conversation)


def _in_conversation(
    state: ConversationState,
    conversation: str,
    change: Callable[[list[Block]], list[Block] | None],
    *,
    create: bool = True,
) -> ConversationState:
    """``state`` with ``change`` applied to one conversation's blocks (None: unchanged)."""
    if conversation == "main":
        blocks = change(state["blocks"])
        return state if blocks is None else {**state, "blocks": blocks}
    index = find_subagent(state, conversation)
    if index < 0:
        blocks = change([]) if create else None
        if not blocks:
            return state
        made: SubagentState = {"toolUseId": conversation, "blocks": blocks, "status": "running"}
        return {**state, "subagents": [*state["subagents"], made]}
    subagent = state["subagents"][index]
    blocks = change(subagent["blocks"])
    if blocks is None:
        return state
    subagents = list(state["subagents"])
    subagents[index] = {**subagent, "blocks": blocks}
    return {**state, "subagents": subagents}


def _position(blocks: list[Block], block_id: Any) -> int:
    return next((i for i, b in enumerate(blocks) if b.get("id") == block_id), -1)


def _upsert(blocks: list[Block], partial: Mapping[str, Any]) -> list[Block]:
    index = _position(blocks, partial.get("id"))
    out = list(blocks)
    if index >= 0:
        out[index] = {**blocks[index], **partial}
    else:
        base = {"timestamp": _now(), "status": "pending", **_DEFAULTS.get(partial["type"], {})}
        out.append({**base, **partial})
    return out


def _append(blocks: list[Block], block_id: Any, delta: str) -> list[Block] | None:
    index = _position(blocks, block_id)
    if index < 0 or "content" not in blocks[index]:
        return None
    block = blocks[index]
    out = list(blocks)
    out[index] = {**block, "content": (block.get("content") or "") + delta}
    return out


def _empty_text(block: Block) -> bool:
    if block.get("type") not in ("assistant_text", "thinking"):
        return False
    content = block.get("content")
    return not content or not str(content).strip()


def _idle(state: ConversationState, conversation: str) -> ConversationState:
    def finish(blocks: list[Block]) -> list[Block] | None:
        if not any(b.get("status") == "pending" or _empty_text(b) for b in blocks):
            return None
        return [
            {**b, "status": "complete"} if b.get("status") == "pending" else b
            for b in blocks
            if not _empty_text(b)
        ]

    return _in_conversation(state, conversation, finish, create=False)


def _spawned(
    state: ConversationState, payload: Mapping[str, Any], conversation: str, timestamp: str
) -> ConversationState:
    tool_use_id, agent_id = payload["toolUseId"], payload.get("agentId")
    index = find_subagent(state, tool_use_id)
    if index >= 0:
        existing = state["subagents"][index]
        if not agent_id or existing.get("agentId"):
            return state
        subagents = list(state["subagents"])
        subagents[index] = {**existing, "agentId": agent_id}
        return {**state, "subagents": subagents}
    block: Block = {
        "id": f"subagent-block-{tool_use_id}",
        "type": "subagent",
        "timestamp": timestamp,
        "status": "pending",
        "toolUseId": tool_use_id,
        "input": payload.get("prompt", ""),
    }
    if payload.get("subagentType") is not None:
        block["name"] = payload["subagentType"]
    entry: SubagentState = {"toolUseId": tool_use_id, "blocks": [], "status": "running"}
    if agent_id:
        entry["agentId"] = agent_id
    if "prompt" in payload:
        entry["prompt"] = payload["prompt"]
    parent = find_subagent(state, conversation) if conversation != "main" else -1
    if parent >= 0:  # spawned inside a sub-agent: its block goes in that conversation
        subagents = list(state["subagents"])
        subagents[parent] = {**subagents[parent], "blocks": [*subagents[parent]["blocks"], block]}
        return {**state, "subagents": [*subagents, entry]}
    return {"blocks": [*state["blocks"], block], "subagents": [*state["subagents"], entry]}


def _completed(state: ConversationState, payload: Mapping[str, Any]) -> ConversationState:
    tool_use_id, agent_id = payload["toolUseId"], payload.get("agentId")
    done = payload.get("status") == "completed"
    final: Block = {"status": "complete" if done else "error"}
    for key in ("output", "durationMs"):
        if key in payload:
            final[key] = payload[key]
    if agent_id:
        final["subagentId"] = f"agent-{agent_id}"

    def finish(blocks: list[Block]) -> list[Block] | None:
        index = next(
            (
                i
                for i, b in enumerate(blocks)
                if b.get("type") == "subagent" and b.get("toolUseId") == tool_use_id
            ),
            -1,
        )
        if index < 0:
            return None
        out = list(blocks)
        out[index] = {**blocks[index], **final}
        return out

    changed = finish(state["blocks"])
    new: ConversationState = state if changed is None else {**state, "blocks": changed}
    if changed is None:
        for subagent in state["subagents"]:
            new = _in_conversation(new, subagent["toolUseId"], finish, create=False)
    index = find_subagent(new, tool_use_id)
    if index < 0:
        return new
    entry: SubagentState = {**new["subagents"][index], "status": "success" if done else "error"}
    if agent_id:
        entry["agentId"] = agent_id
    for key in ("output", "durationMs"):
        if key in payload:
            entry[key] = payload[key]  # type: ignore[literal-required]
    subagents = list(new["subagents"])
    subagents[index] = entry
    return {**new, "subagents": subagents}
