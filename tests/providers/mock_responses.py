"""A loopback server speaking OpenAI's Responses API streaming format, scripted.

Events follow the API reference: ``response.created``, ``response.output_item.added``
(a message or a function_call item), ``response.output_text.delta``,
``response.function_call_arguments.delta``, ``response.output_item.done``, and
``response.completed`` carrying the final response with its usage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.providers.titles import MOCK_TITLE, is_title_request

Event = dict[str, Any]


def _response(
    status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "resp_mock", "object": "response", "created_at": 1, "status": status,
        "model": "gpt-mock", "output": output, "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [],
    }  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return body


def _usage(inp: int, out: int) -> dict[str, Any]:
    return {
        "input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }  # fmt: skip


def message(*words: str) -> list[Event]:
    item = {
        "id": "msg_1",
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    text = "".join(words)
    done_item = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    part = {"type": "output_text", "text": "", "annotations": []}
    return [
        {"type": "response.created", "response": _response("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": part,
        },
        *[
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": w,
                "logprobs": [],
            }
            for w in words
        ],
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": text,
            "logprobs": [],
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {
            "type": "response.completed",
            "response": _response("completed", [done_item], _usage(12, len(words))),
        },
    ]


def reasoning_then_message(thought: str, *words: str) -> list[Event]:
    """A reasoning item (summary text streamed, encrypted content on done), then a message."""
    item = {"id": "rs_1", "type": "reasoning", "summary": []}
    summary_part = {"type": "summary_text", "text": ""}
    done = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": thought}],
        "encrypted_content": "enc-123",
    }
    reasoning = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.reasoning_summary_part.added",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "part": summary_part,
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "delta": thought,
        },
        {
            "type": "response.reasoning_summary_text.done",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
            "text": thought,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    ]
    text = message(*words)
    shifted = [{**e, "output_index": 1} if "output_index" in e else e for e in text[1:]]
    return [text[0], *reasoning, *shifted]


def function_call(name: str, args: dict[str, Any], call_id: str = "call_r1") -> list[Event]:
    raw = json.dumps(args)
    item = {
        "id": "fc_1",
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": "",
        "status": "in_progress",
    }
    done = {**item, "arguments": raw, "status": "completed"}
    return [
        {"type": "response.created", "response": _response("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *[
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "delta": raw[i : i + 5],
            }
            for i in range(0, len(raw), 5)
        ],
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_1",
            "output_index": 0,
            "arguments": raw,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": _response("completed", [done], _usage(30, 9))},
    ]


def two_calls(
    first: tuple[str, dict[str, Any], str], second: tuple[str, dict[str, Any], str]
) -> list[Event]:
    """Two function_call items in one response (parallel tool calls)."""
    events: list[Event] = [{"type": "response.created", "response": _response("in_progress", [])}]
    done_items = []
    for index, (name, args, call_id) in enumerate((first, second)):
        item = {
            "id": f"fc_{index}",
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        done = {**item, "arguments": json.dumps(args), "status": "completed"}
        done_items.append(done)
        events += [
            {"type": "response.output_item.added", "output_index": index, "item": item},
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": index,
                "delta": json.dumps(args),
            },
            {"type": "response.output_item.done", "output_index": index, "item": done},
        ]
    return [
        *events,
        {
            "type": "response.completed",
            "response": _response("completed", done_items, _usage(30, 9)),
        },
    ]


@dataclass
class MockResponses:
    script: list[list[Event]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    delay_s: float = 0.0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/responses", self.responses, methods=["POST"])])

    async def responses(self, request: Request) -> Response:
        body = await request.json()
        if is_title_request(body):
            return StreamingResponse(
                self._stream(message(MOCK_TITLE)), media_type="text/event-stream"
            )
        self.requests.append(body)
        return StreamingResponse(self._stream(self.script.pop(0)), media_type="text/event-stream")

    async def _stream(self, events: list[Event]) -> AsyncIterator[str]:
        for number, event in enumerate(events):
            await asyncio.sleep(self.delay_s)
            data = json.dumps({**event, "sequence_number": number})
            yield f"event: {event['type']}\ndata: {data}\n\n"
