"""An external loop's message, streamed in through the ingest route, shows in the web UI
live, with the same renderers as the built-in loop's: the UI does not know it is external."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from playwright.async_api import Page, expect

from partwire.client.http import PartwireClient
from tests.web.actions import assistant_text, card


async def test_an_ingested_message_streams_into_the_open_session(page: Page, base_url: str) -> None:
    async with PartwireClient(base_url) as client:
        session = await client.create_session("External loop")
        # open it once the page has heard of it (before that, the UI takes an unknown
        # session in the address for a deleted one and shows none)
        await expect(page.get_by_role("link", name="External loop")).to_be_visible()
        await page.goto(f"/#/session/{session.id}")
        await expect(page.get_by_test_id("session-title")).to_have_text("External loop")
        shown = asyncio.Event()

        async def lines() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "start", "prompt": "What is in src?"}
            yield {"type": "step-start"}
            yield {"type": "text-delta", "delta": "Looking at the "}
            yield {"type": "text-delta", "delta": "project first."}
            await asyncio.wait_for(shown.wait(), 20)  # the page shows it before the rest
            yield {
                "type": "tool-call",
                "callID": "c1",
                "tool": "bash",
                "input": {"command": "ls src"},
            }
            yield {"type": "tool-result", "callID": "c1", "output": "app.py", "title": "ls src"}
            yield {"type": "text-delta", "delta": "One file: app.py."}
            yield {"type": "step-finish", "tokens": {"input": 30, "output": 9}}

        upload = asyncio.create_task(client.ingest(session.id, lines()))
        await expect(assistant_text(page)).to_have_text(
            "Looking at the project first.", timeout=15_000
        )
        assert not upload.done()
        shown.set()
        await upload
        await expect(card(page, "bash")).to_have_attribute(
            "data-state", "completed", timeout=15_000
        )
        await expect(assistant_text(page)).to_have_text("One file: app.py.")
        await expect(page.locator(".message-user").last).to_contain_text("What is in src?")
        await expect(page.locator('[data-status="idle"]')).to_be_visible(timeout=15_000)
