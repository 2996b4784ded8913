"""An editor attached to a session answers its tools' reads (``partwire.editor``):
``POST /session/{id}/editor`` attaches one, ``DELETE`` detaches it, and the editor
answers each ``editor.read`` event with ``POST /editor/{requestID}/reply``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from partwire.editor import EditorFiles
from partwire.errors import NotFoundError
from partwire.schema.base import WireModel
from partwire.server.routes.scope import runtime_of
from partwire.server.routes.session import wire

router = APIRouter(tags=["editor"])


class EditorReply(WireModel):
    """The file's text, or ``error`` when the editor could not read it (then the tool
    reads the disk)."""

    content: str | None = None
    error: str | None = None


def _editor(request: Request) -> EditorFiles:
    editor = runtime_of(request).editor
    assert editor is not None, "Runtime.build makes one"
    return editor


@router.post("/session/{sessionID}/editor", response_model=bool, operation_id="editor.attach")
async def attach(request: Request, sessionID: str) -> Response:
    await runtime_of(request).store.get_session(sessionID)  # 404 for an unknown session
    _editor(request).open(sessionID)
    return wire(True)


@router.delete("/session/{sessionID}/editor", response_model=bool, operation_id="editor.detach")
async def detach(request: Request, sessionID: str) -> Response:
    editor = _editor(request)
    if not editor.attached(sessionID):
        raise NotFoundError("Editor of session", sessionID)
    editor.close(sessionID)
    return wire(True)


@router.post("/editor/{requestID}/reply", response_model=bool, operation_id="editor.reply")
async def reply(request: Request, requestID: str, body: EditorReply) -> Response:
    _editor(request).reply(requestID, body.content if body.error is None else None)
    return wire(True)
