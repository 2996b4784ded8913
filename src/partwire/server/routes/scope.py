"""Which runtime and which project a request is about."""

from __future__ import annotations

from urllib.parse import unquote

from fastapi import Request
from starlette.requests import HTTPConnection

from partwire.runtime import Project, Runtime
from partwire.schema.session import Session


def runtime_of(request: HTTPConnection) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def requested_project(request: Request) -> Project:
    """The project named by ``directory`` or ``x-opencode-directory``, else the default."""
    directory = request.query_params.get("directory") or unquote(
        request.headers.get("x-opencode-directory", "")
    )
    return runtime_of(request).project(directory or None)


async def session_project(request: Request, session_id: str) -> tuple[Session, Project]:
    """The session (404 if unknown) and the project it belongs to."""
    runtime = runtime_of(request)
    session = await runtime.store.get_session(session_id)
    return session, runtime.project_of(session)
