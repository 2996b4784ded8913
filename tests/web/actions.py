"""What a person does in the web UI, as Playwright steps."""

from __future__ import annotations

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
    await expect(page.locator('[data-status="idle"]')).to_be_visible(timeout=within_ms)


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
