"""OpenAI Chat Completions (OpenAI's API and every compatible server) with no SDK.

The request is one JSON body built from our turns; it goes out through the provider
transport (``providers/transport``) and its stream is decoded by ``chat_chunks``. Neither
the openai SDK nor pydantic-ai is imported on this path: together they held about 50 MB of
a server's memory and most of the CPU spent opening a stream, for a request whose shape
is small and stable.

What the body carries, as OpenAI's reference describes it:

- ``messages``: the system prompt; user turns (text, or a list of parts with images as
  ``image_url``, PDFs and other binary files as ``file`` with ``file_data``, text files
  inlined as text); assistant turns (``content`` with any reasoning before it in
  ``<think>`` tags, which is how compatible servers take it back, and ``tool_calls``
  with their arguments as JSON text); tool results (``role: tool``, ``tool_call_id``);
- ``tools`` as functions, with ``tool_choice: auto``;
- ``stream: true`` with ``stream_options.include_usage`` (the token counts come last).

An error status is read whole and classified by ``failures.status_error``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import httpx2

from partwire.config import ModelConfig, ProviderConfig
from partwire.errors import ProviderError
from partwire.providers.catalog import cost, facts
from partwire.providers.chat_chunks import ChunkDecoder, SseSplitter
from partwire.providers.failures import httpx_errors, status_error, transport_error
from partwire.providers.stream import (
    NOT_TAKEN,
    AssistantTurn,
    FileRef,
    Finish,
    FinishStep,
    ModelRequest,
    StartStep,
    StreamError,
    StreamEvent,
    StreamStart,
    TakeNow,
    ToolResultTurn,
    ToolSpec,
    UserTurn,
)
from partwire.providers.transport import BODY_EXTENSION, provider_http_client
from partwire.version import __version__

REASONING_PROVIDER = "openai"  # what a reasoning part's metadata names as its source
_ERROR_BODY_MAX = 64 * 1024


# ---- the request body ---------------------------------------------------------------------


def _data_url(url: str) -> tuple[str, bytes] | None:
    """(media type, bytes) of a base64 ``data:`` URL, or None if it is not one."""
    if not url.startswith("data:"):
        return None
    header, _, payload = url.partition(",")
    if not header.endswith(";base64"):
        return header[5:].split(";")[0], payload.encode()
    try:
        return header[5:].split(";")[0], base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


def _file_part(ref: FileRef) -> dict[str, Any]:
    if ref.mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": ref.url}}
    name = ref.filename or "file"
    decoded = _data_url(ref.url)
    if decoded is None:  # a remote document: the API takes no URL for one, so it is named
        return {"type": "text", "text": f"[attached file {name}: {ref.url}]"}
    media, data = decoded
    if media.startswith("text/") or media in ("application/json", "application/xml"):
        text = data.decode("utf-8", errors="replace")
        return {"type": "text", "text": f'<file name="{name}" type="{media}">\n{text}\n</file>'}
    return {"type": "file", "file": {"filename": name, "file_data": ref.url}}


def _user(turn: UserTurn) -> dict[str, Any]:
    if not turn.files:
        return {"role": "user", "content": turn.text}
    parts = [{"type": "text", "text": turn.text}, *(_file_part(f) for f in turn.files)]
    return {"role": "user", "content": parts}


def _assistant(turn: AssistantTurn) -> dict[str, Any]:
    thoughts = "".join(f"<think>\n{r.text}\n</think>\n\n" for r in turn.reasoning if r.text)
    message: dict[str, Any] = {"role": "assistant", "content": thoughts + turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.tool, "arguments": json.dumps(call.input)},
            }
            for call in turn.tool_calls
        ]
    if message["content"] is None and not turn.tool_calls:
        message["content"] = ""
    return message


def _tool_result(turn: ToolResultTurn) -> dict[str, Any]:
    content = f"Error: {turn.output}" if turn.is_error else turn.output
    return {"role": "tool", "tool_call_id": turn.call_id, "content": content}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    parameters = dict(spec.parameters)
    if parameters.get("type") == "object":
        parameters.setdefault("properties", {})  # some servers refuse an object without
    function = {"name": spec.name, "description": spec.description, "parameters": parameters}
    return {"type": "function", "function": function}


def chat_body(model_id: str, request: ModelRequest) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for turn in request.messages:
        if isinstance(turn, AssistantTurn):
            messages.append(_assistant(turn))
        elif isinstance(turn, ToolResultTurn):
            messages.append(_tool_result(turn))
        else:
            messages.append(_user(turn))
    body: dict[str, Any] = {"model": model_id, "messages": messages}
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        body["tool_choice"] = "auto"
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return body


# Each step's request offers the same tools (tools/base.py shares one ToolSpec a tool): their
# JSON, ~10 KB for the built-in ones, is made once for each set of specs. The specs are held
# with it, so an id in a key always names the spec it was made from.
_TOOLS_JSON: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], str]] = {}
_TOOLS_JSON_MOST = 64


def encoded_body(body: dict[str, Any], tools: tuple[ToolSpec, ...]) -> bytes:
    """``chat_body``'s result as the request's bytes; ``tools`` are the specs it offers."""
    if "tools" not in body:
        return json.dumps(body).encode()
    key = tuple(map(id, tools))
    found = _TOOLS_JSON.get(key)
    if found is None:
        if len(_TOOLS_JSON) >= _TOOLS_JSON_MOST:
            _TOOLS_JSON.clear()
        found = _TOOLS_JSON[key] = (tools, json.dumps(body["tools"]))
    rest = json.dumps({name: value for name, value in body.items() if name != "tools"})
    return f'{rest[:-1]}, "tools": {found[1]}}}'.encode()


# ---- the HTTP client ------------------------------------------------------------------------


class Refused(Exception):
    """The provider answered the request with an error status."""

    def __init__(self, error: StreamError) -> None:
        super().__init__(error.message)
        self.error = error


class ChatClient:
    """One provider's Chat Completions endpoint and its pooled connections."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        base = (config.base_url or "https://api.openai.com/v1").rstrip("/")
        self.url = f"{base}/chat/completions"
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "User-Agent": f"partwire/{__version__}",
            **config.headers,
        }
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self.headers = httpx2.Headers(headers)
        self._url = httpx2.URL(self.url)  # parsed once: each request's would parse it again
        self._http: httpx2.AsyncClient | None = None

    def _client(self) -> httpx2.AsyncClient:
        if self.config.blocked:
            raise ProviderError(self.config.blocked, kind="auth", provider_id=self.config.id)
        if self._http is None:
            options: dict[str, Any] = {
                "follow_redirects": True,
                "timeout": httpx2.Timeout(self.config.timeout_s),
            }
            self._http = provider_http_client(**options) or httpx2.AsyncClient(**options)
        return self._http

    async def open(self, body: bytes) -> httpx2.Response:
        """The streamed response once the provider accepted the request (body unread);
        ``Refused`` when it answered with an error status."""
        client = self._client()
        request = client.build_request("POST", self._url, content=body, headers=self.headers)
        response = await client.send(request, stream=True)
        if response.status_code < 400:
            return response
        try:
            raw = await _read_capped(response)
        finally:
            await response.aclose()
        text = raw.decode("utf-8", errors="replace")
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = None
        status = response.status_code
        raise Refused(status_error(self.config.id, status, parsed, response.headers, text))

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


async def _read_capped(response: httpx2.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= _ERROR_BODY_MAX:
            break
    return b"".join(chunks)[:_ERROR_BODY_MAX]


def _next_of(chunks: AsyncIterator[bytes]) -> Callable[[], Awaitable[bytes | None]]:
    async def read() -> bytes | None:
        return await anext(chunks, None)

    return read


# ---- the model ---------------------------------------------------------------------------


class OpenAIChatModel:
    """A LanguageModel on a Chat Completions endpoint."""

    def __init__(
        self, client: ChatClient, model_id: str, config: ModelConfig | None = None
    ) -> None:
        self.client = client
        self.provider_id = client.config.id
        self.model_id = model_id
        self.base_url = client.config.base_url
        self.config = config
        self.context_limit = facts(self.provider_id, model_id, config).context

    def cost(self, usage: Any) -> float:
        return cost(self.provider_id, self.model_id, self.config, usage)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self.stream_taking(request, None)

    async def stream_taking(
        self, request: ModelRequest, take_now: TakeNow | None
    ) -> AsyncIterator[StreamEvent]:
        """``stream``, whose events ``take_now`` may take in the read that brought them
        (providers/stream.py): what it takes is not yielded."""
        yield StreamStart()
        decoder = ChunkDecoder(REASONING_PROVIDER)
        body = chat_body(self.model_id, request)
        try:
            response = await self.client.open(encoded_body(body, request.tools))
        except Refused as refused:
            yield refused.error
            return
        except httpx_errors("TransportError") as exc:
            yield transport_error(exc, self.provider_id, self.base_url)
            return
        try:
            yield StartStep()
            chunks = _ChunkEvents(response, decoder, take_now)
            try:
                while (events := await chunks.next()) is not None:
                    for event in events:
                        yield event
            finally:
                chunks.close()
        except httpx_errors("TransportError") as exc:
            for event in decoder.finish():
                yield event
            yield transport_error(exc, self.provider_id, self.base_url)
            return
        finally:
            await response.aclose()
        for event in decoder.finish():
            yield event
        if decoder.error is not None:
            yield decoder.error
            return
        reason = decoder.reason()
        yield FinishStep(reason, decoder.usage)
        yield Finish(reason)


class _ChunkEvents:
    """The stream events of a response's body, one read's worth at a time. With
    ``take_now``, events that arrive while the reader waits go to it in the read that
    brought them; what it leaves (an event it does not take and those after it, what to
    await, an error) waits here for ``next``."""

    def __init__(
        self, response: httpx2.Response, decoder: ChunkDecoder, take_now: TakeNow | None = None
    ) -> None:
        self.decoder = decoder
        self.splitter = SseSplitter()
        body = response.extensions.get(BODY_EXTENSION)
        if body is None or "content-encoding" in response.headers:
            body, take_now = None, None
        self.read: Callable[[], Awaitable[bytes | None]] = (
            body.next_chunk if body is not None else _next_of(response.aiter_bytes())
        )
        self.ended = False
        self.left: list[StreamEvent] = []
        self.owed: Awaitable[None] | None = None
        self.failure: Exception | None = None
        self._body, self._take_now = body, take_now
        if body is not None and take_now is not None:
            body.take_directly(self._taken)

    def close(self) -> None:
        if self._body is not None:
            self._body.take_directly(None)

    def _taken(self, raw: bytes) -> bool:
        """Bytes read while the reader waits: their events to ``take_now`` until it leaves
        one. True when the reader must wake for what is left."""
        assert self._take_now is not None
        try:
            events = self._events(self.splitter.feed(raw))
            for n, event in enumerate(events):
                if self.left or self.owed is not None:
                    self.left += events[n:]
                    break
                taken = self._take_now(event)
                if taken is NOT_TAKEN:
                    self.left.append(event)
                elif taken is not None:
                    self.owed = cast(Awaitable[None], taken)
        except Exception as exc:  # raised in the reader's task, as if it had read them
            self.failure = exc
        return bool(self.left or self.owed is not None or self.failure or self.ended)

    async def next(self) -> list[StreamEvent] | None:
        """The events of the next bytes read (maybe none); None once the body ended, or
        a chunk was an error. What ``take_now`` left comes first: it may have left it
        while this read waited, before the bytes this read returns."""
        read: list[StreamEvent] = []
        if not (self.left or self.owed is not None or self.failure is not None):
            if self.ended:
                return None
            raw = await self.read()
            if raw is None:
                self.ended = True
                read = self._events(self.splitter.close())
            else:
                read = self._events(self.splitter.feed(raw))
        if self.owed is not None:
            owed, self.owed = self.owed, None
            await owed
        if self.failure is not None:
            raise self.failure
        events, self.left = self.left + read, []
        return events

    def _events(self, data: list[bytes]) -> list[StreamEvent]:
        decoder = self.decoder
        events: list[StreamEvent] = []
        for one in data:
            if decoder.error is not None:
                break
            events += decoder.feed_data(one)
        if decoder.error is not None:
            self.ended = True
        return events
