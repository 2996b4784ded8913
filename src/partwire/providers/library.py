"""OpenAI's Responses API and Anthropic through pydantic-ai's direct streaming API.

(Chat Completions, OpenAI's and every compatible server's, go through ``openai_chat``.)
``LibraryModel`` turns our request into pydantic-ai messages, streams with
``model_request_stream``, and maps its part events onto our normalized stream
events; its classified exceptions become ProviderErrors of the right kind.
The SDK clients are built with ``max_retries=0``: retries are the session
loop's job, where they are visible.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import exceptions as pa_errors
from pydantic_ai import messages as pa
from pydantic_ai.direct import model_request_stream
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from partwire.config import ModelConfig
from partwire.providers.catalog import cost, facts
from partwire.providers.failures import (
    auth_message,
    connect_failure,
    httpx_errors,
    transport_error,
    unreachable,
)
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
        ToolDefinition(
            name=t.name,
            description=t.description,
            parameters_json_schema=copy.deepcopy(t.parameters),  # the spec's own is shared
        )
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


def classify(exc: Exception, provider: str, base_url: str | None = None) -> StreamError:
    """A pydantic-ai / SDK exception as our stream error, with retryability and kind."""
    message = str(exc)
    if (failure := connect_failure(exc)) is not None:
        return unreachable(provider, base_url, failure)
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
    if isinstance(exc, httpx_errors("TransportError")):  # the stream broke off after it had begun
        return transport_error(exc, provider, base_url)
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
