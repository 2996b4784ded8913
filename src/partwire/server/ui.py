"""The web UI: the built single-page app at ``/``, its hashed assets under ``/assets``.

The assets are built from ``web/`` by ``make ui`` into ``server/static`` and ship in the
wheel; a source checkout that has not built them gets a page saying how, not a 404.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

STATIC_DIR = Path(__file__).parent / "static"

_NOT_BUILT = """<!doctype html><meta charset="utf-8"><title>partwire</title>
<p>The partwire web UI is not built in this checkout. Run <code>make ui</code> (needs
Node.js and npm), or install the wheel, which carries it. The API is served as usual:
see <a href="/doc">/doc</a>.</p>"""

# index.html names the hashed assets, so it must never be cached; the assets may be forever.
# The policy keeps every request on this origin: a remote image in model output (a
# classic way to leak a conversation through a URL) is not fetched.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_INDEX_HEADERS = {"Cache-Control": "no-cache", "Content-Security-Policy": CONTENT_SECURITY_POLICY}


class _ImmutableFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code == 200:
            response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
        return response


def install(app: FastAPI, static_dir: Path = STATIC_DIR) -> None:
    index = static_dir / "index.html"
    assets = static_dir / "assets"
    if assets.is_dir():
        app.mount("/assets", _ImmutableFiles(directory=assets), name="assets")

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False, response_model=None)
    async def web_ui() -> FileResponse | HTMLResponse:
        if index.is_file():
            return FileResponse(index, media_type="text/html", headers=_INDEX_HEADERS)
        return HTMLResponse(_NOT_BUILT, headers=_INDEX_HEADERS)
