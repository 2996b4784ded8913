"""webfetch: fetch an http(s) URL as markdown, text or html, within size and time limits."""

from __future__ import annotations

import asyncio
import sys
from typing import Literal

from pydantic import BaseModel, Field

from partwire import processes
from partwire.errors import ToolError
from partwire.tools import html_convert
from partwire.tools.base import Tool, ToolContext, ToolResult

MAX_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30
MAX_TIMEOUT_S = 120


class WebfetchParams(BaseModel):
    url: str = Field(description="The URL to fetch (http or https)")
    format: Literal["markdown", "text", "html"] = Field(
        default="markdown", description="How to return the content"
    )
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_S, description="Seconds")


IN_PROCESS_LIMIT = 256 * 1024  # larger pages are converted in a child process


def _convert(body: str, content_type: str, fmt: str) -> str:
    if "html" not in content_type or fmt == "html":
        return body
    return html_convert.convert(body, fmt)


async def _convert_aside(body: str, content_type: str, fmt: str) -> str:
    """Convert off the event loop: a thread for a small page, a child process for a large
    one (pure-Python parsing in a thread would still hold the interpreter)."""
    if len(body) <= IN_PROCESS_LIMIT or "html" not in content_type or fmt == "html":
        return await asyncio.to_thread(_convert, body, content_type, fmt)
    child = await processes.start(
        sys.executable, html_convert.__file__, fmt,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await processes.finish(child, body.encode("utf-8"))
    if child.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise ToolError(f"Could not convert the page: {last[0]}")
    return out.decode("utf-8")


async def _download(url: str, limit_s: float) -> tuple[str, str]:
    import httpx

    async with (
        httpx.AsyncClient(timeout=limit_s, follow_redirects=True) as client,
        client.stream("GET", url, headers={"User-Agent": "partwire-webfetch"}) as response,
    ):
        if response.status_code >= 400:
            raise ToolError(f"{url} answered HTTP {response.status_code}.")
        declared = int(response.headers.get("content-length") or 0)
        if declared > MAX_BYTES:
            raise ToolError(f"{url} is {declared} bytes; the limit is {MAX_BYTES} (5 MB).")
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data.extend(chunk)
            if len(data) > MAX_BYTES:
                raise ToolError(f"{url} is larger than the 5 MB limit.")
        content_type = response.headers.get("content-type", "")
        return data.decode(response.encoding or "utf-8", errors="replace"), content_type


async def execute(args: WebfetchParams, ctx: ToolContext) -> ToolResult:
    if not args.url.startswith(("http://", "https://")):
        raise ToolError("The URL must start with http:// or https://.")
    await ctx.ask("webfetch", [args.url], metadata={"url": args.url, "format": args.format})
    timeout = args.timeout or DEFAULT_TIMEOUT_S
    import httpx  # on the first fetch, not with the server: the server has no other use for it

    try:
        body, content_type = await _download(args.url, timeout)
    except httpx.TimeoutException:
        raise ToolError(f"Fetching {args.url} took longer than {timeout} s.") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"Could not fetch {args.url}: {exc}") from None
    output = await _convert_aside(body, content_type, args.format)
    return ToolResult(
        title=f"{args.url} ({content_type.split(';')[0] or 'unknown type'})",
        output=output,
        metadata={"contentType": content_type, "bytes": len(body)},
    )


TOOL = Tool(
    id="webfetch",
    description=(
        "Fetch a web page (http/https) and return it as markdown (default), text or html. "
        "Pages over 5 MB are refused; the timeout is 30 s by default, 120 s at most."
    ),
    parameters=WebfetchParams,
    execute=execute,
)
