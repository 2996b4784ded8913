"""Editing partwire.json takes effect on a running server: the file is watched, and
POST /instance/dispose reloads it too; the log says what changed."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from partwire.config import Settings
from partwire.server.runner import serve_in_background
from tests.providers.mock_openai import MockOpenAI, text
from tests.providers.test_openai_e2e import serve_app


def _local(url: str) -> dict[str, object]:
    return {
        "model": "local/mock-1",
        "provider": {"local": {"options": {"baseURL": f"{url}/v1"}, "models": {"mock-1": {}}}},
    }


async def _default_model(http: httpx.AsyncClient) -> str:
    build = next(a for a in (await http.get("/agent")).json() if a["name"] == "build")
    return f"{build['model']['providerID']}/{build['model']['modelID']}"


async def _answered_by(http: httpx.AsyncClient, model: str | None) -> httpx.Response:
    sid = (await http.post("/session", json={})).json()["id"]
    body: dict[str, object] = {"parts": [{"type": "text", "text": "hi"}]}
    if model is not None:
        provider, _, model_id = model.partition("/")
        body["model"] = {"providerID": provider, "modelID": model_id}
    return await http.post(f"/session/{sid}/message", json=body, timeout=30)


async def test_an_edited_config_file_takes_effect_while_the_server_runs(
    settings: Settings, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mock = MockOpenAI(script=[text("from", " mock"), text("again")])
    watched = replace(settings, config_watch_s=0.1)
    async with (
        serve_app(mock.app()) as mock_url,
        serve_in_background(watched) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        assert await _default_model(http) == "demo/demo"
        with caplog.at_level(logging.INFO, logger="partwire.config_watch"):
            (project / "partwire.json").write_text(json.dumps(_local(mock_url)))
            for _ in range(100):
                if await _default_model(http) == "local/mock-1":
                    break
                await asyncio.sleep(0.05)
        assert await _default_model(http) == "local/mock-1"
        said = " ".join(r.getMessage() for r in caplog.records)
        assert "default model demo/demo → local/mock-1" in said and "providers added: local" in said
        named = await _answered_by(http, "local/mock-1")
        assert named.status_code == 200, named.text
        unnamed = (await _answered_by(http, None)).json()
        assert unnamed["info"]["modelID"] == "mock-1" and len(mock.requests) == 2


async def test_dispose_reloads_the_config(settings: Settings, project: Path) -> None:
    unwatched = replace(settings, config_watch_s=0)
    async with serve_in_background(unwatched) as url, httpx.AsyncClient(base_url=url) as http:
        (project / "partwire.json").write_text(json.dumps(_local("http://127.0.0.1:9")))
        await asyncio.sleep(0.2)
        assert await _default_model(http) == "demo/demo"  # not watched: nothing yet
        assert (await http.post("/instance/dispose")).json() is True
        assert await _default_model(http) == "local/mock-1"


async def test_a_broken_edit_keeps_the_config_that_works(
    settings: Settings, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    watched = replace(settings, config_watch_s=0.1)
    async with serve_in_background(watched) as url, httpx.AsyncClient(base_url=url) as http:
        with caplog.at_level(logging.WARNING, logger="partwire.config_watch"):
            (project / "partwire.json").write_text('{"model": ')
            for _ in range(100):
                if any("not reloaded" in r.getMessage() for r in caplog.records):
                    break
                await asyncio.sleep(0.05)
        assert any("not reloaded" in r.getMessage() for r in caplog.records)
        assert await _default_model(http) == "demo/demo"
        assert (await http.get("/session")).status_code == 200
