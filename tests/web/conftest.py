"""Headless Chromium (Debian's package, driven by Playwright) against a real partwire serve.

One Chromium serves every test here (launching it takes about half a second); each test
gets browser contexts of its own, which share nothing, and a server of its own. The tests
and their async fixtures run on one event loop for the session, the browser's.
Each test leaves a screenshot of its end state in ``test-artifacts/web/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Request, async_playwright

from partwire.server.ui import STATIC_DIR
from tests.served import partwire_serve

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("PARTWIRE_CHROMIUM") or shutil.which("chromium")


def require_ui() -> None:
    missing = []
    if chromium_path() is None:
        missing.append("chromium (make system installs it)")
    if not (STATIC_DIR / "index.html").is_file():
        missing.append("the built web UI (make ui)")
    if not missing:
        return
    reason = "web UI tests need " + " and ".join(missing)
    if os.environ.get("CI"):
        pytest.fail(reason)  # CI must not pass by skipping the browser tests
    pytest.skip(reason)


def left_origin(page: Page, base_url: str) -> list[str]:
    """The URLs the page requested from another origin (and that no CSP blocked)."""
    outside: list[str] = []

    def sent(request: Request) -> None:
        if not request.url.startswith((base_url, "data:", "blob:")):
            outside.append(request.url)

    def failed(request: Request) -> None:
        if request.failure in ("csp", "net::ERR_BLOCKED_BY_CSP") and request.url in outside:
            outside.remove(request.url)

    page.on("request", sent)
    page.on("requestfailed", failed)
    return outside


@pytest.fixture
def git_project() -> bool:
    """A test sets this to True for a git work tree (snapshots, patch parts)."""
    return False


@pytest.fixture
def web_project(tmp_path: Path, git_project: bool) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Sample\n\nA sample project.\n")
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    if git_project:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def delay_ms() -> int:
    """Milliseconds between the demo model's chunks; a test overrides it to stream slower."""
    return 5


@pytest.fixture
def base_url(web_project: Path, tmp_path: Path, delay_ms: int) -> Iterator[str]:
    require_ui()
    with partwire_serve(web_project, tmp_path / "state", delay_ms=delay_ms) as url:
        yield url


WEB = Path(__file__).resolve().parent
ON_THE_BROWSERS_LOOP = pytest.mark.asyncio(loop_scope="session")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here runs on the session's loop, where the one browser lives."""
    for item in items:
        if item.path.is_relative_to(WEB) and item.get_closest_marker("asyncio") is not None:
            item.add_marker(ON_THE_BROWSERS_LOOP, append=False)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    require_ui()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_FLAGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
def viewport() -> dict[str, int]:
    return {"width": 1200, "height": 800}


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    browser: Browser, base_url: str, viewport: dict[str, int], request: pytest.FixtureRequest
) -> AsyncIterator[Page]:
    # Playwright's wait_for_function evaluates strings, which the UI's CSP forbids;
    # test_renderers checks the policy itself in a context that keeps it.
    context = await browser.new_context(
        base_url=base_url,
        viewport=viewport,  # type: ignore[arg-type]
        bypass_csp=True,
    )
    tab = await context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    outside = left_origin(tab, base_url)
    await tab.goto("/")
    try:
        yield tab
        notices = await tab.locator(".toast").all_inner_texts()
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await tab.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
        await context.close()
    assert notices == [], f"the UI reported an error: {notices}"
    assert errors == [], f"errors in the page: {errors}"
    assert outside == [], f"requests left the server's origin: {outside}"
