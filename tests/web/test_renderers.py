"""Part and tool renderers with content a demo prompt alone does not produce."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
from playwright.async_api import Page, expect

from tests.web.actions import card, send, wait_idle


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
