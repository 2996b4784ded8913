"""A scripted LanguageModel: tests enqueue the stream each model call will produce."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence

from partwire.providers.registry import register_provider
from partwire.providers.stream import (
    Finish,
    FinishReason,
    FinishStep,
    ModelRequest,
    StartStep,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    Usage,
)

Script = Sequence[StreamEvent] | Callable[[ModelRequest], Sequence[StreamEvent]]


class ScriptedModel:
    provider_id = "scripted"
    model_id = "scripted"
    context_limit = 100_000

    def __init__(self) -> None:
        self.scripts: list[Script] = []
        self.requests: list[ModelRequest] = []
        self.delay_s = 0.0
        self.gate: asyncio.Event | None = None

    def cost(self, usage: Usage) -> float:
        return 0.0

    def enqueue(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if not self.scripts:
            raise AssertionError("the scripted model was called more times than scripted")
        script = self.scripts.pop(0)
        events = script(request) if callable(script) else script
        for event in events:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(self.delay_s)
            yield event


MODEL = ScriptedModel()


def install() -> ScriptedModel:
    """Register ``scripted/scripted`` and return a fresh script queue."""
    MODEL.scripts.clear()
    MODEL.requests.clear()
    MODEL.delay_s = 0.0
    MODEL.gate = None
    MODEL.context_limit = ScriptedModel.context_limit
    register_provider("scripted", lambda _model_id, _settings: MODEL, ("scripted",))
    return MODEL


def finish(reason: FinishReason = "stop", output: int = 5, input: int = 10) -> list[StreamEvent]:
    return [FinishStep(reason, Usage(input=input, output=output)), Finish(reason)]


def text_reply(*words: str) -> list[StreamEvent]:
    return [
        StreamStart(),
        StartStep(),
        TextStart("t"),
        *(TextDelta("t", w) for w in words),
        TextEnd("t"),
        *finish(),
    ]


def tool_reply(
    tool: str, args: dict[str, object] | str, call_id: str = "call_1"
) -> list[StreamEvent]:
    raw = args if isinstance(args, str) else json.dumps(args)
    return [
        StreamStart(),
        StartStep(),
        ToolInputStart(call_id, tool),
        ToolInputDelta(call_id, raw[: len(raw) // 2]),
        ToolInputDelta(call_id, raw[len(raw) // 2 :]),
        ToolCall(call_id, tool, raw),
        *finish("tool-calls"),
    ]
