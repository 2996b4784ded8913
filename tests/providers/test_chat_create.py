"""The lean Chat Completions create sends what the SDK's create would have sent."""

from __future__ import annotations

from typing import Any

import pytest
from openai import AsyncOpenAI
from openai._utils import async_maybe_transform
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from partwire.config import ProviderConfig
from partwire.providers import chat_create
from partwire.providers.configured import ProviderClient
from partwire.providers.library import _open_chat_stream
from partwire.providers.stream import (
    AssistantTurn,
    FileRef,
    ModelRequest,
    ReasoningRecord,
    ToolCallRecord,
    ToolResultTurn,
    ToolSpec,
    UserTurn,
)

PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Captured(Exception):
    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params


class Recording(chat_create.LeanCompletions):
    async def create(self, **params: Any) -> Any:
        raise Captured(params)


def _request() -> ModelRequest:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["path"],
        "additionalProperties": False,
    }
    return ModelRequest(
        system="You are terse.",
        messages=(
            UserTurn(text="look at this", files=(FileRef(mime="image/png", url=PIXEL),)),
            AssistantTurn(
                text="reading",
                tool_calls=(ToolCallRecord("call_1", "read", {"path": "a.txt"}),),
                reasoning=(ReasoningRecord("first the file"),),
            ),
            ToolResultTurn(call_id="call_1", tool="read", output="hello"),
            UserTurn(text="and now?"),
        ),
        tools=(ToolSpec("read", "Read a file", schema), ToolSpec("ls", "List", {"type": "object"})),
    )


async def test_the_body_is_what_the_sdk_would_send_for_pydantic_ai_requests() -> None:
    client = ProviderClient(ProviderConfig(id="p", api="openai", base_url="http://127.0.0.1:9/v1"))
    model = client.model("gpt-4o")
    openai_client = model.client  # type: ignore[attr-defined]
    assert isinstance(openai_client, AsyncOpenAI)
    assert isinstance(openai_client.chat.completions, chat_create.LeanCompletions)
    openai_client.chat.__dict__["completions"] = Recording(openai_client)
    with pytest.raises(Captured) as captured:
        await _open_chat_stream(model, _request(), "p")
    params = captured.value.params
    assert params["stream"] is True
    body = chat_create.request_body(params)
    sdk_body = await async_maybe_transform(
        {k: v for k, v in params.items() if k not in chat_create._OPTIONS},
        CompletionCreateParamsStreaming,
    )
    assert body == sdk_body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert [t["function"]["name"] for t in body["tools"]] == ["read", "ls"]


def test_omitted_parameters_are_left_out_and_iterables_become_lists() -> None:
    from openai import omit

    body = chat_create.request_body(
        {"model": "m", "stream": True, "temperature": omit, "stop": ("a", "b"), "timeout": 3}
    )
    assert body == {"model": "m", "stream": True, "stop": ["a", "b"]}
