"""Running the server: in the foreground (``partwire serve``) or inside another program."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import logging
import socket
from collections.abc import AsyncIterator, Callable, Generator
from typing import TYPE_CHECKING, Any

import uvicorn

from partwire.config import Settings
from partwire.errors import ConfigError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from partwire.runtime import Runtime


# uvicorn's own main loop wakes every 0.1 s to see whether it should exit: an idle server
# then spent about 2 ms of CPU a second, a tenth of a paced stream's (each wake-up finds a
# cold CPU). Here it wakes once a second (the Date header's resolution) or when asked to
# exit, at once.
TICK_S = 1.0
_TICKS_PER_S = 10  # uvicorn's on_tick counts tenths of a second: a second is 10 of them
SHUTDOWN_POLL_S = 0.005  # how often a stopping server looks whether its connections closed


class PartwireServer(uvicorn.Server):
    """uvicorn, plus: SSE clients hear ``server.instance.disposed`` and their streams end
    as soon as shutdown begins, instead of being held open until the grace period ends;
    the main loop ticks once a second and exits as soon as ``should_exit`` is set."""

    def __init__(self, config: uvicorn.Config, runtime: Runtime | None) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tick: asyncio.Future[None] | None = None
        self._exit = False
        super().__init__(config)
        self.runtime = runtime  # None until a deferred app is built

    @property
    def should_exit(self) -> bool:
        return self._exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        """Set by a signal, by a failed start or by the program embedding the server (any
        thread): the main loop's wait ends now, not at its next tick."""
        self._exit = value
        if value and self._loop is not None and self._tick is not None:
            self._loop.call_soon_threadsafe(_resolve, self._tick)

    async def main_loop(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + _TICKS_PER_S) % 864000
            tick = self._tick = loop.create_future()
            if self._exit:
                break
            timer = loop.call_later(TICK_S, _resolve, tick)
            try:
                await tick
            finally:
                timer.cancel()
                self._tick = None

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's steps (stop accepting, ask each connection to close, wait for them and
        their tasks up to the grace period, then the lifespan's shutdown), but the waits
        look every few ms instead of sleeping 0.1 s first and then 0.1 s at a time: an idle
        server stops about 0.1 s sooner."""
        if self.runtime is not None:
            self.runtime.announce_shutdown()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._drained(), self.config.timeout_graceful_shutdown)
        except TimeoutError:
            log.warning(
                "cancelling %d request(s) past the grace period", len(self.server_state.tasks)
            )
            for task in self.server_state.tasks:
                task.cancel(msg="the server is stopping")
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _drained(self) -> None:
        """Once every connection has closed and every request's task ended (or a second
        signal forces the exit)."""
        state = self.server_state
        while (state.connections or state.tasks) and not self.force_exit:  # noqa: ASYNC110
            await asyncio.sleep(SHUTDOWN_POLL_S)  # uvicorn tells nobody when they are gone
        for server in self.servers:
            await server.wait_closed()


def _resolve(tick: asyncio.Future[None]) -> None:
    if not tick.done():
        tick.set_result(None)


class _EmbeddedServer(PartwireServer):
    """A server that leaves signal handling to the program embedding it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _server(
    cls: type[PartwireServer], settings: Settings, host: str, port: int, app: FastAPI | None
) -> PartwireServer:
    from partwire.server.app import create_app

    app = app or create_app(settings)
    return cls(_config(app, host, port), app.state.runtime)


def _config(app: Any, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=1,
        lifespan="on",
    )


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
                "(--port 0 picks a free one; with make: make serve PORT=…)"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    return sock


def serve(
    settings: Settings, host: str, port: int, *, on_start: Callable[[int], None] | None = None
) -> None:
    """Serve until interrupted (Ctrl-C). The port is bound and the data dir locked first,
    so a port in use or a data dir another server holds is one error raised here. Then
    the socket is served at once while the app is built behind it (``deferred``); a
    failure to build (the database cannot be opened, say) stops the server and is raised
    here too. ``on_start`` gets the bound port (the real one for port 0) once the app is
    built and its database open, so a refused start prints no banner."""
    from partwire.providers.configured import leave_out_unused_sdk_modules
    from partwire.storage import lock

    leave_out_unused_sdk_modules()

    async def main() -> None:
        sock = bind(host, port)
        try:
            lock.acquire(settings.data_dir)
        except BaseException:
            sock.close()
            raise
        # `partwire run` and a second `serve` find this server from here on
        lock.advertise(settings.data_dir, f"http://{_connectable(host)}:{sock.getsockname()[1]}")
        try:
            await _serve_deferred(settings, host, sock, on_start)
        finally:
            lock.release(settings.data_dir)

    config = _config(None, host, port)
    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        runner.run(main())


def _build_app(settings: Settings) -> FastAPI:
    """On a worker thread: the imports are most of the start's time, then the route
    tables (``build_route_tables``), which would otherwise be built on the loop."""
    from partwire.server.app import build_route_tables, create_app

    app = create_app(settings)
    build_route_tables(app)
    return app


async def _serve_deferred(
    settings: Settings, host: str, sock: socket.socket, on_start: Callable[[int], None] | None
) -> None:
    from partwire.server.deferred import DeferredApp

    bound = int(sock.getsockname()[1])
    freezing: list[asyncio.Task[None]] = []

    def ready(app: FastAPI) -> None:
        runtime: Runtime = app.state.runtime
        server.runtime = runtime
        if on_start is not None:  # the database opened: now it is news that it serves
            on_start(bound)
        runtime.warm_up()
        freezing.append(asyncio.create_task(freeze_after_warm_up(runtime)))

    def failed(_: BaseException) -> None:
        server.should_exit = True

    deferred = DeferredApp(settings, functools.partial(_build_app, settings), ready, failed)
    server = PartwireServer(_config(deferred, host, bound), None)
    await server.serve(sockets=[sock])
    for task in freezing:
        task.cancel()
    if deferred.failure is not None:
        raise deferred.failure


# The cyclic collector's thresholds for a serving process. A token's objects (its event,
# its write, its frames) live a few ms; at Python's default (a young collection every 700
# allocations: every few ms under load) many outlive two young collections and reach the
# old generation, and die there. Each full collection then walks every live request's
# coroutines and closures (~120k objects at 250 streaming sessions): 30-90 ms with the
# loop stopped, several a second at load, which alone put the p99 past 50 ms. Young
# collections every 10,000 allocations let those objects die young; a full collection
# waits for 100 middle ones (and, as always, for the old generation to have grown by a
# quarter).
SERVER_GC_THRESHOLDS = (10_000, 20, 100)


async def freeze_after_warm_up(runtime: Runtime) -> None:
    """What start-up and the warm-up loaded (modules, schemas, routes: most of the heap)
    lives as long as the process. Frozen, the collector stops re-scanning it, so a full
    collection during a stream walks only what streams made (a few % of CPU per token);
    and the collector takes the thresholds of a server (SERVER_GC_THRESHOLDS). Only the
    real server does this: a process that runs many servers (the tests) would keep their
    cyclic garbage."""
    with contextlib.suppress(Exception):  # a failed import surfaces at the first prompt
        await runtime.warmed()
    gc.freeze()
    gc.set_threshold(*SERVER_GC_THRESHOLDS)


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
    runtime = server.runtime
    assert runtime is not None
    await runtime.start()
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the server stopped before it started")
        await asyncio.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    runtime.advertise(f"http://{_connectable(host)}:{bound}")
    runtime.warm_up()
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        await task
