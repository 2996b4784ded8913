"""Deleting messages; updating and deleting parts."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from partwire.errors import BadRequestError, NotFoundError
from partwire.runtime import Runtime
from partwire.schema.event import (
    MessagePartRemoved,
    MessageRef,
    MessageRemoved,
    PartRef,
)
from partwire.schema.part import Part, part_adapter
from partwire.server.routes.scope import session_project
from partwire.server.routes.session import wire
from partwire.session.revert import check_patch_files
from partwire.session.writer import save_part

router = APIRouter(prefix="/session/{sessionID}/message/{messageID}", tags=["session"])


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def _checked(request: Request, session_id: str, message_id: str) -> Runtime:
    _, project = await session_project(request, session_id)
    await project.loop.ensure_idle(session_id)
    runtime = _runtime(request)
    await runtime.store.get_message(session_id, message_id)
    return runtime


@router.delete("", response_model=bool, operation_id="session.deleteMessage")
async def delete_message(request: Request, sessionID: str, messageID: str) -> Response:
    runtime = await _checked(request, sessionID, messageID)
    ref = MessageRef(session_id=sessionID, message_id=messageID)
    await runtime.store.delete_message(messageID, [MessageRemoved(ref)])
    return wire(True)


async def _part(runtime: Runtime, session_id: str, message_id: str, part_id: str) -> Part:
    message = await runtime.store.get_message(session_id, message_id)
    for part in message.parts:
        if part.id == part_id:
            return part
    raise NotFoundError("Part", part_id)


@router.patch("/part/{partID}", response_model=Part, operation_id="part.update")
async def update_part(
    request: Request, sessionID: str, messageID: str, partID: str, body: dict[str, object]
) -> Response:
    runtime = await _checked(request, sessionID, messageID)
    await _part(runtime, sessionID, messageID, partID)
    ids = {"id": partID, "sessionID": sessionID, "messageID": messageID}
    if any(body.get(k, v) != v for k, v in ids.items()):
        raise BadRequestError("The part's id, sessionID and messageID must match the path")
    try:
        part = part_adapter.validate_python({**body, **ids})
    except ValueError as exc:
        raise BadRequestError(f"Not a valid part: {exc}") from None
    session = await runtime.store.get_session(sessionID)
    part = check_patch_files(part, runtime.project_of(session).settings.project_dir)
    await save_part(runtime.store, part)
    return wire(part)


@router.delete("/part/{partID}", response_model=bool, operation_id="part.delete")
async def delete_part(request: Request, sessionID: str, messageID: str, partID: str) -> Response:
    runtime = await _checked(request, sessionID, messageID)
    await _part(runtime, sessionID, messageID, partID)
    ref = PartRef(session_id=sessionID, message_id=messageID, part_id=partID)
    await runtime.store.delete_part(partID, [MessagePartRemoved(ref)])
    return wire(True)
