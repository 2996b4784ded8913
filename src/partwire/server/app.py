"""The app factory: routes, error handlers, and a lifespan that owns the runtime."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Scope

from partwire.accounts import Accounts
from partwire.config import Settings
from partwire.runtime import Runtime
from partwire.server import errors, hub, openapi, sse, ui
from partwire.server.access import AccessLog
from partwire.server.auth import Authenticate
from partwire.server.authorize import authorize
from partwire.server.guard import RequestGuard
from partwire.server.limits import BodyLimit, UnicodeGuard
from partwire.server.pushed import keeping_server_send
from partwire.server.routes import (
    access,
    actions,
    agent,
    agui,
    config,
    copies,
    editor,
    elsewhere,
    frames,
    ingest,
    metrics,
    parts,
    permission,
    pty,
    session,
    tui,
    uichat,
    v2,
    v2_asks,
    v2_history,
    v2_integrations,
    v2_sessions,
    workspace,
    worktree,
)
from partwire.server.routes import (
    app as app_routes,
)
from partwire.version import __version__

# every router, in the order their routes are matched (and listed in /doc)
ROUTES = (
    sse,
    session,
    parts,
    actions,
    ingest,
    frames,
    uichat,
    agui,
    editor,
    app_routes,
    copies,
    elsewhere,
    tui,
    pty,
    v2,
    v2_sessions,
    v2_history,
    v2_asks,
    v2_integrations,
    permission,
    agent,
    config,
    workspace,
    worktree,
    hub,
    metrics,
    access,
)


def _protect(app: FastAPI, settings: Settings, accounts: Accounts) -> None:
    """Body limit, CORS from the configuration, and who each request comes from."""
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            allow_credentials=True,
        )
    app.add_middleware(UnicodeGuard)
    app.add_middleware(BodyLimit)
    app.add_middleware(
        Authenticate,
        accounts=accounts,
        username=settings.server_username,
        password=settings.server_password,
        open_locally=settings.open_locally,
    )
    # outermost: a request from a foreign Host or Origin is refused before anything else
    app.add_middleware(RequestGuard, hosts=settings.allowed_hosts, origins=settings.cors_origins)
    app.add_middleware(AccessLog)  # around everything: refused requests are logged too


class _App(FastAPI):
    def build_middleware_stack(self) -> ASGIApp:
        """The stack, with the ASGI server's send kept for the pushed streams (pushed.py)."""
        return keeping_server_send(super().build_middleware_stack())


def _index(app: FastAPI) -> None:
    @app.get("/global/health", operation_id="global.health")
    async def health() -> dict[str, object]:
        return {"healthy": True, "version": __version__}


def create_app(settings: Settings) -> FastAPI:
    runtime = Runtime.build(settings)
    clients = hub.ClientHub(runtime)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runtime.start()
        try:
            yield
        finally:
            await clients.shutdown()
            await runtime.stop()

    app = _App(
        title="partwire",
        version=__version__,
        openapi_url="/doc",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        dependencies=[Depends(authorize)],
    )
    app.state.runtime = runtime
    app.state.hub = clients
    errors.install(app)
    _protect(app, settings, runtime.accounts)
    for module in ROUTES:
        app.include_router(module.router)
    app.mount("/socket.io", clients.asgi())
    _index(app)
    ui.install(app)
    openapi.install(app)
    return app


# a path no route has: matching it reaches every router
_NO_ROUTE: Scope = {
    "type": "http",
    "asgi": {"version": "3.0"},
    "http_version": "1.1",
    "method": "GET",
    "scheme": "http",
    "path": "/partwire/no-route",
    "raw_path": b"/partwire/no-route",
    "root_path": "",
    "query_string": b"",
    "headers": [],
}


def build_route_tables(app: FastAPI) -> None:
    """FastAPI builds an included router's table of routes the first time a request is
    matched against it, and every router before the one that matches is matched too: all
    of ours (some 200 routes) take about 75 ms, held on the event loop by whichever
    request first reaches the last routers (a client's first look at a page it had not
    opened, say, while sessions stream). One request for a path no route has reaches
    every router, so it builds every table: made where the app is built (``partwire
    serve`` builds it on a worker thread, off the loop). Call it where no loop runs."""

    async def no_body() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def dropped(message: Message) -> None:
        return None

    asyncio.run(app.router(dict(_NO_ROUTE), no_body, dropped))
