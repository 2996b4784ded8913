"""Running the server: in the foreground (``partwire serve``) or inside another program."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Generator

import uvicorn
from fastapi import FastAPI

from partwire.config import Settings
from partwire.server.app import create_app


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the program embedding it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _config(settings: Settings, host: str, port: int, app: FastAPI | None = None) -> uvicorn.Config:
    return uvicorn.Config(
        app or create_app(settings),
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=1,
        lifespan="on",
    )


def serve(settings: Settings, host: str, port: int) -> None:
    """Serve until interrupted (Ctrl-C)."""
    uvicorn.Server(_config(settings, host, port)).run()


@contextlib.asynccontextmanager
async def serve_in_background(
    settings: Settings, host: str = "127.0.0.1", port: int = 0, *, app: FastAPI | None = None
) -> AsyncIterator[str]:
    """Run a real server on ``host:port`` (0 = a free port) and yield its base URL."""
    server = _EmbeddedServer(_config(settings, host, port, app))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the server stopped before it started")
        await asyncio.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        await task
