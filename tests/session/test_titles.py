"""Session titles made by a real model from the first prompt (partwire.session.titles)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from partwire.config import ProviderConfig, Settings
from partwire.server.runner import serve_in_background
from partwire.session.titles import TITLE_SYSTEM, clean_title
from tests.providers.mock_openai import MockOpenAI, text
from tests.providers.test_openai_e2e import serve_app
from tests.providers.titles import MOCK_TITLE


@pytest.fixture
def mock() -> MockOpenAI:
    return MockOpenAI()


@pytest.fixture
async def http(settings: Settings, mock: MockOpenAI) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_app(mock.app()) as mock_url:
        provider = ProviderConfig(id="mock", api="openai-compatible", base_url=f"{mock_url}/v1")
        configured = replace(settings, providers={"mock": provider}, default_model="mock/m")
        async with (
            serve_in_background(configured) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as client,
        ):
            yield client


async def _title_becomes(http: httpx.AsyncClient, sid: str, wanted: str) -> None:
    for _ in range(200):
        if (await http.get(f"/session/{sid}")).json()["title"] == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the title never became {wanted!r}")


async def test_the_first_prompt_gets_a_title_from_the_model(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script += [text("Sure."), text("Again.")]
    sid = (await http.post("/session", json={})).json()["id"]
    prompt = {"parts": [{"type": "text", "text": "how do I rotate the logs?"}]}
    assert (await http.post(f"/session/{sid}/message", json=prompt)).status_code == 200
    await _title_becomes(http, sid, MOCK_TITLE)
    [asked] = mock.title_requests
    assert asked["messages"][0] == {"role": "system", "content": TITLE_SYSTEM}
    assert asked["messages"][-1] == {"role": "user", "content": "how do I rotate the logs?"}
    assert len(mock.requests) == 1, "the title is asked aside from the conversation"
    prompt = {"parts": [{"type": "text", "text": "and compress them?"}]}
    assert (await http.post(f"/session/{sid}/message", json=prompt)).status_code == 200
    assert len(mock.title_requests) == 1, "only the first prompt is titled"


async def test_a_title_the_user_set_is_kept(http: httpx.AsyncClient, mock: MockOpenAI) -> None:
    mock.script.append(text("Fine."))
    named = (await http.post("/session", json={"title": "Mine"})).json()["id"]
    prompt = {"parts": [{"type": "text", "text": "hello"}]}
    assert (await http.post(f"/session/{named}/message", json=prompt)).status_code == 200
    assert mock.title_requests == [], "a session created with a title is not retitled"
    assert (await http.get(f"/session/{named}")).json()["title"] == "Mine"

    mock.script.append(text("Fine."))
    mock.delay_s = 0.2  # the title arrives after the rename below
    sid = (await http.post("/session", json={})).json()["id"]
    sent = await http.post(f"/session/{sid}/prompt_async", json=prompt)
    assert sent.status_code == 204
    await http.patch(f"/session/{sid}", json={"title": "Renamed"})
    await _title_becomes(http, sid, "Renamed")
    for _ in range(100):
        if mock.title_requests:
            break
        await asyncio.sleep(0.05)
    assert mock.title_requests, "the title was asked for"
    await asyncio.sleep(1)  # its stream (a few 0.2 s chunks) has ended
    assert (await http.get(f"/session/{sid}")).json()["title"] == "Renamed"


def test_the_models_answer_is_cleaned_to_one_short_line() -> None:
    assert clean_title('"Rotating logs."\n\nMore text') == "Rotating logs"
    assert clean_title("## Title: **Log rotation**") == "Log rotation"
    assert clean_title("\n  \n") is None
    # markdown inside the line is text too: marks go, words stay (snake_case included)
    assert clean_title("Hello from the **mock** provider") == "Hello from the mock provider"
    assert clean_title("Fix `parse_args` in [cli](http://x) _now_") == "Fix parse_args in cli now"
    long = clean_title("word " * 40)
    assert long is not None and len(long) == 60 and long.endswith("…")
