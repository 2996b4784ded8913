"""POST /session/{id}/ingest: another process streams its message in as NDJSON, live."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from partwire import StreamingMessageBuilder
from partwire.client.http import PartwireClient
from partwire.client.reducer import ClientState, reduce
from partwire.config import Settings
from partwire.schema.event import Event
from partwire.schema.frames import content_of
from partwire.server.app import create_app
from partwire.server.routes import ingest as ingest_route
from partwire.server.runner import serve_in_background
from tests.server.conftest import in_process


async def _session(client: PartwireClient) -> str:
    return (await client.create_session()).id


async def _eventually(check: Callable[[], Awaitable[bool]]) -> None:
    """Poll the HTTP API (a client outside the server has no event to wait on)."""
    async with asyncio.timeout(10):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def _busy(client: PartwireClient) -> bool:
    return bool(await client.status())


async def _idle(client: PartwireClient) -> bool:
    return not await client.status()


async def _until(
    events: AsyncIterator[Event], type_: str, state: ClientState | None = None
) -> Event:
    async with asyncio.timeout(10):
        while True:
            event = await anext(events)
            if state is not None:
                reduce(state, event)
            if event.type == type_:
                return event


async def test_each_line_is_visible_to_clients_before_the_stream_ends(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        events = client.events()
        assert (await anext(events)).type == "server.connected"
        state = ClientState()
        seen_first_delta = asyncio.Event()

        async def lines() -> AsyncIterator[dict[str, Any]]:
            model = {"providerID": "acme", "modelID": "m1"}
            yield {"type": "start", "prompt": "what is here?", "model": model}
            yield {"type": "step-start"}
            yield {"type": "text-delta", "delta": "Let me "}
            await asyncio.wait_for(seen_first_delta.wait(), 10)  # the server already showed it
            yield {"type": "text-delta", "delta": "look."}
            yield {"type": "tool-call-start", "callID": "c1", "tool": "bash"}
            yield {"type": "tool-args-delta", "callID": "c1", "delta": '{"command": "ls"}'}
            yield {"type": "tool-call", "callID": "c1", "tool": "bash", "input": {"command": "ls"}}
            yield {"type": "tool-result", "callID": "c1", "output": "README.md", "title": "ls"}
            yield {"type": "step-finish", "tokens": {"input": 10, "output": 4}, "cost": 0.5}

        upload = asyncio.create_task(client.ingest(session_id, lines()))
        delta = await _until(events, "message.part.delta", state)
        assert delta.properties.delta == "Let me "  # type: ignore[attr-defined]
        assert not upload.done()
        seen_first_delta.set()
        answer = await upload
        await _until(events, "session.idle", state)
        await events.aclose()  # type: ignore[attr-defined]
        stored = await client.messages(session_id)
    assert [m.info.role for m in stored] == ["user", "assistant"]
    assert stored[1] == answer
    assert answer.info.parent_id == stored[0].info.id  # type: ignore[union-attr]
    assert answer.info.provider_id == "acme" and answer.info.cost == 0.5  # type: ignore[union-attr]
    assert [p.type for p in answer.parts] == ["step-start", "text", "tool", "step-finish"]
    assert answer.parts[1].text == "Let me look."  # type: ignore[union-attr]
    assert answer.parts[2].state.output == "README.md"  # type: ignore[union-attr]
    assert state.messages(session_id) == stored


async def _post(server: str, session_id: str, body: bytes | AsyncIterator[bytes]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server) as http:
        return await http.post(
            f"/session/{session_id}/ingest",
            content=body,
            headers={"content-type": "application/x-ndjson"},
        )


def _ndjson(*lines: Any) -> bytes:
    return b"".join(
        (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines
    )


async def _paced(lines: list[Any], pause_s: float = 0.02) -> AsyncIterator[bytes]:
    """Each line a chunk of its own, ``pause_s`` after the last: a live loop's body."""
    for line in lines:
        yield _ndjson(line)
        await asyncio.sleep(pause_s)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps({"type": "text-delta", "delta": "x", "color": "red"}).encode(), "color"),
        (json.dumps({"type": "teleport"}).encode(), "type"),
        (json.dumps({"type": "tool-result", "callID": "no", "output": "x"}).encode(), "before"),
        (json.dumps({"type": "start"}).encode(), "first line"),
        (b'{"type": "text-delta", "delta": "\\ud800"}', "not valid Unicode"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("chunked", [False, True])
async def test_a_bad_line_is_a_400_naming_it_and_keeps_what_came_before(
    server: str, bad: bytes, says: str, chunked: bool
) -> None:
    """In one body, or a line a chunk (the deltas and the bad line then reach the
    recording through the read callback, as a live loop's do)."""
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        lines = [
            {"type": "start", "prompt": "go"},
            {"type": "text-delta", "delta": "a"},
            b"",
            {"type": "text-delta", "delta": "b"},
            bad,
            {"type": "text-delta", "delta": "never"},
        ]
        response = await _post(server, session_id, _paced(lines) if chunked else _ndjson(*lines))
        assert response.status_code == 400
        error = response.json()
        assert error["name"] == "BadRequest" and error["data"]["line"] == 5
        assert (
            error["data"]["message"].startswith("ingest line 5: ")
            and says in error["data"]["message"]
        )
        stored = await client.messages(session_id)
        answer = stored[1]
        assert [p.text for p in answer.parts] == ["ab"]  # type: ignore[union-attr]
        assert answer.info.error is not None and "line 5" in answer.info.error.data.message  # type: ignore[union-attr]
        assert await client.status() == {}  # idle again


async def test_a_busy_session_and_a_missing_one_are_refused(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        assert (
            await _post(server, "ses_missing", _ndjson({"type": "text-delta", "delta": "x"}))
        ).status_code == 404
        # nothing to answer yet: no prompt and no user message
        response = await _post(server, session_id, _ndjson({"type": "text-delta", "delta": "x"}))
        assert (
            response.status_code == 400 and "no user message" in response.json()["data"]["message"]
        )
        release = asyncio.Event()

        async def slow() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "start", "prompt": "first"}
            await release.wait()

        first = asyncio.create_task(client.ingest(session_id, slow()))
        await _eventually(lambda: _busy(client))
        busy = await _post(server, session_id, _ndjson({"type": "start", "prompt": "second"}))
        assert busy.status_code == 409 and busy.json()["name"] == "SessionBusyError"
        release.set()
        await first
        assert [m.info.role for m in await client.messages(session_id)] == ["user", "assistant"]


async def test_an_error_line_ends_the_message_with_that_error(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        answer = await client.ingest(
            session_id,
            [
                {"type": "start", "prompt": "go"},
                {"type": "tool-call", "callID": "c1", "tool": "bash", "input": {}},
                {"type": "error", "message": "rate limited by upstream"},
            ],
        )
    assert (
        answer.info.error is not None
        and answer.info.error.data.message == "rate limited by upstream"
    )  # type: ignore[union-attr]
    assert answer.parts[0].state.status == "error"  # type: ignore[union-attr]


async def test_a_dropped_connection_ends_the_message_as_aborted(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        url = urlparse(server)
        lines = _ndjson({"type": "start", "prompt": "go"}, {"type": "text-delta", "delta": "half"})
        head = (
            f"POST /session/{session_id}/ingest HTTP/1.1\r\nHost: {url.hostname}:{url.port}\r\n"
            "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        chunk = f"{len(lines):x}\r\n".encode() + lines + b"\r\n"
        with socket.create_connection((url.hostname, url.port)) as raw:
            raw.sendall(head + chunk)

            async def text_stored() -> bool:
                stored = await client.messages(session_id)
                return len(stored) == 2 and bool(stored[1].parts)

            await _eventually(text_stored)
        await _eventually(lambda: _idle(client))
        answer = (await client.messages(session_id))[1]
    assert answer.info.error is not None and answer.info.error.name == "MessageAbortedError"
    assert [p.text for p in answer.parts] == ["half"]  # type: ignore[union-attr]


async def test_abort_stops_an_ingest_stream(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        aborted = asyncio.Event()

        async def lines() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "start", "prompt": "go"}
            yield {"type": "text-delta", "delta": "working"}
            await aborted.wait()
            yield {"type": "text-delta", "delta": "too late"}

        upload = asyncio.create_task(client.ingest(session_id, lines()))
        await _eventually(lambda: _busy(client))
        assert await client.abort(session_id)
        aborted.set()
        answer = await upload
    assert answer.info.error is not None and answer.info.error.name == "MessageAbortedError"
    assert [p.text for p in answer.parts] == ["working"]  # type: ignore[union-attr]


async def test_a_cancelled_ingest_request_ends_its_message_as_aborted(settings: Settings) -> None:
    """The message is recorded in a task of its own: cancelling the request (the server
    going down, say) cancels that task too, and the message ends as aborted."""
    app = create_app(settings)
    held = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield _ndjson({"type": "start", "prompt": "go"}, {"type": "text-delta", "delta": "half"})
        await held.wait()  # never set: the request is cancelled while it waits
        yield b""

    async with in_process(app) as http:
        session_id = (await http.post("/session", json={})).json()["id"]

        async def messages() -> list[dict[str, Any]]:
            listed: list[dict[str, Any]] = (await http.get(f"/session/{session_id}/message")).json()
            return listed

        upload = asyncio.create_task(
            http.post(
                f"/session/{session_id}/ingest",
                content=body(),
                headers={"content-type": "application/x-ndjson"},
            )
        )

        async def text_stored() -> bool:
            listed = await messages()
            return len(listed) == 2 and bool(listed[1]["parts"])

        await _eventually(text_stored)
        upload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await upload

        async def ended() -> bool:
            return (await messages())[1]["info"].get("error") is not None

        await _eventually(ended)
        answer = (await messages())[1]
        status = (await http.get("/session/status")).json()
    assert answer["info"]["error"]["name"] == "MessageAbortedError"
    assert [part["text"] for part in answer["parts"]] == ["half"]
    assert session_id not in status


async def test_a_message_past_the_ingest_limit_is_a_413_and_keeps_what_came_before(
    settings: Settings,
) -> None:
    limited = replace(settings, ingest_max_bytes=4096)
    head = _ndjson({"type": "start", "prompt": "go"}, {"type": "text-delta", "delta": "kept"})

    async def body() -> AsyncIterator[bytes]:
        yield head
        await asyncio.sleep(0.2)  # the first lines are applied before the flood
        for _ in range(100):
            yield _ndjson({"type": "text-delta", "delta": "x" * 100})

    async with serve_in_background(limited) as url, PartwireClient(url) as client:
        session_id = await _session(client)
        async with httpx.AsyncClient(base_url=url) as http:
            response = await http.post(
                f"/session/{session_id}/ingest",
                content=body(),
                headers={"content-type": "application/x-ndjson"},
            )
        assert response.status_code == 413
        error = response.json()
        assert error["name"] == "PayloadTooLarge" and "4096 bytes" in error["data"]["message"]
        answer = (await client.messages(session_id))[1]
        text = "".join(p.text for p in answer.parts if p.type == "text")  # type: ignore[union-attr]
        assert text.startswith("kept") and len(text) < 4096
        assert answer.info.error is not None  # type: ignore[union-attr]
        assert await client.status() == {}


DELTAS = [
    {"type": "reasoning-delta", "delta": "th"},
    {"type": "reasoning-delta", "delta": "ink"},
    {"type": "text-delta", "delta": "Hel"},
    {"type": "text-delta", "delta": "lo"},
    {"type": "text-delta", "delta": ""},
    {"type": "text-end"},
    {"type": "text-delta", "delta": "again"},
    {"type": "reasoning-delta", "delta": "more"},
    {"type": "text-delta", "delta": "end"},
]


@pytest.mark.parametrize("chunked", [False, True])
async def test_plain_deltas_make_the_parts_the_builder_makes(server: str, chunked: bool) -> None:
    """Text and reasoning deltas take the recording's hot path while their part streams;
    opening a part, switching kind and ending one still go the builder's way."""
    builder = StreamingMessageBuilder("msg_expected", "assistant")
    for line in DELTAS:
        if line["type"] == "text-delta":
            builder.add_text_delta(line["delta"])
        elif line["type"] == "reasoning-delta":
            builder.add_reasoning_delta(line["delta"])
        else:
            builder.finalize_text_part()
    expected = [(p.type, getattr(p, "text", None)) for p in builder.build().parts]
    lines = [{"type": "start", "prompt": "go"}, *DELTAS]

    async with PartwireClient(server) as client, httpx.AsyncClient(base_url=server) as http:
        session_id = await _session(client)
        response = await http.post(
            f"/session/{session_id}/ingest",
            content=_paced(lines, 0.01) if chunked else _ndjson(*lines),
            headers={"content-type": "application/x-ndjson"},
        )
        assert response.status_code == 200, response.text
        answer = (await client.messages(session_id))[1]
    assert [(p.type, getattr(p, "text", None)) for p in answer.parts] == expected
    assert expected == [
        ("reasoning", "think"),
        ("text", "Hello"),
        ("text", "again"),
        ("reasoning", "more"),
        ("text", "end"),
    ]


async def test_a_live_loops_deltas_are_applied_in_the_read_callback(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under uvicorn, a plain delta that arrives while the message records wakes no task:
    the connection's read callback applies it (``read_inline``). A uvicorn whose request
    cycle no longer has the shape the lane needs fails here, not just slows down."""
    applied_inline: list[bool] = []
    take = ingest_route._Body._take

    def counted(body: Any, recording: Any, chunk: bytes) -> bool:
        woke = take(body, recording, chunk)
        applied_inline.append(not woke)
        return woke

    monkeypatch.setattr(ingest_route._Body, "_take", counted)
    words = [f"w{n} " for n in range(20)]
    lines = [
        {"type": "start", "prompt": "go"},
        *({"type": "text-delta", "delta": w} for w in words),
    ]
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        response = await _post(server, session_id, _paced(lines))
        assert response.status_code == 200, response.text
        answer = (await client.messages(session_id))[1]
    assert [p.text for p in answer.parts if p.type == "text"] == ["".join(words)]  # type: ignore[union-attr]
    # the first delta opens the part (the task's way); the rest each came alone
    assert applied_inline.count(True) >= 15, applied_inline


async def test_lines_that_arrive_together_while_the_task_works_keep_their_order(
    server: str,
) -> None:
    """The read callback leaves a call's start to the recording's task and wakes it; the
    call and its result, in the same read, reach the task through receive: they are
    applied after the start, not before it."""
    url = urlparse(server)
    together = b"".join(
        b"%x\r\n%b\r\n" % (len(line), line)
        for line in (
            _ndjson({"type": "tool-call-start", "callID": "c1", "tool": "bash"}),
            _ndjson({"type": "tool-call", "callID": "c1", "tool": "bash", "input": {}}),
            _ndjson({"type": "tool-result", "callID": "c1", "output": "done"}),
            _ndjson({"type": "text-delta", "delta": "after"}),
        )
    )
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        writer.write(
            f"POST /session/{session_id}/ingest HTTP/1.1\r\nHost: {url.netloc}\r\n"
            "content-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n".encode()
        )
        for line in ({"type": "start", "prompt": "go"}, {"type": "text-delta", "delta": "a"}):
            body = _ndjson(line)
            writer.write(b"%x\r\n%b\r\n" % (len(body), body))
            await asyncio.sleep(0.05)  # the message records, and its task waits for more
        writer.write(together)  # one write: one read on the server
        await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(65536), 10)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
        stored = (await client.messages(session_id))[1]
    assert [p.type for p in stored.parts] == ["text", "tool", "text"]
    assert stored.parts[1].state.output == "done"  # type: ignore[union-attr]


async def test_an_overlong_line_is_a_400_and_keeps_what_came_before(server: str) -> None:
    head = _ndjson({"type": "start", "prompt": "go"}, {"type": "text-delta", "delta": "kept"})

    async def body() -> AsyncIterator[bytes]:
        yield head
        await asyncio.sleep(0.1)
        yield b'{"type": "text-delta", "delta": "'
        for _ in range(20):  # over a MiB, and no end of line
            yield b"x" * 65536

    async with PartwireClient(server) as client, httpx.AsyncClient(base_url=server) as http:
        session_id = await _session(client)
        response = await http.post(
            f"/session/{session_id}/ingest",
            content=body(),
            headers={"content-type": "application/x-ndjson"},
        )
        assert response.status_code == 400
        assert response.json()["data"]["line"] == 3 and "longer than" in response.text
        answer = (await client.messages(session_id))[1]
    assert [p.text for p in answer.parts] == ["kept"]  # type: ignore[union-attr]
    assert answer.info.error is not None  # type: ignore[union-attr]


async def test_an_ingested_session_is_titled_by_its_prompt(server: str) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        body = _ndjson(
            {"type": "start", "prompt": "Fix the   flaky test\nin ci"},
            {"type": "text-delta", "delta": "done"},
        )
        assert (await _post(server, session_id, body)).status_code == 200
        session = await client.get_session(session_id)
        assert session.title == "Fix the flaky test in ci"


async def test_impossible_numbers_are_a_400_and_an_empty_body_stores_nothing(
    server: str,
) -> None:
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        empty = await _post(server, session_id, b"")
        assert empty.status_code == 400 and "nothing was stored" in empty.text
        assert await client.messages(session_id) == []
        for bad, says in (
            (b'{"type": "step-finish", "cost": NaN}', "cost is nan"),
            (b'{"type": "step-finish", "cost": -1}', "cost is -1"),
            (b'{"type": "step-finish", "tokens": {"input": -5}}', "tokens.input is -5"),
        ):
            body = _ndjson({"type": "start", "prompt": "go"}, {"type": "step-start"}, bad)
            response = await _post(server, session_id, body)
            assert response.status_code == 400, response.text
            assert response.json()["data"]["line"] == 3 and says in response.text
        # what was stored still reads
        assert all(m.info.role in ("user", "assistant") for m in await client.messages(session_id))


def _builders_frames() -> tuple[list[str], Any]:
    """A message built in this process with seed 003's calls: its frames as NDJSON lines,
    and the message its build() returns."""
    builder = StreamingMessageBuilder("msg_seed_1", "assistant")
    frames = [
        *builder.start_step(),
        *builder.add_reasoning_delta("Check the weather."),
        *builder.add_text_delta("Let me check "),
        *builder.add_text_delta("the weather.\n"),
        *builder.finalize_text_part(),
        *builder.start_tool_call("call_1", "get_weather"),
        *builder.add_tool_args_delta("call_1", '{"city": '),
        *builder.add_tool_args_delta("call_1", '"Tokyo"}'),
        *builder.add_tool_call(
            {"toolCallId": "call_1", "toolName": "get_weather", "args": {"city": "Tokyo"}}
        ),
        *builder.add_tool_result({"toolCallId": "call_1", "result": "72°F, sunny"}),
        *builder.add_text_delta("It is 72°F and sunny."),
        *builder.finish_step({"input": 10, "output": 5}, 0.001, "stop"),
        *builder.finish(),
    ]
    return [frame.wire_json() for frame in frames], builder.build()


async def test_a_builders_frames_are_ingested_as_the_same_message(server: str) -> None:
    lines, built = _builders_frames()
    start = json.dumps({"type": "start", "prompt": "Weather in Tokyo?"})
    async with PartwireClient(server) as client, httpx.AsyncClient(base_url=server) as http:
        session_id = await _session(client)
        body = "\n".join([start, *lines[1:]])  # the start line stands for message_start here
        response = await http.post(f"/session/{session_id}/ingest", content=body)
        assert response.status_code == 200, response.text
        stored = (await client.messages(session_id))[-1]
    shape = [(p.type, getattr(p, "text", None)) for p in stored.parts]
    assert shape == [(p.type, getattr(p, "text", None)) for p in built.parts]
    tool = next(p for p in stored.parts if p.type == "tool")
    assert tool.state.input == {"city": "Tokyo"} and tool.state.output == "72°F, sunny"  # type: ignore[union-attr]
    finish = next(p for p in stored.parts if p.type == "step-finish")
    assert finish.tokens.output == 5 and finish.cost == 0.001  # type: ignore[union-attr]
    assert content_of(stored.parts) == built.content
    assert (
        built.content
        == "Let me check the weather.\n\n\nTool result: 72°F, sunny\nIt is 72°F and sunny."
    )


async def test_a_message_start_frame_first_names_the_message(server: str) -> None:
    lines, _ = _builders_frames()
    async with PartwireClient(server) as client, httpx.AsyncClient(base_url=server) as http:
        session_id = await _session(client)
        await client.prompt(session_id, "hello")  # the message answers this one
        response = await http.post(f"/session/{session_id}/ingest", content="\n".join(lines))
        assert response.status_code == 200, response.text
        assert response.json()["info"]["id"] == "msg_seed_1"


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (['{"type": "part_delta", "messageId": "msg_x", "partIndex": 3, "delta": "x"}'],
         "part 3 was never started"),
        (['{"type": "reset", "reason": "start"}'], "reset"),
        (['{"type": "part_start", "messageId": "msg_x", "partIndex": 0}'], "part"),
    ],
)  # fmt: skip
async def test_frames_that_do_not_fit_are_a_400_naming_the_line(
    server: str, lines: list[str], problem: str
) -> None:
    start = json.dumps({"type": "start", "prompt": "go"})
    async with httpx.AsyncClient(base_url=server) as http:
        session_id = (await http.post("/session", json={})).json()["id"]
        response = await http.post(
            f"/session/{session_id}/ingest", content="\n".join([start, *lines])
        )
    assert response.status_code == 400 and problem in response.json()["data"]["message"]
    assert response.json()["data"]["line"] == 2


async def test_a_prompt_sent_while_a_loop_records_is_queued(server: str) -> None:
    """As the README says of a busy session: the prompt waits, then is answered."""
    async with PartwireClient(server) as client:
        session_id = await _session(client)
        release = asyncio.Event()

        async def slow() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "start", "prompt": "first"}
            yield {"type": "text-delta", "delta": "recorded"}
            await release.wait()

        first = asyncio.create_task(client.ingest(session_id, slow()))
        await _eventually(lambda: _busy(client))
        await client.prompt_async(session_id, "hello")  # 204, not 409
        assert [m.info.role for m in await client.messages(session_id)] == [
            "user", "assistant", "user",
        ]  # fmt: skip
        release.set()
        await first
        await _eventually(lambda: _answered(client, session_id))
        roles = [m.info.role for m in await client.messages(session_id)]
        assert roles == ["user", "assistant", "user", "assistant"]


async def _answered(client: PartwireClient, session_id: str) -> bool:
    messages = await client.messages(session_id)
    return len(messages) == 4 and not await client.status()
