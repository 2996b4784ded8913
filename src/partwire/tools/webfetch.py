"""webfetch: fetch an http(s) URL as markdown, text or html, within size and time limits."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

import httpx
from pydantic import BaseModel, Field

from partwire.errors import ToolError

if TYPE_CHECKING:
    from bs4 import BeautifulSoup
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


def _clean(html: str) -> BeautifulSoup:
    from bs4 import BeautifulSoup  # imported on first use: it is large, and rarely needed

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return soup


def _convert(body: str, content_type: str, fmt: str) -> str:
    if "html" not in content_type or fmt == "html":
        return body
    soup = _clean(body)
    if fmt == "text":
        text = soup.get_text("\n")
        return "\n".join(line.strip() for line in text.splitlines() if line.strip())
    from markdownify import MarkdownConverter

    markdown: str = MarkdownConverter(heading_style="ATX").convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


async def _download(url: str, limit_s: float) -> tuple[str, str]:
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
    try:
        body, content_type = await _download(args.url, timeout)
    except httpx.TimeoutException:
        raise ToolError(f"Fetching {args.url} took longer than {timeout} s.") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"Could not fetch {args.url}: {exc}") from None
    output = _convert(body, content_type, args.format)
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
