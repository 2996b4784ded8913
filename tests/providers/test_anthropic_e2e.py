"""Full sessions through partwire against a mock Anthropic Messages server on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest

from partwire.config import ProviderConfig, Settings
from partwire.server.runner import serve_in_background
from tests.providers.mock_anthropic import (
    AnthropicFailure,
    MockAnthropic,
    reply,
    tool_use,
    two_tool_uses,
)
from tests.providers.test_openai_e2e import serve_app
from tests.reference import validate

KEY = "sk-ant-test-key"


@pytest.fixture
def mock() -> MockAnthropic:
    return MockAnthropic()


@pytest.fixture
async def http(settings: Settings, mock: MockAnthropic) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_app(mock.app()) as mock_url:
        provider = ProviderConfig(id="anthropic", api="anthropic", base_url=mock_url, api_key=KEY)
        configured = replace(
            settings, providers={"anthropic": provider}, default_model="anthropic/claude-mock"
        )
        async with (
            serve_in_background(configured) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as c,
        ):
            yield c


async def _prompt(http: httpx.AsyncClient, sid: str, text: str) -> dict[str, object]:
    response = await http.post(
        f"/session/{sid}/message", json={"parts": [{"type": "text", "text": text}]}
    )
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def test_thinking_with_signature_text_and_usage(
    http: httpx.AsyncClient, mock: MockAnthropic
) -> None:
    mock.script += [reply("Hi", " there", thinking="Consider it."), reply("again")]
    sid = (await http.post("/session", json={})).json()["id"]
    answer = await _prompt(http, sid, "hello")
    parts = answer["parts"]  # type: ignore[index]
    reasoning = next(p for p in parts if p["type"] == "reasoning")  # type: ignore[union-attr]
    validate("ReasoningPart", reasoning)
    assert reasoning["text"] == "Consider it."
    assert reasoning["metadata"]["signature"] == "sig-abc"
    assert next(p for p in parts if p["type"] == "text")["text"] == "Hi there"  # type: ignore[union-attr]
    tokens = answer["info"]["tokens"]  # type: ignore[index]
    assert tokens["cache"] == {"read": 6, "write": 4}
    headers = mock.requests[0]["headers"]
    assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"
    # the next turn sends the thinking block back with its signature
    await _prompt(http, sid, "and?")
    previous = mock.requests[1]["body"]["messages"][1]
    assert previous["role"] == "assistant"
    assert previous["content"][0] == {
        "type": "thinking",
        "thinking": "Consider it.",
        "signature": "sig-abc",
    }


async def test_tool_use_round_trip(http: httpx.AsyncClient, mock: MockAnthropic) -> None:
    mock.script += [tool_use("read", {"filePath": "README.md"}), reply("A sample.")]
    sid = (await http.post("/session", json={})).json()["id"]
    await _prompt(http, sid, "read it")
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["callID"] == "toolu_1" and tool["state"]["status"] == "completed"
    assert messages[1]["info"]["finish"] == "tool-calls"
    result = mock.requests[1]["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"


async def test_overloaded_is_retried_and_a_bad_key_is_not(
    http: httpx.AsyncClient, mock: MockAnthropic
) -> None:
    mock.script += [
        AnthropicFailure(529, "overloaded_error", "Overloaded", {"retry-after": "0"}),
        reply("ok"),
        AnthropicFailure(401, "authentication_error", "invalid x-api-key"),
    ]
    sid = (await http.post("/session", json={})).json()["id"]
    answer = await _prompt(http, sid, "one")
    kinds = [p["type"] for p in answer["parts"]]  # type: ignore[union-attr]
    assert kinds == ["retry", "step-start", "text", "step-finish"]
    failed = await _prompt(http, sid, "two")
    assert failed["info"]["error"]["name"] == "ProviderAuthError"  # type: ignore[index]
    assert len(mock.requests) == 3


async def test_rate_limit_abort_and_overflow(http: httpx.AsyncClient, mock: MockAnthropic) -> None:
    mock.script += [
        AnthropicFailure(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your rate limit",
            {"retry-after": "0"},
        ),
        reply("fine"),
        AnthropicFailure(
            400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
        ),
        reply("Summary."),
        reply("Carrying on."),
    ]
    sid = (await http.post("/session", json={})).json()["id"]
    first = await _prompt(http, sid, "one")
    assert first["parts"][0]["error"]["data"]["statusCode"] == 429  # type: ignore[index]
    await _prompt(http, sid, "two")
    messages = (await http.get(f"/session/{sid}/message")).json()
    errors = [
        m["info"].get("error", {}).get("name") for m in messages if m["info"]["role"] == "assistant"
    ]
    assert "ContextOverflowError" in errors
    assert messages[-1]["parts"][-2]["text"] == "Carrying on."


async def test_abort_mid_stream(http: httpx.AsyncClient, mock: MockAnthropic) -> None:
    from tests.server.watch import Watch

    mock.delay_s = 0.02
    mock.script.append(reply(*[f"w{i} " for i in range(300)]))
    sid = (await http.post("/session", json={})).json()["id"]
    async with Watch(http) as watch:
        await http.post(
            f"/session/{sid}/prompt_async", json={"parts": [{"type": "text", "text": "go"}]}
        )
        await watch.wait_for("message.part.delta")
        await http.post(f"/session/{sid}/abort")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert messages[1]["info"]["error"]["name"] == "MessageAbortedError"


async def test_parallel_tool_uses_and_an_image(
    http: httpx.AsyncClient, mock: MockAnthropic
) -> None:
    import base64

    from tests.server.test_tools_e2e import PNG

    mock.script += [
        two_tool_uses(("read", {"filePath": "README.md"}, "t1"), ("list", {}, "t2")),
        reply("ok"),
    ]
    sid = (await http.post("/session", json={})).json()["id"]
    image = "data:image/png;base64," + base64.b64encode(PNG).decode()
    parts = [{"type": "text", "text": "look"}, {"type": "file", "mime": "image/png", "url": image}]
    await http.post(f"/session/{sid}/message", json={"parts": parts})
    messages = (await http.get(f"/session/{sid}/message")).json()
    tools = [p for p in messages[1]["parts"] if p["type"] == "tool"]
    assert [(t["callID"], t["state"]["status"]) for t in tools] == [
        ("t1", "completed"),
        ("t2", "completed"),
    ]
    content = mock.requests[0]["body"]["messages"][0]["content"]
    assert [c["type"] for c in content] == ["text", "image"]
    assert content[1]["source"]["media_type"] == "image/png"
    results = mock.requests[1]["body"]["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["t1", "t2"]
