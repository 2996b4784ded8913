"""Creating, listing and deleting sessions."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from partwire import ids
from partwire.clock import now_ms
from partwire.config import Settings
from partwire.errors import BadRequestError, IdConflictError, SessionBusyError
from partwire.providers.registry import refuse_variant, resolve_model
from partwire.schema.event import (
    Draft,
    SessionCreated,
    SessionDeleted,
    SessionInfo,
    SessionUpdated,
)
from partwire.schema.export import SessionExport
from partwire.schema.input import SessionCreateInput, SessionUpdateInput
from partwire.schema.message import AssistantMessage, Message, MessageWithParts, UserMessage
from partwire.schema.session import Budget, Session, SessionModel, SessionTime
from partwire.session.agents import AGENTS, get_agent
from partwire.session.forking import Cut, forked_history
from partwire.session.loop import SessionLoop
from partwire.session.prompt import UNTITLED_PREFIX
from partwire.session.revert import check_patch_files
from partwire.session.writer import message_event, part_event
from partwire.storage.base import Store
from partwire.version import __version__

_ADJECTIVES = ("brave", "calm", "eager", "gentle", "lucky", "neon", "quiet", "swift", "wild")
_NOUNS = ("comet", "falcon", "harbor", "lantern", "meadow", "otter", "sailor", "willow")


def project_id(directory: str) -> str:
    return hashlib.sha1(directory.encode()).hexdigest()


def _as_written(info: Message, part_events: list[Draft]) -> list[Draft]:
    """A copied message's events as a live one logged them: an answer opens, its parts
    come, then it completes; so every adapter folding the log (part frames, blocks, …)
    shows the copy as it would have shown the original."""
    if not isinstance(info, AssistantMessage) or info.time.completed is None:
        return [message_event(info), *part_events]
    opening = info.model_copy(update={"time": info.time.model_copy(update={"completed": None})})
    return [message_event(opening), *part_events, message_event(info)]


def _with_budget(
    metadata: dict[str, Any] | None,
    before: dict[str, Any] | None,
    budget: Budget | None,
    budget_given: bool,
) -> dict[str, Any] | None:
    """The session's metadata as sent, its ``budget`` kept from ``before`` unless one is
    given (the ``budget`` field, or ``metadata.budget``, checked): replacing the
    metadata never drops a limit by leaving it out."""
    merged = dict(metadata or {})
    if budget_given:
        merged.pop("budget", None)
        if budget is not None:
            merged["budget"] = budget.wire()
    elif "budget" in merged:
        try:
            merged["budget"] = Budget.model_validate(merged["budget"]).wire()
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in ("metadata", "budget", *problem["loc"]))
            raise BadRequestError(f"{where}: {problem['msg']}", field=where) from None
    elif before is not None and "budget" in before:
        merged["budget"] = before["budget"]
    return merged if metadata is not None or merged else None


def _last_agent(history: list[MessageWithParts]) -> str | None:
    """The agent the history's last prompt went to, while partwire still has it."""
    for entry in reversed(history):
        if isinstance(entry.info, UserMessage):
            return entry.info.agent if entry.info.agent in AGENTS else None
    return None


def _check_export(export: SessionExport) -> None:
    """Every message must be the session's and every part its message's: 400 otherwise."""
    seen: set[str] = set()
    for index, entry in enumerate(export.messages):
        if entry.info.session_id != export.info.id:
            raise BadRequestError(
                f"messages.{index}.info.sessionID is {entry.info.session_id}, "
                f"not the exported session {export.info.id}",
                field=f"messages.{index}.info.sessionID",
            )
        for number, part in enumerate(entry.parts):
            if part.message_id != entry.info.id:
                raise BadRequestError(
                    f"messages.{index}.parts.{number}.messageID is {part.message_id}, "
                    f"not its message {entry.info.id}",
                    field=f"messages.{index}.parts.{number}.messageID",
                )
        for identifier in (entry.info.id, *(p.id for p in entry.parts)):
            if identifier in seen:
                raise BadRequestError(f"{identifier} appears twice in the export")
            seen.add(identifier)


def random_slug() -> str:
    """Two random words (``brave-otter``): a readable name for a session or worktree."""
    return f"{secrets.choice(_ADJECTIVES)}-{secrets.choice(_NOUNS)}"


def _created(session: Session) -> Draft:
    return SessionCreated(SessionInfo(session_id=session.id, info=session))


class Sessions:
    def __init__(self, store: Store, loop: SessionLoop, settings: Settings) -> None:
        self.store = store
        self.loop = loop
        self.settings = settings

    async def create(
        self,
        body: SessionCreateInput,
        *,
        session_id: str | None = None,
        owner: str | None = None,
    ) -> Session:
        """A new session, owned by the user ``owner`` when one made it (partwire/access.py);
        ``session_id`` (``ses…``, opencode v2's client-chosen id) must be unused
        (IdConflictError)."""
        if body.parent_id is not None:
            await self.store.get_session(body.parent_id)
        if body.agent is not None:
            get_agent(body.agent)
        if body.model is not None:
            resolve_model(body.model.provider_id, body.model.id, self.settings)
            refuse_variant(
                body.model.provider_id, body.model.id, body.model.variant, "model.variant"
            )
        now = now_ms()
        directory = str(self.settings.project_dir)
        stamp = datetime.fromtimestamp(now / 1000, UTC).isoformat(timespec="seconds")
        session = Session(
            id=session_id or ids.session_id(),
            slug=random_slug(),
            project_id=project_id(directory),
            directory=directory,
            parent_id=body.parent_id,
            title=body.title or f"{UNTITLED_PREFIX}{stamp}",
            agent=body.agent,
            model=body.model,
            version=__version__,
            time=SessionTime(created=now, updated=now),
            metadata=_with_budget(
                body.metadata, None, body.budget, "budget" in body.model_fields_set
            ),
            permission=body.permission,
        )
        try:
            await self.store.create_session(session, [_created(session)], owner=owner)
        except IdConflictError:
            raise IdConflictError("id", session.id) from None
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

    async def fork(
        self,
        session_id: str,
        message_id: str | None,
        part_id: str | None = None,
        cut: Cut | None = None,
        *,
        owner: str | None = None,
    ) -> Session:
        """A new session holding copies of the messages before ``message_id`` (all if
        None), or, at ``part_id``, up to that part (see session/forking.py). Where it came
        from is kept in its metadata as ``forkedFrom``; it keeps the source's agent
        (or the one its kept history last prompted) and permission rules."""
        source = await self.store.get_session(session_id)
        history = await self.store.list_messages(session_id)
        kept = forked_history(history, message_id, part_id, cut)
        origin: dict[str, object] = {"sessionID": session_id}
        if part_id is not None:  # forked_history found it
            holder = next(e for e in history if any(p.id == part_id for p in e.parts))
            origin |= {"messageID": holder.info.id, "partID": part_id, "cut": cut or "after"}
        elif message_id is not None:
            origin["messageID"] = message_id
        fork = await self.create(
            SessionCreateInput(
                title=f"{source.title} (fork)",
                agent=source.agent or _last_agent(kept),
                permission=source.permission,
                metadata={**(source.metadata or {}), "forkedFrom": origin},
            ),
            owner=owner,
        )
        await self._write_history(fork, kept, fresh_ids=True)
        return fork

    async def import_session(self, export: SessionExport, *, owner: str | None = None) -> Session:
        """Store an exported session in this project. Its ids are kept when none is
        stored yet; otherwise (imported twice, or exported from here) it becomes a copy
        with new ids, so an import never overwrites anything."""
        _check_export(export)
        project_dir = self.settings.project_dir
        history = [  # patch parts name files of the project they ran in: here, or a 400
            entry.model_copy(
                update={
                    "parts": [
                        check_patch_files(p, project_dir, export.info.directory)
                        for p in entry.parts
                    ]
                }
            )
            for entry in export.messages
        ]
        taken = await self.store.ids_in_use(
            [m.info.id for m in history], [p.id for m in history for p in m.parts]
        )
        fresh = bool(taken)
        directory = str(self.settings.project_dir)
        kept = {
            "directory": directory,
            "project_id": project_id(directory),
            "parent_id": None,
            "revert": None,
        }
        session = export.info.model_copy(update=kept)
        if not fresh:
            try:  # the id is claimed in the store: of two imports at once, one keeps it
                await self.store.create_session(session, [_created(session)], owner=owner)
            except IdConflictError:
                fresh = True
        if fresh:
            session = session.model_copy(update={"id": ids.session_id()})
            await self.store.create_session(session, [_created(session)], owner=owner)
        await self._write_history(session, history, fresh_ids=fresh)
        return session

    async def _write_history(
        self, target: Session, history: list[MessageWithParts], *, fresh_ids: bool
    ) -> None:
        """Write messages and parts into ``target`` in order, re-keyed when asked: one
        commit, logged as the messages were written live (see ``_as_written``)."""
        new_ids: dict[str, str] = {}
        copies: list[MessageWithParts] = []
        events: list[Draft] = []
        for entry in history:
            new_ids[entry.info.id] = ids.message_id() if fresh_ids else entry.info.id
            update: dict[str, object] = {"id": new_ids[entry.info.id], "session_id": target.id}
            if isinstance(entry.info, AssistantMessage):
                update["parent_id"] = new_ids.get(entry.info.parent_id, entry.info.parent_id)
            info = entry.info.model_copy(update=update)
            parts = [
                part.model_copy(
                    update={
                        "id": ids.part_id() if fresh_ids else part.id,
                        "session_id": target.id,
                        "message_id": info.id,
                    }
                )
                for part in entry.parts
            ]
            copies.append(MessageWithParts(info=info, parts=parts))
            events += _as_written(info, [part_event(part, target.time.created) for part in parts])
        if copies:
            await self.store.put_history(copies, events)

    async def update(self, session_id: str, body: SessionUpdateInput) -> Session:
        session = await self.store.get_session(session_id)
        update: dict[str, object] = {}
        if body.title is not None:
            update["title"] = body.title
        if body.metadata is not None or "budget" in body.model_fields_set:
            update["metadata"] = _with_budget(
                body.metadata if body.metadata is not None else session.metadata,
                session.metadata,
                body.budget,
                "budget" in body.model_fields_set,
            )
        if body.permission is not None:
            update["permission"] = body.permission
        stamp = {"updated": now_ms()}
        if body.time is not None and body.time.archived is not None:
            stamp["archived"] = int(body.time.archived)
        update["time"] = session.time.model_copy(update=stamp)
        updated = session.model_copy(update=update)
        await self.store.put_session(
            updated,
            [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))],
            sets_budget="metadata" in update,
        )
        return updated

    async def switch(
        self, session_id: str, *, agent: str | None = None, model: SessionModel | None = None
    ) -> Session:
        """Set the agent or the model the session's next prompts use (opencode v2)."""
        session = await self.store.get_session(session_id)
        stamp = {"updated": now_ms()}
        update: dict[str, object] = {"time": session.time.model_copy(update=stamp)}
        if agent is not None:
            get_agent(agent)
            update["agent"] = agent
        if model is not None:
            resolve_model(model.provider_id, model.id, self.settings)
            refuse_variant(model.provider_id, model.id, model.variant, "model.variant")
            update["model"] = model
        updated = session.model_copy(update=update)
        await self.store.put_session(
            updated, [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))]
        )
        return updated

    async def move(self, session_id: str, directory: Path) -> Session:
        """Make ``directory`` the session's (its next prompts run there); it must be idle."""
        session = await self.store.get_session(session_id)
        if self.loop.is_busy(session_id):
            raise SessionBusyError(session_id)
        stamp = {"updated": now_ms()}
        updated = session.model_copy(
            update={
                "directory": str(directory),
                "project_id": project_id(str(directory)),
                "time": session.time.model_copy(update=stamp),
            }
        )
        await self.store.put_session(
            updated, [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))]
        )
        return updated

    async def get(self, session_id: str) -> Session:
        return await self.store.get_session(session_id)
