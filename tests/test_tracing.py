"""Traces from the part stream: the SDK's in-memory exporter, and a real OTLP/HTTP
receiver on loopback fed by `partwire serve` with OTEL_EXPORTER_OTLP_ENDPOINT set."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from partwire.errors import ConfigError
from partwire.runtime import Runtime
from partwire.tracing import SpanFold, exporting_provider, follow
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.served import free_port, partwire_serve
from tests.session.helpers import new_session, prompt_body


async def _traced(runtime: Runtime, work: Any) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    task = asyncio.create_task(follow(runtime.bus, SpanFold(provider.get_tracer("test"))))
    await asyncio.sleep(0)  # subscribed before the work starts
    await work
    for _ in range(200):  # the fold reads the bus a little after the run ends
        if any(s.name.startswith("invoke_agent") for s in exporter.get_finished_spans()):
            break
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return list(exporter.get_finished_spans())


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    (found,) = [s for s in spans if s.name == name]
    return found


async def test_a_run_is_an_agent_span_with_chat_and_tool_children(
    runtime: Runtime, model: ScriptedModel
) -> None:
    model.enqueue(tool_reply("read", {"filePath": "README.md"}, call_id="c1"), text_reply("ok"))
    session_id = await new_session(runtime)
    spans = await _traced(runtime, runtime.loop.prompt(session_id, prompt_body("read it")))
    agent = _one(spans, "invoke_agent build")
    assert agent.attributes is not None
    assert dict(agent.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": session_id,
        "gen_ai.agent.name": "build",
    }
    chats = [s for s in spans if s.name == "chat scripted"]
    tool = _one(spans, "execute_tool read")
    assert len(chats) == 2
    assert agent.context is not None
    for child in (*chats, tool):
        assert child.parent is not None and child.parent.span_id == agent.context.span_id
        assert child.context is not None and child.context.trace_id == agent.context.trace_id
    first = min(chats, key=lambda s: s.start_time or 0)
    assert first.attributes is not None
    assert first.attributes["gen_ai.request.model"] == "scripted"
    assert first.attributes["gen_ai.provider.name"] == "scripted"
    assert first.attributes["gen_ai.usage.input_tokens"] == 10
    assert first.attributes["gen_ai.usage.output_tokens"] == 5
    assert tuple(first.attributes["gen_ai.response.finish_reasons"]) == ("tool-calls",)  # type: ignore[arg-type]
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.name"] == "read"
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.status.status_code == StatusCode.UNSET
    stored = await runtime.store.list_messages(session_id)
    call = next(p for m in stored for p in m.parts if p.type == "tool")
    assert tool.end_time == call.state.time.end * 1_000_000  # type: ignore[union-attr]
    assert agent.end_time is not None and agent.end_time >= max(s.end_time or 0 for s in chats)


async def test_an_external_loop_is_traced_and_a_failed_call_is_an_error(
    runtime: Runtime,
) -> None:
    session_id = await new_session(runtime)

    async def record() -> None:
        async with runtime.record(session_id, prompt="list", model="acme/m1") as msg:
            await msg.start_step()
            await msg.add_tool_call("c9", "bash", '{"command": "ls"}')
            await msg.add_tool_result("c9", "no such directory", is_error=True)
            await msg.finish_step({"input": 7, "output": 3})

    spans = await _traced(runtime, record())
    chat = _one(spans, "chat m1")
    assert chat.attributes is not None and chat.attributes["gen_ai.provider.name"] == "acme"
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    tool = _one(spans, "execute_tool bash")
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.attributes is not None and tool.attributes["error.type"] == "tool_error"
    assert any(s.name.startswith("invoke_agent") for s in spans)


def test_an_endpoint_without_the_sdk_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    assert exporting_provider({}) is None
    import builtins

    real_import = builtins.__import__

    def no_sdk(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("opentelemetry.sdk"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sdk)
    with pytest.raises(ConfigError, match=r"pip install 'partwire\[otel\]'"):
        exporting_provider({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[str]]]:
    """An OTLP/HTTP trace receiver on loopback: its URL and the span names it received."""
    names: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        names.extend(span.name for span in scope.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", names
    finally:
        server.shutdown()
        server.server_close()


async def test_a_server_exports_its_runs_to_an_otlp_receiver(
    project: Path, tmp_path: Path, receiver: tuple[str, list[str]]
) -> None:
    endpoint, names = receiver
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    with partwire_serve(project, tmp_path / "state", extra_env=env) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            sid = (await http.post("/session", json={})).json()["id"]
            body = {"parts": [{"type": "text", "text": "bash echo traced"}]}
            assert (await http.post(f"/session/{sid}/message", json=body)).is_success
            for _ in range(200):
                if "invoke_agent build" in names:
                    break
                await asyncio.sleep(0.05)
    assert {"invoke_agent build", "chat demo", "execute_tool bash"} <= set(names)


async def test_a_sub_agents_run_is_a_child_of_its_task_call(
    runtime: Runtime, model: ScriptedModel
) -> None:
    task = {"description": "Count", "prompt": "count the lines", "subagent_type": "general"}
    model.enqueue(
        tool_reply("task", task, call_id="t1"),
        text_reply("50 lines"),  # the sub-agent
        text_reply("it says 50"),  # the parent, after the task's result
    )
    session_id = await new_session(runtime)
    spans = await _traced(runtime, runtime.loop.prompt(session_id, prompt_body("delegate")))
    call = _one(spans, "execute_tool task")
    child = _one(spans, "invoke_agent general")
    parent = _one(spans, "invoke_agent build")
    assert call.context is not None and child.parent is not None
    assert child.parent.span_id == call.context.span_id
    assert parent.context is not None and child.context is not None
    assert child.context.trace_id == parent.context.trace_id  # one trace for the whole run
