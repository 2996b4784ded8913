"""A streamed Chat Completions ``create`` without the openai SDK's parameter walk.

``AsyncCompletions.create`` passes its parameters through ``async_maybe_transform``, which
walks every message and tool schema against the SDK's TypedDict annotations to apply
key aliases and file formats. Chat Completions request parameters have neither, so the
walk returns what it was given, at about 3.5 ms a request with the built-in tools: the
larger part of what opening a stream cost, paid by every step of every session.

``LeanCompletions.create`` sends the given parameters as they are (omitted ones left out)
when they ask for a stream, and defers to the SDK for anything else.
``tests/providers/test_chat_create.py`` checks that the walk still returns the same body
for the requests pydantic-ai builds, so an SDK upgrade that gives the walk work to do
fails there first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from openai import AsyncOpenAI, AsyncStream
from openai._base_client import make_request_options
from openai._utils import is_given
from openai.resources.chat.completions.completions import (
    AsyncCompletions,
    validate_response_format,
)
from openai.types.chat import ChatCompletion, ChatCompletionChunk

_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


def request_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body: given parameters only, iterables (other than str/dict) as lists."""
    body: dict[str, Any] = {}
    for key, value in params.items():
        if key in _OPTIONS or not is_given(value):
            continue
        if isinstance(value, Iterable) and not isinstance(value, str | bytes | dict | list):
            value = list(value)
        body[key] = value
    return body


class LeanCompletions(AsyncCompletions):
    async def create(self, **params: Any) -> Any:
        if params.get("stream") is not True:
            return await super().create(**params)
        validate_response_format(params.get("response_format"))
        options = {key: params[key] for key in _OPTIONS if key in params}
        return await self._post(
            "/chat/completions",
            body=request_body(params),
            options=make_request_options(**options),
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )


def install(client: AsyncOpenAI) -> AsyncOpenAI:
    """Give the client's ``chat.completions`` the lean create (a cached property, so the
    instance's own attribute wins)."""
    client.chat.__dict__["completions"] = LeanCompletions(client)
    return client
