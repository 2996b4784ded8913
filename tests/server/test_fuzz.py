"""Schemathesis over our OpenAPI document: no generated request gets a 5xx; bodies are limited."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.reference import error_message
from tests.served import partwire_serve

# endless SSE (/event, /global/event, /api/event, a session's) and the TUI control
# long-poll (it answers when something asks the TUI: tests/server/test_tui.py)
STREAMS = "/event$|/stream$|/tui/control/next$"


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    """The ingest route's body: generated text as it is, lone surrogates included (they
    reach the server as bytes that are not UTF-8)."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text.encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("fuzz")
    project = root / "project"
    project.mkdir()
    (project / "README.md").write_text("# fuzz\n")
    with partwire_serve(project, root) as url:
        yield url


# the only operations that answer 501, on purpose: features partwire does not have
NOT_IMPLEMENTED = {("POST", "/mcp")}


def _check(case: schemathesis.Case, live_server: str) -> None:
    response = case.call(base_url=live_server, timeout=30)
    said_on_purpose = (case.method.upper(), case.path) in NOT_IMPLEMENTED
    allowed = response.status_code < 500 or (response.status_code == 501 and said_on_purpose)
    assert allowed, f"{case.method} {case.formatted_path} {case.body!r}: {response.text[:300]}"
    if response.status_code >= 400:
        kind = response.headers.get("content-type") or [""]
        assert (kind[0] if isinstance(kind, list) else kind).startswith("application/json")
        assert error_message(response.json())


def test_generated_requests_never_get_a_server_error(live_server: str) -> None:
    schema = schemathesis.openapi.from_url(f"{live_server}/doc").exclude(path_regex=STREAMS)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    for operation, mode in itertools.product(operations, list(GenerationMode)):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=8,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: schemathesis.Case) -> None:
            _check(case, live_server)

        try:
            run()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE  # nothing to get wrong: no params, no body


def test_oversize_bodies_are_413(live_server: str, tmp_path: Path) -> None:
    big = b'{"parts": [{"type": "text", "text": "' + b"x" * (11 * 1024 * 1024) + b'"}]}'
    response = httpx.post(
        f"{live_server}/session", content=big, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["name"] == "PayloadTooLarge"

    def chunks() -> Iterator[bytes]:
        for _ in range(12):
            yield b"x" * (1024 * 1024)

    chunked = httpx.post(f"{live_server}/session", content=chunks())
    assert chunked.status_code == 413
