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

import json
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationError

from partwire import ids
from partwire.errors import BadRequestError, NotFoundError
from partwire.protocol.aisdk import HEADERS, UI_EVENTS, Chunk, UIChunks
from partwire.protocol.uimessages import approvals_of, ui_messages
from partwire.runtime import Project, Runtime
from partwire.schema.base import WireModel
from partwire.schema.input import (
    FilePartInput,
    PartInput,
    PromptInput,
    SessionCreateInput,
    TextPartInput,
)
from partwire.schema.part import ModelRef
from partwire.schema.permission import PermissionReply
from partwire.schema.session import Session
from partwire.server.authorize import check_may_create, check_session, owner_of
from partwire.server.routes.scope import requested_project, runtime_of
from partwire.server.turnstream import (
    History,
    TurnStream,
    after_last_wait,
    answer_permissions,
    check_cursor,
    enqueue_prompt,
    from_cursor,
    from_turn_start,
    respond,
    resume_at,
    session_for,
)

router = APIRouter(prefix="/ui/chat", tags=["ui"])

CHAT_ID = r"^[A-Za-z0-9_.:-]{1,128}$"


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


async def chat_session(request: Request, chat_id: str) -> tuple[Session, Project, bool]:
    """The chat's session and project, and whether the session is new."""
    runtime = runtime_of(request)
    session = await session_for(runtime, chat_id)
    if session is not None:
        await check_session(request, session.id, "write")
        return session, runtime.project_of(session), False
    check_may_create(request)
    project = requested_project(request)
    created = await project.sessions.create(
        SessionCreateInput(metadata={"chatID": chat_id}), owner=owner_of(request)
    )
    return created, project, True


# ---- the view ----------------------------------------------------------------------------------


class UIStreamView:
    """The AI SDK's view: the chunks as they are."""

    def translate(self, chunks: list[Chunk], source: UIChunks) -> list[Chunk]:
        return chunks

    def encode(self, item: Chunk) -> str:
        return f"data: {json.dumps(item, separators=(',', ':'))}\n\n"

    def beginning(self, source: UIChunks) -> list[Chunk]:
        turn = source.turn
        if turn is None or turn.done:
            return []
        return [{"type": "start", "messageId": turn.ui_id}]  # a response that goes on

    def waiting(self, source: UIChunks) -> list[Chunk]:
        return [{"type": "finish", "finishReason": "tool-calls"}]

    def closing(self) -> str:
        return "data: [DONE]\n\n"

    @property
    def transport(self) -> str:
        return "aisdk"

    @property
    def loose_asks_wait(self) -> bool:
        return False  # a budget ask is data-permission; the stream goes on

    @property
    def headers(self) -> dict[str, str]:
        return HEADERS


def _stream(session_id: str) -> TurnStream[Chunk]:
    return TurnStream(session_id, UIStreamView())


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
        return await _answer(runtime, body, last, client)
    raise BadRequestError("the last message must be the user's prompt or approval answers")


async def _prompt(
    request: Request, runtime: Runtime, body: UIChatRequest, last: UIMessageInput, client: str
) -> Response:
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
    session, project, created = await chat_session(request, body.id)
    subscription = runtime.bus.subscribe(*UI_EVENTS, session_id=session.id)
    try:
        await enqueue_prompt(project, session, prompt, created=created)
    except BaseException:
        subscription.close()
        raise
    stream = _stream(session.id)
    stream.follow = prompt.message_id
    return respond(runtime, subscription, stream, "", None, client)


async def _answer(
    runtime: Runtime, body: UIChatRequest, last: UIMessageInput, client: str
) -> Response:
    answers = approval_answers(last)
    if not answers:
        raise BadRequestError(
            "the last message is the assistant's and answers no tool approval",
            field="messages",
        )
    session = await session_for(runtime, body.id)
    if session is None:
        raise NotFoundError("Chat", body.id)
    subscription = runtime.bus.subscribe(*UI_EVENTS, session_id=session.id)
    try:
        replies: list[tuple[str, PermissionReply, str | None]] = [
            (a, "once", None) if ok else (a, "reject", why) for a, ok, why in answers
        ]
        await answer_permissions(runtime, session.id, replies)
        head = await runtime.store.last_event_id()
        past = History(runtime, session.id, head)
        start = await after_last_wait(past, {a for a, _, _ in answers})
        stream = _stream(session.id)
        opening = resume_at(stream, past, start)
    except BaseException:
        subscription.close()
        raise
    return respond(runtime, subscription, stream, opening, head, client)


@router.get("/{chatID}/stream", summary="AI SDK chat: resume the turn in progress")
async def resume(request: Request, chatID: str) -> Response:
    runtime = runtime_of(request)
    session = await session_for(runtime, chatID)
    if session is not None:
        await check_session(request, session.id, "read")
    cursor = request.headers.get("last-event-id") or request.query_params.get("lastEventID")
    if cursor is None and (session is None or runtime.status.get(session.id).type == "idle"):
        return Response(status_code=204)  # what useChat expects when nothing streams
    if session is None:
        raise NotFoundError("Chat", chatID)
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    subscription = runtime.bus.subscribe(*UI_EVENTS, session_id=session.id)
    try:
        head = await runtime.store.last_event_id()
        past = History(runtime, session.id, head)
        stream = _stream(session.id)
        if cursor is not None:
            await check_cursor(past, cursor)
            opening = from_cursor(stream, past, cursor)
        else:
            opening = from_turn_start(stream, past)
    except BaseException:
        subscription.close()
        raise
    return respond(runtime, subscription, stream, opening, head, client)


@router.get("/{chatID}/messages", summary="AI SDK chat: the chat's UIMessages")
async def messages(request: Request, chatID: str) -> Response:
    """The settled UIMessages: a turn still in progress is left out, for the reconnect
    route replays it whole."""
    runtime = runtime_of(request)
    session = await session_for(runtime, chatID)
    if session is None:
        raise NotFoundError("Chat", chatID)
    await check_session(request, session.id, "read")
    stored = await runtime.store.list_messages(session.id)
    head = await runtime.store.last_event_id()
    kinds = ("permission.asked", "permission.replied")
    asks = [e async for e in History(runtime, session.id, head, kinds)]
    ui = ui_messages(stored, approvals_of(asks))
    if runtime.status.get(session.id).type != "idle" and ui and ui[-1]["role"] == "assistant":
        ui.pop()
    return JSONResponse(ui)
