"""Web UI benchmark in headless Chromium: a 2,000-message session and 10,000 deltas.

    python bench/ui.py [--messages 2000] [--words 10000]

1. Open. A session is seeded with real demo exchanges (text, reasoning, markdown,
   tool cards, step lines), cloned in the store up to ``--messages`` messages. The
   table shows the time from navigation to the newest message on screen (cold page
   load), the time from clicking the session in the list to the same (warm), how
   many message rows are in the DOM, and the frame times of a scroll from the bottom
   to the top in 400 px steps (one step per animation frame).
2. Stream. ``long N`` streams N one-word text deltas into an open session (demo model,
   delays 0 and 2 ms). The table shows the longest main-thread task (Long Tasks API,
   which reports tasks over 50 ms, plus the longest gap between animation frames) and
   the number of text repaints.

Needs Debian's chromium (``make system``) and the built UI (``make ui``). Pages bypass the
UI's Content-Security-Policy only because Playwright's wait_for_function evaluates strings.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.async_api import Browser, Page, async_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.served import partwire_serve  # noqa: E402
from tests.web.conftest import CHROMIUM_FLAGS, chromium_path  # noqa: E402

from partwire import ids  # noqa: E402
from partwire.bus import Bus  # noqa: E402
from partwire.storage.sqlite import SqliteStore  # noqa: E402

OPEN_TARGET_MS = 1000
TASK_TARGET_MS = 50
SEED_PROMPTS = ["hello", "list", "README.md", "todo", "bash echo seeded", "long 120"]

SEEN = """
new MutationObserver((_, observer) => {
  if (document.querySelector('SELECTOR')) {
    window.__seen = performance.now();
    observer.disconnect();
  }
}).observe(document, { subtree: true, childList: true });
"""

TIMELINE = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const rows = [["document", nav.responseEnd], ["DOMContentLoaded", nav.domContentLoadedEventEnd]];
  for (const r of performance.getEntriesByType("resource"))
    rows.push([r.name.replace(location.origin, ""), r.startTime, r.responseEnd]);
  const cell = (v) => (typeof v === "number" ? Math.round(v) : v);
  return rows.map((r) => r.map(cell).join(" ")).join("\\n");
}"""

LONG_TASKS = """() => {
  window.__long = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__long.push(entry.duration);
  }).observe({ type: "longtask", buffered: false });
  window.__frames = [];
  let last = performance.now();
  const tick = (now) => { window.__frames.push(now - last); last = now;
                          if (!window.__stopFrames) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""


def _seed_real(base: str) -> str:
    with httpx.Client(base_url=base, timeout=120) as http:
        session = http.post("/session", json={"title": "2,000 messages"}).json()["id"]
        for prompt in SEED_PROMPTS:
            body = {"parts": [{"type": "text", "text": prompt}]}
            http.post(f"/session/{session}/message", json=body).raise_for_status()
        return str(session)


async def _clone_up_to(database: Path, session_id: str, count: int) -> int:
    """Copy the session's messages (new ascending ids) until it holds ``count``."""
    store = SqliteStore(database, Bus())
    await store.open()
    try:
        template = await store.list_messages(session_id)
        total = len(template)
        while total < count:
            for entry in template:
                if total >= count:
                    break
                message_id = ids.message_id()
                info = entry.info.model_copy(update={"id": message_id})
                await store.put_message(info, [])
                for part in entry.parts:
                    update = {"id": ids.part_id(), "message_id": message_id}
                    await store.put_part(part.model_copy(update=update), [])
                total += 1
        return total
    finally:
        await store.close()


async def _open_times(browser: Browser, base: str, session_id: str, total: int) -> dict[str, float]:
    page = await browser.new_page(
        base_url=base, viewport={"width": 1280, "height": 900}, bypass_csp=True
    )
    last = await _last_message_id(base, session_id)
    newest = f'[data-message="{last}"]'
    # times are taken in the page, when the DOM changes: an evaluate() afterwards would
    # wait for the main thread and count whatever it does next
    await page.add_init_script(SEEN.replace("SELECTOR", newest))
    await page.goto(f"/#/session/{session_id}")
    await page.wait_for_function("window.__seen !== undefined", polling=10)
    cold = await page.evaluate("window.__seen")
    if os.environ.get("PARTWIRE_BENCH_TRACE"):
        print(await page.evaluate(TIMELINE))
    rows = await page.locator(".row").count()
    await page.goto("/")
    link = f'[data-session="{session_id}"] .session-link'
    await page.wait_for_selector(link)
    click = f"document.querySelector('{link}').click()"
    started = await page.evaluate(f"() => {{ const t = performance.now(); {click}; return t; }}")
    await page.wait_for_function("window.__seen !== undefined", polling=10)
    warm = await page.evaluate("window.__seen") - started
    await page.wait_for_function(
        f"window.partwire.store.messages.get('{session_id}')?.length >= {total}", polling=10
    )
    everything = await page.evaluate("performance.now()") - started
    frames = await _scroll_to_top(page)
    await page.close()
    get_ms, size = await _get_all_ms(base, session_id)
    return {
        "get": get_ms,
        "size": size / 1e6,
        "cold": cold,
        "warm": warm,
        "all": everything,
        "rows": rows,
        "p95": _percentile(frames, 95),
        "max": max(frames),
    }


async def _last_message_id(base: str, session_id: str) -> str:
    async with httpx.AsyncClient(base_url=base) as http:
        messages = (await http.get(f"/session/{session_id}/message?limit=1")).json()
        return str(messages[-1]["info"]["id"])


async def _get_all_ms(base: str, session_id: str) -> tuple[float, int]:
    """How long the server takes to answer GET …/message for the whole session, and its size."""
    async with httpx.AsyncClient(base_url=base) as http:
        started = time.perf_counter()
        response = await http.get(f"/session/{session_id}/message")
        return (time.perf_counter() - started) * 1000, len(response.content)


async def _scroll_to_top(page: Page) -> list[float]:
    frames: list[float] = await page.evaluate(
        """async () => {
        const el = document.querySelector('.conversation');
        const frames = [];
        let last = performance.now();
        while (el.scrollTop > 0) {
          el.scrollTop = Math.max(0, el.scrollTop - 400);
          const now = await new Promise(requestAnimationFrame);
          frames.push(now - last);
          last = now;
        }
        return frames;
      }"""
    )
    return frames


async def _stream(browser: Browser, base: str, words: int) -> dict[str, float | str]:
    page = await browser.new_page(
        base_url=base, viewport={"width": 1280, "height": 900}, bypass_csp=True
    )
    await page.goto("/")
    await page.get_by_label("Prompt").fill("warm up")
    await page.get_by_label("Prompt").press("Enter")
    await page.wait_for_selector('[data-status="idle"] >> nth=0')
    await page.wait_for_selector(".message-assistant .part-step-finish")
    await page.evaluate(LONG_TASKS)
    await page.evaluate(
        """() => { window.__paints = 0; let pending = false;
        new MutationObserver((records) => {
          if (!records.some((r) => (r.target.parentElement ?? r.target).closest?.('.part-text')))
            return;
          if (!pending) { pending = true; window.__paints++;
                          setTimeout(() => pending = false, 20); } })
          .observe(document.querySelector('.conversation'),
                   {subtree: true, childList: true, characterData: true}); }"""
    )
    await page.get_by_label("Prompt").fill(f"long {words}")
    started = time.perf_counter()
    await page.get_by_label("Prompt").press("Enter")
    last_word = f"w{words - 1}"
    await page.wait_for_function(
        f"""() => {{ const t = [...document.querySelectorAll('.message-assistant .part-text')]
        .at(-1)?.textContent ?? ''; return t.trimEnd().endsWith(' {last_word}'); }}""",
        timeout=600_000,
        polling=200,
    )
    seconds = time.perf_counter() - started
    await page.evaluate("window.__stopFrames = true")
    long_tasks: list[float] = await page.evaluate("window.__long")
    frames: list[float] = await page.evaluate("window.__frames")
    paints: int = await page.evaluate("window.__paints")
    await page.close()
    return {
        "seconds": seconds,
        "long": len(long_tasks),
        "task": f"{max(long_tasks):.1f}" if long_tasks else "none",
        "frame": max(frames),
        "paints": paints,
    }


def _percentile(values: list[float], p: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100)[p - 1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--words", type=int, default=10000)
    args = parser.parse_args()
    if chromium_path() is None:
        sys.exit("chromium is not installed (make system)")
    state = Path(tempfile.mkdtemp(prefix="partwire-bench-ui-"))
    project = state / "project"
    project.mkdir()
    (project / "README.md").write_text("# Bench\n\nA project for the UI benchmark.\n")
    try:
        with partwire_serve(project, state) as base:
            session = _seed_real(base)
        total = await _clone_up_to(state / "data" / "partwire.db", session, args.messages)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_FLAGS
            )
            with partwire_serve(project, state) as base:
                opened = await _open_times(browser, base, session, total)
            streams: dict[int, dict[str, float | str]] = {}
            for delay in (0, 2):
                with partwire_serve(project, state, delay_ms=delay) as base:
                    streams[delay] = await _stream(browser, base, args.words)
            await browser.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    _print_open(total, opened)
    _print_stream(args.words, streams)


def _table(columns: list[tuple[str, str]], rows: list[dict[str, float | str]]) -> None:
    """Print rows under right-aligned headers; each column is (header, format spec)."""
    widths = [max(len(header), 8) for header, _ in columns]
    print(" ".join(f"{header:>{w}}" for (header, _), w in zip(columns, widths, strict=True)))
    for row in rows:
        cells = [
            format(value, spec) for value, (_, spec) in zip(row.values(), columns, strict=True)
        ]
        print(" ".join(f"{cell:>{w}}" for cell, w in zip(cells, widths, strict=True)))


def _print_open(total: int, r: dict[str, float]) -> None:
    print(f"\nOpen a session of {total:,} messages (target: newest message on screen < 1 s)")
    columns = [
        ("cold ms", ".0f"),
        ("warm ms", ".0f"),
        ("all loaded ms", ".0f"),
        ("rows in DOM", ".0f"),
        ("scroll p95 ms", ".1f"),
        ("max ms", ".1f"),
        ("GET all ms", ".0f"),
        ("MB", ".2f"),
    ]
    keys = ["cold", "warm", "all", "rows", "p95", "max", "get", "size"]
    _table(columns, [{k: r[k] for k in keys}])
    verdict = "met" if max(r["cold"], r["warm"]) < OPEN_TARGET_MS else "MISSED"
    print(f"open target {verdict}")


def _print_stream(words: int, streams: dict[int, dict[str, float | str]]) -> None:
    print(f"\nStream long {words:,} into the open session (target: every task < 50 ms)")
    columns = [
        ("delay ms", ".0f"),
        ("seconds", ".1f"),
        ("tasks>50ms", ".0f"),
        ("longest of those ms", ""),
        ("max frame gap ms", ".1f"),
        ("repaints", ".0f"),
    ]
    keys = ["seconds", "long", "task", "frame", "paints"]
    _table(columns, [{"delay": d, **{k: r[k] for k in keys}} for d, r in streams.items()])
    worst = max(float(r["long"]) for r in streams.values())
    print(f"task target {'met' if worst == 0 else 'MISSED'}")


if __name__ == "__main__":
    asyncio.run(main())
