"""Creating, listing and deleting sessions."""

from __future__ import annotations

import hashlib
import secrets
import time
from datetime import UTC, datetime

from partwire import __version__, ids
from partwire.config import Settings
from partwire.errors import NotFoundError
from partwire.providers.registry import refuse_variant, resolve_model
from partwire.schema.event import (
    MessageInfo,
    MessagePartUpdated,
    MessageUpdated,
    PartUpdatedProps,
    SessionCreated,
    SessionDeleted,
    SessionInfo,
    SessionUpdated,
)
from partwire.schema.input import SessionCreateInput, SessionUpdateInput
from partwire.schema.message import AssistantMessage
from partwire.schema.session import Session, SessionTime
from partwire.session.agents import get_agent
from partwire.session.loop import SessionLoop
from partwire.session.prompt import UNTITLED_PREFIX
from partwire.storage.base import Store

_ADJECTIVES = ("brave", "calm", "eager", "gentle", "lucky", "neon", "quiet", "swift", "wild")
_NOUNS = ("comet", "falcon", "harbor", "lantern", "meadow", "otter", "sailor", "willow")


def project_id(directory: str) -> str:
    return hashlib.sha1(directory.encode()).hexdigest()


def _slug() -> str:
    return f"{secrets.choice(_ADJECTIVES)}-{secrets.choice(_NOUNS)}"


class Sessions:
    def __init__(self, store: Store, loop: SessionLoop, settings: Settings) -> None:
        self.store = store
        self.loop = loop
        self.settings = settings

    async def create(self, body: SessionCreateInput) -> Session:
        if body.parent_id is not None:
            await self.store.get_session(body.parent_id)
        if body.agent is not None:
            get_agent(body.agent)
        if body.model is not None:
            resolve_model(body.model.provider_id, body.model.id, self.settings)
            refuse_variant(
                body.model.provider_id, body.model.id, body.model.variant, "model.variant"
            )
        now = int(time.time() * 1000)
        directory = str(self.settings.project_dir)
        stamp = datetime.fromtimestamp(now / 1000, UTC).isoformat(timespec="seconds")
        session = Session(
            id=ids.session_id(),
            slug=_slug(),
            project_id=project_id(directory),
            directory=directory,
            parent_id=body.parent_id,
            title=body.title or f"{UNTITLED_PREFIX}{stamp}",
            agent=body.agent,
            model=body.model,
            version=__version__,
            time=SessionTime(created=now, updated=now),
            metadata=body.metadata,
            permission=body.permission,
        )
        await self.store.put_session(
            session, [SessionCreated(SessionInfo(session_id=session.id, info=session))]
        )
        return session

    async def delete(self, session_id: str) -> bool:
        session = await self.store.get_session(session_id)
        await self.loop.abort(session_id)
        for child in await self.store.list_sessions():
            if child.parent_id == session_id:
                await self.delete(child.id)
        await self.store.delete_session(
            session_id, [SessionDeleted(SessionInfo(session_id=session_id, info=session))]
        )
        return True

    async def fork(self, session_id: str, message_id: str | None) -> Session:
        """A new session holding copies of the messages before ``message_id`` (all if None)."""
        source = await self.store.get_session(session_id)
        history = await self.store.list_messages(session_id)
        if message_id is not None and all(e.info.id != message_id for e in history):
            raise NotFoundError("Message", message_id)
        fork = await self.create(SessionCreateInput(title=f"{source.title} (fork)"))
        new_ids: dict[str, str] = {}
        for entry in history:  # history order: the cut is by position, never by id
            if message_id is not None and entry.info.id == message_id:
                break
            new_ids[entry.info.id] = ids.message_id()
            update: dict[str, object] = {"id": new_ids[entry.info.id], "session_id": fork.id}
            if isinstance(entry.info, AssistantMessage):
                update["parent_id"] = new_ids.get(entry.info.parent_id, entry.info.parent_id)
            info = entry.info.model_copy(update=update)
            await self.store.put_message(
                info, [MessageUpdated(MessageInfo(session_id=fork.id, info=info))]
            )
            for part in entry.parts:
                copy = part.model_copy(
                    update={"id": ids.part_id(), "session_id": fork.id, "message_id": info.id}
                )
                props = PartUpdatedProps(session_id=fork.id, part=copy, time=fork.time.created)
                await self.store.put_part(copy, [MessagePartUpdated(props)])
        return fork

    async def update(self, session_id: str, body: SessionUpdateInput) -> Session:
        session = await self.store.get_session(session_id)
        update: dict[str, object] = {}
        if body.title is not None:
            update["title"] = body.title
        if body.metadata is not None:
            update["metadata"] = body.metadata
        if body.permission is not None:
            update["permission"] = body.permission
        stamp = {"updated": int(time.time() * 1000)}
        if body.time is not None and body.time.archived is not None:
            stamp["archived"] = int(body.time.archived)
        update["time"] = session.time.model_copy(update=stamp)
        updated = session.model_copy(update=update)
        await self.store.put_session(
            updated, [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))]
        )
        return updated

    async def get(self, session_id: str) -> Session:
        return await self.store.get_session(session_id)
