"""The AI SDK's chat routes: ``POST /ui/chat`` (what ``DefaultChatTransport`` posts) and
``GET /ui/chat/{id}/stream`` (what ``useChat({resume: true})`` reconnects to).

``id`` names a partwire session: a session id, or any other chat id, which is kept in
the session's metadata (``chatID``) and gets its session on first use. The last message
is either a user message (the prompt) or the assistant message that carries the client's
answers to tool approvals (``approved`` → allow once, not → reject, with the reason).

Each response is one turn as a UI message stream (SSE, ``data: [DONE]`` at the end). It
ends when the turn does, or when the turn waits for approvals: the client answers them
and posts again, and the next response goes on from exactly where this one stopped.
Chunks carry ``id: <event id>:<n>``; ``Last-Event-ID`` on the reconnect route resumes
after exactly that chunk, and without it the reconnect replays the turn in progress
from its start (the AI SDK then replaces the message it has). 204 when nothing streams.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import Field, ValidationError

from partwire import ids
from partwire.bus import Subscription
from partwire.errors import BadRequestError, NotFoundError
from partwire.runtime import Project, Runtime
from partwire.schema.base import WireModel
from partwire.schema.event import Event
from partwire.schema.input import (
    FilePartInput,
    PartInput,
    PromptInput,
    SessionCreateInput,
    TextPartInput,
)
from partwire.schema.part import ModelRef
from partwire.schema.session import Session
from partwire.server.routes.frames import parse_cursor
from partwire.server.routes.scope import requested_project, runtime_of

if TYPE_CHECKING:  # loaded with the first chat, not at start-up
    from partwire.protocol.aisdk import Chunk, UIChunks

router = APIRouter(prefix="/ui/chat", tags=["ui"])

CHAT_ID = r"^[A-Za-z0-9_.:-]{1,128}$"
WAITING = {"type": "finish", "finishReason": "tool-calls"}


class UIMessageInput(WireModel):
    """A UIMessage as the AI SDK sends it; only the last one is read."""

    model_config = {**WireModel.model_config, "extra": "allow"}
    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[dict[str, Any]]
    metadata: Any = None


class UIChatRequest(WireModel):
    id: str = Field(pattern=CHAT_ID)
    messages: list[UIMessageInput] = Field(min_length=1)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(default=None, alias="messageId")
    agent: str | None = None
    model: str | None = Field(default=None, description='"provider/model"')


# ---- the request ------------------------------------------------------------------------------


def prompt_parts(message: UIMessageInput) -> list[PartInput]:
    parts: list[PartInput] = []
    for n, part in enumerate(message.parts):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextPartInput(text=part["text"]))
        elif kind == "file" and isinstance(part.get("url"), str):
            media = part.get("mediaType")
            if not isinstance(media, str):
                raise BadRequestError("a file part needs its mediaType", field=f"parts[{n}]")
            parts.append(FilePartInput(mime=media, url=part["url"], filename=part.get("filename")))
        elif kind != "step-start":
            raise BadRequestError(
                f"a user message part of type {kind!r} cannot be a prompt (text or file)",
                field=f"messages[-1].parts[{n}]",
            )
    return parts


def approval_answers(message: UIMessageInput) -> list[tuple[str, bool, str | None]]:
    """(approval id, approved, reason) of every answered tool approval in ``message``."""
    answers = []
    for part in message.parts:
        approval = part.get("approval")
        if part.get("state") != "approval-responded" or not isinstance(approval, dict):
            continue
        approval_id, approved = approval.get("id"), approval.get("approved")
        if not isinstance(approval_id, str) or not isinstance(approved, bool):
            raise BadRequestError("an approval answer needs its id and approved (true or false)")
        reason = approval.get("reason")
        answers.append((approval_id, approved, reason if isinstance(reason, str) else None))
    return answers


def model_ref(model: str | None) -> ModelRef | None:
    if model is None:
        return None
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise BadRequestError(f'model {model!r} is not "provider/model"', field="model")
    return ModelRef(provider_id=provider, model_id=name)


async def find_chat(runtime: Runtime, chat_id: str) -> Session | None:
    try:
        return await runtime.store.get_session(chat_id)
    except NotFoundError:
        pass
    for session in await runtime.store.list_sessions():
        if (session.metadata or {}).get("chatID") == chat_id:
            return session
    return None


async def chat_session(request: Request, chat_id: str) -> tuple[Session, Project]:
    runtime = runtime_of(request)
    session = await find_chat(runtime, chat_id)
    if session is not None:
        return session, runtime.project_of(session)
    project = requested_project(request)
    created = await project.sessions.create(SessionCreateInput(metadata={"chatID": chat_id}))
    return created, project


# ---- the stream -------------------------------------------------------------------------------


def sse(chunks: list[Chunk], event_id: str | None, *, first: int = 0) -> str:
    out = []
    for n, chunk in enumerate(chunks):
        if n >= first:
            head = f"id: {event_id}:{n}\n" if event_id is not None else ""
            out.append(f"{head}data: {json.dumps(chunk, separators=(',', ':'))}\n\n")
    return "".join(out)


class Turn:
    """Where one response begins in the session's history and which turn it follows."""

    def __init__(self, session_id: str) -> None:
        from partwire.protocol.aisdk import UIChunks

        self.chunks: UIChunks = UIChunks(session_id)
        self.follow: str | None = None  # the user message the turn answers
        self.done = False

    def emit(self, event: Event, *, first: int = 0) -> str:
        made = self.chunks.chunks(event)
        if not made:
            return ""
        own = 0  # the first chunk of the turn in progress (before it: the one that ended)
        if (ended := self.chunks.ended) is not None:
            parent, own = ended
            if parent == self.follow:
                self.done = True
                return sse(made[:own], event.id, first=first)
        turn = self.chunks.turn
        if self.follow is None and turn is not None and made[own]["type"] == "start":
            self.follow = turn.parent_id
        if turn is None or turn.parent_id != self.follow:
            return ""
        if turn.done:
            self.done = True
        return sse(made, event.id, first=max(first, own))

    def stop_if_waiting(self) -> str:
        if not self.done and self.follow is not None and self.chunks.waiting:
            self.done = True
            return sse([WAITING], None)
        return ""


async def history(
    runtime: Runtime, session_id: str, through: str | None, types: tuple[str, ...] = ()
) -> list[Event]:
    from partwire.protocol.aisdk import UI_EVENTS

    if through is None:
        return []
    return await runtime.store.session_history(session_id, through, list(types or UI_EVENTS))


async def live(
    runtime: Runtime, subscription: Subscription, turn: Turn, sent: str | None
) -> AsyncIterator[str]:
    heartbeat = runtime.settings.heartbeat_s
    while not turn.done:
        try:
            async with asyncio.timeout(heartbeat):
                first = await subscription.get()
        except TimeoutError:
            yield ": heartbeat\n\n"
            continue
        if first is None:
            return  # closed: the client reconnects with its Last-Event-ID
        text = []
        for event in [first, *subscription.drain()]:
            if sent is not None and event.id <= sent:
                continue
            sent = event.id
            text.append(turn.emit(event))
            text.append(turn.stop_if_waiting())
            if turn.done:
                break
        if chunk := "".join(text):
            yield chunk


async def respond(
    runtime: Runtime,
    subscription: Subscription,
    turn: Turn,
    opening: str,
    sent: str | None,
    client: str,
) -> AsyncIterator[str]:
    try:
        if opening:
            yield opening
        if not turn.done:
            if stop := turn.stop_if_waiting():
                yield stop
            else:
                async for text in live(runtime, subscription, turn, sent):
                    yield text
        yield "data: [DONE]\n\n"
    finally:
        subscription.close()
        runtime.quotas.close_stream(client)


def streaming(
    runtime: Runtime,
    subscription: Subscription,
    turn: Turn,
    opening: str,
    sent: str | None,
    client: str,
) -> StreamingResponse:
    from partwire.protocol.aisdk import HEADERS

    runtime.quotas.open_stream(client)
    return StreamingResponse(
        respond(runtime, subscription, turn, opening, sent, client),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **HEADERS},
    )


# ---- routes -----------------------------------------------------------------------------------


@router.post("", summary="AI SDK chat: prompt or answer approvals, stream the turn")
async def chat(request: Request, body: UIChatRequest) -> Response:
    runtime = runtime_of(request)
    if body.trigger == "regenerate-message":
        raise BadRequestError(
            "regenerate-message is not supported: send the prompt again", field="trigger"
        )
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    last = body.messages[-1]
    if last.role == "user":
        return await _prompt(request, runtime, body, last, client)
    if last.role == "assistant":
        return await _answer(request, runtime, body, last, client)
    raise BadRequestError("the last message must be the user's prompt or approval answers")


async def _prompt(
    request: Request, runtime: Runtime, body: UIChatRequest, last: UIMessageInput, client: str
) -> Response:
    from partwire.protocol.aisdk import UI_EVENTS

    try:
        prompt = PromptInput(
            message_id=ids.message_id(),
            agent=body.agent,
            model=model_ref(body.model),
            parts=prompt_parts(last),
        )
    except ValidationError as exc:
        problems = "; ".join(str(error["msg"]) for error in exc.errors()[:3])
        raise BadRequestError(f"the last user message is no prompt: {problems}") from None
    session, project = await chat_session(request, body.id)
    subscription = runtime.bus.subscribe(*UI_EVENTS)
    try:
        future = await project.loop.enqueue(session.id, prompt)
    except BaseException:
        subscription.close()
        raise
    future.add_done_callback(_retrieve)
    turn = Turn(session.id)
    turn.follow = prompt.message_id
    return streaming(runtime, subscription, turn, "", None, client)


async def _answer(
    request: Request, runtime: Runtime, body: UIChatRequest, last: UIMessageInput, client: str
) -> Response:
    from partwire.protocol.aisdk import UI_EVENTS

    answers = approval_answers(last)
    if not answers:
        raise BadRequestError(
            "the last message is the assistant's and answers no tool approval",
            field="messages",
        )
    session = await find_chat(runtime, body.id)
    if session is None:
        raise NotFoundError("Chat", body.id)
    subscription = runtime.bus.subscribe(*UI_EVENTS)
    try:
        # approvals first: a rejection settles every other ask of the session too
        for approval_id, approved, reason in sorted(answers, key=lambda a: not a[1]):
            pending = {p.id for p in runtime.permissions.pending() if p.session_id == session.id}
            if approval_id not in pending:  # answered elsewhere already: the stream shows how
                continue
            if approved:
                await runtime.permissions.reply(approval_id, "once")
            else:
                await runtime.permissions.reply(approval_id, "reject", reason)
        head = await runtime.store.last_event_id()
        events = await history(runtime, session.id, head)
        start = _after_last_wait(Turn(session.id), events, {a for a, _, _ in answers})
        turn, opening = _continue(session.id, events, start)
    except BaseException:
        subscription.close()
        raise
    return streaming(runtime, subscription, turn, opening, head, client)


def _after_last_wait(turn: Turn, events: list[Event], approvals: set[str]) -> int:
    """The index just past the event where the stream that asked for ``approvals``
    stopped: the first point after the last of those asks at which the turn waited."""
    asked_at = -1
    for n, event in enumerate(events):
        if event.type == "permission.asked" and getattr(event.properties, "id", None) in approvals:
            asked_at = n
    if asked_at < 0:
        raise BadRequestError("none of the answered approvals was asked in this chat")
    for n, event in enumerate(events):
        turn.chunks.chunks(event)
        if n >= asked_at and turn.chunks.waiting:
            return n + 1
    return len(events)


def _continue(session_id: str, events: list[Event], start: int) -> tuple[Turn, str]:
    turn = Turn(session_id)
    for event in events[:start]:
        turn.chunks.chunks(event)
    current = turn.chunks.turn
    turn.follow = current.parent_id if current is not None else None
    opening = ""
    if current is not None:
        meta = {"type": "start", "messageId": current.ui_id}
        opening = sse([meta], None)
    opening += "".join(turn.emit(event) for event in events[start:])
    return turn, opening


@router.get("/{chatID}/stream", summary="AI SDK chat: resume the turn in progress")
async def resume(request: Request, chatID: str) -> Response:
    from partwire.protocol.aisdk import UI_EVENTS

    runtime = runtime_of(request)
    session = await find_chat(runtime, chatID)
    cursor = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
    if cursor is None and (session is None or runtime.status.get(session.id).type == "idle"):
        return Response(status_code=204)  # what useChat expects when nothing streams
    if session is None:
        raise NotFoundError("Chat", chatID)
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    subscription = runtime.bus.subscribe(*UI_EVENTS)
    try:
        head = await runtime.store.last_event_id()
        events = await history(runtime, session.id, head)
        turn = Turn(session.id)
        if cursor is not None:
            opening = _from_cursor(turn, events, parse_cursor(cursor))
        else:
            opening = _from_turn_start(turn, events)
    except BaseException:
        subscription.close()
        raise
    return streaming(runtime, subscription, turn, opening, head, client)


def _from_cursor(turn: Turn, events: list[Event], cursor: tuple[str, int | None]) -> str:
    event_id, seen = cursor
    at = next((n for n, e in enumerate(events) if e.id == event_id), None)
    if at is None:
        raise BadRequestError(f"cannot resume from {event_id}: not an event of this chat")
    for event in events[:at]:
        turn.chunks.chunks(event)
    current = turn.chunks.turn
    turn.follow = current.parent_id if current is not None else None
    if current is not None and current.done:
        turn.done = True
        return ""
    text = turn.emit(events[at], first=(seen + 1) if seen is not None else 1 << 30)
    return text + "".join(turn.emit(e) for e in events[at + 1 :] if not turn.done)


def _from_turn_start(turn: Turn, events: list[Event]) -> str:
    """The latest turn from its first chunk (or nothing, when it ended already)."""
    start = 0
    probe = Turn(turn.chunks.session_id)
    for n, event in enumerate(events):
        made = probe.chunks.chunks(event)
        if made and made[0]["type"] == "start":
            start = n
    latest = probe.chunks.turn
    if latest is None or latest.done:
        for event in events:
            turn.chunks.chunks(event)
        turn.follow = None  # the next turn, when it begins
        return ""
    for event in events[:start]:
        turn.chunks.chunks(event)
    return "".join(turn.emit(event) for event in events[start:])


@router.get("/{chatID}/messages", summary="AI SDK chat: the chat's UIMessages")
async def messages(request: Request, chatID: str) -> Response:
    """The settled UIMessages: a turn still in progress is left out, for the reconnect
    route replays it whole."""
    from partwire.protocol.aisdk import approvals_of, ui_messages

    runtime = runtime_of(request)
    session = await find_chat(runtime, chatID)
    if session is None:
        raise NotFoundError("Chat", chatID)
    stored = await runtime.store.list_messages(session.id)
    head = await runtime.store.last_event_id()
    asks = await history(runtime, session.id, head, ("permission.asked", "permission.replied"))
    ui = ui_messages(stored, approvals_of(asks))
    if runtime.status.get(session.id).type != "idle" and ui and ui[-1]["role"] == "assistant":
        ui.pop()
    return JSONResponse(ui)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
