"""Full sessions through partwire against a mock OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest
import uvicorn

from partwire.config import ProviderConfig, Settings
from partwire.providers.stream import NOT_TAKEN, StreamEvent
from partwire.server.runner import serve_in_background
from partwire.session.processor import Processor
from tests.providers.mock_openai import Drop, Failure, MockOpenAI, parallel_calls, text, tool_call
from tests.reference import validate
from tests.server.test_tools_e2e import PNG
from tests.server.watch import Watch

SECRET = "sk-test-secret-key-123"


@contextlib.asynccontextmanager
async def serve_app(app: object) -> AsyncIterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))  # type: ignore[arg-type]
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the mock server stopped before it started"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
def mock() -> MockOpenAI:
    return MockOpenAI()


@pytest.fixture
async def http(settings: Settings, mock: MockOpenAI) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_app(mock.app()) as mock_url:
        provider = ProviderConfig(
            id="mock", api="openai-compatible", base_url=f"{mock_url}/v1", api_key=SECRET
        )
        configured = replace(
            settings, providers={"mock": provider}, default_model="mock/mock-model"
        )
        async with (
            serve_in_background(configured) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as c,
        ):
            yield c


async def _prompt(http: httpx.AsyncClient, text_: str) -> tuple[str, dict[str, object]]:
    sid = (await http.post("/session", json={})).json()["id"]
    response = await http.post(
        f"/session/{sid}/message", json={"parts": [{"type": "text", "text": text_}]}
    )
    assert response.status_code == 200, response.text
    return str(sid), response.json()


async def test_text_reasoning_and_usage(http: httpx.AsyncClient, mock: MockOpenAI) -> None:
    mock.script.append(text("Hello", " world", reasoning="thinking hard"))
    _, answer = await _prompt(http, "hi")
    info, parts = answer["info"], answer["parts"]  # type: ignore[index]
    validate("AssistantMessage", info)
    assert info["providerID"] == "mock" and info["modelID"] == "mock-model"  # type: ignore[index]
    kinds = [p["type"] for p in parts]  # type: ignore[union-attr]
    assert kinds == ["step-start", "reasoning", "text", "step-finish"]
    assert parts[1]["text"] == "thinking hard"  # type: ignore[index]
    assert parts[2]["text"] == "Hello world"  # type: ignore[index]
    tokens = parts[3]["tokens"]  # type: ignore[index]
    # OpenAI's prompt counts the cached tokens and its completion the reasoning: once here
    assert (tokens["input"], tokens["output"], tokens["cache"]["read"]) == (15, 2, 5)
    assert tokens["total"] == 25
    assert tokens["reasoning"] == 3
    sent = mock.requests[0]
    assert sent["headers"]["authorization"] == f"Bearer {SECRET}"
    assert sent["body"]["stream"] is True
    assert sent["body"]["messages"][-1] == {"role": "user", "content": "hi"}
    assert sent["body"]["tools"][0]["type"] == "function"


async def test_paced_deltas_are_taken_in_the_read_that_brought_them(
    http: httpx.AsyncClient, mock: MockOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paced model's deltas reach the processor in the connection's read (no task woken
    per token); the starts, the tool call and the end come through the stream, in order."""
    taken: list[str] = []
    take_now = Processor._take_now

    def counted(self: Processor, event: StreamEvent) -> object:
        result = take_now(self, event)
        if result is not NOT_TAKEN:
            taken.append(event.delta)  # type: ignore[union-attr]
        return result

    monkeypatch.setattr(Processor, "_take_now", counted)
    mock.delay_s = 0.01
    words = [f"w{i} " for i in range(20)]
    mock.script += [
        text(*words, reasoning="thinking hard"),
        tool_call("read", {"filePath": "README.md"}),
        text("It is", " a sample."),
    ]
    _, first = await _prompt(http, "hi")
    assert [p["type"] for p in first["parts"]] == [  # type: ignore[union-attr,index]
        "step-start", "reasoning", "text", "step-finish",
    ]  # fmt: skip
    assert first["parts"][2]["text"] == "".join(words)  # type: ignore[index]
    assert len(taken) >= 15 and set(taken) <= set(words)
    sid, second = await _prompt(http, "what is in the readme?")
    assert second["parts"][-2]["text"] == "It is a sample."  # type: ignore[index]
    parts = [p for m in (await http.get(f"/session/{sid}/message")).json() for p in m["parts"]]
    assert [p["state"]["status"] for p in parts if p["type"] == "tool"] == ["completed"]


async def test_a_tool_call_runs_and_its_result_goes_back(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script += [tool_call("read", {"filePath": "README.md"}), text("It is a sample.")]
    sid, answer = await _prompt(http, "what is in the readme?")
    assert answer["parts"][-2]["text"] == "It is a sample."  # type: ignore[index]
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert tool["callID"] == "call_1" and tool["state"]["status"] == "completed"
    followup = mock.requests[1]["body"]["messages"]
    assert followup[-2]["tool_calls"][0]["function"]["name"] == "read"
    assert followup[-1]["role"] == "tool" and followup[-1]["tool_call_id"] == "call_1"
    assert "A sample project." in followup[-1]["content"]


async def test_a_429_is_retried_after_retry_after(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script += [
        Failure(
            429, "rate_limit_exceeded", "rate_limit_exceeded", "Slow down", {"retry-after": "0"}
        ),
        text("made it"),
    ]
    _, answer = await _prompt(http, "hi")
    parts = answer["parts"]  # type: ignore[index]
    retry = next(p for p in parts if p["type"] == "retry")  # type: ignore[union-attr]
    assert retry["error"]["data"]["statusCode"] == 429 and retry["error"]["data"]["isRetryable"]
    assert parts[-2]["text"] == "made it"  # type: ignore[index]
    assert len(mock.requests) == 2


async def test_a_bad_key_is_an_auth_error_and_not_retried(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script.append(
        Failure(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided")
    )
    _, answer = await _prompt(http, "hi")
    error = answer["info"]["error"]  # type: ignore[index]
    assert error["name"] == "ProviderAuthError" and error["data"]["providerID"] == "mock"
    validate("ProviderAuthError", error)
    assert len(mock.requests) == 1
    # what to fix, not the SDK's raw error dict
    assert error["data"]["message"] == (
        "authentication failed for provider mock (HTTP 401): check "
        "provider.mock.options.apiKey in partwire.json"
    )


async def test_abort_closes_the_provider_stream(http: httpx.AsyncClient, mock: MockOpenAI) -> None:
    mock.delay_s = 0.02
    mock.script.append(text(*[f"w{i} " for i in range(500)]))
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
    for _ in range(50):
        if mock.closed_early:
            break
        await asyncio.sleep(0.02)
    assert mock.closed_early == 1


async def test_context_overflow_compacts_and_continues(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script += [
        Failure(
            400,
            "invalid_request_error",
            "context_length_exceeded",
            "This model's maximum context length is 8192 tokens.",
        ),
        text("Summary of the work."),
        text("Continuing."),
    ]
    sid, _ = await _prompt(http, "do a lot")
    messages = (await http.get(f"/session/{sid}/message")).json()
    first_error = messages[1]["info"]["error"]
    assert first_error["name"] == "ContextOverflowError"
    validate("ContextOverflowError", first_error)
    assert messages[2]["parts"][0]["type"] == "compaction"
    assert messages[3]["info"]["summary"] is True
    assert messages[-1]["parts"][-2]["text"] == "Continuing."


async def test_the_api_key_never_leaves_the_server(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script.append(
        Failure(
            401,
            "invalid_request_error",
            "invalid_api_key",
            f"Incorrect API key provided: {SECRET[:6]}***",
        )
    )
    async with Watch(http) as watch:
        sid, _ = await _prompt(http, "hi")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        everything = str(watch.events)
    everything += (await http.get(f"/session/{sid}/message")).text + (await http.get("/doc")).text
    assert SECRET not in everything


@pytest.mark.parametrize(
    ("provider_id", "model", "prices", "expected"),
    [
        # configured prices (USD per million): 15 uncached in, 5 cached, 2 out
        (
            "mock",
            "priced",
            {"input": 1000.0, "output": 2000.0, "cache_read": 100.0},
            (15 * 1000 + 5 * 100 + 2 * 2000) / 1e6,
        ),
        # no configured prices: the bundled genai-prices data for openai/gpt-4o
        ("openai", "gpt-4o", None, (15 * 2.5 + 5 * 1.25 + 2 * 10) / 1e6),
    ],
)
async def test_cost_on_step_finish_and_message(
    settings: Settings,
    mock: MockOpenAI,
    provider_id: str,
    model: str,
    prices: dict[str, float] | None,
    expected: float,
) -> None:
    from partwire.config import ModelConfig

    mock.script.append(text("a", "b"))  # usage: 20 prompt tokens (5 cached), 2 completion
    models = {model: ModelConfig(id=model, cost=prices)} if prices else {}
    async with serve_app(mock.app()) as mock_url:
        provider = ProviderConfig(
            id=provider_id,
            api="openai-compatible",
            base_url=f"{mock_url}/v1",
            api_key=SECRET,
            models=models,
        )
        configured = replace(
            settings, providers={provider_id: provider}, default_model=f"{provider_id}/{model}"
        )
        async with (
            serve_in_background(configured) as url,
            httpx.AsyncClient(base_url=url, timeout=30) as http,
        ):
            _, answer = await _prompt(http, "price me")
    finish = answer["parts"][-1]  # type: ignore[index]
    assert finish["cost"] == pytest.approx(expected)
    assert answer["info"]["cost"] == pytest.approx(expected)  # type: ignore[index]


async def test_parallel_tool_calls_all_run(http: httpx.AsyncClient, mock: MockOpenAI) -> None:
    mock.script += [
        parallel_calls(
            ("read", {"filePath": "README.md"}, "call_a"),
            ("glob", {"pattern": "**/*.py"}, "call_b"),
        ),
        text("both done"),
    ]
    sid, _ = await _prompt(http, "two things")
    messages = (await http.get(f"/session/{sid}/message")).json()
    tools = [p for p in messages[1]["parts"] if p["type"] == "tool"]
    assert [(t["callID"], t["tool"], t["state"]["status"]) for t in tools] == [
        ("call_a", "read", "completed"),
        ("call_b", "glob", "completed"),
    ]
    results = [m for m in mock.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == ["call_a", "call_b"]


async def test_an_image_in_the_prompt_is_sent_as_image_content(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script.append(text("a dot"))
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    sid = (await http.post("/session", json={})).json()["id"]
    body = {
        "parts": [
            {"type": "text", "text": "what is this?"},
            {"type": "file", "mime": "image/png", "url": url, "filename": "dot.png"},
        ]
    }
    assert (await http.post(f"/session/{sid}/message", json=body)).status_code == 200
    content = mock.requests[0]["body"]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what is this?"}
    assert content[1]["type"] == "image_url"
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


async def test_output_cut_at_the_limit_and_a_500_retried(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    from tests.providers.mock_openai import chunk, usage

    cut = [
        chunk({"role": "assistant", "content": "This answer is cu"}),
        chunk({}, "length"),
        usage(10, 4),
    ]
    mock.script += [Failure(500, "server_error", "server_error", "The server had an error"), cut]
    _, answer = await _prompt(http, "write a lot")
    error = answer["info"]["error"]  # type: ignore[index]
    assert error["name"] == "MessageOutputLengthError"
    validate("MessageOutputLengthError", error)
    assert answer["parts"][0]["type"] == "retry"  # type: ignore[index]
    assert answer["info"]["finish"] == "length"  # type: ignore[index]


async def test_tool_input_streams_into_the_pending_part(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script += [tool_call("read", {"filePath": "README.md"}), text("ok")]
    sid = (await http.post("/session", json={})).json()["id"]
    async with Watch(http) as watch:
        await http.post(f"/session/{sid}/message", json={"parts": [{"type": "text", "text": "go"}]})
        raws = [
            e["properties"]["part"]["state"]["raw"]
            for e in watch.events
            if e["type"] == "message.part.updated"
            and e["properties"]["part"].get("state", {}).get("status") == "pending"
        ]
    assert len(raws) > 2 and raws[-1] == '{"filePath": "README.md"}'
    assert raws == sorted(raws, key=len)


async def test_a_connection_dropped_mid_stream_is_retried(
    http: httpx.AsyncClient, mock: MockOpenAI
) -> None:
    mock.script += [Drop(text("half", " an", " answer")[:2]), text("whole answer")]
    _, answer = await _prompt(http, "hi")
    kinds = [p["type"] for p in answer["parts"]]  # type: ignore[union-attr]
    assert "retry" in kinds and answer["parts"][-2]["text"] == "whole answer"  # type: ignore[index]
    assert "error" not in answer["info"]  # type: ignore[operator]
