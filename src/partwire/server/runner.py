"""Running the server: in the foreground (``partwire serve``) or inside another program."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import socket
from collections.abc import AsyncIterator, Callable, Generator

import uvicorn
from fastapi import FastAPI

from partwire.config import Settings
from partwire.errors import ConfigError
from partwire.runtime import Runtime
from partwire.server.app import create_app


class PartwireServer(uvicorn.Server):
    """uvicorn, plus: SSE clients hear ``server.instance.disposed`` and their streams end
    as soon as shutdown begins, instead of being held open until the grace period ends."""

    def __init__(self, config: uvicorn.Config, runtime: Runtime) -> None:
        super().__init__(config)
        self.runtime = runtime

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.runtime.announce_shutdown()
        await super().shutdown(sockets)


class _EmbeddedServer(PartwireServer):
    """A server that leaves signal handling to the program embedding it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _server(
    cls: type[PartwireServer], settings: Settings, host: str, port: int, app: FastAPI | None
) -> PartwireServer:
    app = app or create_app(settings)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=1,
        lifespan="on",
    )
    return cls(config, app.state.runtime)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is already in use: pick another with --port "
                "(--port 0 picks a free one)"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    return sock


def serve(
    settings: Settings, host: str, port: int, *, on_start: Callable[[int], None] | None = None
) -> None:
    """Serve until interrupted (Ctrl-C). The runtime starts (data dir lock, database
    checks, recovery) and the port is bound before uvicorn runs, so a refusal raises
    here as one error; ``on_start`` gets the bound port (the real one for port 0)."""
    server = _server(PartwireServer, settings, host, port, None)

    async def main() -> None:
        sock = bind(host, port)
        try:
            await server.runtime.start()
        except BaseException:
            sock.close()
            raise
        bound = int(sock.getsockname()[1])
        server.runtime.advertise(f"http://{_connectable(host)}:{bound}")
        if on_start is not None:
            on_start(bound)
        server.runtime.warm_up()
        freezing = asyncio.create_task(_freeze_after_warm_up(server.runtime))
        await server.serve(sockets=[sock])
        freezing.cancel()

    with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
        runner.run(main())


async def _freeze_after_warm_up(runtime: Runtime) -> None:
    """What start-up and the warm-up loaded (modules, schemas, routes: most of the heap)
    lives as long as the process. Frozen, the collector stops re-scanning it, so a full
    collection during a stream walks only what streams made (a few % of CPU per token).
    Only the real server does this: a process that runs many servers (the tests) would
    keep their cyclic garbage."""
    with contextlib.suppress(Exception):  # a failed import surfaces at the first prompt
        await runtime.warmed()
    gc.freeze()


def _connectable(host: str) -> str:
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


@contextlib.asynccontextmanager
async def serve_in_background(
    settings: Settings, host: str = "127.0.0.1", port: int = 0, *, app: FastAPI | None = None
) -> AsyncIterator[str]:
    """Run a real server on ``host:port`` (0 = a free port) and yield its base URL."""
    server = _server(_EmbeddedServer, settings, host, port, app)
    await server.runtime.start()
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the server stopped before it started")
        await asyncio.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    server.runtime.advertise(f"http://{_connectable(host)}:{bound}")
    server.runtime.warm_up()
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        await task
