"""Turning a prompt body into a stored user message with its parts."""

from __future__ import annotations

import re
from pathlib import Path

from partwire import ids
from partwire.clock import now_ms
from partwire.errors import IdConflictError
from partwire.schema.event import (
    Draft,
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
from partwire.schema.part import (
    AgentPart,
    AgentSource,
    FilePart,
    ModelRef,
    Part,
    SubtaskPart,
    TextPart,
)
from partwire.schema.session import Session
from partwire.session.agents import AGENTS
from partwire.session.compaction import new_compaction_part
from partwire.session.mentions import with_mentioned_files
from partwire.session.writer import add_parts, message_event, save_message, save_parts
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


_MENTION = re.compile(r"(?<![\w@])@([A-Za-z][\w-]*)")


def _mentions(
    body: PromptInput, session_id: str, message_id: str, existing: list[Part]
) -> list[Part]:
    """An agent part for each ``@agent`` in the text that names a known agent."""
    named = {p.name for p in existing if isinstance(p, AgentPart)}
    found: list[Part] = []
    for draft in body.parts:
        if not isinstance(draft, TextPartInput):
            continue
        for match in _MENTION.finditer(draft.text):
            name = match.group(1)
            if name not in AGENTS or name in named:
                continue
            named.add(name)
            source = AgentSource(value=match.group(0), start=match.start(), end=match.end())
            found.append(
                AgentPart(
                    id=ids.part_id(),
                    session_id=session_id,
                    message_id=message_id,
                    name=name,
                    source=source,
                )
            )
    return found


def shorten_title(title: str) -> str:
    """At most TITLE_LENGTH characters, an ellipsis marking a cut."""
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"


def prompt_words(body: PromptInput) -> str:
    """The prompt's text parts, joined."""
    return "\n".join(p.text for p in body.parts if isinstance(p, TextPartInput))


def _title_from(body: PromptInput) -> str | None:
    text = prompt_words(body).split()
    if not text:
        return None
    return shorten_title(" ".join(text))


async def store_user_message(
    store: Store,
    session: Session,
    body: PromptInput,
    model: ModelRef,
    agent: str,
    project_dir: Path,
) -> tuple[UserMessage, Session]:
    """Write the user message, its parts, and the session's new title/updated time, in
    one commit; the message and the session as written.

    The parts are built (and mentioned files read) first, so a bad part stores nothing.
    """
    message = UserMessage(
        id=body.message_id or ids.message_id(),
        session_id=session.id,
        time=UserTime(created=now_ms()),
        agent=agent,
        model=model,
        system=body.system,
        tools=body.tools,
    )
    parts = [_part(draft, session.id, message.id) for draft in body.parts]
    parts += _mentions(body, session.id, message.id, parts)
    parts = await with_mentioned_files(parts, project_dir)
    batch = store.batch()
    batch.put_message(message, [message_event(message)])
    add_parts(batch, store, message, parts)
    touched = _touched(session, _title_from(body))
    batch.put_session(touched, _told(touched))
    await batch.commit()
    return message, touched


async def refuse_taken_ids(
    store: Store, message_id: str | None, part_ids: list[str | None] | None = None
) -> None:
    """409 when a client-chosen message or part id is already stored (by any session),
    or repeated inside the prompt: a client id never overwrites another row."""
    wanted = [part_id for part_id in part_ids or [] if part_id is not None]
    taken = await store.ids_in_use([message_id] if message_id else [], wanted)
    if message_id is not None and message_id in taken:
        raise IdConflictError("messageID", message_id)
    seen: set[str] = set()
    for index, part_id in enumerate(part_ids or []):
        if part_id is None:
            continue
        if part_id in taken or part_id in seen:
            raise IdConflictError(f"parts.{index}.id", part_id)
        seen.add(part_id)


def _touched(session: Session, title: str | None) -> Session:
    """``session`` with time.updated bumped, and an untitled one titled ``title``."""
    update: dict[str, object] = {"time": session.time.model_copy(update={"updated": now_ms()})}
    if title and session.title.startswith(UNTITLED_PREFIX):
        update["title"] = title
    return session.model_copy(update=update)


def _told(session: Session) -> list[Draft]:
    return [SessionUpdated(SessionInfo(session_id=session.id, info=session))]


async def touch_session(store: Store, session: Session, title: str | None = None) -> Session:
    """Bump time.updated; give an untitled session the first prompt as its title."""
    updated = _touched(session, title)
    await store.put_session(updated, _told(updated))
    return updated


async def store_compaction_request(
    store: Store, session: Session, user: UserMessage, *, auto: bool, overflow: bool
) -> UserMessage:
    """A user message holding a compaction part: the loop answers it with a summary."""
    message = user.model_copy(update={"id": ids.message_id(), "time": UserTime(created=now_ms())})
    await save_message(store, message)
    part = new_compaction_part(session.id, message.id, auto=auto, overflow=overflow)
    await save_parts(store, message, [part])
    return message


async def store_synthetic_text(store: Store, user: UserMessage, text: str) -> UserMessage:
    """A user message the loop writes itself (e.g. "continue" after an automatic compaction)."""
    message = user.model_copy(update={"id": ids.message_id(), "time": UserTime(created=now_ms())})
    await save_message(store, message)
    part = TextPart(
        id=ids.part_id(),
        session_id=user.session_id,
        message_id=message.id,
        text=text,
        synthetic=True,
    )
    await save_parts(store, message, [part])
    return message
