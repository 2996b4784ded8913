"""POST /session/{id}/shell: the user runs a command; it is recorded as a bash tool call."""

from __future__ import annotations

import time
from pathlib import Path

from partwire import ids
from partwire.schema.event import (
    MessageInfo,
    MessagePartUpdated,
    MessageUpdated,
    PartUpdatedProps,
)
from partwire.schema.message import (
    AssistantMessage,
    AssistantTime,
    AssistantWithParts,
    MessagePath,
    UserMessage,
    UserTime,
)
from partwire.schema.part import ModelRef, TextPart, ToolPart
from partwire.schema.session import Session
from partwire.schema.tool_state import FinishedTime, ToolStateCompleted, ToolStateError
from partwire.storage.base import Store
from partwire.tools import bash
from partwire.tools.base import ToolContext


def _now() -> int:
    return int(time.time() * 1000)


async def run_shell(
    store: Store, session: Session, agent: str, model: ModelRef, command: str
) -> AssistantWithParts:
    """Run ``command`` in the project and store it as a user turn plus a bash tool part."""
    user = UserMessage(
        id=ids.message_id(),
        session_id=session.id,
        time=UserTime(created=_now()),
        agent=agent,
        model=model,
    )
    await store.put_message(user, [MessageUpdated(MessageInfo(session_id=session.id, info=user))])
    note = TextPart(
        id=ids.part_id(),
        session_id=session.id,
        message_id=user.id,
        text="The following tool was executed by the user",
        synthetic=True,
    )
    await store.put_part(
        note, [MessagePartUpdated(PartUpdatedProps(session_id=session.id, part=note, time=_now()))]
    )
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
    started = _now()
    args = {"command": command, "description": command[:60]}
    ctx = ToolContext(
        session_id=session.id,
        message_id=assistant.id,
        call_id=ids.ascending("call"),
        agent=agent,
        project_dir=Path(root),
    )
    try:
        result = await bash.TOOL.run(args, ctx)
        state: ToolStateCompleted | ToolStateError = ToolStateCompleted(
            input=args,
            output=result.output,
            title=result.title,
            metadata=result.metadata,
            time=FinishedTime(start=started, end=_now()),
        )
    except Exception as exc:  # a user's command failing is data, not a server error
        state = ToolStateError(
            input=args, error=str(exc), time=FinishedTime(start=started, end=_now())
        )
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
        call_id=ctx.call_id,
        tool="bash",
        state=state,
    )
    await store.put_message(
        finished, [MessageUpdated(MessageInfo(session_id=session.id, info=finished))]
    )
    await store.put_part(
        part, [MessagePartUpdated(PartUpdatedProps(session_id=session.id, part=part, time=_now()))]
    )
    return AssistantWithParts(info=finished, parts=[part])
