"""OpenTelemetry traces built from the part stream (GenAI semantic conventions).

A fold of the bus's events, so external loops recorded through ingest are traced as our
own loop is: a session's run (busy → idle) is an ``invoke_agent`` span, each assistant
message a ``chat`` child span (one model call: its model, its usage, how it finished)
and each tool call an ``execute_tool`` child span, from the call's start to its result.
A sub-agent's run is a child of the task call that started it. A span ends when its
stream ends. With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (and the ``otel`` extra
installed), ``exporting_provider`` exports them over OTLP/HTTP.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from partwire.bus import Bus
from partwire.clock import now_ms
from partwire.errors import ConfigError
from partwire.schema.event import Event, MessageInfo, PartUpdatedProps, SessionStatusProps
from partwire.schema.message import AssistantMessage
from partwire.schema.part import ToolPart
from partwire.schema.session import StatusIdle
from partwire.schema.tool_state import ToolStateCompleted, ToolStateError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger(__name__)

TRACED = ("session.status", "message.updated", "message.part.updated")
_MS = 1_000_000  # nanoseconds in a millisecond


@dataclass
class _Run:
    span: Span
    agent: str | None = None
    chats: dict[str, Span] = field(default_factory=dict)  # by message id
    tools: dict[str, Span] = field(default_factory=dict)  # by call id


class SpanFold:
    """One process's events → spans. Feed it every traced event in publish order."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.runs: dict[str, _Run] = {}
        # a sub-agent's session → the span of the task call that runs it: its run's span
        # is that call's child, in the same trace
        self.callers: dict[str, Span] = {}

    def feed(self, event: Event) -> None:
        props = event.properties
        if isinstance(props, SessionStatusProps):
            self._status(props)
        elif isinstance(props, MessageInfo) and isinstance(props.info, AssistantMessage):
            self._message(props.info)
        elif isinstance(props, PartUpdatedProps) and isinstance(props.part, ToolPart):
            self._tool(props.part)

    def _run(self, session_id: str) -> _Run:
        run = self.runs.get(session_id)
        if run is None:
            from opentelemetry import trace

            caller = self.callers.pop(session_id, None)
            span = self.tracer.start_span(
                "invoke_agent",
                context=trace.set_span_in_context(caller) if caller is not None else None,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.conversation.id": session_id,
                },
            )
            run = self.runs[session_id] = _Run(span)
        return run

    def _status(self, props: SessionStatusProps) -> None:
        if not isinstance(props.status, StatusIdle):
            self._run(props.session_id)
            return
        run = self.runs.pop(props.session_id, None)
        if run is None:
            return
        for span in (*run.tools.values(), *run.chats.values()):
            span.end()  # what the run left open ends with it
        run.span.end()

    def _child(self, run: _Run, name: str, start_ms: int, attributes: dict[str, Any]) -> Span:
        from opentelemetry import trace

        context = trace.set_span_in_context(run.span)
        return self.tracer.start_span(
            name, context=context, start_time=start_ms * _MS, attributes=attributes
        )

    def _message(self, info: AssistantMessage) -> None:
        run = self._run(info.session_id)
        if run.agent is None:
            run.agent = info.agent
            run.span.update_name(f"invoke_agent {info.agent}")
            run.span.set_attribute("gen_ai.agent.name", info.agent)
        span = run.chats.get(info.id)
        if span is None:
            span = run.chats[info.id] = self._child(
                run,
                f"chat {info.model_id}",
                info.time.created,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": info.provider_id,
                    "gen_ai.request.model": info.model_id,
                    "gen_ai.conversation.id": info.session_id,
                    "gen_ai.agent.name": info.agent,
                },
            )
        if info.time.completed is None:
            return
        tokens = info.tokens
        span.set_attribute("gen_ai.response.model", info.model_id)
        span.set_attribute("gen_ai.usage.input_tokens", tokens.input + tokens.cache.read)
        span.set_attribute("gen_ai.usage.output_tokens", tokens.output + tokens.reasoning)
        span.set_attribute("partwire.cost_usd", info.cost)
        if info.finish:
            span.set_attribute("gen_ai.response.finish_reasons", [info.finish])
        if info.error is not None:
            _failed(span, info.error.name)
        span.end(end_time=info.time.completed * _MS)
        del run.chats[info.id]

    def _tool(self, part: ToolPart) -> None:
        run = self._run(part.session_id)
        span = run.tools.get(part.call_id)
        state = part.state
        if span is None:
            start = getattr(getattr(state, "time", None), "start", None)
            span = run.tools[part.call_id] = self._child(
                run,
                f"execute_tool {part.tool}",
                start if isinstance(start, int) else now_ms(),
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": part.tool,
                    "gen_ai.tool.call.id": part.call_id,
                    "gen_ai.tool.type": "function",
                    "gen_ai.conversation.id": part.session_id,
                },
            )
        child = (getattr(state, "metadata", None) or {}).get("sessionId")
        if isinstance(child, str) and child not in self.runs:
            self.callers[child] = span  # a task call: the sub-agent's run goes under it
        if isinstance(state, ToolStateCompleted | ToolStateError):
            self.callers = {k: v for k, v in self.callers.items() if v is not span}
            if isinstance(state, ToolStateError):
                _failed(span, "tool_error", state.error)
            span.end(end_time=state.time.end * _MS)
            del run.tools[part.call_id]

    def close(self) -> None:
        for session_id in list(self.runs):
            self._status(SessionStatusProps(session_id=session_id, status=StatusIdle()))


def _failed(span: Span, kind: str, description: str | None = None) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, description))


async def follow(bus: Bus, fold: SpanFold) -> None:
    """Feed ``fold`` every traced event until cancelled, then end what is open."""
    subscription = bus.subscribe(*TRACED)
    try:
        while (event := await subscription.get()) is not None:
            fold.feed(event)
    finally:
        subscription.close()
        fold.close()


def exporting_provider(env: dict[str, str]) -> TracerProvider | None:
    """A tracer provider exporting over OTLP/HTTP (the exporter reads its endpoint and
    headers from ``env``'s OTEL_* variables) when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or its
    traces variant is set; None otherwise. A ConfigError names the missing extra."""
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not any(env.get(name) for name in endpoints):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise ConfigError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed: "
            "pip install 'partwire[otel]' (or unset it)"
        ) from None
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "partwire"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class Tracing:
    """The fold's task for one runtime, while tracing is on (``provider``)."""

    def __init__(self, bus: Bus, provider: TracerProvider | None) -> None:
        self.bus = bus
        self.provider = provider
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.provider is not None:
            fold = SpanFold(self.provider.get_tracer("partwire"))
            self.task = asyncio.create_task(follow(self.bus, fold), name="traces")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None
        if self.provider is not None:  # what is queued goes out before the process ends
            await asyncio.to_thread(self.provider.shutdown)
