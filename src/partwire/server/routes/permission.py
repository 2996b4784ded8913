"""Permission and question routes: list pending asks, reply to them."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from partwire.runtime import Runtime
from partwire.schema.permission import (
    LegacyPermissionReplyInput,
    PermissionReplyInput,
    PermissionRequest,
    QuestionReplyInput,
    QuestionRequest,
)
from partwire.server.authorize import readable_filter
from partwire.server.routes.session import wire

router = APIRouter()


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


@router.get("/permission", response_model=list[PermissionRequest], operation_id="permission.list")
async def list_permissions(request: Request) -> Response:
    readable = await readable_filter(request)
    return wire([p for p in _runtime(request).permissions.pending() if readable(p.session_id)])


@router.post("/permission/{requestID}/reply", response_model=bool, operation_id="permission.reply")
async def reply_permission(
    request: Request, requestID: str, body: PermissionReplyInput
) -> Response:
    await _runtime(request).permissions.reply(requestID, body.reply, body.message)
    return wire(True)


@router.post(
    "/session/{sessionID}/permissions/{permissionID}",
    response_model=bool,
    operation_id="permission.respond",
)
async def respond_permission(
    request: Request, sessionID: str, permissionID: str, body: LegacyPermissionReplyInput
) -> Response:
    runtime = _runtime(request)
    await runtime.store.get_session(sessionID)
    await runtime.permissions.reply(permissionID, body.response)
    return wire(True)


@router.get("/question", response_model=list[QuestionRequest], operation_id="question.list")
async def list_questions(request: Request) -> Response:
    readable = await readable_filter(request)
    return wire([q for q in _runtime(request).questions.pending() if readable(q.session_id)])


@router.post("/question/{requestID}/reply", response_model=bool, operation_id="question.reply")
async def reply_question(request: Request, requestID: str, body: QuestionReplyInput) -> Response:
    await _runtime(request).questions.reply(requestID, body.answers)
    return wire(True)


@router.post("/question/{requestID}/reject", response_model=bool, operation_id="question.reject")
async def reject_question(request: Request, requestID: str) -> Response:
    await _runtime(request).questions.reject(requestID)
    return wire(True)
