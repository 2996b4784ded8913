"""POST /session/{id}/shell: the user runs a command; it is recorded as a bash tool call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from partwire import ids
from partwire.clock import now_ms as _now
from partwire.schema.event import MessageInfo, MessagePartUpdated, MessageUpdated, PartUpdatedProps
from partwire.schema.message import (
    AssistantMessage,
    AssistantTime,
    AssistantWithParts,
    Message,
    MessagePath,
    UserMessage,
    UserTime,
)
from partwire.schema.part import ModelRef, Part, TextPart, ToolPart
from partwire.schema.session import Session
from partwire.schema.tool_state import FinishedTime, ToolStateCompleted, ToolStateError
from partwire.storage.base import Store
from partwire.tools import bash
from partwire.tools.base import ToolContext

USER_NOTE = "The following tool was executed by the user"


async def _save_message(store: Store, message: Message) -> None:
    await store.put_message(
        message, [MessageUpdated(MessageInfo(session_id=message.session_id, info=message))]
    )


async def _save_part(store: Store, part: Part) -> None:
    props = PartUpdatedProps(session_id=part.session_id, part=part, time=_now())
    await store.put_part(part, [MessagePartUpdated(props)])


async def _run(args: dict[str, Any], ctx: ToolContext) -> ToolStateCompleted | ToolStateError:
    started = _now()
    try:
        result = await bash.TOOL.run(args, ctx)
    except Exception as exc:  # a user's command failing is data, not a server error
        return ToolStateError(
            input=args, error=str(exc), time=FinishedTime(start=started, end=_now())
        )
    return ToolStateCompleted(
        input=args,
        output=result.output,
        title=result.title,
        metadata=result.metadata,
        time=FinishedTime(start=started, end=_now()),
    )


async def run_shell(
    store: Store,
    session: Session,
    agent: str,
    model: ModelRef,
    command: str,
    *,
    message_id: str | None = None,
) -> AssistantWithParts:
    """Run ``command`` in the project and store it as a user turn (``message_id``, when the
    client chose one) plus an assistant message holding a bash tool part."""
    user = UserMessage(
        id=message_id or ids.message_id(),
        session_id=session.id,
        time=UserTime(created=_now()),
        agent=agent,
        model=model,
    )
    await _save_message(store, user)
    note = TextPart(
        id=ids.part_id(), session_id=session.id, message_id=user.id, text=USER_NOTE, synthetic=True
    )
    await _save_part(store, note)
    root = session.directory
    assistant = AssistantMessage(
        id=ids.message_id(),
        session_id=session.id,
        time=AssistantTime(created=_now()),
        parent_id=user.id,
        model_id=model.model_id,
        provider_id=model.provider_id,
        mode=agent,
        agent=agent,
        path=MessagePath(cwd=root, root=root),
    )
    call_id = ids.ascending("call")
    ctx = ToolContext(
        session_id=session.id,
        message_id=assistant.id,
        call_id=call_id,
        agent=agent,
        project_dir=Path(root),
    )
    state = await _run({"command": command, "description": command[:60]}, ctx)
    finished = assistant.model_copy(
        update={
            "time": AssistantTime(created=assistant.time.created, completed=_now()),
            "finish": "stop",
        }
    )
    part = ToolPart(
        id=ids.part_id(),
        session_id=session.id,
        message_id=assistant.id,
        call_id=call_id,
        tool="bash",
        state=state,
    )
    await _save_message(store, finished)
    await _save_part(store, part)
    return AssistantWithParts(info=finished, parts=[part])
