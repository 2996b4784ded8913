"""GET /metrics: Prometheus' text format, read back with its own parser; every figure
moves with the work it counts; it needs the password like every other route."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import httpx
from prometheus_client.parser import text_string_to_metric_families

from partwire.config import Settings
from partwire.errors import ProviderError
from partwire.providers.stream import ModelRequest, StreamEvent
from partwire.server.runner import serve_in_background
from tests.scripted import ScriptedModel, text_reply
from tests.server.test_permission import SCRIPTED
from tests.server.watch import Watch

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def _scrape(http: httpx.AsyncClient) -> Samples:
    response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    found: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def _prompt(http: httpx.AsyncClient, text: str) -> str:
    sid = str((await http.post("/session", json={})).json()["id"])
    body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
    assert (await http.post(f"/session/{sid}/prompt_async", json=body)).status_code == 204
    return sid


def _failing(request: ModelRequest) -> list[StreamEvent]:
    raise ProviderError("the key was refused", kind="auth", provider_id="scripted")


async def test_the_figures_move_with_the_work(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    before = await _scrape(http)
    assert _value(before, "partwire_live_sessions") == 0
    model.gate = asyncio.Event()
    model.enqueue(text_reply("one", "two", "three"))
    async with Watch(http) as watch:
        sid = await _prompt(http, "count")
        await watch.wait_for("session.status", lambda e: e["properties"]["sessionID"] == sid)
        busy = await _scrape(http)
        assert _value(busy, "partwire_live_sessions") == 1
        assert _value(busy, "partwire_streams", transport="event") >= 1  # the watch's stream
        model.gate.set()
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    after = await _scrape(http)
    assert _value(after, "partwire_live_sessions") == 0
    assert _value(after, "partwire_deltas_total") - _value(before, "partwire_deltas_total") >= 3
    commits = "partwire_commit_seconds_count"
    assert _value(after, commits) > _value(before, commits)
    assert _value(after, "partwire_commit_writes_bucket", le="+Inf") == _value(after, commits)
    waits = "partwire_start_wait_seconds_count"  # the answer passed the start gate
    assert _value(after, waits) == _value(before, waits) + 1
    output = dict(provider="scripted", model="scripted", kind="output")
    grown = _value(after, "partwire_tokens_total", **output) - _value(
        before, "partwire_tokens_total", **output
    )
    assert grown == 5  # tests.scripted.finish: 5 out

    model.enqueue(_failing)
    async with Watch(http) as watch:
        failed = await _prompt(http, "fail")
        await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == failed)
    errors = await _scrape(http)
    auth = dict(provider="scripted", kind="auth", retryable="false")
    assert _value(errors, "partwire_provider_errors_total", **auth) == (
        _value(before, "partwire_provider_errors_total", **auth) + 1
    )


async def test_replay_lag_counts_a_stream_that_resumed(http: httpx.AsyncClient) -> None:
    first = (await http.post("/session", json={})).json()["id"]
    cursor = (await http.get(f"/session/{first}/message")).headers["x-last-event-id"]
    await http.post("/session", json={})  # logged after the cursor: the stream replays it
    before = await _scrape(http)
    resume = {"Last-Event-ID": cursor}
    async with asyncio.timeout(10), http.stream("GET", "/event", headers=resume) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data:") and "session.created" in line:
                break
    after = await _scrape(http)
    name = "partwire_stream_replay_seconds_count"
    assert _value(after, name) == _value(before, name) + 1


async def test_metrics_need_the_password(settings: Settings) -> None:
    locked = replace(settings, server_password="s3cret")
    async with (
        serve_in_background(locked) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
    ):
        assert (await http.get("/metrics")).status_code == 401
        allowed = await http.get("/metrics", auth=("partwire", "s3cret"))
        assert allowed.status_code == 200 and "partwire_deltas_total" in allowed.text
