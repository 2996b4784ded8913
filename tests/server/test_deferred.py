"""The app ``partwire serve`` listens with while the real one is built behind it."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace

import httpx
from fastapi import FastAPI
from starlette.types import Message

from partwire.config import Settings
from partwire.errors import StorageError
from partwire.server.app import create_app
from partwire.server.deferred import DeferredApp


class Started:
    def __init__(self, deferred: DeferredApp) -> None:
        self.deferred = deferred
        self.ready: list[FastAPI] = []
        self.failed: list[BaseException] = []


@asynccontextmanager
async def started(settings: Settings, build: Callable[[], FastAPI]) -> AsyncIterator[Started]:
    """The deferred app with its lifespan running (as uvicorn runs it)."""
    holder: list[Started] = []
    deferred = DeferredApp(
        settings,
        build,
        lambda app: holder[0].ready.append(app),
        lambda e: holder[0].failed.append(e),
    )
    state = Started(deferred)
    holder.append(state)
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    outbox: asyncio.Queue[Message] = asyncio.Queue()
    inbox.put_nowait({"type": "lifespan.startup"})
    lifespan = asyncio.create_task(deferred({"type": "lifespan"}, inbox.get, outbox.put))
    assert (await outbox.get())["type"] == "lifespan.startup.complete"
    try:
        yield state
    finally:
        inbox.put_nowait({"type": "lifespan.shutdown"})
        assert (await asyncio.wait_for(outbox.get(), 20))["type"] == "lifespan.shutdown.complete"
        await lifespan


def client(app: DeferredApp, **headers: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers)


async def test_health_answers_while_the_app_builds_and_requests_wait_for_it(
    settings: Settings,
) -> None:
    release = threading.Event()

    def slow_build() -> FastAPI:
        release.wait(10)
        return create_app(settings)

    async with started(settings, slow_build) as state, client(state.deferred) as http:
        health = await http.get("/global/health")
        assert health.status_code == 200 and health.json()["healthy"] is True
        assert state.deferred.app is None  # answered before the app exists
        waiting = asyncio.create_task(http.get("/session"))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # held, not refused
        release.set()
        sessions = await asyncio.wait_for(waiting, 20)
        assert sessions.status_code == 200 and sessions.json() == []
        assert len(state.ready) == 1 and state.deferred.app is state.ready[0]
        created = await http.post("/session", json={})
        assert created.status_code == 200


async def test_a_failed_build_is_reported_and_waiting_requests_get_a_503(
    settings: Settings,
) -> None:
    def broken_build() -> FastAPI:
        raise StorageError("the database is newer than this partwire")

    async with started(settings, broken_build) as state, client(state.deferred) as http:
        response = await http.get("/session")
        assert response.status_code == 503
        assert "newer than this partwire" in response.json()["data"]["message"]
        assert [str(e) for e in state.failed] == ["the database is newer than this partwire"]
        assert state.ready == []


async def test_the_early_health_keeps_the_real_apps_host_and_password_rules(
    settings: Settings,
) -> None:
    locked = replace(settings, server_password="secret")
    release = threading.Event()

    def slow_build() -> FastAPI:
        release.wait(10)
        return create_app(locked)

    async with started(locked, slow_build) as state, client(state.deferred) as http:
        assert (await http.get("/global/health")).status_code == 200  # open, as in the app
        foreign = await http.get("/global/health", headers={"host": "evil.example"})
        assert foreign.status_code == 400 and "DNS rebinding" in foreign.json()["data"]["message"]
        assert state.deferred.app is None
        waiting = asyncio.create_task(http.get("/session"))
        release.set()
        assert (await asyncio.wait_for(waiting, 20)).status_code == 401  # the app's own check
        token = base64.b64encode(b"partwire:secret").decode()
        authorized = await http.get("/session", headers={"authorization": f"Basic {token}"})
        assert authorized.status_code == 200
