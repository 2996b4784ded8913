"""Sessions and projects in the web UI: the project switcher, relative times, the tab
title and icon, Esc to stop, ↑ for earlier prompts, and the layout on a 390 px phone."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.web.actions import send, wait_idle
from tests.web.conftest import ARTIFACTS


async def test_the_page_names_its_project_and_switches_to_another(
    page: Page, base_url: str, web_project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    header = {"x-opencode-directory": quote(str(other))}
    async with httpx.AsyncClient(base_url=base_url) as http:
        made = await http.post("/session", json={"title": "Work elsewhere"}, headers=header)
        assert made.status_code == 200, made.text
    await send(page, "hello here")
    await wait_idle(page)
    await page.reload()
    await expect(page.get_by_test_id("project-name")).to_have_text(web_project.name)
    await expect(page.locator(".session-title")).to_have_text(["hello here"])
    switcher = page.get_by_label("Project")
    await expect(switcher.locator("option")).to_have_count(2)

    await switcher.select_option(str(other))
    await page.wait_for_url(f"**/?directory={quote(str(other), safe='')}*")
    await expect(page.get_by_test_id("project-name")).to_have_text("other-project")
    await expect(page.locator(".session-title")).to_have_text(["Work elsewhere"])
    await send(page, "hello there")
    await wait_idle(page)
    async with httpx.AsyncClient(base_url=base_url) as http:
        there = (await http.get("/session", headers=header)).json()
        here = (await http.get("/session")).json()
    assert sorted(s["title"] for s in there) == ["Work elsewhere", "hello there"]
    assert [s["title"] for s in here] == ["hello here"]
    await page.screenshot(path=str(ARTIFACTS / "project-switcher.png"))


async def test_relative_times_the_tab_title_and_the_icon(page: Page) -> None:
    await page.clock.install()
    await page.reload()
    await send(page, "name this tab")
    await wait_idle(page)
    await expect(page).to_have_title("name this tab · partwire")
    row = page.locator(".session-row").first
    await expect(row.locator(".session-time")).to_have_text("just now")
    await page.clock.fast_forward("02:05:00")
    await expect(row.locator(".session-time")).to_have_text("2 h ago")
    icon = await page.locator('link[rel="icon"]').get_attribute("href")
    assert icon is not None and icon.startswith("data:image/svg+xml,")


@pytest.mark.parametrize("delay_ms", [25])
async def test_escape_stops_a_running_session(page: Page) -> None:
    await send(page, "long 2000")
    await expect(page.locator('[data-status="busy"]')).to_be_visible()
    await page.get_by_label("Prompt").press("Escape")
    await wait_idle(page, within_ms=10_000)
    await expect(page.locator(".message-error").last).to_have_text("Stopped.")


async def test_arrow_up_recalls_earlier_prompts(page: Page) -> None:
    for prompt in ("first prompt", "second prompt"):
        await send(page, prompt)
        await wait_idle(page)
    box = page.get_by_label("Prompt")
    await box.fill("a draft")
    await box.press("Home")
    await box.press("ArrowUp")
    await expect(box).to_have_value("second prompt")
    await box.press("ArrowUp")
    await expect(box).to_have_value("first prompt")
    await box.press("ArrowUp")  # nothing older: it stays
    await expect(box).to_have_value("first prompt")
    await box.press("ArrowDown")
    await expect(box).to_have_value("second prompt")
    await box.press("ArrowDown")
    await expect(box).to_have_value("a draft")
    await page.reload()  # kept in this browser
    await page.get_by_label("Prompt").press("ArrowUp")
    await expect(page.get_by_label("Prompt")).to_have_value("second prompt")


async def test_a_new_sessions_default_title_gives_way_to_the_first_prompt(page: Page) -> None:
    for _ in range(2):
        await page.get_by_role("button", name="New").click()
    titles = page.locator(".session-title")
    await expect(titles).to_have_count(2)
    assert all(t.startswith("New session") for t in await titles.all_inner_texts())
    await send(page, "explain the build")
    await wait_idle(page)
    # the title is stored after the answer; with the other test worker busy it took over 5 s once
    await expect(page.get_by_test_id("session-title")).to_have_text(
        "explain the build", timeout=15_000
    )


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


@pytest.mark.parametrize("viewport", [{"width": 390, "height": 844}])
@pytest.mark.parametrize("delay_ms", [25])
async def test_a_390_px_phone_keeps_actions_clear_and_buttons_on_one_row(page: Page) -> None:
    await send(page, "a prompt long enough to wrap onto a second line on a phone screen")
    await wait_idle(page, within_ms=30_000)
    bubble = await page.locator(".message-user .markdown").last.bounding_box()
    assert bubble is not None
    for name in ("Fork", "Revert"):
        action = (
            await page.locator(".message-user").get_by_role("button", name=name).last.bounding_box()
        )
        assert action is not None and not _overlap(action, bubble), f"{name} covers the bubble"
    await send(page, "long 2000")
    stop, send_button = (
        page.get_by_role("button", name="Stop"),
        page.get_by_role("button", name="Send"),
    )
    await expect(stop).to_be_visible()
    await page.get_by_label("Prompt").fill("typed while it runs")
    boxes = [await stop.bounding_box(), await send_button.bounding_box()]
    assert boxes[0] is not None and boxes[1] is not None
    assert abs(boxes[0]["y"] - boxes[1]["y"]) < 2, "Stop and Send share a row"
    assert boxes[1]["x"] + boxes[1]["width"] <= 390
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    # the session's title is readable: the counters go under it, not over it
    title = page.get_by_test_id("session-title")
    await expect(page.locator(".activity-tokens")).to_be_visible(timeout=10_000)
    shown = await title.evaluate("el => el.parentElement.clientWidth")
    assert shown >= 150, f"the title has {shown} px"
    await page.screenshot(path=str(ARTIFACTS / "phone-390.png"))
    await stop.click()
    await wait_idle(page, within_ms=10_000)
