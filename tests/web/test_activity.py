"""The top bar's activity line: seed 004's SessionEvents over the ClientHub's /ws, folded by
clients/js (its shared reducer and activity fold)."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.web.actions import send, wait_idle


async def test_tokens_and_changed_files_come_from_session_events(page: Page) -> None:
    await send(page, "write notes.md first draft")
    await wait_idle(page)
    activity = page.get_by_test_id("activity")
    await expect(activity.locator(".activity-tokens")).to_contain_text(" in · ", timeout=10_000)
    await expect(activity.locator(".activity-files summary")).to_have_text("1 file changed")
    await activity.locator(".activity-files summary").click()
    item = activity.locator(".activity-files li")
    await expect(item).to_have_attribute("data-change", "created")
    await expect(item).to_contain_text("notes.md")
    await send(page, "edit notes.md first => second")
    await wait_idle(page)
    await expect(item).to_have_attribute("data-change", "modified", timeout=10_000)
    await send(page, "task list")
    await wait_idle(page)
    await expect(activity.locator(".activity-agents")).to_have_text("1 sub-agent", timeout=10_000)
    tokens_before = await activity.locator(".activity-tokens").inner_text()
    # the same state survives a reload: it is rebuilt from the session's events
    await page.reload()
    await expect(page.get_by_test_id("activity").locator(".activity-tokens")).to_have_text(
        tokens_before, timeout=10_000
    )
