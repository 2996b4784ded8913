"""opencode's v2 API: a session's permission and question asks — listed, answered, and
asked by a client's own tool (``POST …/permission``: the session's rules answer at once, or
the user is asked). The same asks as v1's routes."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import Field

from partwire import ids
from partwire.errors import IdConflictError, NotFoundError
from partwire.runtime import Runtime
from partwire.schema.base import WireModel
from partwire.schema.permission import PermissionReply, PermissionRequest, ToolRef
from partwire.server.routes.v2 import body, permission_v2, question_v2
from partwire.server.routes.v2_sessions import session_of
from partwire.session.agents import get_agent
from partwire.session.loop import leave_running

router = APIRouter(prefix="/api/session", tags=["v2"])


class PermissionAnswer(WireModel):
    reply: PermissionReply
    message: str | None = None


class QuestionAnswer(WireModel):
    answers: list[list[str]]


@router.get("/{sessionID}/permission", operation_id="v2.session.permission.list")
async def permissions(request: Request, sessionID: str) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    pending = [p for p in runtime.permissions.pending() if p.session_id == sessionID]
    return body({"data": [permission_v2(p) for p in pending]})


def _pending_permission(runtime: Runtime, session_id: str, request_id: str) -> PermissionRequest:
    for pending in runtime.permissions.pending():
        if pending.id == request_id and pending.session_id == session_id:
            return pending
    raise NotFoundError("Permission request", request_id)


@router.get("/{sessionID}/permission/{requestID}", operation_id="v2.session.permission.get")
async def permission(request: Request, sessionID: str, requestID: str) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    return body({"data": permission_v2(_pending_permission(runtime, sessionID, requestID))})


@router.post(
    "/{sessionID}/permission/{requestID}/reply",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.permission.reply",
)
async def reply_permission(
    request: Request, sessionID: str, requestID: str, payload: PermissionAnswer
) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    _pending_permission(runtime, sessionID, requestID)
    await runtime.permissions.reply(requestID, payload.reply, payload.message)
    return Response(status_code=204)


@router.get("/{sessionID}/question", operation_id="v2.session.question.list")
async def questions(request: Request, sessionID: str) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    pending = [q for q in runtime.questions.pending() if q.session_id == sessionID]
    return body({"data": [question_v2(q) for q in pending]})


def _check_question(runtime: Runtime, session_id: str, request_id: str) -> None:
    if not any(
        q.id == request_id and q.session_id == session_id for q in runtime.questions.pending()
    ):
        raise NotFoundError("Question request", request_id)


@router.post(
    "/{sessionID}/question/{requestID}/reply",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.question.reply",
)
async def reply_question(
    request: Request, sessionID: str, requestID: str, payload: QuestionAnswer
) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    _check_question(runtime, sessionID, requestID)
    await runtime.questions.reply(requestID, payload.answers)
    return Response(status_code=204)


@router.post(
    "/{sessionID}/question/{requestID}/reject",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.question.reject",
)
async def reject_question(request: Request, sessionID: str, requestID: str) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    _check_question(runtime, sessionID, requestID)
    await runtime.questions.reject(requestID)
    return Response(status_code=204)


class PermissionSource(WireModel):
    type: Literal["tool"] = "tool"
    message_id: str = Field(alias="messageID")
    call_id: str = Field(alias="callID")


class PermissionCreate(WireModel):
    id: str | None = Field(default=None, pattern="^per")
    action: str = Field(min_length=1)
    resources: list[str] = Field(min_length=1)
    save: list[str] | None = None
    metadata: dict[str, Any] | None = None
    source: PermissionSource | None = None
    agent: str | None = None


@router.post("/{sessionID}/permission", operation_id="v2.session.permission.create")
async def create_permission(
    request: Request, sessionID: str, payload: PermissionCreate
) -> Response:
    """A client's own ask (its tool wants ``action`` on ``resources``): the session's
    rules answer at once (``allow``, ``deny``), or the ask goes to the user (``ask``), who
    answers it as any other; its outcome is the ``permission.replied`` event."""
    runtime, session, _ = await session_of(request, sessionID)
    agent = get_agent(payload.agent or session.agent or "build")
    permissions = runtime.permissions
    effect = await permissions.effect(
        sessionID, payload.action, payload.resources, agent.permission
    )
    request_id = payload.id or ids.ascending("per")
    if payload.id is not None and any(p.id == payload.id for p in permissions.pending()):
        raise IdConflictError("id", payload.id)
    if effect == "ask":
        source = payload.source
        tool = ToolRef(message_id=source.message_id, call_id=source.call_id) if source else None
        registered = asyncio.Event()
        asked = permissions.ask(
            session_id=sessionID,
            permission=payload.action,
            patterns=payload.resources,
            agent_rules=agent.permission,
            always=payload.save,
            metadata=payload.metadata,
            tool=tool,
            request_id=request_id,
            registered=registered,
        )
        task = asyncio.get_running_loop().create_task(asked)
        task.add_done_callback(leave_running)
        waiting = asyncio.ensure_future(registered.wait())
        # the answer goes out once the ask is pending (or the rules changed meanwhile)
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
    return body({"data": {"id": request_id, "effect": effect}})
