"""What ``partwire serve`` listens with while the real app is still being built.

Importing the whole server (FastAPI, the schemas, every route) takes most of a second, and
none of it is needed to accept connections. So the socket is bound and served at once, by
this small ASGI app, while a worker thread imports and builds the real one and the loop
then starts its runtime (the store) and its lifespan. Meanwhile:

- ``GET /global/health`` is answered here (behind the same host and origin checks
  as the real app; it needs no credentials there either): the process is up and listening;
- every other request and socket waits for the real app and is then handed to it, so
  nothing is refused during the start;
- if the build fails (a database that cannot be opened, say), waiting requests get a 503
  naming the failure, ``on_failure`` is told (the CLI stops the server and prints it).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from partwire.config import Settings
from partwire.server.guard import RequestGuard
from partwire.version import __version__

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)


async def _health(scope: Scope, receive: Receive, send: Send) -> None:
    body = json.dumps({"healthy": True, "version": __version__}, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _health_app(settings: Settings) -> ASGIApp:
    return RequestGuard(_health, hosts=settings.allowed_hosts, origins=settings.cors_origins)


class DeferredApp:
    def __init__(
        self,
        settings: Settings,
        build: Callable[[], FastAPI],
        on_ready: Callable[[FastAPI], None],
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self._build_app = build
        self._on_ready = on_ready
        self._on_failure = on_failure
        self._health = _health_app(settings)
        self.app: FastAPI | None = None
        self.failure: BaseException | None = None
        self._ready = asyncio.Event()
        self._building: asyncio.Task[None] | None = None
        self._inner: asyncio.Task[None] | None = None
        self._to_inner: asyncio.Queue[Message] = asyncio.Queue()
        self._from_inner: asyncio.Queue[Message] = asyncio.Queue()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self.app
        if app is None:
            if _is_health(scope):
                await self._health(scope, receive, send)
                return
            await self._ready.wait()
            app = self.app
        if app is None:
            await _unavailable(scope, send, self.failure)
            return
        await app(scope, receive, send)

    async def ready(self) -> FastAPI | None:
        await self._ready.wait()
        return self.app

    # ---- our own lifespan: start building at once, stop what was built

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        self._building = asyncio.create_task(self._build())
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        await self._stop()
        await send({"type": "lifespan.shutdown.complete"})

    async def _build(self) -> None:
        try:
            app = await asyncio.to_thread(self._build_app)
            await app.state.runtime.start()
            await self._start_inner(app)
            self._on_ready(app)
            self.app = app
        except Exception as exc:
            self.failure = exc
            self._on_failure(exc)
        finally:
            self._ready.set()

    async def _start_inner(self, app: FastAPI) -> None:
        """Run the real app's lifespan startup (its shutdown comes with ours)."""
        scope: Scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.0"},
            "state": {},
        }
        self._to_inner.put_nowait({"type": "lifespan.startup"})
        self._inner = asyncio.create_task(app(scope, self._to_inner.get, self._from_inner.put))
        reply = await self._from_inner.get()
        if reply["type"] != "lifespan.startup.complete":
            raise RuntimeError(reply.get("message") or "the server failed to start")

    async def _stop(self) -> None:
        if self._building is not None:
            await self._building  # a build under way finishes, so that what it opened closes
        if self._inner is None:
            return
        self._to_inner.put_nowait({"type": "lifespan.shutdown"})
        reply = await self._from_inner.get()
        if reply["type"] != "lifespan.shutdown.complete":
            log.error("shutdown failed: %s", reply.get("message"))
        await self._inner


def _is_health(scope: Scope) -> bool:
    return (
        scope["type"] == "http"
        and scope["path"] == "/global/health"
        and scope["method"] in ("GET", "HEAD")
    )


async def _unavailable(scope: Scope, send: Send, failure: BaseException | None) -> None:
    if scope["type"] != "http":
        await send({"type": "websocket.close", "code": 1011})
        return
    message = getattr(failure, "message", None) or str(failure or "the server is stopping")
    payload: dict[str, Any] = {"name": "ServerUnavailable", "data": {"message": message}}
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
