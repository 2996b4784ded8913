"""POST /session/{id}/shell: the user runs a command; it is recorded as a bash tool call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from partwire import ids
from partwire.clock import now_ms as _now
from partwire.schema.message import (
    AssistantMessage,
    AssistantWithParts,
    UserMessage,
    UserTime,
    new_assistant_message,
)
from partwire.schema.part import ModelRef
from partwire.schema.session import Session
from partwire.session.writer import MessageWriter, save_message
from partwire.storage.base import Store
from partwire.tools import bash
from partwire.tools.base import ToolContext, ToolResult

USER_NOTE = "The following tool was executed by the user"


async def _run(args: dict[str, Any], ctx: ToolContext) -> ToolResult | str:
    """The command's result, or its failure as text (a user's command failing is data,
    not a server error)."""
    try:
        return await bash.TOOL.run(args, ctx)
    except Exception as exc:
        return str(exc)


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
    client chose one) plus an assistant message holding a bash tool call, both built by
    the builder and written by the writer, as any other message."""
    from partwire.builder import StreamingMessageBuilder  # with the first use: a lean start

    user = UserMessage(
        id=message_id or ids.message_id(),
        session_id=session.id,
        time=UserTime(created=_now()),
        agent=agent,
        model=model,
    )
    await save_message(store, user)
    note = StreamingMessageBuilder(user.id, "user", session_id=session.id)
    await MessageWriter(store, note, user).write(note.add_text(USER_NOTE, synthetic=True))
    root = session.directory
    assistant = new_assistant_message(
        session_id=session.id,
        parent_id=user.id,
        provider_id=model.provider_id,
        model_id=model.model_id,
        agent=agent,
        root=root,
    )
    await save_message(store, assistant)
    builder = StreamingMessageBuilder(assistant.id, session_id=session.id)
    writer = MessageWriter(store, builder, assistant)
    call_id = ids.ascending("call")
    args = {"command": command, "description": command[:60]}
    await writer.write(builder.add_tool_call(call_id, "bash", args))
    ctx = ToolContext(
        session_id=session.id,
        message_id=assistant.id,
        call_id=call_id,
        agent=agent,
        project_dir=Path(root),
    )
    result = await _run(args, ctx)
    if isinstance(result, str):
        frames = builder.add_tool_result(call_id, result, is_error=True)
    else:
        frames = builder.add_tool_result(
            call_id, result.output, title=result.title, metadata=result.metadata
        )
    builder.set_finish_reason("stop")
    await writer.write(frames + builder.finish())
    finished = writer.info
    assert isinstance(finished, AssistantMessage)
    return AssistantWithParts(info=finished, parts=builder.parts)
