"""A page built with @ai-sdk/react's useChat against `partwire serve` in headless Chromium:
it streams a prompt, approves a tool with the SDK's own approval flow, and resumes a turn
after a reload mid-stream."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Route

from tests.protocol.node_clients import NODE_DIR, needs_node
from tests.web.conftest import ARTIFACTS

PAGE = (
    "<!doctype html><html><body><div id='root'></div>"
    "<script type='module' src='/usechat.js'></script></body></html>"
)


@pytest.fixture
def bundle(tmp_path: Path) -> bytes:
    out = tmp_path / "usechat.js"
    subprocess.run(
        [
            str(NODE_DIR / "node_modules" / ".bin" / "esbuild"),
            "page/chat.jsx", "--bundle", "--format=esm", "--jsx=automatic",
            "--define:process.env.NODE_ENV=\"production\"", f"--outfile={out}",
            "--log-level=warning",
        ],
        cwd=NODE_DIR,
        check=True,
    )  # fmt: skip
    return out.read_bytes()


@pytest.fixture
def delay_ms() -> int:
    return 6  # `long 400` streams for a few seconds: long enough to reload in the middle


@pytest_asyncio.fixture(loop_scope="session")
async def chat_page(
    browser: Browser, base_url: str, bundle: bytes, request: pytest.FixtureRequest
) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=base_url)

    async def serve_page(route: Route) -> None:
        await route.fulfill(body=PAGE, content_type="text/html")

    async def serve_bundle(route: Route) -> None:
        await route.fulfill(body=bundle, content_type="text/javascript")

    await context.route("**/usechat.html*", serve_page)
    await context.route("**/usechat.js", serve_bundle)
    tab = await context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield tab
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await tab.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
        await context.close()
    assert errors == [], f"errors in the page: {errors}"


async def send(page: Page, text: str) -> None:
    await page.fill("#prompt", text)
    await page.click("button[type=submit]")


async def settled(page: Page) -> None:
    await page.wait_for_function(
        "() => window.chatState && window.chatState.status === 'ready'"
        " && window.chatState.messages.length > 0"
        " && window.chatState.messages.at(-1).role === 'assistant'",
        timeout=20_000,
    )


async def state_of(page: Page) -> dict[str, Any]:
    state: dict[str, Any] = await page.evaluate(
        "() => JSON.parse(JSON.stringify(window.chatState))"
    )
    return state


@needs_node
async def test_use_chat_streams_approves_a_tool_and_resumes_after_a_reload(
    chat_page: Page, base_url: str
) -> None:
    page = chat_page
    await page.goto("/usechat.html?chat=browser-chat&agent=plan")
    await page.wait_for_selector("#prompt")

    # a tool that asks: the SDK shows the approval, the click posts the answer
    await send(page, "bash echo from-the-browser")
    await page.click("button.approve", timeout=20_000)
    await page.wait_for_selector("pre.output", timeout=20_000)
    await settled(page)
    assert await page.inner_text("pre.output") == "from-the-browser\n"

    # a long answer, reloaded in the middle: the page resumes the turn in progress
    await send(page, "long 400")
    await page.wait_for_function(
        "() => [...document.querySelectorAll('.message.assistant .text')]"
        ".some(p => p.textContent.includes('w40 '))",
        timeout=20_000,
    )
    status = await page.inner_text("#status")
    assert status == "streaming"
    await page.reload()
    await page.wait_for_function(
        "() => window.chatState && window.chatState.status === 'streaming'", timeout=20_000
    )
    await settled(page)
    texts = await page.locator(".message.assistant .text").all_inner_texts()
    assert texts[-1].split() == [f"w{i}" for i in range(400)]  # nothing lost or repeated

    state = await state_of(page)
    async with httpx.AsyncClient(base_url=base_url) as http:
        stored = (await http.get("/ui/chat/browser-chat/messages")).json()
    assert [m["role"] for m in state["messages"]] == ["user", "assistant"] * 2
    assert state["messages"] == stored  # reloaded: every message as the server has it
    (tool,) = [p for p in stored[1]["parts"] if p["type"] == "tool-bash"]
    assert tool["approval"]["approved"] is True
