"""How a provider's failure reads as a StreamError: refused keys, unreachable servers,
HTTP error statuses. Imports no SDK, so the request paths that use no SDK stay light."""

from __future__ import annotations

import email.utils
import sys
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from partwire.config import key_source, shown_url
from partwire.providers.stream import StreamError

UNREACHABLE_RETRY_S = 1.0  # connection refused is retried briefly, then named

# Error codes and messages OpenAI-compatible servers use for a prompt over the context
# window (OpenAI, Azure, vLLM, llama.cpp, Ollama, OpenRouter, DeepSeek word it this way).
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_CONTEXT_MESSAGES = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "exceeds the context",
)
# A 429 that waiting does not cure: the account is out of credit.
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})


def auth_message(provider: str, status: int | None) -> str:
    """What to fix when a provider refuses the key, instead of the SDK's raw error."""
    where = key_source(provider)
    refused = f" (HTTP {status})" if status else ""
    return f"authentication failed for provider {provider}{refused}: check {where}"


def httpx_errors(name: str) -> tuple[type[Exception], ...]:
    """httpx2's exception ``name`` (what the SDKs send through), and httpx's once anything
    has imported it (some providers' clients): not imported, none of its errors exist."""
    found: tuple[type[Exception], ...] = (getattr(httpx2, name),)
    if (httpx := sys.modules.get("httpx")) is not None:
        found += (getattr(httpx, name),)
    return found


def connect_failure(exc: BaseException) -> str | None:
    """Why the connection behind an error failed, if that is what went wrong."""
    seen: set[int] = set()
    reason: str | None = None
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, httpx_errors("ConnectError")):
            reason = str(current) or "cannot connect"
        current = current.__cause__ or current.__context__
    return reason


def unreachable_message(provider: str, base_url: str | None, reason: str) -> str:
    where = f" at {shown_url(base_url)}" if base_url else ""
    fix = "its baseURL in partwire.json" if base_url else "your network"
    return f"cannot reach provider {provider}{where} ({reason}): check {fix}"


def unreachable(provider: str, base_url: str | None, reason: str) -> StreamError:
    return StreamError(
        unreachable_message(provider, base_url, reason),
        retryable=True,
        retry_after_s=UNREACHABLE_RETRY_S,
        kind="unreachable",
    )


def transport_error(exc: Exception, provider: str, base_url: str | None) -> StreamError:
    """A connection that failed before the answer (unreachable) or broke off during it."""
    if (failure := connect_failure(exc)) is not None:
        return unreachable(provider, base_url, failure)
    reason = str(exc) or type(exc).__name__
    return StreamError(f"connection to provider {provider} lost: {reason}", retryable=True)


def retry_after_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a refusal asks for: ``retry-after-ms``, or ``retry-after`` in seconds or as
    an HTTP date; None when neither is there or readable."""
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_fields(body: Any) -> tuple[str | None, str | None, str | None]:
    """(message, code, type) of an ``{"error": {...}}`` body, or of a bare error object."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, str):
        return error, None, None
    if not isinstance(error, dict):
        return None, None, None
    message, code, kind = error.get("message"), error.get("code"), error.get("type")
    return (
        str(message) if message is not None else None,
        str(code) if code is not None else None,
        str(kind) if kind is not None else None,
    )


def status_error(
    provider: str, status: int, body: Any, headers: Mapping[str, str], raw: str = ""
) -> StreamError:
    """An HTTP error status from an OpenAI-compatible API as our stream error."""
    message, code, kind = _error_fields(body)
    text = message or raw.strip()[:500] or f"HTTP {status}"
    said = f"{text} {code or ''} {kind or ''}".lower()
    if code in _QUOTA_CODES or kind in _QUOTA_CODES:
        return StreamError(text, status_code=status)
    if code in _CONTEXT_CODES or any(phrase in said for phrase in _CONTEXT_MESSAGES):
        return StreamError(text, status_code=status, kind="context_overflow")
    if status in (401, 403) or code == "invalid_api_key":
        return StreamError(auth_message(provider, status), status_code=status, kind="auth")
    if code == "content_filter" or kind == "content_filter":
        return StreamError(text, status_code=status, kind="content_filter")
    retryable = status in (408, 409, 429) or status >= 500
    wait = retry_after_s(headers) if retryable else None
    return StreamError(text, retryable=retryable, status_code=status, retry_after_s=wait)
