"""Provider failures as `partwire run` shows them: what went wrong and what to fix."""

from __future__ import annotations

import json
import socket
import time

from partwire.config import Settings
from partwire.providers.library import classify
from tests.cli.test_cli import _run


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_base_url_is_named_within_seconds(settings: Settings) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    provider = {"npm": "@ai-sdk/openai-compatible", "models": {"m1": {}}}
    provider["options"] = {"baseURL": base, "apiKey": "local-key"}
    config = {"provider": {"local": provider}}
    (settings.project_dir / "partwire.json").write_text(json.dumps(config))
    started = time.monotonic()
    code, _, err = await _run(settings, "run", "-m", "local/m1", "hi")
    assert code == 1
    expected = f"cannot reach provider local at {base} (connection refused): check its baseURL"
    assert expected in err
    # the retries are a line each, the cause said once, then the one final error
    assert "↻ retry 1 of 2 in " in err and "↻ retry 2 of 2 in 1.0s" in err
    assert "↻ retry 3" not in err and "the same error" in err
    assert err.count(expected) == 2  # the first retry's cause, and the final error
    assert "(gave up after 3 attempts)" in err and "to try again: partwire run -s ses_" in err
    assert time.monotonic() - started < 20  # two 1 s retries, not a minute of backoff


def test_a_connection_failure_is_classified_through_the_sdk_wrapping() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed")
        except ConnectionRefusedError as inner:
            raise RuntimeError("Connection error.") from inner
    except RuntimeError as wrapped:
        error = classify(wrapped, "team", "http://10.0.0.1/v1")
    assert error.kind == "unreachable" and error.retryable
    assert error.message == (
        "cannot reach provider team at http://10.0.0.1/v1 (connection refused): "
        "check its baseURL in partwire.json"
    )
    assert classify(RuntimeError("other"), "team").kind == "api"


def test_both_http_libraries_connect_and_transport_errors_are_named() -> None:
    """The SDKs raise httpx2's errors and some providers' clients httpx's: both are
    classified, whichever of them is imported (the server imports httpx only on use)."""
    import httpx
    import httpx2

    for module in (httpx, httpx2):
        refused = classify(module.ConnectError("no route to host"), "team", "http://10.0.0.1/v1")
        assert refused.kind == "unreachable" and "(no route to host)" in refused.message
        cut = classify(module.ReadError("reset by peer"), "team")
        assert cut.retryable and cut.message == "connection to provider team lost: reset by peer"
