"""A recording: one message of an external agent loop, written into a session as it streams.

A :class:`Recording` wraps a StreamingMessageBuilder. Each call goes through the builder
(so an illegal sequence is refused before anything is written) and its frames become the
same store writes and events as partwire's own processor makes: part rows with
``message.part.updated``, text as ``message.part.delta``, all committed before they are
published. A sub-agent's events (ingest ``subagent`` lines) go to a child recording that
the recorder (session/recorder.py) opens and ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

from partwire.builder import StreamingMessageBuilder, StreamKind
from partwire.errors import AbortedError, BadRequestError, BuilderError
from partwire.schema.base import Tokens
from partwire.schema.event import SessionError, SessionErrorProps
from partwire.schema.frames import BuiltMessage, Frame
from partwire.schema.ingest import (
    FileAdded,
    IngestEvent,
    IngestStart,
    ReasoningDelta,
    StepFinish,
    StepStart,
    StreamError,
    SubagentEvent,
    TextDelta,
    TextEnd,
    ToolArgsDelta,
    ToolCall,
    ToolCallStart,
    ToolResult,
)
from partwire.schema.message import ABORTED_MESSAGE, AssistantMessage, Message
from partwire.schema.part import Part
from partwire.schema.permission import QuestionInfo, ToolRef
from partwire.session.toolhost import ToolHost
from partwire.session.writer import MessageWriter
from partwire.storage.base import Store

EXTERNAL = "external"  # the provider and model of a message whose model nobody named


class ChildRecorder(Protocol):
    """What opens and ends a sub-agent's recording (the Recorder)."""

    async def open_child(
        self, parent: Recording, call_id: str, start: IngestStart | None
    ) -> Recording: ...

    async def end_child(
        self, child: Recording, error: str | None, *, aborted: bool = False
    ) -> None: ...


class Recording:
    """One message of an external loop. Every method mirrors the builder's and is atomic:
    a refused call writes nothing."""

    def __init__(
        self,
        store: Store,
        host: ToolHost,
        builder: StreamingMessageBuilder,
        info: Message,
        claim: object = None,
    ) -> None:
        self.claim = claim
        self.store = store
        self.host = host
        self.builder = builder
        self.writer = MessageWriter(store, builder, info)
        self.aborted = False
        self._lock = asyncio.Lock()
        # sub-agents' recordings, by the call of this message that runs each
        self.children: dict[str, Recording] = {}
        self.ended_children: set[str] = set()  # their calls returned: later events are late
        self.recorder: ChildRecorder | None = None  # opens and ends them

    @property
    def message_id(self) -> str:
        return self.builder.message_id

    @property
    def session_id(self) -> str:
        return self.builder.session_id

    @property
    def info(self) -> Message:
        """The message as stored (with its totals and end once it ended)."""
        return self.writer.info

    # ---- the builder's calls, recorded ---------------------------------------------------

    async def add_text_delta(self, text: str) -> None:
        await self._call(self.builder.add_text_delta, text)

    async def add_reasoning_delta(self, text: str) -> None:
        await self._call(self.builder.add_reasoning_delta, text)

    def grow(self, kind: StreamKind, text: str) -> Awaitable[None] | None:
        """``add_text_delta`` (``kind`` "text") or ``add_reasoning_delta``, for a caller
        that makes many: None when the delta is queued, else what to await before the
        next call. A delta to the part already streaming is one call, not a coroutine;
        anything else (a part to open, a call under way, the message ended) takes the
        method's own way."""
        index = None
        if not self._lock.locked() and not self.aborted:
            index = self.builder.grow_unnamed(kind, text)
        if index is not None:
            return self.writer.text_delta(index, text)
        return self.add_text_delta(text) if kind == "text" else self.add_reasoning_delta(text)

    async def start_tool_call(self, call_id: str, name: str) -> None:
        await self._call(self.builder.start_tool_call, call_id, name)

    async def add_tool_args_delta(self, call_id: str, delta: str) -> None:
        await self._call(self.builder.add_tool_args_delta, call_id, delta)

    async def add_tool_call(
        self,
        call_id: str | object,
        name: str | None = None,
        args: Mapping[str, Any] | str | None = None,
    ) -> None:
        """As the builder's: a call id, tool name and arguments, or one seed-003
        ``ToolCallPart``."""
        await self._call(self.builder.add_tool_call, call_id, name, args)

    async def finalize_text_part(self) -> None:
        """End the text part streaming now (seed 003's name): the next delta begins another."""
        await self._call(self.builder.finalize_text_part)

    @property
    def parts(self) -> list[Part]:
        return self.builder.parts

    @property
    def current_text(self) -> str:
        return self.builder.current_text

    @property
    def current_part_index(self) -> int:
        return self.builder.current_part_index

    async def add_tool_result(
        self,
        call_id: str | object,
        output: Any = None,
        is_error: bool = False,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        key = _call_key(call_id) or ""
        child = self.children.pop(key, None)
        self.ended_children.add(key)
        if child is not None and self.recorder is not None:  # the sub-agent's answer: it ended
            await self.recorder.end_child(child, str(output) if is_error else None)
            metadata = {**(metadata or {}), "sessionId": child.session_id}  # still linked
        async with self._writing():
            frames = self.builder.add_tool_result(
                call_id, output, is_error, title=title, metadata=metadata
            )
            await self.writer.write(frames)

    async def add_file(self, mime: str, url: str, filename: str | None = None) -> None:
        await self._call(self.builder.add_file, mime, url, filename)

    async def start_step(self) -> None:
        await self._call(self.builder.start_step)

    async def finish_step(
        self,
        tokens: Tokens | Mapping[str, Any] | None = None,
        cost: float | None = None,
        reason: str = "stop",
    ) -> None:
        """End the step; with no ``cost`` given, the price catalogue's for the message's
        model (0 for a model it does not know)."""
        if cost is None:
            cost = _priced(self.info, tokens)
        await self._call(self.builder.finish_step, tokens, cost, reason)

    async def finish(self) -> BuiltMessage:
        """End the message cleanly (the ``async with`` block does this on a normal exit)."""
        await self._end_children(None)
        async with self._writing():
            if not self.builder.done:
                await self.writer.write(self.builder.finish())
        return self.builder.build()

    async def fail(self, message: str, *, aborted: bool = False) -> BuiltMessage:
        """End the message with an error (``aborted``: it was stopped, not broken)."""
        await self._end_children(message, aborted=aborted)
        async with self._lock:
            await self._fail(message, aborted=aborted)
        return self.builder.build()

    async def _fail(self, message: str, *, aborted: bool) -> None:
        if self.builder.done:
            return
        await self.writer.write(self.builder.fail(message, aborted=aborted))
        if not aborted:
            error = self.builder.error
            assert error is not None
            props = SessionErrorProps(session_id=self.session_id, error=error)
            await self.store.publish([SessionError(props)])

    def _adopt_model(self, start: IngestStart) -> None:
        """A converter's start that only names the stream's model (each model call of a
        loop may begin with one): the message takes it when nobody named one at the
        start. Any other start line mid-message is refused."""
        named_only = (
            start.model is not None
            and start.role == "assistant"
            and start.prompt is None
            and start.parent_id is None
            and start.message_id is None
            and start.agent is None
        )
        if not named_only:
            raise BuilderError("a start line may only be the first line")
        info, model = self.writer.info, start.model
        assert model is not None
        unnamed = isinstance(info, AssistantMessage) and info.provider_id == EXTERNAL
        if unnamed and not self.builder.done:
            named = {"provider_id": model.provider_id, "model_id": model.model_id}
            self.writer.info = info.model_copy(update=named)

    async def _end_children(self, error: str | None, *, aborted: bool = False) -> None:
        while self.children and self.recorder is not None:
            _, child = self.children.popitem()
            await self.recorder.end_child(child, error, aborted=aborted)

    async def _subagent(self, event: SubagentEvent) -> None:
        """Route a sub-agent's event to its own recording, opened by its first event."""
        inner = event.event
        child = self.children.get(event.call_id)
        if event.call_id in self.ended_children:
            return  # the sub-agent already answered: what it says after is not kept
        if child is None:
            if self.recorder is None:
                raise BuilderError("sub-agent events need a recording opened by the recorder")
            start = inner if isinstance(inner, IngestStart) else None
            child = await self.recorder.open_child(self, event.call_id, start)
            self.children[event.call_id] = child
            if start is not None:
                return
        elif isinstance(inner, IngestStart):
            raise BuilderError(f"the sub-agent of call {event.call_id!r} has already started")
        await child.feed(inner)

    async def _call(self, method: Callable[..., list[Frame]], *args: Any) -> None:
        async with self._writing():
            await self.writer.write(method(*args))

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        async with self._lock:
            if self.aborted:
                raise AbortedError("The session was aborted; this message takes no more calls.")
            yield

    async def feed(self, event: IngestEvent) -> None:
        """Make the call an ingest event stands for (schema/ingest.py: what converters and
        ``POST /session/{id}/ingest`` produce); BuilderError when it is out of order."""
        if isinstance(event, SubagentEvent):
            await self._subagent(event)
            return
        if isinstance(event, IngestStart):
            self._adopt_model(event)
            return
        if isinstance(event, StreamError):
            if self.builder.done:
                raise BuilderError("an error after the message ended")
            await self.fail(event.message)
            return
        await self._call_for(event)

    async def _call_for(self, event: IngestEvent) -> None:
        match event:
            case TextDelta(delta=delta):
                await self.add_text_delta(delta)
            case ReasoningDelta(delta=delta):
                await self.add_reasoning_delta(delta)
            case TextEnd():
                await self.finalize_text_part()
            case ToolCallStart(call_id=call_id, tool=tool):
                await self.start_tool_call(call_id, tool)
            case ToolArgsDelta(call_id=call_id, delta=delta):
                await self.add_tool_args_delta(call_id, delta)
            case ToolCall(call_id=call_id, tool=tool, input=args):
                await self.add_tool_call(call_id, tool, args)
            case ToolResult():
                await self.add_tool_result(
                    event.call_id,
                    event.output,
                    event.is_error,
                    title=event.title,
                    metadata=event.metadata,
                )
            case FileAdded(mime=mime, url=url, filename=filename):
                await self.add_file(mime, url, filename)
            case StepStart():
                await self.start_step()
            case StepFinish(tokens=tokens, cost=cost, reason=reason):
                await self.finish_step(tokens, cost, reason)

    # ---- asks tied to a tool call --------------------------------------------------------

    async def ask_permission(
        self,
        permission: str,
        patterns: Sequence[str],
        *,
        call_id: str | None = None,
        always: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Ask the user (``permission.asked``, answered through the usual route) and return
        once allowed. Rules the user added with "always" answer later asks by themselves.
        Raises RejectedError (the user said no; ``feedback`` is what they said) or
        PermissionDeniedError (a session rule denies it)."""
        await self.host.permissions.ask(
            session_id=self.session_id,
            permission=permission,
            patterns=list(patterns),
            agent_rules=[],
            always=always,
            metadata=metadata,
            tool=self._tool_ref(call_id),
        )

    async def ask_question(
        self,
        questions: Sequence[QuestionInfo | Mapping[str, Any]],
        *,
        call_id: str | None = None,
    ) -> list[list[str]]:
        """Ask the user questions; returns one list of chosen labels per question.
        Raises RejectedError when the user dismisses them."""
        try:
            items = [QuestionInfo.model_validate(q) for q in questions]
        except ValueError as exc:
            raise BadRequestError(f"questions: {exc}", field="questions") from None
        return await self.host.questions.ask(self.session_id, items, self._tool_ref(call_id))

    def _tool_ref(self, call_id: str | None) -> ToolRef | None:
        if call_id is None:
            return None
        self.builder.tool_part(call_id)  # fail closed: an ask names a call of this message
        return ToolRef(message_id=self.message_id, call_id=call_id)

    async def _abort(self) -> None:
        """The session was aborted (by a user, or at shutdown): end the message now."""
        await self._end_children(ABORTED_MESSAGE, aborted=True)
        async with self._lock:
            await self._fail(ABORTED_MESSAGE, aborted=True)
            self.aborted = True


def _call_key(call: str | object) -> str | None:
    """The call id a tool result names (a string, or a seed-003 ``ToolResultPart``)."""
    if isinstance(call, str):
        return call
    if isinstance(call, Mapping):
        value = call.get("toolCallId")
    else:
        value = getattr(call, "tool_call_id", None) or getattr(call, "toolCallId", None)
    return value if isinstance(value, str) else None


def _priced(info: Message, tokens: Tokens | Mapping[str, Any] | None) -> float:
    """What the catalogue says a step of ``info``'s model with ``tokens`` costs."""
    if not isinstance(info, AssistantMessage) or info.provider_id == EXTERNAL or tokens is None:
        return 0.0
    from partwire.builder_inputs import tokens as checked
    from partwire.providers.catalog import cost
    from partwire.providers.stream import Usage

    used = checked(tokens)  # each count once: input without the cache, output without reasoning
    usage = Usage(
        input=used.input + used.cache.read + used.cache.write,
        output=used.output + used.reasoning,
        cache_read=used.cache.read,
        cache_write=used.cache.write,
    )
    return cost(info.provider_id, info.model_id, None, usage)
