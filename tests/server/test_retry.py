"""Retryable provider errors: a retry part and retry status each time, then success or the error."""

from __future__ import annotations

import httpx

from partwire.providers.stream import StartStep, StreamError, StreamStart, TextDelta, TextStart
from partwire.session.processor import MAX_RETRIES, retry_delay
from tests.reference import validate
from tests.scripted import ScriptedModel, text_reply
from tests.server.test_permission import _start
from tests.server.watch import Watch


def _overloaded(after_text: bool = False) -> list[object]:
    partial = [TextStart("t"), TextDelta("t", "half")] if after_text else []
    return [
        StreamStart(),
        StartStep(),
        *partial,
        StreamError("Overloaded", retryable=True, status_code=529, retry_after_s=0.05),
    ]


async def test_a_retryable_error_is_retried_visibly_then_succeeds(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(_overloaded(after_text=True), text_reply("fine", " now"))  # type: ignore[arg-type]
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        statuses = [
            e["properties"]["status"] for e in watch.events if e["type"] == "session.status"
        ]
        retry_event = next(
            e for e in watch.events
            if e["type"] == "message.part.updated" and e["properties"]["part"]["type"] == "retry"
        )  # fmt: skip
    assert [s["type"] for s in statuses] == ["busy", "retry", "busy", "idle"]
    retry = statuses[1]
    assert retry["attempt"] == 1 and retry["message"] == "Overloaded"
    assert retry["next"] >= retry_event["properties"]["part"]["time"]["created"]
    validate(
        "EventSessionStatus",
        next(
            e
            for e in watch.events
            if e["type"] == "session.status" and e["properties"]["status"]["type"] == "retry"
        ),
    )
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert len(messages) == 2  # the retry happened inside the same assistant message
    info, parts = messages[1]["info"], messages[1]["parts"]
    assert "error" not in info and info["finish"] == "stop"
    kinds = [p["type"] for p in parts]
    assert kinds == ["step-start", "text", "retry", "step-start", "text", "step-finish"]
    validate("RetryPart", parts[2])
    plan = parts[2]["error"]["data"].pop("metadata")  # the retries to come, for clients
    assert plan["maxAttempts"] == "5" and int(plan["retryingForS"]) > 0
    assert parts[2]["error"]["data"] == {
        "message": "Overloaded",
        "statusCode": 529,
        "isRetryable": True,
    }
    assert parts[1]["text"] == "half" and "end" in parts[1]["time"]
    assert parts[4]["text"] == "fine now"


async def test_retries_give_up_with_the_named_error(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue(*[_overloaded() for _ in range(MAX_RETRIES + 1)])  # type: ignore[arg-type]
    async with Watch(http) as watch:
        sid = await _start(http)
        error = await watch.wait_for("session.error")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    validate("EventSessionError", error)
    assert error["properties"]["error"]["name"] == "APIError"
    messages = (await http.get(f"/session/{sid}/message")).json()
    retries = [p for p in messages[1]["parts"] if p["type"] == "retry"]
    assert [r["attempt"] for r in retries] == list(range(1, MAX_RETRIES + 1))
    assert messages[1]["info"]["error"]["data"]["message"] == "Overloaded"


async def test_a_non_retryable_error_is_not_retried(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    model.enqueue([StreamStart(), StreamError("Invalid API key", status_code=401)])
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.error")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
        assert not [
            e for e in watch.events
            if e["type"] == "session.status" and e["properties"]["status"]["type"] == "retry"
        ]  # fmt: skip
    assert len(model.requests) == 1


async def test_abort_during_the_backoff_ends_cleanly(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    slow = [
        StreamStart(),
        StreamError("Rate limited", retryable=True, status_code=429, retry_after_s=30),
    ]
    model.enqueue(slow)  # type: ignore[arg-type]
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for(
            "session.status", lambda e: e["properties"]["status"]["type"] == "retry"
        )
        assert (await http.get("/session/status")).json()[sid]["type"] == "retry"
        await http.post(f"/session/{sid}/abort")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert messages[1]["info"]["error"]["name"] == "MessageAbortedError"


def test_backoff_doubles_caps_and_yields_to_retry_after() -> None:
    assert [retry_delay(n, None) for n in range(1, 7)] == [2, 4, 8, 16, 30, 30]
    assert retry_delay(3, 1.5) == 1.5


async def test_a_dropped_connection_is_retried(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    def dropped(request: object) -> list[object]:
        raise ConnectionResetError("connection reset by peer")

    model.enqueue(dropped, text_reply("recovered"))  # type: ignore[arg-type]
    async with Watch(http) as watch:
        sid = await _start(http)
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    messages = (await http.get(f"/session/{sid}/message")).json()
    retry = next(p for p in messages[1]["parts"] if p["type"] == "retry")
    assert "ConnectionResetError" in retry["error"]["data"]["message"]
    assert messages[1]["parts"][-2]["text"] == "recovered"
