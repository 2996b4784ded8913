"""Real providers through pydantic-ai's direct streaming API (one library for all of them).

``LibraryModel`` turns our request into pydantic-ai messages, streams with
``model_request_stream``, and maps its part events onto our normalized stream
events; its classified exceptions become ProviderErrors of the right kind.
The SDK clients are built with ``max_retries=0``: retries are the session
loop's job, where they are visible.
"""

from __future__ import annotations

import base64
import json
import sys
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from pydantic_ai import exceptions as pa_errors
from pydantic_ai import messages as pa
from pydantic_ai.direct import model_request_stream
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from partwire.config import ModelConfig, key_source
from partwire.providers.catalog import cost, facts
from partwire.providers.chat_chunks import ChunkDecoder, SseSplitter
from partwire.providers.stream import (
    AssistantTurn,
    FileRef,
    Finish,
    FinishReason,
    FinishStep,
    ModelRequest,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StartStep,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolResultTurn,
    Usage,
    UserTurn,
)
from partwire.providers.transport import BODY_EXTENSION

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_call": "tool-calls",
    "content_filter": "content-filter",
    "error": "error",
}


# ---- request: our turns → pydantic-ai messages ---------------------------------------------


def _file(ref: FileRef) -> pa.UserContent:
    if ref.url.startswith("data:"):
        header, _, payload = ref.url.partition(",")
        return pa.BinaryContent(data=base64.b64decode(payload), media_type=header[5:].split(";")[0])
    if ref.mime.startswith("image/"):
        return pa.ImageUrl(url=ref.url)
    return pa.DocumentUrl(url=ref.url)


def _user(turn: UserTurn) -> pa.UserPromptPart:
    if not turn.files:
        return pa.UserPromptPart(content=turn.text)
    return pa.UserPromptPart(content=[turn.text, *(_file(f) for f in turn.files)])


def _assistant(turn: AssistantTurn, provider: str) -> pa.ModelResponse:
    parts: list[pa.ModelResponsePart] = [
        pa.ThinkingPart(
            content=r.text,
            signature=(r.metadata or {}).get("signature"),
            provider_name=(r.metadata or {}).get("provider") or provider,
        )
        for r in turn.reasoning
    ]
    if turn.text:
        parts.append(pa.TextPart(content=turn.text))
    parts += [
        pa.ToolCallPart(tool_name=c.tool, args=c.input, tool_call_id=c.call_id)
        for c in turn.tool_calls
    ]
    return pa.ModelResponse(parts=parts or [pa.TextPart(content="")])


def _tool_result(turn: ToolResultTurn) -> pa.ToolReturnPart:
    content = f"Error: {turn.output}" if turn.is_error else turn.output
    return pa.ToolReturnPart(tool_name=turn.tool, content=content, tool_call_id=turn.call_id)


def to_messages(request: ModelRequest, provider: str) -> list[pa.ModelMessage]:
    messages: list[pa.ModelMessage] = []
    pending: list[pa.ModelRequestPart] = [pa.SystemPromptPart(content=request.system)]
    for turn in request.messages:
        if isinstance(turn, AssistantTurn):
            if pending:
                messages.append(pa.ModelRequest(parts=pending))
                pending = []
            messages.append(_assistant(turn, provider))
        elif isinstance(turn, ToolResultTurn):
            pending.append(_tool_result(turn))
        else:
            pending.append(_user(turn))
    if pending:
        messages.append(pa.ModelRequest(parts=pending))
    return messages


def _parameters(request: ModelRequest) -> ModelRequestParameters:
    tools = [
        ToolDefinition(name=t.name, description=t.description, parameters_json_schema=t.parameters)
        for t in request.tools
    ]
    return ModelRequestParameters(function_tools=tools, allow_text_output=True)


# ---- response: pydantic-ai events → our stream events ---------------------------------------


@dataclass
class _Mapper:
    """Keeps what each open part index is, to close it with the right end event."""

    provider: str
    open: dict[int, pa.ModelResponsePart] = field(default_factory=dict)
    signatures: dict[int, str] = field(default_factory=dict)
    called: bool = False

    def start(self, index: int, part: pa.ModelResponsePart) -> list[StreamEvent]:
        self.open[index] = part
        key = f"p{index}"
        if isinstance(part, pa.TextPart):
            return [TextStart(key), *([TextDelta(key, part.content)] if part.content else [])]
        if isinstance(part, pa.ThinkingPart):
            if part.signature:
                self.signatures[index] = part.signature
            delta = [ReasoningDelta(key, part.content)] if part.content else []
            return [ReasoningStart(key), *delta]
        if isinstance(part, pa.ToolCallPart):
            raw = part.args_as_json_str() if part.args else ""
            first = [ToolInputDelta(part.tool_call_id, raw)] if raw and raw != "{}" else []
            return [ToolInputStart(part.tool_call_id, part.tool_name), *first]
        return []

    def delta(self, index: int, delta: pa.ModelResponsePartDelta) -> list[StreamEvent]:
        key = f"p{index}"
        if isinstance(delta, pa.TextPartDelta):
            return [TextDelta(key, delta.content_delta)] if delta.content_delta else []
        if isinstance(delta, pa.ThinkingPartDelta):
            if delta.signature_delta:
                self.signatures[index] = self.signatures.get(index, "") + delta.signature_delta
            return [ReasoningDelta(key, delta.content_delta)] if delta.content_delta else []
        if isinstance(delta, pa.ToolCallPartDelta):
            part = self.open.get(index)
            args = delta.args_delta
            text = args if isinstance(args, str) else json.dumps(args) if args else ""
            if isinstance(part, pa.ToolCallPart) and text:
                return [ToolInputDelta(part.tool_call_id, text)]
        return []

    def end(self, index: int, part: pa.ModelResponsePart) -> list[StreamEvent]:
        self.open.pop(index, None)
        key = f"p{index}"
        if isinstance(part, pa.TextPart):
            return [TextEnd(key)]
        if isinstance(part, pa.ThinkingPart):
            signature = part.signature or self.signatures.get(index)
            metadata = {"provider": part.provider_name or self.provider}
            if signature:
                metadata["signature"] = signature
            return [ReasoningEnd(key, metadata)]
        if isinstance(part, pa.ToolCallPart):
            self.called = True
            call_id = part.tool_call_id
            return [
                ToolInputEnd(call_id),
                ToolCall(call_id, part.tool_name, part.args_as_json_str()),
            ]
        return []

    def close_all(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for index, part in list(self.open.items()):
            events += self.end(index, part)
        return events


def _usage(response: pa.ModelResponse) -> Usage:
    u = response.usage
    return Usage(
        input=u.input_tokens,
        output=u.output_tokens,
        reasoning=getattr(u, "output_reasoning_tokens", 0) or 0,
        cache_read=u.cache_read_tokens,
        cache_write=u.cache_write_tokens,
    )


def _finish(response: pa.ModelResponse, called: bool) -> FinishReason:
    reason = _FINISH.get(response.finish_reason or "", "stop")
    return "tool-calls" if called and reason == "stop" else reason


def auth_message(provider: str, status: int | None) -> str:
    """What to fix when a provider refuses the key, instead of the SDK's raw error."""
    where = key_source(provider)
    refused = f" (HTTP {status})" if status else ""
    return f"authentication failed for provider {provider}{refused}: check {where}"


def _httpx_errors(name: str) -> tuple[type[Exception], ...]:
    """httpx2's exception ``name`` (what the SDKs send through), and httpx's once anything
    has imported it (some providers' clients): not imported, none of its errors exist."""
    found: tuple[type[Exception], ...] = (getattr(httpx2, name),)
    if (httpx := sys.modules.get("httpx")) is not None:
        found += (getattr(httpx, name),)
    return found


UNREACHABLE_RETRY_S = 1.0  # connection refused is retried briefly, then named


def _connect_failure(exc: BaseException) -> str | None:
    """Why the connection behind an SDK error failed, if that is what went wrong."""
    seen: set[int] = set()
    reason: str | None = None
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, _httpx_errors("ConnectError")):
            reason = str(current) or "cannot connect"
        current = current.__cause__ or current.__context__
    return reason


def unreachable_message(provider: str, base_url: str | None, reason: str) -> str:
    where = f" at {base_url}" if base_url else ""
    fix = "its baseURL in partwire.json" if base_url else "your network"
    return f"cannot reach provider {provider}{where} ({reason}): check {fix}"


def classify(exc: Exception, provider: str, base_url: str | None = None) -> StreamError:
    """A pydantic-ai / SDK exception as our stream error, with retryability and kind."""
    message = str(exc)
    if (failure := _connect_failure(exc)) is not None:
        return StreamError(
            unreachable_message(provider, base_url, failure),
            retryable=True,
            retry_after_s=UNREACHABLE_RETRY_S,
            kind="unreachable",
        )
    retry_after = getattr(exc, "retry_after", None)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, pa_errors.ModelAuthenticationError) or status in (401, 403):
        return StreamError(auth_message(provider, status), status_code=status, kind="auth")
    if isinstance(exc, pa_errors.ModelContextWindowExceededError):
        return StreamError(message, status_code=status, kind="context_overflow")
    if isinstance(exc, pa_errors.OutputTokenLimitExceeded):
        return StreamError(message, kind="output_length")
    if isinstance(exc, pa_errors.ContentFilterError):
        return StreamError(message, kind="content_filter")
    if isinstance(exc, _httpx_errors("TransportError")):  # the stream broke off after it had begun
        reason = str(exc) or type(exc).__name__
        return StreamError(f"connection to provider {provider} lost: {reason}", retryable=True)
    retryable = isinstance(
        exc,
        pa_errors.ModelRateLimitError
        | pa_errors.ModelUnavailableError
        | pa_errors.ModelServerError
        | pa_errors.ModelConnectionError
        | pa_errors.ModelTimeoutError,
    ) or (status is not None and (status == 429 or status >= 500))
    return StreamError(message, retryable=retryable, status_code=status, retry_after_s=retry_after)


class LibraryModel:
    """A LanguageModel backed by a pydantic-ai Model (OpenAI, Anthropic, compatible APIs)."""

    def __init__(
        self,
        provider_id: str,
        model_id: str,
        build: Callable[[], Model],
        config: ModelConfig | None = None,
        base_url: str | None = None,
    ) -> None:
        self.provider_id = provider_id
        self.base_url = base_url
        self.model_id = model_id
        self.config = config
        self.context_limit = facts(provider_id, model_id, config).context
        self._build = build

    def cost(self, usage: Usage) -> float:
        return cost(self.provider_id, self.model_id, self.config, usage)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        mapper = _Mapper(self.provider_id)
        yield StreamStart()
        try:
            model = self._build()
            messages = to_messages(request, self.provider_id)
            async with model_request_stream(
                model, messages, model_request_parameters=_parameters(request)
            ) as response:
                yield StartStep()  # only once the provider has accepted the request
                async for event in response:
                    for mapped in self._map(mapper, event):
                        yield mapped
                final = response.get()
        except (pa_errors.AgentRunError, pa_errors.UserError) as exc:
            for mapped in mapper.close_all():
                yield mapped
            yield classify(exc, self.provider_id, self.base_url)
            return
        for mapped in mapper.close_all():
            yield mapped
        reason = _finish(final, mapper.called)
        yield FinishStep(reason, _usage(final))
        yield Finish(reason)

    @staticmethod
    def _map(mapper: _Mapper, event: Any) -> list[StreamEvent]:
        if isinstance(event, pa.PartStartEvent):
            return mapper.start(event.index, event.part)
        if isinstance(event, pa.PartDeltaEvent):
            return mapper.delta(event.index, event.delta)
        if isinstance(event, pa.PartEndEvent):
            return mapper.end(event.index, event.part)
        return []


class ChatCompletionsModel(LibraryModel):
    """OpenAI Chat Completions (and compatible servers), decoded without the SDK's models.

    pydantic-ai builds and sends the request, so message mapping, settings and the
    classification of a refused request are its own; the accepted stream's bytes are read
    here and decoded by ``chat_chunks`` (a dict per chunk, no pydantic model, no generator
    stack), which is what a streamed token costs on the hot path.
    """

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        yield StreamStart()
        model = self._build()
        decoder = ChunkDecoder(getattr(model, "system", self.provider_id))
        failures: tuple[type[Exception], ...] = (
            pa_errors.AgentRunError,
            pa_errors.UserError,
            *_httpx_errors("TransportError"),
        )
        try:
            opened = await _open_chat_stream(model, request, self.provider_id)
            if isinstance(opened, pa.ModelResponse):  # refused by a content filter up front
                yield StreamError(
                    "the provider's content filter refused the prompt", kind="content_filter"
                )
                return
            async with opened:
                yield StartStep()
                async for event in _decode(opened.response, decoder):
                    yield event
        except failures as exc:
            for event in decoder.finish():
                yield event
            yield classify(exc, self.provider_id, self.base_url)
            return
        for event in decoder.finish():
            yield event
        if decoder.error is not None:
            yield decoder.error
            return
        reason = decoder.reason()
        yield FinishStep(reason, decoder.usage)
        yield Finish(reason)


async def _open_chat_stream(model: Model, request: ModelRequest, provider: str) -> Any:
    """The SDK's stream object once the provider accepted the request (not yet read)."""
    settings, parameters = _prepared(model, request, provider)
    create = model._completions_create  # type: ignore[attr-defined]
    return await create(to_messages(request, provider), True, dict(settings or {}), parameters)


# pydantic-ai's prepare_request rewrites every tool's JSON schema for the model's profile:
# about 3 ms a request with the built-in tools, paid again by every step of every session.
# Its result depends only on the model and the tools, so it is kept (the SDK builds fresh
# request dicts from it each time; nothing downstream changes it).
_PREPARED: OrderedDict[tuple[str, str, str], tuple[Any, ModelRequestParameters]] = OrderedDict()
_PREPARED_MAX = 64


def _prepared(
    model: Model, request: ModelRequest, provider: str
) -> tuple[Any, ModelRequestParameters]:
    tools = json.dumps([[t.name, t.description, t.parameters] for t in request.tools])
    key = (provider, model.model_name, tools)
    found = _PREPARED.get(key)
    if found is None:
        found = _PREPARED[key] = model.prepare_request(None, _parameters(request))
        if len(_PREPARED) > _PREPARED_MAX:
            _PREPARED.popitem(last=False)
    else:
        _PREPARED.move_to_end(key)
    return found


async def _decode(response: httpx2.Response, decoder: ChunkDecoder) -> AsyncIterator[StreamEvent]:
    splitter = SseSplitter()
    body = response.extensions.get(BODY_EXTENSION)
    raw_chunks = (
        body.chunks()
        if body is not None and "content-encoding" not in response.headers
        else response.aiter_bytes()
    )
    async for raw in raw_chunks:
        for data in splitter.feed(raw):
            for event in decoder.feed_data(data):
                yield event
            if decoder.error is not None:
                return
    for data in splitter.close():
        for event in decoder.feed_data(data):
            yield event
