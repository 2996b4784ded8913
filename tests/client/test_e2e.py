"""End to end: real server on loopback, SSE → reducer state == GET /session/{id}/message."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import httpx

from partwire.client.http import PartwireClient
from partwire.client.reducer import ClientState, reduce
from partwire.config import Settings
from partwire.schema.event import REGISTRY, Event
from partwire.server.runner import serve_in_background


def _wire(state: ClientState, session_id: str) -> list[dict[str, object]]:
    return [m.wire() for m in state.messages(session_id)]


async def _until_idle(
    events: AsyncIterator[Event], state: ClientState, session_id: str, seen: list[Event]
) -> None:
    async for event in events:
        seen.append(event)
        reduce(state, event)
        if event.type == "session.idle" and event.session_id == session_id:
            return


async def _start(events: AsyncIterator[Event]) -> None:
    first = await anext(events)
    assert first.type == "server.connected"


async def test_reduced_events_equal_the_stored_messages(server: str) -> None:
    async with PartwireClient(server) as client:
        events = client.events()
        await _start(events)
        session = await client.create_session()
        state = ClientState()
        seen: list[Event] = []
        for prompt in ("hello", "list", "README.md", "long 500"):
            await client.prompt_async(session.id, prompt)
            await _until_idle(events, state, session.id, seen)
        await events.aclose()  # type: ignore[attr-defined]
        stored = [m.wire() for m in await client.messages(session.id)]
    assert _wire(state, session.id) == stored
    assert len(stored) == 10  # 4 prompts: 4 user + 6 assistant (two tool steps)
    assert state.session[session.id].title == "hello"
    assert session.id not in state.session_status  # idle, as GET /session/status


class CutOnce(httpx.AsyncBaseTransport):
    """Passes requests to the real transport but breaks the first /event stream midway."""

    def __init__(self, after_chunks: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.after_chunks = after_chunks
        self.cuts = 0
        self.resume_headers: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path != "/event":
            return response
        self.resume_headers.append(request.headers.get("last-event-id"))
        if self.cuts:
            return response
        self.cuts += 1
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Cut(response.stream, self.after_chunks),  # type: ignore[arg-type]
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Cut(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, after: int) -> None:
        self.stream, self.after = stream, after

    async def __aiter__(self) -> AsyncIterator[bytes]:
        count = 0
        async for chunk in self.stream:
            yield chunk
            count += 1
            if count >= self.after:
                await self.stream.aclose()
                raise httpx.ReadError("connection cut by the test")

    async def aclose(self) -> None:
        await self.stream.aclose()


async def test_a_cut_connection_resumes_with_nothing_lost_or_repeated(settings: Settings) -> None:
    slow = replace(settings, demo_delay_ms=1)
    async with serve_in_background(slow) as url:
        transport = CutOnce(after_chunks=40)
        async with (
            PartwireClient(url, transport=transport) as client,
            PartwireClient(url) as witness,
        ):
            cut_events, whole_events = client.events(), witness.events()
            await _start(cut_events)
            await _start(whole_events)
            session = await client.create_session()
            await client.prompt_async(session.id, "long 400")
            state, seen = ClientState(), []  # type: ignore[var-annotated]
            await _until_idle(cut_events, state, session.id, seen)
            reference, reference_seen = ClientState(), []  # type: ignore[var-annotated]
            await _until_idle(whole_events, reference, session.id, reference_seen)
            await cut_events.aclose()  # type: ignore[attr-defined]
            await whole_events.aclose()  # type: ignore[attr-defined]
            stored = [m.wire() for m in await client.messages(session.id)]

    assert transport.cuts == 1
    assert transport.resume_headers[0] is None and transport.resume_headers[1] is not None
    logged = [e.id for e in seen if REGISTRY[e.type].logged]
    assert len(logged) == len(set(logged)), "an event was delivered twice"
    assert logged == [e.id for e in reference_seen if REGISTRY[e.type].logged], "an event was lost"
    assert [e.type for e in seen].count("server.connected") == 1  # the reconnect's own
    assert _wire(state, session.id) == stored
    deltas = [e.id for e in seen if e.type == "message.part.delta"]
    assert len(deltas) == 400
    resumed_from = transport.resume_headers[1]
    assert deltas[0] <= resumed_from < deltas[-1], "the cut was not in the middle of the stream"  # type: ignore[operator]
