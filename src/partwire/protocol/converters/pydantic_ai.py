"""pydantic-ai ``AgentStreamEvent``s (``agent.run_stream_events()`` or an
``event_stream_handler``) → ingest events.

A model response is a step: it begins with its first part and ends when the agent turns to
its tools (the first ``FunctionToolCallEvent``) or the run ends. pydantic-ai reports token
use for the whole run, so the last step carries it (``AgentRunResultEvent``).
"""

from __future__ import annotations

import json

from pydantic_ai import messages as pai
from pydantic_ai.usage import UsageBase

from partwire.providers.stream import Usage
from partwire.schema import ingest
from partwire.schema.base import Tokens
from partwire.schema.ingest import IngestEvent


class PydanticAIConverter:
    def __init__(self) -> None:
        self._calls: dict[int, tuple[str, str]] = {}  # part index → (call id, tool name)
        self._made: set[str] = set()  # call ids whose call was already complete
        self._open_step = False

    def feed(self, item: object) -> list[IngestEvent]:
        if isinstance(item, pai.PartStartEvent):
            return self._step() + self._start(item.index, item.part)
        if isinstance(item, pai.PartDeltaEvent):
            return self._step() + self._delta(item.index, item.delta)
        if isinstance(item, pai.PartEndEvent):
            return self._end_part(item.index, item.part)
        if isinstance(item, pai.FunctionToolCallEvent):
            out = self._finish("tool-calls")
            return out + self._call(item.part)
        if isinstance(item, pai.FunctionToolResultEvent):
            return self._result(item.part)
        if getattr(item, "event_kind", None) == "agent_run_result":
            return self._finish("stop", _usage(getattr(item, "result", None)))
        return []

    def end(self) -> list[IngestEvent]:
        return self._finish("stop")

    def _step(self) -> list[IngestEvent]:
        if self._open_step:
            return []
        self._open_step = True
        self._calls.clear()
        return [ingest.StepStart()]

    def _finish(self, reason: str, tokens: Tokens | None = None) -> list[IngestEvent]:
        if not self._open_step:
            return []
        self._open_step = False
        return [ingest.StepFinish(tokens=tokens, reason=reason)]

    def _start(self, index: int, part: object) -> list[IngestEvent]:
        if isinstance(part, pai.TextPart):
            return [ingest.TextDelta(delta=part.content)] if part.content else []
        if isinstance(part, pai.ThinkingPart):
            return [ingest.ReasoningDelta(delta=part.content)] if part.content else []
        if isinstance(part, pai.ToolCallPart):
            self._calls[index] = (part.tool_call_id, part.tool_name)
            out: list[IngestEvent] = [
                ingest.ToolCallStart(call_id=part.tool_call_id, tool=part.tool_name)
            ]
            if isinstance(part.args, str) and part.args:
                out.append(ingest.ToolArgsDelta(call_id=part.tool_call_id, delta=part.args))
            return out
        return []

    def _delta(self, index: int, delta: object) -> list[IngestEvent]:
        if isinstance(delta, pai.TextPartDelta):
            return [ingest.TextDelta(delta=delta.content_delta)] if delta.content_delta else []
        if isinstance(delta, pai.ThinkingPartDelta):
            text = delta.content_delta
            return [ingest.ReasoningDelta(delta=text)] if text else []
        if isinstance(delta, pai.ToolCallPartDelta) and index in self._calls:
            call_id = self._calls[index][0]
            args = delta.args_delta
            if isinstance(args, dict):
                args = json.dumps(args)
            return [ingest.ToolArgsDelta(call_id=call_id, delta=args)] if args else []
        return []

    def _end_part(self, index: int, part: object) -> list[IngestEvent]:
        if isinstance(part, pai.ToolCallPart) and index in self._calls:
            return self._call(part)
        return []

    def _call(self, part: pai.ToolCallPart) -> list[IngestEvent]:
        if part.tool_call_id in self._made:
            return []
        self._made.add(part.tool_call_id)
        started = any(call_id == part.tool_call_id for call_id, _ in self._calls.values())
        out: list[IngestEvent] = (
            []
            if started
            else [ingest.ToolCallStart(call_id=part.tool_call_id, tool=part.tool_name)]
        )
        args = part.args_as_json_str()
        return [*out, ingest.ToolCall(call_id=part.tool_call_id, tool=part.tool_name, input=args)]

    def _result(self, part: pai.ToolReturnPart | pai.RetryPromptPart) -> list[IngestEvent]:
        failed = getattr(part, "part_kind", "") == "retry-prompt" or getattr(
            part, "outcome", "success"
        ) in ("failed", "denied", "retried")
        content = part.model_response_str() if hasattr(part, "model_response_str") else part.content
        return [ingest.ToolResult(call_id=part.tool_call_id, output=content, is_error=failed)]


def _usage(result: object) -> Tokens | None:
    usage = getattr(result, "usage", None)
    if not isinstance(usage, UsageBase):
        return None
    # pydantic-ai's input counts the cached prompt and its output the reasoning
    return Usage(
        input=usage.input_tokens or 0,
        output=usage.output_tokens or 0,
        reasoning=int((getattr(usage, "details", None) or {}).get("reasoning_tokens") or 0),
        cache_read=usage.cache_read_tokens or 0,
        cache_write=usage.cache_write_tokens or 0,
    ).tokens()
