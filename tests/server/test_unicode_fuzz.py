"""Arbitrary Unicode (lone surrogates included) and arbitrary JSON sent to every route:
never a 5xx, never a traceback in the log; text that is not valid Unicode is a 400
naming the field."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reference import error_message

# every category, surrogates (Cs) included, which JSON can carry as \\udxxx escapes
TEXT = st.text(st.characters(codec=None, categories=None), max_size=20)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
# routes whose work would end the test's server or run a command
SKIP = {("post", "/instance/dispose"), ("post", "/session/{sessionID}/shell")}
NOT_IMPLEMENTED = {("post", "/session/{sessionID}/share"), ("post", "/mcp")}  # 501 on purpose


async def _operations(http: httpx.AsyncClient) -> list[tuple[str, str]]:
    paths = (await http.get("/doc")).json()["paths"]
    return [
        (method, path)
        for path, ops in paths.items()
        for method in ops
        if method in ("post", "patch", "put") and (method, path) not in SKIP
    ]


async def _sent(http: httpx.AsyncClient, method: str, path: str, body: bytes) -> int:
    """POST/PATCH/PUT ``body`` as JSON; its status (an error must carry a message)."""
    response = await http.request(
        method.upper(), path, content=body, headers={"content-type": "application/json"}
    )
    if response.status_code >= 400 and response.status_code != 501:
        assert error_message(response.json()), (method, path)
    return response.status_code


def _fill(path: str, sid: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: sid if m.group(1) == "sessionID" else "x_1", path)


async def test_every_route_survives_arbitrary_json_and_unicode(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    sid = (await http.post("/session", json={})).json()["id"]
    operations = await _operations(http)
    assert len(operations) > 15
    failures: list[str] = []

    @settings(
        max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(index=st.integers(0, len(operations) - 1), body=JSON)
    def one(index: int, body: Any) -> None:
        bodies.append((operations[index], body))

    bodies: list[tuple[tuple[str, str], Any]] = []
    one()
    with caplog.at_level(logging.ERROR):
        for (method, path), body in bodies:
            raw = json.dumps(body, ensure_ascii=True)  # lone surrogates travel as escapes
            status = await _sent(http, method, _fill(path, sid), raw.encode())
            said = status == 501 and (method, path) in NOT_IMPLEMENTED
            if status >= 500 and not said:
                failures.append(f"{method} {path} {raw[:80]} → {status}")
    assert failures == []
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == []


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/session", {"title": "\ud800"}, "title"),
        ("/session/{s}/message", {"parts": [{"type": "text", "text": "a\udfffb"}]}, "parts.0.text"),
        (
            "/session/{s}/prompt_async",
            {"parts": [{"type": "text", "text": "ok"}], "system": "\ud801"},
            "system",
        ),
    ],
)
async def test_a_lone_surrogate_is_a_400_naming_the_field(
    http: httpx.AsyncClient, path: str, body: dict[str, Any], field: str
) -> None:
    sid = (await http.post("/session", json={})).json()["id"]
    response = await http.post(
        path.replace("{s}", sid),
        content=json.dumps(body),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["data"]["field"] == field
    assert (await http.get(f"/session/{sid}/message")).json() == []
    emoji = await http.post(
        "/session",
        content=json.dumps({"title": "\U0001f600 ok"}),
        headers={"content-type": "application/json"},
    )
    assert emoji.status_code == 200 and emoji.json()["title"] == "\U0001f600 ok"  # pairs are fine


# bytes no JSON parser should see: invalid UTF-8 (a UTF-16 surrogate encoded as UTF-8,
# a lone continuation byte, a truncated sequence) and nesting past any parser's stack
BAD_BODIES = [
    b'{"title": "\xed\xa0\x80"}',
    b'{"title": "\x80"}',
    b'{"text": "\xe2\x82"}',
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
]


async def test_bad_bytes_and_deep_nesting_are_a_400_on_every_route(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    sid = (await http.post("/session", json={})).json()["id"]
    operations = await _operations(http)
    failures: list[str] = []
    with caplog.at_level(logging.ERROR):
        for method, path in operations:
            for body in BAD_BODIES:
                status = await _sent(http, method, _fill(path, sid), body)
                said = status == 501 and (method, path) in NOT_IMPLEMENTED
                if not 400 <= status < 500 and not said:
                    failures.append(f"{method} {path} {body[:20]!r} → {status}")
    assert failures == []
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == []
