"""pydantic-ai ``AgentStreamEvent``s (``agent.run_stream_events()`` or an
``event_stream_handler``) → ingest events.

A model response is a step: it begins with its first part and ends when the agent turns to
its tools (the first ``FunctionToolCallEvent``) or the run ends. The events do not carry a
response's usage or model; the run's messages do. Given the run (the handle
``run_stream_events()`` yields), each step ends with the usage of the responses it holds
and the first names the model. Without it the run's result (``AgentRunResultEvent``) is the
first place they show, so the last step carries the whole run's usage.
"""

from __future__ import annotations

import json
from typing import Protocol

from pydantic_ai import messages as pai
from pydantic_ai.usage import UsageBase

from partwire.providers.stream import Usage
from partwire.schema import ingest
from partwire.schema.base import Tokens
from partwire.schema.ingest import IngestEvent
from partwire.schema.part import ModelRef


class RunMessages(Protocol):
    """What the converter reads of a run: ``AgentRunEvents`` and ``AgentRunResult`` both
    have it."""

    def new_messages(self) -> list[pai.ModelMessage]: ...


class PydanticAIConverter:
    def __init__(self, run: RunMessages | None = None) -> None:
        self._run = run
        self._calls: dict[int, tuple[str, str]] = {}  # part index → (call id, tool name)
        self._made: set[str] = set()  # call ids whose call was already complete
        self._open_step = False
        self._counted = 0  # the run's responses whose usage a step already carried
        self._named = False

    def feed(self, item: object) -> list[IngestEvent]:
        if isinstance(item, pai.PartStartEvent):
            return self._step() + self._start(item.index, item.part)
        if isinstance(item, pai.PartDeltaEvent):
            return self._step() + self._delta(item.index, item.delta)
        if isinstance(item, pai.PartEndEvent):
            return self._end_part(item.index, item.part)
        if isinstance(item, pai.FunctionToolCallEvent):
            out = self._finish("tool-calls", self._run)
            return out + self._call(item.part)
        if isinstance(item, pai.FunctionToolResultEvent):
            return self._result(item.part)
        if getattr(item, "event_kind", None) == "agent_run_result":
            return self._finish("stop", getattr(item, "result", None))
        return []

    def end(self) -> list[IngestEvent]:
        return self._finish("stop", self._run)

    def _step(self) -> list[IngestEvent]:
        if self._open_step:
            return []
        self._open_step = True
        self._calls.clear()
        return [ingest.StepStart()]

    def _finish(self, reason: str, run: object) -> list[IngestEvent]:
        if not self._open_step:
            return []
        self._open_step = False
        responses = self._uncounted(run)
        out: list[IngestEvent] = []
        named = next((r for r in responses if r.model_name), None)
        if named is not None and not self._named:
            self._named = True
            model = ModelRef(
                provider_id=named.provider_name or "pydantic-ai", model_id=named.model_name
            )
            out.append(ingest.IngestStart(model=model))
        if responses or self._counted:
            tokens = _tokens([r.usage for r in responses])
        else:  # a run that shows no messages: its whole usage, once
            tokens = _tokens([_usage_of(run)])
        return [*out, ingest.StepFinish(tokens=tokens, reason=reason)]

    def _uncounted(self, run: object) -> list[pai.ModelResponse]:
        """The run's model responses no step carried yet (none when ``run`` is unknown)."""
        new_messages = getattr(run, "new_messages", None)
        if not callable(new_messages):
            return []
        responses = [m for m in new_messages() if isinstance(m, pai.ModelResponse)]
        uncounted, self._counted = responses[self._counted :], len(responses)
        return uncounted

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


def _usage_of(run: object) -> UsageBase | None:
    usage = getattr(run, "usage", None)
    usage = usage() if callable(usage) else usage
    return usage if isinstance(usage, UsageBase) else None


def _tokens(usages: list[UsageBase | None]) -> Tokens | None:
    known = [u for u in usages if u is not None]
    if not known:
        return None
    # pydantic-ai's input counts the cached prompt and its output the reasoning
    return Usage(
        input=sum(u.input_tokens or 0 for u in known),
        output=sum(u.output_tokens or 0 for u in known),
        reasoning=sum(int((u.details or {}).get("reasoning_tokens") or 0) for u in known),
        cache_read=sum(u.cache_read_tokens or 0 for u in known),
        cache_write=sum(u.cache_write_tokens or 0 for u in known),
    ).tokens()
