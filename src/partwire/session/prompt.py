"""Turning a prompt body into a stored user message with its parts."""

from __future__ import annotations

import time

from partwire import ids
from partwire.schema.event import (
    MessageInfo,
    MessagePartUpdated,
    MessageUpdated,
    PartUpdatedProps,
    SessionInfo,
    SessionUpdated,
)
from partwire.schema.input import (
    AgentPartInput,
    FilePartInput,
    PartInput,
    PromptInput,
    SubtaskPartInput,
    TextPartInput,
)
from partwire.schema.message import UserMessage, UserTime
from partwire.schema.part import AgentPart, FilePart, ModelRef, Part, SubtaskPart, TextPart
from partwire.schema.session import Session
from partwire.session.agents import DEFAULT_AGENT
from partwire.storage.base import Store

TITLE_LENGTH = 60
UNTITLED_PREFIX = "New session - "


def _part(draft: PartInput, session_id: str, message_id: str) -> Part:
    fields = draft.model_dump(exclude_none=True, exclude={"id"}, by_alias=True)
    base = {"id": draft.id or ids.part_id(), "sessionID": session_id, "messageID": message_id}
    builders: dict[type[PartInput], type[Part]] = {
        TextPartInput: TextPart,
        FilePartInput: FilePart,
        AgentPartInput: AgentPart,
        SubtaskPartInput: SubtaskPart,
    }
    return builders[type(draft)].model_validate({**base, **fields})


def _title_from(body: PromptInput) -> str | None:
    text = " ".join(p.text for p in body.parts if isinstance(p, TextPartInput)).split()
    if not text:
        return None
    title = " ".join(text)
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"


async def store_user_message(
    store: Store, session: Session, body: PromptInput, model: ModelRef
) -> UserMessage:
    """Write the user message, its parts, and the session's new title/updated time."""
    message = UserMessage(
        id=body.message_id or ids.message_id(),
        session_id=session.id,
        time=UserTime(created=int(time.time() * 1000)),
        agent=body.agent or DEFAULT_AGENT,
        model=model,
        system=body.system,
        tools=body.tools,
    )
    await store.put_message(
        message, [MessageUpdated(MessageInfo(session_id=session.id, info=message))]
    )
    for draft in body.parts:
        part = _part(draft, session.id, message.id)
        props = PartUpdatedProps(session_id=session.id, part=part, time=message.time.created)
        await store.put_part(part, [MessagePartUpdated(props)])
    await touch_session(store, session, _title_from(body))
    return message


async def touch_session(store: Store, session: Session, title: str | None = None) -> Session:
    """Bump time.updated; give an untitled session the first prompt as its title."""
    update: dict[str, object] = {
        "time": session.time.model_copy(update={"updated": int(time.time() * 1000)})
    }
    if title and session.title.startswith(UNTITLED_PREFIX):
        update["title"] = title
    updated = session.model_copy(update=update)
    await store.put_session(
        updated, [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))]
    )
    return updated
