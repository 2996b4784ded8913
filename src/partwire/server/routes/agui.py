"""``POST /agui``: AG-UI over SSE. The body is a ``RunAgentInput``; ``threadId`` names the
session (a session id, or any id, kept as ``chatID`` and given a session on first use).

What the run does depends on the input:

- ``resume`` entries answer the interrupts a run ended with (permission asks): ``status:
  cancelled`` rejects; ``resolved`` allows once, or as ``payload`` says (``{"reply":
  "once" | "always" | "reject", "message"?}`` or ``{"approved": bool}``). The run goes on
  from exactly where the interrupted one stopped.
- otherwise a last message from the user is the prompt (its text; ``context`` entries
  become the prompt's system text; ``forwardedProps`` may name ``agent`` and ``model``);
- otherwise the run reconnects: ``MESSAGES_SNAPSHOT`` and ``STATE_SNAPSHOT``, then the
  turn in progress, live, to its end.

Events carry ``id: <event id>:<n>``: with ``Last-Event-ID`` the response is exactly what
followed that event in the original run. Client-side ``tools`` and a ``state`` other than
partwire's own (``{todos}``) are refused: partwire runs its own tools and owns the state.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from partwire import ids
from partwire.errors import BadRequestError, NotFoundError
from partwire.protocol.aisdk import UI_EVENTS
from partwire.protocol.uimessages import approvals_of
from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.schema.input import PromptInput, SessionCreateInput, TextPartInput
from partwire.schema.part import ModelRef
from partwire.schema.permission import PermissionReply
from partwire.server.authorize import check_may_create, check_session, owner_of
from partwire.server.routes.scope import requested_project, runtime_of
from partwire.server.turnstream import (
    History,
    Opening,
    TurnStream,
    after_last_wait,
    answer_permissions,
    check_cursor,
    enqueue_prompt,
    from_cursor,
    respond,
    resume_at,
    session_for,
)

if TYPE_CHECKING:  # ag-ui-protocol's models load with the first run, not at start-up
    from ag_ui.core import RunAgentInput

    from partwire.protocol.agui import AguiItem, AguiView

router = APIRouter(tags=["agui"])

REPLIES: tuple[PermissionReply, ...] = ("once", "always", "reject")
FORWARDED = {"agent", "model"}


def _check(body: RunAgentInput) -> None:
    if body.tools:
        raise BadRequestError("client-side tools are not supported: partwire runs its own")
    state = body.state
    if state not in (None, {}) and not (isinstance(state, dict) and set(state) <= {"todos"}):
        raise BadRequestError("state is partwire's own ({todos}): a client cannot set it")
    props = body.forwarded_props
    if props not in (None, {}) and not (isinstance(props, dict) and set(props) <= FORWARDED):
        raise BadRequestError('forwardedProps may only hold "agent" and "model"')


def _reply(entry: Any) -> tuple[str, PermissionReply, str | None]:
    if entry.status == "cancelled":
        return entry.interrupt_id, "reject", None
    payload = entry.payload
    if payload is None:
        return entry.interrupt_id, "once", None
    if isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
        return entry.interrupt_id, "once" if payload["approved"] else "reject", None
    if isinstance(payload, dict) and payload.get("reply") in REPLIES:
        message = payload.get("message")
        reply: PermissionReply = payload["reply"]
        return entry.interrupt_id, reply, message if isinstance(message, str) else None
    raise BadRequestError(
        f"resume {entry.interrupt_id}: payload must be {{reply: once|always|reject}} "
        "or {approved: true|false}"
    )


def _prompt_of(body: RunAgentInput) -> PromptInput:
    from ag_ui.core import TextPart, UserMessage

    last = body.messages[-1]
    if not isinstance(last, UserMessage):
        raise BadRequestError("the last message is not the user's")
    texts = []
    for part in [last.content] if isinstance(last.content, str) else last.content:
        if isinstance(part, str | TextPart):
            texts.append(part if isinstance(part, str) else part.text)
        else:
            raise BadRequestError(f"the prompt may hold text only, not {part.type}")
    text = "\n".join(texts)
    props = body.forwarded_props or {}
    model = props.get("model")
    model_ref = None
    if model is not None:
        provider, sep, name = str(model).partition("/")
        if not sep or not provider or not name:
            raise BadRequestError(f'model {model!r} is not "provider/model"', field="model")
        model_ref = ModelRef(provider_id=provider, model_id=name)
    system = "\n".join(f"{c.description}: {c.value}" for c in body.context or []) or None
    if not text.strip():
        raise BadRequestError("the prompt is empty")
    return PromptInput(
        message_id=ids.message_id(),
        agent=props.get("agent"),
        model=model_ref,
        system=system,
        parts=[TextPartInput(text=text)],
    )


async def _input(request: Request) -> RunAgentInput:
    from ag_ui.core import RunAgentInput

    try:
        return RunAgentInput.model_validate(json.loads(await request.body()))
    except ValueError as exc:  # ValidationError is one
        if isinstance(exc, ValidationError):
            problems = "; ".join(
                f"{'.'.join(str(step) for step in error['loc'])}: {error['msg']}"
                for error in exc.errors()[:3]
            )
        else:
            problems = f"not JSON ({exc})"
        raise BadRequestError(f"not a RunAgentInput: {problems}") from None


RUN_INPUT_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"type": "object", "required": [
            "threadId", "runId", "messages"
        ]}}},
    }
}  # fmt: skip


@router.post("/agui", summary="AG-UI: run a session (SSE, resumable)", openapi_extra=RUN_INPUT_DOC)
async def run(request: Request) -> Response:
    from partwire.protocol.agui import AguiView

    runtime = runtime_of(request)
    body = await _input(request)
    _check(body)
    client = request.client.host if request.client else "?"
    runtime.quotas.check_stream(client)
    cursor = request.headers.get("last-event-id")
    session = await session_for(runtime, body.thread_id)
    prompt = None
    if not cursor and not body.resume and body.messages and body.messages[-1].role == "user":
        prompt = _prompt_of(body)
    created = session is None
    if session is not None:
        await check_session(request, session.id, "write" if prompt is not None else "read")
    else:
        if prompt is None:
            raise NotFoundError("Thread", body.thread_id)
        check_may_create(request)
        metadata = {"chatID": body.thread_id}
        session = await requested_project(request).sessions.create(
            SessionCreateInput(metadata=metadata), owner=owner_of(request)
        )
    view = AguiView(body.thread_id, body.run_id, await runtime.store.get_todos(session.id))
    stream = TurnStream(session.id, view)
    subscription = runtime.bus.subscribe(*UI_EVENTS, session_id=session.id)
    try:
        if cursor:
            head = await runtime.store.last_event_id()
            past = History(runtime, session.id, head)
            await check_cursor(past, cursor)
            opening: Opening | str = from_cursor(stream, past, cursor)
        elif body.resume:
            replies = [_reply(entry) for entry in body.resume]
            await answer_permissions(runtime, session.id, replies)
            head = await runtime.store.last_event_id()
            past = History(runtime, session.id, head)
            start = await after_last_wait(past, {r[0] for r in replies}, loose_asks_wait=True)
            opening = resume_at(stream, past, start)
        elif prompt is not None:
            await enqueue_prompt(runtime.project_of(session), session, prompt, created=created)
            stream.follow = prompt.message_id
            head, opening = None, stream.plain(view.beginning(stream.source))
        else:
            head, opening = await _reconnect(runtime, stream, view, session.id)
    except BaseException:
        subscription.close()
        raise
    return respond(runtime, subscription, stream, opening, head, client)


async def _reconnect(
    runtime: Runtime, stream: TurnStream[AguiItem], view: AguiView, session_id: str
) -> tuple[str | None, str]:
    """A client that sent nothing new: the messages, the state, then the turn in
    progress (the run finishes at once when none is)."""
    from ag_ui.core import MessagesSnapshotEvent, RunFinishedEvent

    from partwire.protocol.agui import agui_messages

    stored, head = await runtime.store.snapshot_messages(session_id)
    asks: list[Event] = []
    async for event in History(runtime, session_id, head):
        stream.feed(event)
        if event.type in ("permission.asked", "permission.replied"):
            asks.append(event)
    snapshot = MessagesSnapshotEvent(messages=agui_messages(stored, approvals_of(asks)))
    items = view.beginning(stream.source)
    items.insert(1, view.item(snapshot))
    current = stream.source.turn
    if current is None or current.done or runtime.status.get(session_id).type == "idle":
        finished = RunFinishedEvent(thread_id=view.thread_id, run_id=view.run_id)
        stream.done = True
        return head, stream.plain([*items, view.item(finished)])
    stream.follow = current.parent_id
    return head, stream.plain(items)
