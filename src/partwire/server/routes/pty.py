"""opencode's pseudo-terminal routes, v1 (``/pty``) and v2 (``/api/pty``), over one
:class:`~partwire.terminals.Terminals` per project.

``GET …/connect`` is a WebSocket: text frames in are keystrokes, text frames out are the
terminal's output, and a binary frame ``\\x00{"cursor": N}`` after the replay says how many
characters the terminal has written so far (reconnect with ``?cursor=N`` to miss
nothing; ``-1`` skips what is old). A browser cannot send credentials on a WebSocket, so
``POST …/connect-token`` (which needs the ``x-opencode-ticket`` header a cross-site form
cannot set) hands out a one-use ticket good for 60 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from fastapi import APIRouter, Request, Response, WebSocket, WebSocketDisconnect

from partwire.errors import UserError
from partwire.runtime import Project
from partwire.server.auth import TICKET_SCOPE_KEY
from partwire.server.routes.scope import requested_project, runtime_of
from partwire.server.routes.v2 import located, location_info
from partwire.terminals import TICKET_SECONDS, PtyCreate, PtyNotFound, PtyUpdate, Terminal

router = APIRouter(tags=["pty"])
TICKET_HEADER = "x-opencode-ticket"


def _json(value: Any, status_code: int = 200) -> Response:
    return Response(json.dumps(value), status_code=status_code, media_type="application/json")


def _not_found(error: PtyNotFound) -> Response:
    body = {"_tag": "PtyNotFoundError", "ptyID": error.pty_id, "message": str(error)}
    return _json(body, 404)


def _v2(request: Request, project: Project, data: Any) -> Response:
    return _json({"location": location_info(project), "data": data})


def _issue_ticket(
    request: Request, project: Project, pty_id: str, refused_tag: str
) -> dict[str, Any] | Response:
    """A one-use connect ticket, or the refusal: the header a cross-site form cannot set is
    missing (403, tagged as each API names it), or the terminal is unknown (404)."""
    if not request.headers.get(TICKET_HEADER):
        body = {"_tag": refused_tag, "message": f"the {TICKET_HEADER} header is missing"}
        return _json(body, 403)
    try:
        ticket = project.terminals.ticket(pty_id)
    except PtyNotFound as error:
        return _not_found(error)
    return {"ticket": ticket, "expires_in": TICKET_SECONDS}


# ---- v1 ---------------------------------------------------------------------------------


@router.get("/pty", operation_id="pty.list")
async def list_ptys(request: Request) -> Response:
    return _json([t.wire() for t in requested_project(request).terminals.list()])


@router.post("/pty", operation_id="pty.create")
async def create_pty(request: Request, body: PtyCreate) -> Response:
    info = await requested_project(request).terminals.create(body)
    return _json(info.wire())


@router.get("/pty/{ptyID}", operation_id="pty.get")
async def get_pty(request: Request, ptyID: str) -> Response:
    try:
        return _json(requested_project(request).terminals.get(ptyID).info.wire())
    except PtyNotFound as error:
        return _not_found(error)


@router.put("/pty/{ptyID}", operation_id="pty.update")
async def update_pty(request: Request, ptyID: str, body: PtyUpdate) -> Response:
    try:
        return _json(requested_project(request).terminals.update(ptyID, body).wire())
    except PtyNotFound as error:
        return _not_found(error)


@router.delete("/pty/{ptyID}", operation_id="pty.remove")
async def remove_pty(request: Request, ptyID: str) -> Response:
    try:
        await requested_project(request).terminals.remove(ptyID)
    except PtyNotFound as error:
        return _not_found(error)
    return _json(True)


@router.post("/pty/{ptyID}/connect-token", operation_id="pty.connectToken")
async def pty_ticket(request: Request, ptyID: str) -> Response:
    issued = _issue_ticket(request, requested_project(request), ptyID, "PtyForbiddenError")
    return issued if isinstance(issued, Response) else _json(issued)


@router.get("/pty/{ptyID}/connect", operation_id="pty.connect")
async def connect_without_upgrade(request: Request, ptyID: str) -> Response:
    return _upgrade_needed(requested_project(request), ptyID)


@router.websocket("/pty/{ptyID}/connect")
async def connect(socket: WebSocket, ptyID: str) -> None:
    await _serve(socket, _socket_project(socket, "directory"), ptyID)


def _socket_project(socket: WebSocket, parameter: str) -> Project | None:
    """The project a socket names. One let in on the strength of a ticket alone has not
    authenticated: it may only reach a project this server holds already (its ticket
    was issued there), and makes none."""
    directory = socket.query_params.get(parameter) or None
    runtime = runtime_of(socket)
    if socket.scope.get(TICKET_SCOPE_KEY, False):
        return runtime.known_project(directory)
    try:
        return runtime.project(directory)
    except UserError:
        return None


# ---- v2 ---------------------------------------------------------------------------------


@router.get("/api/pty", operation_id="v2.pty.list")
async def v2_list(request: Request) -> Response:
    project = located(request)
    return _v2(request, project, [t.wire() for t in project.terminals.list()])


@router.post("/api/pty", operation_id="v2.pty.create")
async def v2_create(request: Request, body: PtyCreate) -> Response:
    project = located(request)
    return _v2(request, project, (await project.terminals.create(body)).wire())


@router.get("/api/pty/{ptyID}", operation_id="v2.pty.get")
async def v2_get(request: Request, ptyID: str) -> Response:
    project = located(request)
    try:
        return _v2(request, project, project.terminals.get(ptyID).info.wire())
    except PtyNotFound as error:
        return _not_found(error)


@router.put("/api/pty/{ptyID}", operation_id="v2.pty.update")
async def v2_update(request: Request, ptyID: str, body: PtyUpdate) -> Response:
    project = located(request)
    try:
        return _v2(request, project, project.terminals.update(ptyID, body).wire())
    except PtyNotFound as error:
        return _not_found(error)


@router.delete("/api/pty/{ptyID}", operation_id="v2.pty.remove", status_code=204)
async def v2_remove(request: Request, ptyID: str) -> Response:
    try:
        await located(request).terminals.remove(ptyID)
    except PtyNotFound as error:
        return _not_found(error)
    return Response(status_code=204)


@router.post("/api/pty/{ptyID}/connect-token", operation_id="v2.pty.connectToken")
async def v2_ticket(request: Request, ptyID: str) -> Response:
    project = located(request)
    issued = _issue_ticket(request, project, ptyID, "ForbiddenError")
    return issued if isinstance(issued, Response) else _v2(request, project, issued)


@router.get("/api/pty/{ptyID}/connect", operation_id="v2.pty.connect")
async def v2_connect_without_upgrade(request: Request, ptyID: str) -> Response:
    return _upgrade_needed(located(request), ptyID)


@router.websocket("/api/pty/{ptyID}/connect")
async def v2_connect(socket: WebSocket, ptyID: str) -> None:
    await _serve(socket, _socket_project(socket, "location[directory]"), ptyID)


# ---- the connection -----------------------------------------------------------------------


def _upgrade_needed(project: Project, pty_id: str) -> Response:
    try:
        project.terminals.get(pty_id)
    except PtyNotFound as error:
        return _not_found(error)
    body = {"_tag": "InvalidRequestError", "message": "connect needs a WebSocket upgrade"}
    return _json(body, 400)


def _admitted(socket: WebSocket, project: Project, pty_id: str) -> bool:
    """A ticket, when one is given, must be valid; one is required when the auth layer
    let the socket through on the strength of its ticket alone."""
    ticket = socket.query_params.get("ticket")
    if ticket is None:
        return not socket.scope.get(TICKET_SCOPE_KEY, False)
    return project.terminals.redeem(ticket, pty_id)


def _cursor(socket: WebSocket) -> int | None:
    raw = socket.query_params.get("cursor", "0")
    try:
        cursor = int(raw)
    except ValueError:
        return None
    return cursor if cursor >= -1 else None


async def _serve(socket: WebSocket, project: Project | None, pty_id: str) -> None:
    if project is None:
        await socket.close(code=4403, reason="no such project on this server")
        return
    try:
        terminal = project.terminals.get(pty_id)
    except PtyNotFound:
        await socket.close(code=4404, reason=f"PTY session not found: {pty_id}")
        return
    if not _admitted(socket, project, pty_id):
        await socket.close(code=4403, reason="invalid or expired ticket")
        return
    cursor = _cursor(socket)
    if cursor is None:
        await socket.close(code=4400, reason="cursor must be an integer ≥ -1")
        return
    await socket.accept()
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    replay, now = terminal.since(cursor), terminal.cursor
    if not terminal.closed:
        terminal.listeners.add(queue)  # in the same step as the replay: nothing falls between
    try:
        if replay:
            await socket.send_text(replay)
        await socket.send_bytes(
            b"\x00" + json.dumps({"cursor": now}, separators=(",", ":")).encode()
        )
        if terminal.closed:
            await socket.close()
            return
        await _pump(socket, terminal, queue)
    finally:
        terminal.listeners.discard(queue)


async def _pump(socket: WebSocket, terminal: Terminal, queue: asyncio.Queue[str | None]) -> None:
    async def outgoing() -> None:
        while (text := await queue.get()) is not None:
            await socket.send_text(text)

    async def incoming() -> None:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None and message.get("bytes") is not None:
                text = message["bytes"].decode(errors="replace")
            if text:
                terminal.write(text)

    tasks = [asyncio.create_task(outgoing()), asyncio.create_task(incoming())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError):
                await task
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await socket.close()
