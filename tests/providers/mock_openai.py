"""A loopback server speaking OpenAI's Chat Completions streaming wire format, scripted.

Chunks follow the API reference: ``chat.completion.chunk`` objects with
``choices[].delta`` (``content``, ``reasoning_content``, ``tool_calls`` with
argument fragments), a ``finish_reason``, a final usage chunk
(``stream_options.include_usage``), then ``data: [DONE]``. Errors are JSON
bodies ``{"error": {message, type, code}}`` with the HTTP status.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.providers.titles import MOCK_TITLE, is_title_request


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "mock-model",
        "choices": choices,
        **extra,
    }


def usage(prompt: int, completion: int, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return chunk(
        None,
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    )


def text(*words: str, reasoning: str = "", prompt: int = 20) -> list[dict[str, Any]]:
    first = [chunk({"role": "assistant", "reasoning_content": reasoning})] if reasoning else []
    return [
        *first,
        *[
            chunk({"role": "assistant", "content": w} if i == 0 else {"content": w})
            for i, w in enumerate(words)
        ],
        chunk({}, "stop"),
        usage(
            prompt, len(words) + (3 if reasoning else 0), cached=5, reasoning=3 if reasoning else 0
        ),
    ]


def tool_call(name: str, args: dict[str, Any], call_id: str = "call_1") -> list[dict[str, Any]]:
    raw = json.dumps(args)
    pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    start = {
        "role": "assistant",
        "tool_calls": [
            {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
        ],
    }
    return [
        chunk(start),
        *[chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces],
        chunk({}, "tool_calls"),
        usage(30, 12),
    ]


def parallel_calls(*calls: tuple[str, dict[str, Any], str]) -> list[dict[str, Any]]:
    """Several tool calls in one response, each with its own index."""
    chunks = []
    for index, (name, args, call_id) in enumerate(calls):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        chunks.append(chunk({"role": "assistant", "tool_calls": [head]}))
        chunks.append(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": json.dumps(args)}}]})
        )
    return [*chunks, chunk({}, "tool_calls"), usage(30, 20)]


@dataclass
class Failure:
    status: int
    error_type: str
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Drop:
    """Send these chunks, then cut the connection without finishing the stream."""

    chunks: list[dict[str, Any]]


@dataclass
class MockOpenAI:
    script: list[list[dict[str, Any]] | Failure | Drop] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    title_requests: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0
    closed_early: int = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.completions, methods=["POST"])])

    async def completions(self, request: Request) -> Response:
        body = await request.json()
        if is_title_request(body):
            self.title_requests.append(body)
            return StreamingResponse(self._stream(text(MOCK_TITLE)), media_type="text/event-stream")
        self.requests.append({"body": body, "headers": dict(request.headers)})
        if not self.script:
            return JSONResponse(
                {"error": {"message": "no script left", "type": "server_error", "code": None}},
                status_code=500,
            )
        item = self.script.pop(0)
        if isinstance(item, Failure):
            payload = {
                "error": {"message": item.message, "type": item.error_type, "code": item.code}
            }
            return JSONResponse(payload, status_code=item.status, headers=item.headers)
        return StreamingResponse(self._stream(item), media_type="text/event-stream")

    async def _stream(self, chunks: list[dict[str, Any]]) -> AsyncIterator[str]:
        try:
            for item in chunks:
                await asyncio.sleep(self.delay_s)
                yield f"data: {json.dumps(item)}\n\n"
            yield "data: [DONE]\n\n"
        except asyncio.CancelledError:
            self.closed_early += 1
            raise
