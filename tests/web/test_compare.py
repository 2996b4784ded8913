"""The web UI's comparison: a replay beside its recording, prompt by prompt."""

from __future__ import annotations

import asyncio

import httpx
from playwright.async_api import Page, expect


async def test_a_replay_links_to_a_side_by_side_comparison(page: Page, base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        source = (await http.post("/session", json={"title": "recorded"})).json()["id"]
        for text in ("bash echo compared", "hello"):
            prompt = {"parts": [{"type": "text", "text": text}]}
            assert (await http.post(f"/session/{source}/message", json=prompt)).is_success
        body = {"model": {"providerID": "demo", "modelID": "demo"}}
        replay = (await http.post(f"/session/{source}/replay", json=body)).json()["id"]
        for _ in range(200):
            messages = (await http.get(f"/session/{replay}/message")).json()
            idle = replay not in (await http.get("/session/status")).json()
            if len(messages) == 5 and idle and messages[-1]["info"]["time"].get("completed"):
                break
            await asyncio.sleep(0.05)
    await page.goto(f"/#/session/{replay}")
    await page.get_by_role("link", name="Compare with the original").click()
    view = page.get_by_test_id("compare")
    await expect(view.get_by_role("status")).to_contain_text("2 prompts · text 100% alike")
    await expect(view.get_by_role("status")).to_contain_text("0 diverging calls")
    turns = view.locator(".compare-turn")
    await expect(turns).to_have_count(2)
    await expect(turns.first.locator("h3")).to_contain_text("1. bash echo compared")
    calls = turns.first.locator('.compare-side[data-side="B"] .compare-calls li')
    await expect(calls).to_have_text(
        ['bash {"command": "echo compared", "description": "Run echo compared"}']
    )
    await expect(view.get_by_role("link", name="recorded", exact=True)).to_have_attribute(
        "href", f"#/session/{source}"
    )
    await expect(page.get_by_label("Prompt")).to_have_count(0)  # nothing to send here
