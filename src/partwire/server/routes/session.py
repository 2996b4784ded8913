"""Session and message routes, with opencode's paths, bodies and responses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated

from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse

from partwire.access import LOCAL_ADMIN
from partwire.schema.base import WireModel
from partwire.schema.export import SessionExport
from partwire.schema.input import (
    ForkInput,
    PromptInput,
    ReplayInput,
    RevertInput,
    SessionCreateInput,
    SessionUpdateInput,
    SummarizeInput,
)
from partwire.schema.message import AssistantWithParts, MessageWithParts
from partwire.schema.part import ModelRef
from partwire.schema.permission import Todo
from partwire.schema.session import Session, SessionStatus, SnapshotFileDiff
from partwire.server.auth import principal_of
from partwire.server.authorize import check_session, owner_of, readable_filter
from partwire.server.routes.scope import requested_project, runtime_of, session_project
from partwire.session.loop import leave_running

router = APIRouter(prefix="/session", tags=["session"])


_runtime = runtime_of


def wire(value: WireModel | Sequence[WireModel] | Mapping[str, WireModel] | bool) -> Response:
    """Serialize once, with opencode's names and without unset fields."""
    if isinstance(value, WireModel):
        body = value.wire_json()
    elif isinstance(value, Sequence):
        body = "[" + ",".join(item.wire_json() for item in value) + "]"
    elif isinstance(value, Mapping):
        body = "{" + ",".join(f'"{k}":{v.wire_json()}' for k, v in value.items()) + "}"
    else:
        body = "true" if value else "false"
    return Response(content=body, media_type="application/json")


@router.get("", response_model=list[Session], operation_id="session.list")
async def list_sessions(
    request: Request,
    roots: bool = False,
    search: str | None = None,
    start: int | None = None,
    limit: int | None = Query(default=None, ge=1),
) -> Response:
    """Newest first; ``roots`` leaves out child sessions, ``search`` matches titles."""
    directory = requested_project(request).directory
    readable = await readable_filter(request)
    sessions = [
        s
        for s in await _runtime(request).store.list_sessions()
        if s.directory == directory and readable(s.id)
    ]
    sessions.sort(key=lambda s: s.time.updated, reverse=True)
    if roots:
        sessions = [s for s in sessions if s.parent_id is None]
    if search:
        sessions = [s for s in sessions if search.lower() in s.title.lower()]
    if start is not None:
        sessions = [s for s in sessions if s.time.updated >= start]
    return wire(sessions[:limit] if limit else sessions)


@router.post("", response_model=Session, operation_id="session.create")
async def create_session(
    request: Request, body: Annotated[SessionCreateInput | None, Body()] = None
) -> Response:
    runtime = _runtime(request)
    if not runtime.settings.embedded and principal_of(request.scope) is not LOCAL_ADMIN:
        runtime.quotas.create_session(request.client.host if request.client else "?")
    body = body or SessionCreateInput()
    if body.parent_id is not None:
        await check_session(request, body.parent_id, "write")
    project = requested_project(request)
    return wire(await project.sessions.create(body, owner=owner_of(request)))


@router.post("/import", response_model=Session, operation_id="session.import")
async def import_session(request: Request, body: SessionExport) -> Response:
    """partwire's own route: store a session that ``GET /session/{id}`` and its messages
    (``partwire export``) wrote, in the requested project."""
    project = requested_project(request)
    return wire(await project.sessions.import_session(body, owner=owner_of(request)))


@router.get("/status", response_model=dict[str, SessionStatus], operation_id="session.status")
async def session_status(request: Request) -> Response:
    readable = await readable_filter(request)
    active = _runtime(request).status.active()
    return wire({k: v for k, v in active.items() if readable(k)})


@router.get("/{sessionID}", response_model=Session, operation_id="session.get")
async def get_session(request: Request, sessionID: str) -> Response:
    return wire(await _runtime(request).store.get_session(sessionID))


@router.patch("/{sessionID}", response_model=Session, operation_id="session.update")
async def update_session(request: Request, sessionID: str, body: SessionUpdateInput) -> Response:
    _, project = await session_project(request, sessionID)
    return wire(await project.sessions.update(sessionID, body))


@router.get("/{sessionID}/children", response_model=list[Session], operation_id="session.children")
async def children(request: Request, sessionID: str) -> Response:
    await session_project(request, sessionID)
    sessions = await _runtime(request).store.list_sessions()
    return wire([s for s in sessions if s.parent_id == sessionID])


@router.delete("/{sessionID}", response_model=bool, operation_id="session.delete")
async def delete_session(request: Request, sessionID: str) -> Response:
    _, project = await session_project(request, sessionID)
    return wire(await project.sessions.delete(sessionID))


@router.post(
    "/{sessionID}/message", response_model=AssistantWithParts, operation_id="session.prompt"
)
async def prompt(request: Request, sessionID: str, body: PromptInput) -> Response:
    _, project = await session_project(request, sessionID)
    if body.no_reply:  # stored as context; opencode answers with the user message
        return wire(await project.loop.add_without_reply(sessionID, body))
    return wire(await project.loop.prompt(sessionID, body))


@router.post(
    "/{sessionID}/prompt_async",
    status_code=204,
    response_class=Response,
    operation_id="session.prompt_async",
)
async def prompt_async(request: Request, sessionID: str, body: PromptInput) -> Response:
    _, project = await session_project(request, sessionID)
    if body.no_reply:
        await project.loop.add_without_reply(sessionID, body)
        return Response(status_code=204)
    future = await project.loop.enqueue(sessionID, body, waiting=False)
    future.add_done_callback(leave_running)  # an answer elsewhere or after a recording
    return Response(status_code=204)


@router.get(
    "/{sessionID}/message", response_model=list[MessageWithParts], operation_id="session.messages"
)
async def list_messages(
    request: Request,
    sessionID: str,
    limit: int | None = Query(default=None, ge=1),
    before: str | None = None,
) -> Response:
    """All messages in order; ``limit`` keeps the newest ones (before ``before``, if given)."""
    runtime = _runtime(request)
    await runtime.store.get_session(sessionID)
    messages, last_event = await runtime.store.snapshot_messages(
        sessionID, limit=limit, before=before
    )
    response = wire(messages)
    if last_event is not None:
        response.headers["X-Last-Event-ID"] = last_event  # resume /event from here
    return response


@router.get(
    "/{sessionID}/message/{messageID}",
    response_model=MessageWithParts,
    operation_id="session.message",
)
async def get_message(request: Request, sessionID: str, messageID: str) -> Response:
    runtime = _runtime(request)
    await runtime.store.get_session(sessionID)
    return wire(await runtime.store.get_message(sessionID, messageID))


@router.post("/{sessionID}/summarize", response_model=bool, operation_id="session.summarize")
async def summarize(request: Request, sessionID: str, body: SummarizeInput) -> Response:
    model = ModelRef(provider_id=body.provider_id, model_id=body.model_id)
    _, project = await session_project(request, sessionID)
    await project.loop.summarize(sessionID, model, auto=bool(body.auto))
    return wire(True)


@router.post("/{sessionID}/revert", response_model=Session, operation_id="session.revert")
async def revert(request: Request, sessionID: str, body: RevertInput) -> Response:
    session, project = await session_project(request, sessionID)
    await project.loop.ensure_idle(sessionID)
    return wire(await project.loop.reverts.revert(session, body.message_id, body.part_id))


@router.post("/{sessionID}/unrevert", response_model=Session, operation_id="session.unrevert")
async def unrevert(request: Request, sessionID: str) -> Response:
    session, project = await session_project(request, sessionID)
    await project.loop.ensure_idle(sessionID)
    return wire(await project.loop.reverts.unrevert(session))


@router.post("/{sessionID}/fork", response_model=Session, operation_id="session.fork")
async def fork(
    request: Request, sessionID: str, body: Annotated[ForkInput | None, Body()] = None
) -> Response:
    body = body or ForkInput()
    _, project = await session_project(request, sessionID)
    forked = await project.sessions.fork(
        sessionID, body.message_id, body.part_id, body.cut, owner=owner_of(request)
    )
    return wire(forked)


@router.post("/{sessionID}/replay", response_model=Session, operation_id="session.replay")
async def replay(request: Request, sessionID: str, body: ReplayInput) -> Response:
    """partwire's own route: a new session that replays this one's prompts with another
    model (``metadata.replayOf`` names the recording); its answers stream as any run's."""
    from partwire.replays import start_replay

    runtime = _runtime(request)
    session = await start_replay(runtime, sessionID, body.model, body.tools, owner_of(request))
    return wire(session)


@router.get("/{sessionID}/compare", operation_id="session.compare")
async def compare_sessions(request: Request, sessionID: str, other: str) -> Response:
    """partwire's own route: this session (A) and ``other`` (B) prompt by prompt, as
    ``partwire eval A B --format json`` prints them (session/evaluation.py)."""
    from partwire.session.evaluation import as_json, compare

    await check_session(request, other, "read")  # sessionID's is the route's policy
    store = _runtime(request).store
    a, b = await store.list_messages(sessionID), await store.list_messages(other)
    if not a:
        await store.get_session(sessionID)  # a 404 for a session that does not exist
    if not b:
        await store.get_session(other)
    return JSONResponse(as_json(sessionID, other, compare(a, b)))


@router.get("/{sessionID}/diff", response_model=list[SnapshotFileDiff], operation_id="session.diff")
async def diff(request: Request, sessionID: str, messageID: str | None = None) -> Response:
    _, project = await session_project(request, sessionID)
    diffs = await project.loop.reverts.diff(sessionID, messageID)
    return wire([SnapshotFileDiff.model_validate(d) for d in diffs])


@router.get("/{sessionID}/todo", response_model=list[Todo], operation_id="session.todo")
async def todos(request: Request, sessionID: str) -> Response:
    runtime = _runtime(request)
    await runtime.store.get_session(sessionID)
    return wire(await runtime.store.get_todos(sessionID))


@router.post("/{sessionID}/abort", response_model=bool, operation_id="session.abort")
async def abort(request: Request, sessionID: str) -> Response:
    _, project = await session_project(request, sessionID)
    return wire(await project.loop.abort(sessionID))
