"""opencode's v2 API, the session half: list, create, get, active, prompt, wait,
interrupt, compact, switch agent or model, and the session's permission and question
asks. The same sessions, loop and asks as v1.

A prompt's ``delivery``: ``steer`` stores it now, and a running turn takes it up at its
next step (partwire's loop always works on the newest prompt); ``queue`` waits for the
session to go idle first (held in memory until then). ``resume: false`` stores the
prompt without running the loop (v1's ``noReply``).
"""

from __future__ import annotations

import mimetypes
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import Field

from partwire import ids
from partwire.clock import now_ms
from partwire.errors import BadRequestError, NotFoundError
from partwire.protocol.v2messages import context_messages, tokens_v2, v2_messages
from partwire.runtime import Project, Runtime
from partwire.schema.base import Tokens, WireModel
from partwire.schema.input import (
    AgentPartInput,
    FilePartInput,
    PartInput,
    PromptInput,
    SessionCreateInput,
    TextPartInput,
)
from partwire.schema.message import AssistantMessage, UserMessage
from partwire.schema.part import ModelRef
from partwire.schema.session import Session, SessionModel
from partwire.server.authorize import owner_of, readable_filter
from partwire.server.routes.scope import runtime_of
from partwire.server.routes.v2 import body
from partwire.session.agents import get_agent
from partwire.session.loop import leave_running
from partwire.session.revert import cleanup_revert
from partwire.session.sessions import project_id

router = APIRouter(prefix="/api/session", tags=["v2"])


class ModelRefV2(WireModel):
    id: str
    provider_id: str = Field(alias="providerID")
    variant: str | None = None

    def session_model(self) -> SessionModel:
        return SessionModel(id=self.id, provider_id=self.provider_id, variant=self.variant)


class LocationRef(WireModel):
    directory: str
    workspace_id: str | None = Field(default=None, alias="workspaceID", pattern="^wrk")


class CreateInput(WireModel):
    id: str | None = Field(default=None, pattern="^ses")
    agent: str | None = None
    model: ModelRefV2 | None = None
    location: LocationRef | None = None


class FileAttachment(WireModel):
    uri: str
    name: str | None = None
    description: str | None = None
    source: dict[str, Any] | None = None


class AgentAttachment(WireModel):
    name: str
    source: dict[str, Any] | None = None


class PromptV2(WireModel):
    text: str
    files: list[FileAttachment] | None = None
    agents: list[AgentAttachment] | None = None


class PromptRequest(WireModel):
    id: str | None = Field(default=None, pattern=ids.CLIENT_MESSAGE_ID)
    prompt: PromptV2
    delivery: Literal["steer", "queue"] = "steer"
    resume: bool = True


class AgentSwitch(WireModel):
    agent: str


class ModelSwitch(WireModel):
    model: ModelRefV2


# ---- sessions in v2's shape -------------------------------------------------------------------


async def session_v2(runtime: Runtime, session: Session) -> dict[str, Any]:
    tokens, cost = Tokens(), 0.0
    for message in await runtime.store.list_messages(session.id):
        if isinstance(message.info, AssistantMessage):
            tokens, cost = tokens.plus(message.info.tokens), cost + message.info.cost
    info: dict[str, Any] = {
        "id": session.id,
        "projectID": project_id(session.directory),
        "cost": cost,
        "tokens": tokens_v2(tokens),
        "time": {"created": session.time.created, "updated": session.time.updated},
        "title": session.title,
        "location": {"directory": session.directory},
    }
    if session.parent_id is not None:
        info["parentID"] = session.parent_id
    if session.agent is not None:
        info["agent"] = session.agent
    if session.model is not None:
        info["model"] = {"id": session.model.id, "providerID": session.model.provider_id}
    if session.time.archived is not None:
        info["time"]["archived"] = session.time.archived
    return info


async def session_of(request: Request, session_id: str) -> tuple[Runtime, Session, Project]:
    runtime = runtime_of(request)
    session = await runtime.store.get_session(session_id)
    return runtime, session, runtime.project_of(session)


@router.get("", operation_id="v2.session.list")
async def list_sessions(
    request: Request,
    limit: int = Query(default=50, ge=1, le=1000),
    order: Literal["asc", "desc"] = "desc",
    search: str | None = None,
    directory: str | None = None,
    project: str | None = None,
    cursor: str | None = None,
) -> Response:
    """Sessions by last update (newest first unless ``order=asc``), ``limit`` a page;
    ``cursor`` is the ``next`` of the page before."""
    runtime = runtime_of(request)
    readable = await readable_filter(request)
    sessions = [s for s in await runtime.store.list_sessions() if readable(s.id)]
    if directory:
        sessions = [s for s in sessions if s.directory == directory]
    if project:
        sessions = [s for s in sessions if project_id(s.directory) == project]
    if search:
        sessions = [s for s in sessions if search.lower() in s.title.lower()]
    sessions.sort(key=lambda s: (s.time.updated, s.id), reverse=order == "desc")
    start = 0
    if cursor:
        start = next((n + 1 for n, s in enumerate(sessions) if s.id == cursor), len(sessions))
    page = sessions[start : start + limit]
    more = start + limit < len(sessions)
    next_cursor = {"next": page[-1].id} if more and page else {}
    data = [await session_v2(runtime, s) for s in page]
    return body({"data": data, "cursor": next_cursor})


@router.post("", operation_id="v2.session.create")
async def create_session(request: Request, payload: CreateInput) -> Response:
    runtime = runtime_of(request)
    directory = payload.location.directory if payload.location else None
    project = runtime.project(directory)
    create = SessionCreateInput(
        agent=payload.agent,
        model=payload.model.session_model() if payload.model else None,
    )
    session = await project.sessions.create(create, session_id=payload.id, owner=owner_of(request))
    return body({"data": await session_v2(runtime, session)})


@router.get("/active", operation_id="v2.session.active")
async def active(request: Request) -> Response:
    runtime = runtime_of(request)
    readable = await readable_filter(request)
    running = {
        session_id: {"type": "running"}
        for project in runtime.projects.values()
        for session_id in project.loop.running()
        if readable(session_id)
    }
    return body({"data": running})


@router.get("/{sessionID}", operation_id="v2.session.get")
async def get_session(request: Request, sessionID: str) -> Response:
    runtime, session, _ = await session_of(request, sessionID)
    return body({"data": await session_v2(runtime, session)})


def _parts(prompt: PromptV2) -> list[PartInput]:
    parts: list[PartInput] = [TextPartInput(text=prompt.text)]
    for attached in prompt.files or []:
        name = attached.name or attached.uri.rsplit("/", 1)[-1]
        mime = mimetypes.guess_type(name)[0] or "text/plain"
        parts.append(FilePartInput(mime=mime, url=attached.uri, filename=name))
    parts += [AgentPartInput(name=agent.name) for agent in prompt.agents or []]
    return parts


@router.post("/{sessionID}/prompt", operation_id="v2.session.prompt")
async def prompt(request: Request, sessionID: str, payload: PromptRequest) -> Response:
    runtime, _, project = await session_of(request, sessionID)
    message_id = payload.id or ids.message_id()
    body_in = PromptInput(message_id=message_id, parts=_parts(payload.prompt))
    loop = project.loop
    if not payload.resume:
        await loop.add_without_reply(sessionID, body_in)
    elif payload.delivery == "queue" and loop.is_busy(sessionID):
        loop.enqueue_after_turn(sessionID, body_in)
    else:
        (await loop.enqueue(sessionID, body_in, waiting=False)).add_done_callback(leave_running)
    users = [
        m for m in await runtime.store.list_messages(sessionID) if isinstance(m.info, UserMessage)
    ]
    admitted: dict[str, Any] = {
        "admittedSeq": len(users),
        "id": message_id,
        "sessionID": sessionID,
        "prompt": payload.prompt.wire(),
        "delivery": payload.delivery,
        "timeCreated": now_ms(),
    }
    for attached in admitted["prompt"].get("files", []):
        name = attached.get("name") or attached["uri"].rsplit("/", 1)[-1]
        attached["mime"] = mimetypes.guess_type(name)[0] or "text/plain"
    return body({"data": admitted})


@router.post(
    "/{sessionID}/wait", status_code=204, response_class=Response, operation_id="v2.session.wait"
)
async def wait(request: Request, sessionID: str) -> Response:
    _, _, project = await session_of(request, sessionID)
    await project.loop.wait_idle(sessionID)  # queued prompts included
    return Response(status_code=204)


@router.post(
    "/{sessionID}/interrupt",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.interrupt",
)
async def interrupt(request: Request, sessionID: str) -> Response:
    _, _, project = await session_of(request, sessionID)
    await project.loop.abort(sessionID)  # idle: nothing to stop
    return Response(status_code=204)


@router.post(
    "/{sessionID}/compact",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.compact",
)
async def compact(request: Request, sessionID: str) -> Response:
    runtime, _, project = await session_of(request, sessionID)
    users = [
        m.info
        for m in await runtime.store.list_messages(sessionID)
        if isinstance(m.info, UserMessage)
    ]
    model = users[-1].model if users else None
    if model is None:
        provider_id, _, model_id = runtime.settings.default_model.partition("/")
        model = ModelRef(provider_id=provider_id, model_id=model_id)
    await project.loop.summarize(sessionID, model)
    return Response(status_code=204)


@router.post(
    "/{sessionID}/agent",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.switchAgent",
)
async def switch_agent(request: Request, sessionID: str, payload: AgentSwitch) -> Response:
    _, _, project = await session_of(request, sessionID)
    get_agent(payload.agent)
    await project.sessions.switch(sessionID, agent=payload.agent)
    return Response(status_code=204)


@router.post(
    "/{sessionID}/model",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.switchModel",
)
async def switch_model(request: Request, sessionID: str, payload: ModelSwitch) -> Response:
    _, _, project = await session_of(request, sessionID)
    await project.sessions.switch(sessionID, model=payload.model.session_model())
    return Response(status_code=204)


@router.get("/{sessionID}/message", operation_id="v2.session.messages")
async def messages(
    request: Request,
    sessionID: str,
    limit: int = Query(default=100, ge=1, le=1000),
    order: Literal["asc", "desc"] = "asc",
    cursor: str | None = None,
) -> Response:
    """The projected messages, ``limit`` a page in ``order``; ``cursor`` is the ``next``
    of the page before, and keeps its order."""
    runtime, _, _ = await session_of(request, sessionID)
    projected = v2_messages(await runtime.store.list_messages(sessionID))
    if cursor:
        order, _, after = _read_cursor(cursor)
    else:
        after = ""
    ordered = projected if order == "asc" else list(reversed(projected))
    start = next((n + 1 for n, m in enumerate(ordered) if m["id"] == after), 0) if after else 0
    page = ordered[start : start + limit]
    pages: dict[str, str] = {}
    if page and start + limit < len(ordered):
        pages["next"] = f"{order}:{page[-1]['id']}"
    return body({"data": page, "cursor": pages})


def _read_cursor(cursor: str) -> tuple[Literal["asc", "desc"], str, str]:
    order, sep, after = cursor.partition(":")
    if not sep or order not in ("asc", "desc"):
        raise BadRequestError(f"cursor {cursor!r} is not one this server made", field="cursor")
    return ("asc" if order == "asc" else "desc"), sep, after


@router.get("/{sessionID}/message/{messageID}", operation_id="v2.session.message")
async def message(request: Request, sessionID: str, messageID: str) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    for projected in v2_messages(await runtime.store.list_messages(sessionID)):
        if projected["id"] == messageID:
            return body({"data": projected})
    raise NotFoundError("Message", messageID)


@router.get("/{sessionID}/context", operation_id="v2.session.context")
async def context(request: Request, sessionID: str) -> Response:
    runtime, _, _ = await session_of(request, sessionID)
    return body({"data": context_messages(await runtime.store.list_messages(sessionID))})


class RevertStage(WireModel):
    message_id: str = Field(alias="messageID", pattern="^msg_")
    files: bool = True


def _file_diff(diff: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": diff["file"],
        "status": diff.get("status") or "modified",
        "additions": diff["additions"],
        "deletions": diff["deletions"],
        "patch": diff.get("patch") or "",
    }


@router.post("/{sessionID}/revert/stage", operation_id="v2.session.revert.stage")
async def revert_stage(request: Request, sessionID: str, payload: RevertStage) -> Response:
    """Hide the session from ``messageID`` on (and, with ``files``, put the work tree
    back as it was there); a new prompt commits it, ``clear`` undoes it."""
    _, session, project = await session_of(request, sessionID)
    await project.loop.ensure_idle(sessionID)
    staged = await project.loop.reverts.revert(
        session, payload.message_id, None, files=payload.files
    )
    revert = staged.revert
    assert revert is not None
    state: dict[str, Any] = {"messageID": revert.message_id}
    if revert.snapshot:
        state["snapshot"] = revert.snapshot
        state["files"] = [
            _file_diff(d) for d in await project.loop.reverts.snapshots.diff(revert.snapshot)
        ]
    if revert.diff:
        state["diff"] = revert.diff
    return body({"data": state})


@router.post(
    "/{sessionID}/revert/commit",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.revert.commit",
)
async def revert_commit(request: Request, sessionID: str) -> Response:
    """Drop what the staged revert hides, for good."""
    runtime, session, project = await session_of(request, sessionID)
    await project.loop.ensure_idle(sessionID)
    await cleanup_revert(runtime.store, session)
    return Response(status_code=204)


@router.post(
    "/{sessionID}/revert/clear",
    status_code=204,
    response_class=Response,
    operation_id="v2.session.revert.clear",
)
async def revert_clear(request: Request, sessionID: str) -> Response:
    """Undo the staged revert: the messages and the files come back."""
    _, session, project = await session_of(request, sessionID)
    await project.loop.ensure_idle(sessionID)
    await project.loop.reverts.unrevert(session)
    return Response(status_code=204)
