"""The web UI's layout: the session list, mentions, markdown, themes and narrow screens."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Dialog, Page, Route, expect

from tests.web.actions import assistant_text, card, send, wait_idle


async def test_sessions_are_created_renamed_searched_and_deleted(page: Page) -> None:
    await send(page, "list")
    await wait_idle(page)
    await page.get_by_role("button", name="New", exact=True).click()
    await send(page, "README.md")
    await wait_idle(page)
    rows = page.locator(".session-row")
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("README.md")  # newest first

    await rows.first.get_by_role("button", name="Rename").click()
    title = page.get_by_label("Session title")
    await title.fill("Reading the readme")
    await title.press("Enter")
    await expect(page.get_by_test_id("session-title")).to_have_text("Reading the readme")

    await page.get_by_label("Search sessions").fill("readme")
    await expect(rows).to_have_count(1)
    await page.get_by_label("Search sessions").fill("")
    await expect(rows).to_have_count(2)

    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    page.on("dialog", accept)
    await rows.first.get_by_role("button", name="Delete").click()
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("list")


async def test_a_sub_agent_session_nests_under_its_parent(page: Page) -> None:
    await send(page, "task list")
    task = card(page, "task")
    await expect(task).to_have_attribute("data-state", "completed", timeout=15_000)
    await wait_idle(page)
    await expect(task.locator(".task-steps")).to_contain_text("list")
    child_row = page.locator(".session-row", has=page.locator(".child-mark"))
    await expect(child_row).to_have_count(1)
    await task.get_by_role("link", name="Open the sub-agent's session").click()
    await expect(page.locator(".parent-link")).to_contain_text("task list")
    await expect(card(page, "list")).to_have_attribute("data-state", "completed")


async def test_at_mentions_a_project_file_and_an_agent(page: Page) -> None:
    box = page.get_by_label("Prompt")
    await box.press_sequentially("explain @app")
    mentions = page.get_by_role("listbox", name="Mentions")
    await expect(mentions.get_by_role("option")).to_contain_text(["src/app.py"])
    await box.press("Enter")
    await expect(box).to_have_value("explain @src/app.py ")
    await box.press_sequentially("with @pl")
    await expect(mentions.get_by_role("option").first).to_contain_text("plan")
    await box.press("Tab")
    await expect(box).to_have_value("explain @src/app.py with @plan ")
    await box.press("Shift+Enter")
    await expect(box).to_have_value("explain @src/app.py with @plan \n")
    await box.press("Enter")
    await expect(page.locator(".message-user")).to_contain_text("explain @src/app.py")
    await expect(page.locator(".message-user .part-agent")).to_have_text("@plan")
    await wait_idle(page)


async def test_models_come_from_the_configured_providers(page: Page) -> None:
    picker = page.get_by_label("Model")
    await expect(picker.locator("option")).to_have_count(2)
    # the default is named: which model answers when none is chosen
    await expect(picker.locator("option").first).to_have_text("default model (demo/demo)")
    await expect(page.get_by_label("Agent").locator("option").first).to_have_text(
        "default agent (build)"
    )
    await picker.select_option("demo/demo")
    await send(page, "hello")
    await expect(page.locator(".message-meta").first).to_contain_text("demo/demo")
    await wait_idle(page)


async def test_markdown_code_blocks_are_highlighted_and_copied(page: Page) -> None:
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    await send(page, "hello")
    await wait_idle(page)
    code = page.locator(".message-assistant .code").first
    await expect(code.locator(".hljs-comment")).to_have_text("# counted by the demo model")
    await expect(code.locator(".code-lang")).to_have_text("python")
    await code.get_by_role("button", name="Copy").click()
    await expect(code.get_by_role("button", name="Copied")).to_be_visible()
    copied = await page.evaluate("navigator.clipboard.readText()")
    assert copied == await code.locator("code").inner_text()
    answer = page.locator(".message-assistant").last
    await answer.hover()
    await answer.get_by_role("button", name="Copy text").click()
    await expect(answer.get_by_role("button", name="Copy text")).to_have_text("Copied")
    markdown = await page.evaluate("navigator.clipboard.readText()")
    assert markdown.startswith("## Demo model\n\nYou said: **hello**")  # the source, not HTML


@pytest.mark.parametrize("viewport", [{"width": 360, "height": 740}])
async def test_a_360_px_screen_gets_a_drawer(page: Page) -> None:
    sidebar = page.locator(".sidebar")
    await send(page, "list")
    await wait_idle(page)
    assert (await sidebar.bounding_box() or {"x": 0})["x"] < 0, "sidebar hides on a phone"
    await page.get_by_role("button", name="Sessions").click()
    await expect(page.locator(".session-row")).to_have_count(1)
    await page.wait_for_function(
        "document.querySelector('.sidebar').getBoundingClientRect().x >= 0"
    )
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, "nothing overflows sideways"
    await page.locator(".session-link").click()
    await page.wait_for_function(
        "document.querySelector('.sidebar').getBoundingClientRect().right <= 0"
    )
    await expect(card(page, "list")).to_be_visible()


async def test_dark_theme_follows_the_system(browser: Browser, base_url: str) -> None:
    from tests.web.conftest import ARTIFACTS

    context = await browser.new_context(base_url=base_url, color_scheme="dark")
    page = await context.new_page()
    await page.goto("/")
    await send(page, "todo")
    await wait_idle(page)
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 23, 28)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "test_dark_theme_follows_the_system.png"))
    await context.close()


async def test_open_todos_show_above_the_prompt(page: Page) -> None:
    await send(page, "todo")
    await wait_idle(page)
    panel = page.locator(".todo-panel")
    await expect(panel.get_by_role("button")).to_contain_text("Todos 1/3 — Make the change")
    await panel.get_by_role("button").click()
    await expect(panel.locator(".checklist li")).to_have_count(3)
    await page.reload()
    await expect(page.locator(".todo-panel")).to_contain_text("Todos 1/3")


async def test_a_remembered_model_the_server_dropped_falls_back_to_the_default(
    page: Page,
) -> None:
    await page.evaluate("localStorage.setItem('partwire.model', 'gone/model')")
    await page.reload()
    await expect(page.get_by_label("Model")).to_have_value("")
    await send(page, "hello")
    await wait_idle(page)
    await expect(page.locator(".message-meta").first).to_contain_text("demo/demo")
    await expect(page.locator(".toast")).to_have_count(0)


@pytest.mark.parametrize("git_project", [True])
async def test_revert_restore_and_fork_from_a_user_message(page: Page) -> None:
    await send(page, "list")
    await wait_idle(page)
    await send(page, "write notes.md first draft")
    await expect(card(page, "write")).to_have_attribute("data-state", "completed")
    await wait_idle(page)
    second = page.locator(".message-user").nth(1)
    await second.hover()
    await second.get_by_role("button", name="Revert").click()
    bar = page.locator(".revert-bar")
    await expect(bar).to_contain_text("3 messages reverted")
    await expect(page.locator(".message-user")).to_have_count(1)
    await bar.get_by_role("button", name="Restore").click()
    await expect(page.locator(".message-user")).to_have_count(2)
    await expect(bar).to_have_count(0)

    await page.locator(".message-user").nth(1).hover()
    await page.locator(".message-user").nth(1).get_by_role("button", name="Fork").click()
    await expect(page.locator(".session-row")).to_have_count(2)
    await expect(page.locator(".message-user")).to_have_count(1)
    await expect(page.locator(".message-user")).to_contain_text("list")


@pytest.mark.parametrize("git_project", [True])
async def test_fork_and_rewind_from_a_part_of_an_answer(page: Page) -> None:
    await send(page, "bash echo forked")
    await expect(card(page, "bash")).to_have_attribute("data-state", "completed")
    await wait_idle(page)
    text = page.locator(".message-assistant .part-slot").filter(has=page.locator(".part-text"))
    await text.last.hover()
    await text.last.get_by_role("button", name="Rewind to before this part").click()
    await expect(page.locator(".revert-bar")).to_contain_text("Rewound to before a part")
    await expect(page.locator(".message-assistant .part-text")).to_have_count(0)
    await expect(card(page, "bash")).to_be_visible()
    await page.locator(".revert-bar").get_by_role("button", name="Restore").click()
    await expect(page.locator(".message-assistant .part-text")).to_have_count(1)

    tool = page.locator(".part-slot").filter(has=page.locator(".tool-card"))
    await tool.hover()
    await tool.get_by_role("button", name="Fork before this call").click()
    await expect(page.locator(".session-row")).to_have_count(2)
    await expect(page.locator(".message-user")).to_contain_text("bash echo forked")
    await expect(page.locator(".tool-card")).to_have_count(0)

    await page.locator(".session-row").last.click()
    await expect(page.locator(".tool-card")).to_have_count(1)
    tool = page.locator(".part-slot").filter(has=page.locator(".tool-card"))
    await tool.hover()
    await tool.get_by_role("button", name="Fork from this part").click()
    await expect(page.locator(".session-row")).to_have_count(3)
    await expect(card(page, "bash")).to_have_attribute("data-state", "completed")
    await expect(page.locator(".message-assistant .part-text")).to_have_count(0)


async def test_a_budget_ask_pauses_the_run_and_the_header_shows_the_spend(
    page: Page, base_url: str
) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        made = await http.post("/session", json={"title": "on a budget", "budget": {"tokens": 1}})
        sid = made.json()["id"]
    await page.goto(f"/#/session/{sid}")
    await expect(page.get_by_test_id("session-title")).to_have_text("on a budget")
    await send(page, "bash echo budget")
    ask = page.get_by_role("group", name="Budget reached")
    await expect(ask).to_contain_text("of 1 tokens spent")
    await expect(page.get_by_test_id("budget")).to_contain_text("of 1 tokens")
    await ask.get_by_role("button", name="Continue (another budget)").click()
    await wait_idle(page)  # the step it allowed ran: the answer ends the run
    await expect(assistant_text(page)).to_contain_text("budget")
    await expect(page.get_by_test_id("budget")).to_contain_text("of 2 tokens")
    await expect(ask).to_have_count(0)
    await send(page, "hello again")  # spent is past 2 already: asked before the first step
    await ask.get_by_role("button", name="No limit").click()
    await wait_idle(page)
    await expect(assistant_text(page)).to_contain_text("hello again")
    await expect(page.get_by_test_id("budget")).to_have_count(0)


# the page's event stream holds back whatever follows a session named "made elsewhere"
DELAY_MADE_ELSEWHERE = """
const realFetch = window.fetch;
window.fetch = async (input, init) => {
  const response = await realFetch(input, init);
  if (String(input) !== "/event") return response;
  const decoder = new TextDecoder();
  const held = new TransformStream({
    async transform(chunk, controller) {
      if (decoder.decode(chunk, { stream: true }).includes("made elsewhere"))
        await new Promise((resolve) => setTimeout(resolve, 3000));
      controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(held), { headers: response.headers });
};
"""


async def test_a_session_made_elsewhere_opens_before_its_event_arrives(
    browser: Browser, base_url: str
) -> None:
    """Its link opens it at once, instead of reading as deleted while its event is on the
    way (the page used to leave it for an empty one)."""
    context = await browser.new_context(base_url=base_url, bypass_csp=True)
    await context.add_init_script(DELAY_MADE_ELSEWHERE)
    page = await context.new_page()
    try:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            await http.post("/session", json={"title": "listed"})
            await page.goto("/")
            await expect(page.locator(".session-row")).to_have_count(1)  # the list is loaded
            made = await http.post("/session", json={"title": "made elsewhere"})
        await page.goto(f"/#/session/{made.json()['id']}")
        await expect(page.get_by_test_id("session-title")).to_have_text("made elsewhere")
        await page.goto("/#/session/ses_gone0000000000000000000000")  # no such session
        await expect(page.get_by_test_id("session-title")).to_have_text("New session")
    finally:
        await context.close()


async def test_a_mention_sent_before_the_project_root_is_known_waits_for_it(
    browser: Browser, base_url: str, web_project: Path
) -> None:
    """GET /path answers late: the prompt must still name the file inside the project."""
    context = await browser.new_context(base_url=base_url, bypass_csp=True)
    page = await context.new_page()
    release = asyncio.Event()

    async def late_path(route: Route) -> None:
        await release.wait()
        await route.continue_()

    await page.route("**/path", late_path)
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: sent.append(json.loads(r.post_data or "{}")) if "prompt_async" in r.url else None,
    )
    try:
        await page.goto("/")
        box = page.get_by_label("Prompt")
        await box.press_sequentially("explain @app")
        await expect(
            page.get_by_role("listbox", name="Mentions").get_by_role("option")
        ).to_contain_text(["src/app.py"])
        await box.press("Enter")
        await box.press("Enter")  # sent while /path is still unanswered
        await page.wait_for_timeout(300)
        assert sent == []  # the send waits for the project root
        release.set()
        await expect(page.locator(".message-user")).to_contain_text("explain @src/app.py")
        await wait_idle(page)
        [file_part] = [p for p in sent[0]["parts"] if p["type"] == "file"]
        assert file_part["url"] == f"file://{web_project.resolve()}/src/app.py"
        assert await page.locator(".toast").all_inner_texts() == []
    finally:
        await context.close()


async def test_mention_searches_are_few_and_never_hold_a_prompt_back(
    browser: Browser, base_url: str
) -> None:
    """Typing a mention sends one search for a pause in typing, not one a keystroke; a
    search that is slow to answer neither delays Enter nor reopens the list after it."""
    context = await browser.new_context(base_url=base_url, bypass_csp=True)
    page = await context.new_page()
    searches: list[str] = []
    release = asyncio.Event()

    async def slow_search(route: Route) -> None:
        searches.append(route.request.url)
        await release.wait()
        with contextlib.suppress(Exception):  # the page may have cancelled it
            await route.continue_()

    await page.route("**/find/file**", slow_search)
    try:
        await page.goto("/")
        box = page.get_by_label("Prompt")
        await box.press_sequentially("look at @READ", delay=20)
        await page.wait_for_timeout(400)
        assert len(searches) == 1, searches  # one search, for "READ", after the pause
        assert searches[0].endswith("query=READ&limit=20")
        await box.press("Enter")  # the search has not answered: Enter sends at once
        await expect(page.locator(".message-user")).to_contain_text("look at @READ", timeout=2_000)
        release.set()
        await page.wait_for_timeout(300)
        await expect(page.get_by_role("listbox", name="Mentions")).to_have_count(0)
        await wait_idle(page)
    finally:
        release.set()
        await context.close()


async def test_the_first_screen_names_the_model_and_offers_the_demo_prompts(page: Page) -> None:
    first = page.get_by_test_id("first-run")
    await expect(first).to_contain_text("Answering: demo/demo")
    await expect(first).to_contain_text("OPENAI_API_KEY")
    chips = first.get_by_role("group", name="Try the demo").get_by_role("button")
    await expect(chips).to_have_text(
        ["long 300", "list", "bash ls", "question", "todo", "task list"]
    )
    await chips.filter(has_text="list").first.click()
    await expect(page.locator(".message-user")).to_contain_text("list")
    await expect(card(page, "list")).to_be_visible(timeout=10_000)
    await wait_idle(page)
    await expect(first).to_have_count(0)
