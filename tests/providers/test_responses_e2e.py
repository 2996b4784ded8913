"""A session through partwire against a mock of OpenAI's Responses API on loopback."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx

from partwire.config import ProviderConfig, Settings
from partwire.server.runner import serve_in_background
from tests.providers.mock_responses import (
    MockResponses,
    function_call,
    message,
    reasoning_then_message,
    two_calls,
)
from tests.providers.test_openai_e2e import serve_app
from tests.server.test_tools_e2e import PNG
from tests.server.watch import Watch


@contextlib.asynccontextmanager
async def responses_server(
    settings: Settings, mock: MockResponses
) -> AsyncIterator[httpx.AsyncClient]:
    """partwire configured with the mock Responses API as provider ``openai``."""
    async with serve_app(mock.app()) as mock_url:
        provider = ProviderConfig(
            id="openai", api="openai-responses", base_url=f"{mock_url}/v1", api_key="k"
        )
        configured = replace(
            settings, providers={"openai": provider}, default_model="openai/gpt-mock"
        )
        async with (
            serve_in_background(configured) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as http,
        ):
            yield http


async def test_text_and_a_tool_call_through_the_responses_api(settings: Settings) -> None:
    mock = MockResponses(
        script=[function_call("read", {"filePath": "README.md"}), message("It is ", "a sample.")]
    )
    async with responses_server(settings, mock) as http:
        sid = (await http.post("/session", json={})).json()["id"]
        body = {"parts": [{"type": "text", "text": "read the readme"}]}
        answer = (await http.post(f"/session/{sid}/message", json=body)).json()
        messages = (await http.get(f"/session/{sid}/message")).json()
    assert answer["parts"][-2]["text"] == "It is a sample."
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert (tool["callID"], tool["state"]["status"]) == ("call_r1", "completed")
    assert messages[1]["parts"][-1]["tokens"]["input"] == 30
    followup = mock.requests[1]["input"]
    outputs = [item for item in followup if item.get("type") == "function_call_output"]
    assert outputs[0]["call_id"] == "call_r1" and "A sample project." in outputs[0]["output"]


async def test_parallel_calls_and_an_image(settings: Settings) -> None:
    mock = MockResponses(
        script=[
            two_calls(("read", {"filePath": "README.md"}, "c1"), ("list", {}, "c2")),
            message("done"),
        ]
    )
    image = "data:image/png;base64," + base64.b64encode(PNG).decode()
    async with responses_server(settings, mock) as http:
        sid = (await http.post("/session", json={})).json()["id"]
        parts = [
            {"type": "text", "text": "look"},
            {"type": "file", "mime": "image/png", "url": image},
        ]
        await http.post(f"/session/{sid}/message", json={"parts": parts})
        messages = (await http.get(f"/session/{sid}/message")).json()
    tools = [p for p in messages[1]["parts"] if p["type"] == "tool"]
    assert [(t["callID"], t["state"]["status"]) for t in tools] == [
        ("c1", "completed"),
        ("c2", "completed"),
    ]
    first_input = mock.requests[0]["input"]
    user = next(item for item in first_input if item.get("role") == "user")
    kinds = [c["type"] for c in user["content"]]
    assert kinds == ["input_text", "input_image"]


async def test_reasoning_and_abort(settings: Settings) -> None:
    mock = MockResponses(
        script=[
            reasoning_then_message("Weigh it up.", "Yes."),
            message(*[f"w{i} " for i in range(300)]),
        ]
    )
    async with responses_server(settings, mock) as http:
        sid = (await http.post("/session", json={})).json()["id"]
        answer = (
            await http.post(
                f"/session/{sid}/message", json={"parts": [{"type": "text", "text": "think"}]}
            )
        ).json()
        mock.delay_s = 0.02
        async with Watch(http) as watch:
            await http.post(
                f"/session/{sid}/prompt_async", json={"parts": [{"type": "text", "text": "go"}]}
            )
            await watch.wait_for(
                "message.part.delta", lambda e: e["properties"]["sessionID"] == sid
            )
            await http.post(f"/session/{sid}/abort")
            await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        messages = (await http.get(f"/session/{sid}/message")).json()
    reasoning = next(p for p in answer["parts"] if p["type"] == "reasoning")
    assert reasoning["text"] == "Weigh it up."
    assert reasoning["metadata"]["provider"] == "openai"
    assert messages[-1]["info"]["error"]["name"] == "MessageAbortedError"
