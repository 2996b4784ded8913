"""GET / serves the built web UI, its hashed assets cache forever, and a missing build says so."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import FastAPI

from partwire.server import ui


async def _get(app: FastAPI, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        return await http.get(path)


async def test_index_and_assets(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text('<script src="/assets/app-1a2b.js"></script>')
    (tmp_path / "assets" / "app-1a2b.js").write_text("console.log(1)")
    app = FastAPI()
    ui.install(app, tmp_path)
    index = await _get(app, "/")
    assert index.status_code == 200
    assert index.headers["content-type"].startswith("text/html")
    assert index.headers["cache-control"] == "no-cache"
    assert "default-src 'self'" in index.headers["content-security-policy"]
    asset = await _get(app, "/assets/app-1a2b.js")
    assert asset.text == "console.log(1)"
    assert "immutable" in asset.headers["cache-control"]
    assert (await _get(app, "/assets/missing.js")).status_code == 404


async def test_a_checkout_without_a_build_says_how_to_build(tmp_path: Path) -> None:
    app = FastAPI()
    ui.install(app, tmp_path / "nothing")
    page = await _get(app, "/")
    assert page.status_code == 200
    assert "make ui" in page.text and "/doc" in page.text


async def test_the_real_server_serves_the_ui(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        page = await http.get("/")
    assert page.status_code == 200
    if (ui.STATIC_DIR / "index.html").is_file():
        assert '<div id="app">' in page.text
    else:
        assert "make ui" in page.text
