"""The web UI for a team: a share link shows a session live to a guest without an
account, the header names who is watching, and ending the share locks the guest out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect

from partwire.config import load_settings
from tests.served import partwire_serve
from tests.server.test_team_access import add_token
from tests.web.conftest import ARTIFACTS, require_ui


@pytest.fixture
def alice_token(web_project: Path, tmp_path: Path) -> str:
    settings = load_settings(project_dir=web_project, data_dir=tmp_path / "state" / "data", env={})
    return add_token(settings, "alice")


@pytest.fixture
def base_url(web_project: Path, tmp_path: Path, alice_token: str) -> Iterator[str]:
    require_ui()
    with partwire_serve(web_project, tmp_path / "state", delay_ms=5) as url:
        yield url


async def test_a_share_link_shows_the_session_live_to_a_guest(
    browser: Browser, base_url: str, alice_token: str
) -> None:
    bearer = {"authorization": f"Bearer {alice_token}"}
    async with httpx.AsyncClient(base_url=base_url, headers=bearer, timeout=30) as http:
        sid = (await http.post("/session", json={"title": "team work"})).json()["id"]
        prompt = {"parts": [{"type": "text", "text": "hello team"}]}
        assert (await http.post(f"/session/{sid}/message", json=prompt)).is_success
    credentials = {"username": "alice", "password": alice_token}
    alice = await browser.new_context(base_url=base_url, http_credentials=credentials)
    guest = await browser.new_context(base_url=base_url)
    try:
        page = await alice.new_page()
        await page.goto(f"/#/session/{sid}")
        await expect(page.get_by_test_id("session-title")).to_have_text("team work")
        await page.get_by_role("button", name="Share").click()
        link = page.get_by_test_id("share-link")
        await expect(link).to_be_visible()
        url = await link.input_value()
        assert url.startswith(f"{base_url}/share/pwt_")
        # the page's own hub connection (/ws) counts it as a watcher: on a loaded machine
        # that connection and its session.presence event may take more than 5 s
        await expect(page.get_by_test_id("watchers")).to_contain_text("alice (web)", timeout=15_000)
        viewer = await guest.new_page()
        await viewer.goto(url)
        await expect(viewer.get_by_test_id("session-title")).to_have_text("team work")
        await expect(viewer.locator(".conversation")).to_contain_text("hello team")
        await expect(viewer.get_by_test_id("read-only")).to_be_visible()
        await expect(viewer.get_by_label("Prompt")).to_have_count(0)
        await expect(viewer.get_by_role("button", name="Share")).to_have_count(0)
        for action in ("New", "Rename", "Delete"):
            await expect(viewer.get_by_role("button", name=action)).to_have_count(0)
        # the owner sees the guest arrive
        await expect(page.get_by_test_id("watchers")).to_contain_text("share (web)", timeout=15_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "team-owner.png"))
        await viewer.screenshot(path=str(ARTIFACTS / "team-guest.png"))
        await page.get_by_role("button", name="End sharing").click()
        await expect(page.get_by_role("button", name="Share")).to_be_visible()
        await viewer.wait_for_timeout(1200)  # a token is looked up again after a second
        refused = await guest.request.get(f"{base_url}/session/{sid}")  # the guest's cookie
        assert refused.status == 401
    finally:
        await alice.close()
        await guest.close()
