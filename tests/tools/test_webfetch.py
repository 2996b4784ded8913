"""webfetch against a local HTTP server on loopback."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from partwire.errors import ToolError
from partwire.tools import webfetch
from partwire.tools.base import ToolContext
from tests.tools.conftest import Asks

PAGE = b"""<html><head><title>T</title><style>p{}</style><script>var x;</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/x">link</a>.</p></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE),
            "/plain": (200, "text/plain", b"just text"),
            "/big": (200, "text/plain", b"x" * (webfetch.MAX_BYTES + 10)),
            "/missing": (404, "text/plain", b"no"),
        }
        status, kind, body = routes.get(self.path, (500, "text/plain", b""))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)  # /big: the tool stops reading past its limit

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_html_becomes_markdown(site: str, ctx: ToolContext, asks: Asks) -> None:
    result = await webfetch.TOOL.run({"url": f"{site}/page"}, ctx)
    assert "# Hello" in result.output
    assert "**bold**" in result.output and "[link](/x)" in result.output
    assert "var x" not in result.output
    assert asks.asks[0][:2] == ("webfetch", [f"{site}/page"])


async def test_text_and_html_formats(site: str, ctx: ToolContext) -> None:
    text = await webfetch.TOOL.run({"url": f"{site}/page", "format": "text"}, ctx)
    assert text.output.splitlines()[:2] == ["T", "Hello"]
    html = await webfetch.TOOL.run({"url": f"{site}/page", "format": "html"}, ctx)
    assert html.output == PAGE.decode()
    plain = await webfetch.TOOL.run({"url": f"{site}/plain"}, ctx)
    assert plain.output == "just text"


@pytest.mark.parametrize(
    ("path", "message"),
    [("/big", "limit is 5242880"), ("/missing", "answered HTTP 404")],
)
async def test_limits_and_http_errors(site: str, ctx: ToolContext, path: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await webfetch.TOOL.run({"url": f"{site}{path}"}, ctx)


async def test_only_http_and_https(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="must start with http"):
        await webfetch.TOOL.run({"url": "file:///etc/passwd"}, ctx)
