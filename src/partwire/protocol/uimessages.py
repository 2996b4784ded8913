"""Stored messages as the AI SDK's ``UIMessage``s, exactly as its own reader builds them
from ``protocol.aisdk``'s chunks: one per user message, one per turn of assistant
messages (``GET /ui/chat/{id}/messages``, and what the tests compare streams with)."""

from __future__ import annotations

from dataclasses import dataclass

from partwire.protocol.aisdk import data_chunk, model_metadata, usage_metadata
from partwire.schema.base import JSONObject, Tokens
from partwire.schema.event import Event, PermissionRepliedProps
from partwire.schema.message import AssistantMessage, MessageWithParts, UserMessage
from partwire.schema.part import (
    FilePart,
    ReasoningPart,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    part_finished,
)
from partwire.schema.permission import PermissionRequest
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError, ToolStatePending


@dataclass
class Approval:
    """A permission asked on a tool call, and its answer if there is one."""

    id: str
    approved: bool | None = None


def approvals_of(events: list[Event]) -> dict[str, Approval]:
    """The tool approvals of a session's permission events, by call id."""
    asked: dict[str, Approval] = {}
    by_call: dict[str, Approval] = {}
    for event in events:
        props = event.properties
        if isinstance(props, PermissionRequest) and props.tool is not None:
            asked[props.id] = by_call[props.tool.call_id] = Approval(props.id)
        elif isinstance(props, PermissionRepliedProps) and props.request_id in asked:
            asked[props.request_id].approved = props.reply != "reject"
    return by_call


def user_ui_message(message: MessageWithParts) -> JSONObject:
    parts: list[JSONObject] = []
    for part in message.parts:
        if isinstance(part, TextPart) and not part.synthetic:
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, FilePart):
            parts.append({"type": "file", "mediaType": part.mime, "url": part.url})
    return {"id": message.info.id, "role": "user", "parts": parts}


def _tool_ui_part(part: ToolPart, approval: Approval | None) -> JSONObject:
    state = part.state
    ui: JSONObject = {"type": f"tool-{part.tool}", "toolCallId": part.call_id}
    if isinstance(state, ToolStatePending):
        ui["state"] = "input-streaming"
        if state.raw:
            ui["input"], ui["rawInput"] = state.input, state.raw
        return ui
    ui["input"] = state.input
    if isinstance(state, ToolStateCompleted):
        ui["state"], ui["output"] = "output-available", state.output
        ui["toolMetadata"] = {"title": state.title, "metadata": state.metadata}
    elif isinstance(state, ToolStateError):
        denied = approval is not None and approval.approved is False
        ui["state"] = "output-denied" if denied else "output-error"
        if not denied:
            ui["errorText"] = state.error
    else:
        ui["state"] = "input-available"
        if approval is not None:
            ui["state"] = (
                "approval-requested" if approval.approved is None else "approval-responded"
            )
    if approval is not None:
        asked: JSONObject = {"id": approval.id}
        if approval.approved is not None:
            asked["approved"] = approval.approved
        ui["approval"] = asked
    return ui


def _assistant_parts(
    message: MessageWithParts, approvals: dict[str, Approval]
) -> tuple[list[JSONObject], Tokens, float]:
    parts: list[JSONObject] = []
    tokens, cost = Tokens(), 0.0
    for part in message.parts:
        if isinstance(part, TextPart | ReasoningPart):
            state = "done" if part_finished(part) else "streaming"
            if isinstance(part, ReasoningPart):
                parts.append(
                    {"type": "reasoning", "id": part.id, "text": part.text, "state": state}
                )
            else:
                parts.append({"type": "text", "text": part.text, "state": state})
        elif isinstance(part, ToolPart):
            parts.append(_tool_ui_part(part, approvals.get(part.call_id)))
        elif isinstance(part, StepStartPart):
            parts.append({"type": "step-start"})
        elif isinstance(part, StepFinishPart):
            tokens, cost = tokens.plus(part.tokens), cost + part.cost
        elif isinstance(part, FilePart):
            parts.append({"type": "file", "mediaType": part.mime, "url": part.url})
        else:
            parts.append(data_chunk(part))
    return parts, tokens, cost


def ui_messages(
    messages: list[MessageWithParts], approvals: dict[str, Approval] | None = None
) -> list[JSONObject]:
    """Stored messages as UIMessages: one per user message, one per turn of assistant
    messages. ``approvals`` (by call id) come from the permission events in the log."""
    approvals = approvals or {}
    out: list[JSONObject] = []
    turn: JSONObject | None = None
    turn_parts: list[JSONObject] = []
    turn_model: JSONObject = {}
    parent: str | None = None
    tokens, cost = Tokens(), 0.0
    for message in messages:
        info = message.info
        if isinstance(info, UserMessage):
            out.append(user_ui_message(message))
            turn = None
            continue
        assert isinstance(info, AssistantMessage)
        if turn is None or parent != info.parent_id:
            tokens, cost = Tokens(), 0.0
            turn_parts, turn_model = [], model_metadata(info)
            turn = {
                "id": info.id,
                "role": "assistant",
                "metadata": turn_model,
                "parts": turn_parts,
            }
            parent = info.parent_id
            out.append(turn)
        parts, step_tokens, step_cost = _assistant_parts(message, approvals)
        turn_parts += parts
        if any(isinstance(p, StepFinishPart) for p in message.parts):
            tokens, cost = tokens.plus(step_tokens), cost + step_cost
            turn["metadata"] = {**turn_model, **usage_metadata(tokens, cost)}
    return out
