"""The recorder: opens recordings (session/recording.py) of external agent loops.

While a recording is open the session is busy, like a running prompt; ``POST
/session/{id}/abort`` ends it as aborted, and the external loop's next call then raises
AbortedError. A sub-agent's recording is opened in a new child session, linked from the
parent's tool call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

from partwire import ids
from partwire.builder import StreamingMessageBuilder
from partwire.clock import now_ms
from partwire.errors import AbortedError, BadRequestError, BuilderError, RejectedError
from partwire.schema.ingest import IngestStart
from partwire.schema.input import SessionCreateInput
from partwire.schema.message import (
    ABORTED_MESSAGE,
    AssistantMessage,
    Message,
    UserMessage,
    UserTime,
    new_assistant_message,
)
from partwire.schema.part import ModelRef
from partwire.schema.session import Session
from partwire.session.agents import DEFAULT_AGENT, get_agent
from partwire.session.prompt import shorten_title, touch_session
from partwire.session.recording import EXTERNAL, Recording
from partwire.session.status import StatusTracker
from partwire.session.toolhost import ToolHost
from partwire.session.writer import MessageWriter, save_message
from partwire.storage.base import Store

OnAbort = Callable[[], Awaitable[None]]
Claim = Callable[[str, OnAbort], object]
Release = Callable[[str, object], bool]
CreateSession = Callable[[SessionCreateInput], Awaitable[Session]]


class Recorder:
    """Opens recordings in the sessions of one project (bound to its loop's busy state)."""

    def __init__(
        self,
        store: Store,
        host: ToolHost,
        status: StatusTracker,
        claim: Claim,
        release: Release,
        create_session: CreateSession | None = None,
    ) -> None:
        self.store = store
        self.host = host
        self.status = status
        self._claim = claim
        self._release = release
        self._create_session = create_session

    @asynccontextmanager
    async def record(
        self,
        session_id: str,
        *,
        role: str = "assistant",
        prompt: str | None = None,
        parent_id: str | None = None,
        model: ModelRef | str | None = None,
        agent: str | None = None,
        message_id: str | None = None,
    ) -> AsyncIterator[Recording]:
        """Record one message of ``session_id``. An assistant message answers ``prompt``
        (stored first as a user message), or ``parent_id``, or the session's newest user
        message. A normal exit finishes the message; an exception ends it with that error
        (a cancellation as aborted) and propagates; an abort ends it at once."""
        recording = await self._open(
            session_id, role, prompt, parent_id, _model_ref(model), agent, message_id
        )
        try:
            yield recording
        except (AbortedError, RejectedError):
            if not recording.aborted:  # not our abort: the loop gave up
                await self._end(recording, ABORTED_MESSAGE, aborted=True)
                raise
            # the session was aborted: the block ended because its calls were refused
        except asyncio.CancelledError:
            await asyncio.shield(self._end(recording, ABORTED_MESSAGE, aborted=True))
            raise
        except BaseException as exc:
            await self._end(recording, f"{type(exc).__name__}: {exc}", aborted=False)
            raise
        else:
            if not recording.aborted:
                await recording.finish()
                await self._settle(recording)

    async def _open(
        self,
        session_id: str,
        role: str,
        prompt: str | None,
        parent_id: str | None,
        model: ModelRef,
        agent: str | None,
        message_id: str | None,
    ) -> Recording:
        if role not in ("user", "assistant"):
            raise BadRequestError(f"role must be 'user' or 'assistant', not {role!r}", field="role")
        agent_name = agent or DEFAULT_AGENT
        get_agent(agent_name)
        session = await self.store.get_session(session_id)
        if role == "user" and (prompt is not None or parent_id is not None):
            raise BadRequestError("a user message has no prompt or parentID", field="role")
        if role == "assistant" and prompt is None:
            parent_id = await self._parent(session_id, parent_id)
        new_id = message_id or ids.message_id()
        taken = await self.store.ids_in_use([new_id], [])
        if taken:
            raise BadRequestError(f"messageID: {new_id} is already in use", field="messageID")
        holder: list[Recording] = []

        async def on_abort() -> None:
            if holder:
                await holder[0]._abort()
                await self._settle(holder[0])

        claim = self._claim(session_id, on_abort)
        try:
            if prompt is not None:
                parent_id = await self._store_prompt(session_id, prompt, model, agent_name)
            info: Message
            if role == "user":
                info = _user(session_id, new_id, model, agent_name)
            else:
                assert parent_id is not None
                info = _assistant(session, new_id, parent_id, model, agent_name)
            await save_message(self.store, info)
            await self.status.busy(session_id)  # after the prompt, as a run of our own loop
        except BaseException:
            if self._release(session_id, claim):
                await self.status.idle(session_id)
            raise
        builder = StreamingMessageBuilder(new_id, info.role, session_id=session_id)
        holder.append(Recording(self.store, self.host, builder, info, claim))
        holder[0].recorder = self
        if getattr(claim, "aborted", False):  # an abort came while the message was made
            await on_abort()
        return holder[0]

    async def open_child(
        self, parent: Recording, call_id: str, start: IngestStart | None
    ) -> Recording:
        """A recording in a new child session for the sub-agent that ``parent``'s tool call
        ``call_id`` runs; the call's metadata names the child (``sessionId``), as the task
        tool's does. Its prompt is the start's, else the call's ``prompt`` argument."""
        if self._create_session is None:
            raise BuilderError("this recorder cannot make sessions for sub-agents")
        call = parent.builder.tool_part(call_id)
        given = call.state.input
        kind = str(given.get("subagent_type") or "general")
        about = str(given.get("description") or call.tool)
        prompt = (start.prompt if start is not None else None) or str(given.get("prompt") or about)
        title = f"{about} (@{kind} subagent)"
        child = await self._create_session(
            SessionCreateInput(parent_id=parent.session_id, title=title)
        )
        running = getattr(call.state, "metadata", None) or {}
        linked = {**running, "sessionId": child.id}
        await parent._call(partial(parent.builder.update_tool, call_id, metadata=linked))
        model = start.model if start is not None else None
        info = parent.info
        if model is None and isinstance(info, AssistantMessage):
            model = ModelRef(provider_id=info.provider_id, model_id=info.model_id)
        return await self._open(
            child.id, "assistant", prompt, None, model or _model_ref(None), None, None
        )

    async def end_child(
        self, child: Recording, error: str | None, *, aborted: bool = False
    ) -> None:
        """End a sub-agent's recording: cleanly, or with ``error``."""
        if error is None:
            if not child.aborted:
                await child.finish()
                await self._settle(child)
        else:
            await self._end(child, error, aborted=aborted)

    async def _parent(self, session_id: str, parent_id: str | None) -> str:
        messages = await self.store.list_messages(session_id)
        users = [m.info.id for m in messages if isinstance(m.info, UserMessage)]
        if parent_id is not None:
            if parent_id not in users:
                raise BadRequestError(
                    f"parentID: {parent_id} is not a user message of session {session_id}",
                    field="parentID",
                )
            return parent_id
        if not users:
            raise BadRequestError(
                f"session {session_id} has no user message for this answer: "
                "give a prompt or record the user's message first",
                field="prompt",
            )
        return users[-1]

    async def _store_prompt(self, session_id: str, prompt: str, model: ModelRef, agent: str) -> str:
        user = _user(session_id, ids.message_id(), model, agent)
        await save_message(self.store, user)
        builder = StreamingMessageBuilder(user.id, "user", session_id=session_id)
        await MessageWriter(self.store, builder, user).write(builder.add_text(prompt))
        session = await self.store.get_session(session_id)  # named by it, as ours are
        await touch_session(self.store, session, shorten_title(" ".join(prompt.split())))
        return user.id

    async def _end(self, recording: Recording, message: str, *, aborted: bool) -> None:
        if recording.aborted:
            return
        await recording.fail(message, aborted=aborted)
        await self._settle(recording)

    async def _settle(self, recording: Recording) -> None:
        """Give the session back (once: an abort and the block's end may both get here)."""
        if self._release(recording.session_id, recording.claim):
            await self.status.idle(recording.session_id)


def _assistant(
    session: Session, message_id: str, parent_id: str, model: ModelRef, agent: str
) -> AssistantMessage:
    return new_assistant_message(
        session_id=session.id,
        parent_id=parent_id,
        provider_id=model.provider_id,
        model_id=model.model_id,
        agent=agent,
        root=session.directory,
        message_id=message_id,
    )


def _user(session_id: str, message_id: str, model: ModelRef, agent: str) -> UserMessage:
    return UserMessage(
        id=message_id,
        session_id=session_id,
        time=UserTime(created=now_ms()),
        agent=agent,
        model=model,
    )


def _model_ref(model: ModelRef | str | None) -> ModelRef:
    if isinstance(model, ModelRef):
        return model
    if model is None:
        return ModelRef(provider_id=EXTERNAL, model_id=EXTERNAL)
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise BadRequestError(f"model must be 'provider/model', not {model!r}", field="model")
    return ModelRef(provider_id=provider, model_id=name)
