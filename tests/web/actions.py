"""What a person does in the web UI, as Playwright steps."""

from __future__ import annotations

import asyncio
import time

from playwright.async_api import Locator, Page, expect


async def send(page: Page, prompt: str) -> None:
    box = page.get_by_label("Prompt")
    await box.fill(prompt)
    await box.press("Enter")
    await expect(box).to_have_value("")


def assistant_text(page: Page) -> Locator:
    return page.locator(".message-assistant .part-text").last


def card(page: Page, tool: str) -> Locator:
    return page.locator(f'.tool-card[data-tool="{tool}"]').last


async def wait_idle(page: Page, within_ms: float = 20_000) -> None:
    """The run the last prompt started has ended, and the page says so. The status alone
    cannot tell: it reads idle until the run's first event arrives."""
    if "#/session/" in page.url:
        session = page.url.split("#/session/")[1]
        deadline = time.monotonic() + within_ms / 1000
        while not await _answered(page, session):
            assert time.monotonic() < deadline, f"session {session} never finished its run"
            await asyncio.sleep(0.05)
    await expect(page.locator('[data-status="idle"]')).to_be_visible(timeout=within_ms)


async def _answered(page: Page, session: str) -> bool:
    """The newest message is an assistant message that is complete."""
    messages = await (await page.request.get(f"/session/{session}/message")).json()
    if not messages:
        return True  # nothing was sent: nothing to wait for
    info = messages[-1]["info"]
    return bool(info["role"] == "assistant" and info["time"].get("completed"))


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


async def record_states(page: Page) -> None:
    """Log every data-state a tool card takes, as the DOM changes (not sampled)."""
    await page.evaluate(
        """() => {
        window.__states = [];
        const seen = (el) => {
          const entry = el.dataset.tool + ':' + el.dataset.state;
          if (window.__states.at(-1) !== entry) window.__states.push(entry);
        };
        new MutationObserver((records) => {
          for (const r of records) {
            const nodes = r.type === 'attributes' ? [r.target] : [...r.addedNodes];
            for (const node of nodes) {
              if (!(node instanceof HTMLElement)) continue;
              if (node.matches('.tool-card')) seen(node);
              node.querySelectorAll?.('.tool-card').forEach(seen);
            }
          }
        }).observe(document.body, {subtree: true, childList: true,
                                   attributes: true, attributeFilter: ['data-state']});
      }"""
    )
