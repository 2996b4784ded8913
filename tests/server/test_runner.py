"""The uvicorn server partwire runs: its main loop's tick and how it stops."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.routing import APIRoute

from partwire.config import Settings
from partwire.runtime import Runtime
from partwire.server import runner
from partwire.server.runner import PartwireServer, serve_in_background
from tests.served import free_port, wait_until_up


async def test_an_idle_server_ticks_once_a_second_not_ten_times(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks: list[int] = []
    original = uvicorn.Server.on_tick

    async def counted(self: uvicorn.Server, counter: int) -> bool:
        ticks.append(counter)
        return await original(self, counter)

    monkeypatch.setattr(uvicorn.Server, "on_tick", counted)
    async with serve_in_background(settings):
        await asyncio.sleep(1.5)
    # uvicorn's own loop ticks every 0.1 s: 15 here; ours at 0, at 1 s, and at the exit
    assert 2 <= len(ticks) <= 4, ticks
    # every tick counts as a whole second in uvicorn's tenths: the Date header is renewed
    assert all(counter % 10 == 0 for counter in ticks)


async def test_asking_to_exit_ends_the_wait_for_the_tick(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "TICK_S", 3600.0)
    async with asyncio.timeout(60):  # not the hour of the tick
        async with serve_in_background(settings) as url:
            async with httpx.AsyncClient(base_url=url) as http:
                assert (await http.get("/global/health")).status_code == 200
        # the context's exit set should_exit and awaited the server's end


async def test_should_exit_set_from_another_thread_stops_the_server(settings: Settings) -> None:
    from partwire.server.app import create_app

    app = create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = PartwireServer(config, app.state.runtime)
    assert server.should_exit is False
    runner.TICK_S, before = 3600.0, runner.TICK_S
    try:
        serving = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 (uvicorn's flag, no event to wait on)
            await asyncio.sleep(0.01)
        await asyncio.to_thread(setattr, server, "should_exit", True)
        await asyncio.wait_for(serving, 30)
    finally:
        runner.TICK_S = before
    assert server.should_exit is True


def test_serve_exits_on_sigterm_at_once(tmp_path: Path, project: Path) -> None:
    """SIGTERM sets should_exit from the signal handler and the server shuts down cleanly
    (tests/server/test_runner.py's other tests show the wait ends at once)."""
    port = free_port()
    env = {**os.environ, "PARTWIRE_DATA_DIR": str(tmp_path / "data"),
           "PARTWIRE_CONFIG_DIR": str(tmp_path / "config")}  # fmt: skip
    command = [sys.executable, "-m", "partwire", "serve", "--port", str(port)]
    server = subprocess.Popen([*command, "--project", str(project)], env=env,
                              stderr=subprocess.PIPE)  # fmt: skip
    try:
        wait_until_up(f"http://127.0.0.1:{port}")
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    # uvicorn raises the signal it caught again once it has shut down
    assert server.returncode == -signal.SIGTERM, err
    assert b"Traceback" not in err


async def test_after_the_warm_up_the_heap_is_frozen_and_the_collector_set_for_serving(
    runtime: Runtime,
) -> None:
    thresholds = gc.get_threshold()
    try:
        await runner.freeze_after_warm_up(runtime)
        assert gc.get_threshold() == runner.SERVER_GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:  # this process runs many servers: leave its collector as it was
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def _with_slow_route(settings: Settings, seconds: float) -> FastAPI:
    """The app, plus ``GET /test/slow``: answered after ``seconds``."""
    from partwire.server.app import create_app

    app = create_app(settings)

    async def slow() -> dict[str, bool]:
        await asyncio.sleep(seconds)
        return {"slept": True}

    app.router.routes.insert(0, APIRoute("/test/slow", slow, methods=["GET"]))
    return app


async def test_a_stop_lets_a_request_in_flight_finish_within_the_grace_period(
    settings: Settings,
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        async with serve_in_background(settings, app=_with_slow_route(settings, 0.3)) as url:
            answer = asyncio.create_task(http.get(f"{url}/test/slow"))
            await asyncio.sleep(0.1)  # the request is being answered as the stop begins
        response = await answer
    assert response.status_code == 200 and response.json() == {"slept": True}


async def test_a_request_past_the_grace_period_is_cancelled_and_the_stop_goes_on(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(runner, "_config", _with_grace(runner._config, 0.2))
    async with asyncio.timeout(30), httpx.AsyncClient(timeout=30) as http:
        async with serve_in_background(settings, app=_with_slow_route(settings, 3600)) as url:
            answer = asyncio.create_task(http.get(f"{url}/test/slow"))
            await asyncio.sleep(0.1)
        response = await answer  # ended, as uvicorn ends a task it cancels, not left hanging
    assert response.status_code == 500
    assert "cancelling 1 request(s) past the grace period" in caplog.text


async def test_an_idle_connection_does_not_hold_the_stop_and_nothing_sleeps_a_tick(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn sleeps 0.1 s after asking its connections to close, then 0.1 s at a time:
    ours looks every few ms. With an hour's grace, a kept-alive connection that held the
    stop would show here as the 30 s timeout."""
    monkeypatch.setattr(runner, "_config", _with_grace(runner._config, 3600))
    sleeps: list[float] = []
    sleep = asyncio.sleep

    async def noted(delay: float, result: object = None) -> object:
        sleeps.append(delay)
        return await sleep(delay, result)

    async with asyncio.timeout(30), httpx.AsyncClient() as http:
        async with serve_in_background(settings) as url:
            assert (await http.get(f"{url}/global/health")).status_code == 200  # kept alive
            monkeypatch.setattr(asyncio, "sleep", noted)
    assert all(delay < 0.1 for delay in sleeps), sleeps


def _with_grace(config: Callable[..., uvicorn.Config], grace_s: float) -> Callable[..., Any]:
    def configured(*args: Any) -> uvicorn.Config:
        made = config(*args)
        made.timeout_graceful_shutdown = grace_s
        return made

    return configured
