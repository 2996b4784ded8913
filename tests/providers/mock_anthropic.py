"""A loopback server speaking Anthropic's Messages streaming wire format, scripted.

Events follow the API reference: ``message_start`` (with input usage),
``content_block_start/delta/stop`` for thinking (``thinking_delta``,
``signature_delta``), text (``text_delta``) and tool_use (``input_json_delta``),
``ping``, ``message_delta`` (stop_reason, output usage), ``message_stop``.
Errors are ``{"type": "error", "error": {type, message}}`` with the HTTP status.
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

Event = tuple[str, dict[str, Any]]


def _message_start(input_tokens: int) -> Event:
    message = {
        "id": "msg_mock", "type": "message", "role": "assistant", "content": [],
        "model": "claude-mock", "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                  "cache_creation_input_tokens": 4, "cache_read_input_tokens": 6},
    }  # fmt: skip
    return ("message_start", {"type": "message_start", "message": message})


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[Event]:
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        ),
        *[
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _end(stop_reason: str, output_tokens: int) -> list[Event]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def reply(*words: str, thinking: str = "", signature: str = "sig-abc") -> list[Event]:
    events = [_message_start(25), ("ping", {"type": "ping"})]
    index = 0
    if thinking:
        deltas = [
            {"type": "thinking_delta", "thinking": thinking},
            {"type": "signature_delta", "signature": signature},
        ]
        events += _block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)
        index += 1
    events += _block(
        index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": w} for w in words]
    )
    return events + _end("end_turn", len(words))


def tool_use(name: str, args: dict[str, Any], call_id: str = "toolu_1") -> list[Event]:
    raw = json.dumps(args)
    deltas = [
        {"type": "input_json_delta", "partial_json": raw[i : i + 6]} for i in range(0, len(raw), 6)
    ]
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return [_message_start(40), *_block(0, block, deltas), *_end("tool_use", 12)]


def two_tool_uses(
    first: tuple[str, dict[str, Any], str], second: tuple[str, dict[str, Any], str]
) -> list[Event]:
    events = [_message_start(40)]
    for index, (name, args, call_id) in enumerate((first, second)):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events += _block(
            index, block, [{"type": "input_json_delta", "partial_json": json.dumps(args)}]
        )
    return [*events, *_end("tool_use", 20)]


@dataclass
class AnthropicFailure:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class MockAnthropic:
    script: list[list[Event] | AnthropicFailure] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/messages", self.messages, methods=["POST"])])

    async def messages(self, request: Request) -> Response:
        body = await request.json()
        if is_title_request(body):
            return StreamingResponse(
                self._stream(reply(MOCK_TITLE)), media_type="text/event-stream"
            )
        self.requests.append({"body": body, "headers": dict(request.headers)})
        item = self.script.pop(0)
        if isinstance(item, AnthropicFailure):
            body = {"type": "error", "error": {"type": item.error_type, "message": item.message}}
            return JSONResponse(body, status_code=item.status, headers=item.headers)
        return StreamingResponse(self._stream(item), media_type="text/event-stream")

    async def _stream(self, events: list[Event]) -> AsyncIterator[str]:
        for name, data in events:
            await asyncio.sleep(self.delay_s)
            yield f"event: {name}\ndata: {json.dumps(data)}\n\n"
