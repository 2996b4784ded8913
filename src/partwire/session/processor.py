"""The processor: one model call's normalized stream → builder calls, tool runs, a message.

The processor is one producer among several: it turns the model's stream events into
calls of the one builder (builder.py) and hands the frames to the one writer
(session/writer.py), as a recording does for an external loop. What is its own:
retries with a visible status, mapping failures to named message errors, snapshots and
patches around each step, token estimates for a step stopped early, and running tools.
Text deltas take the hot path: ``builder.grow`` and ``writer.text_delta``, no frame
object per delta; from a model that offers it (``stream_taking``) they are taken in the
read that brought them, with no task woken per token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from partwire import metrics
from partwire.builder import StreamingMessageBuilder, StreamKind
from partwire.clock import now_ms
from partwire.errors import BuilderError, ProviderError, StorageError
from partwire.providers.base import LanguageModel
from partwire.providers.stream import NOT_TAKEN, ModelRequest, StreamEvent
from partwire.schema.base import Tokens
from partwire.schema.message import (
    RESTART_INTERRUPTED,
    AssistantMessage,
    ContentFilterError,
    ContextOverflowData,
    ContextOverflowError,
    MessageData,
    MessageError,
    MessageOutputLengthError,
    ProviderAuthError,
    ProviderAuthErrorData,
    aborted_error,
    unknown_error,
)
from partwire.schema.part import APIError, APIErrorData
from partwire.schema.session import SessionStatus, StatusBusy, StatusRetry
from partwire.session.compaction import estimate_tokens
from partwire.session.snapshot import Snapshots
from partwire.session.toolcalls import CLOSE_REASONS, ContextFactory, ToolCalls, ToolLookup
from partwire.session.writer import MessageWriter
from partwire.storage.base import Store

StatusUpdate = Callable[[SessionStatus], Awaitable[None]]
log = logging.getLogger(__name__)
MAX_RETRIES = 5
UNREACHABLE_RETRIES = 2  # a refused connection rarely heals in seconds: say so soon
RETRY_BASE_S = 2.0
RETRY_MAX_S = 30.0
# A model stream read from a full buffer yields events without ever suspending; handing
# the loop over every this many events lets commits be published and SSE written meanwhile
# (else the first delta of a burst waits for hundreds behind it).
YIELD_EVERY = 32
_DELTAS = frozenset({"text-delta", "reasoning-delta"})


class Processor:
    """Runs one model call for one assistant message. Create one per step."""

    def __init__(
        self,
        store: Store,
        message: AssistantMessage,
        model: LanguageModel,
        tools: ToolLookup,
        make_context: ContextFactory,
        recent_calls: list[tuple[str, str]] | None = None,
        set_status: StatusUpdate | None = None,
        snapshots: Snapshots | None = None,
    ) -> None:
        self.set_status = set_status
        self.snapshots = snapshots
        self.step_snapshot: str | None = None
        self.patched: list[str] = []
        self.store = store
        self.model = model
        self.builder = StreamingMessageBuilder(
            message.id, "assistant", session_id=message.session_id
        )
        self.writer = MessageWriter(store, self.builder, message)
        self.abort = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None  # the one running ``run``
        # what an aborted step is counted as when the model never reported its usage
        self._request_chars = 0
        self._unreported_chars = 0
        self._reported = False
        self._shortfall: MessageError | None = None  # an answer cut at the output limit
        self.stop_reason: Literal["aborted", "shutdown"] = "aborted"
        self.calls = ToolCalls(
            builder=self.builder,
            writer=self.writer,
            lookup=tools,
            make_context=make_context,
            recent=list(recent_calls or []),
            abort=self.abort,
        )
        b, w = self.builder, self.writer
        # a handler returns what to await, if anything (a token: mostly nothing)
        self._handlers: dict[str, Callable[[Any], Awaitable[None] | None]] = {
            "text-start": lambda e: w.write(b.start_text(e.id)),
            "text-delta": self._delta,
            "text-end": lambda e: w.write(b.end_text(e.id, metadata=_metadata(e))),
            "reasoning-start": lambda e: w.write(b.start_reasoning(e.id)),
            "reasoning-delta": self._delta,
            "reasoning-end": lambda e: w.write(b.end_reasoning(e.id, metadata=_metadata(e))),
            "tool-input-start": lambda e: self.calls.input_start(e.id, e.tool_name),
            "tool-input-delta": lambda e: self.calls.input_delta(e.id, e.delta),
            "tool-call": lambda e: self.calls.call(e.call_id, e.tool_name, e.input),
            "start-step": self._start_step,
            "finish-step": self._finish_step,
            "finish": self._finish,
            "error": self._error,
        }

    @property
    def message(self) -> AssistantMessage:
        """The message as stored: complete once run (or finish_aborted) returned."""
        info = self.writer.info
        assert isinstance(info, AssistantMessage)
        return info

    # ---- the run -------------------------------------------------------------------------

    async def run(self, request: ModelRequest) -> AssistantMessage:
        """Consume the stream, retrying retryable failures; on cancellation, end as aborted."""
        self.store.clear_failure()
        self._task = asyncio.current_task()
        self._request_chars = request_chars(request)
        try:
            await self._attempts(request)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return await self.finish_aborted()
        except StorageError as exc:
            return await self._finish_unstored(exc)
        except ProviderError as exc:
            _count_failure(self.message.provider_id, exc)
            log.warning("%s/%s failed: %s", *self._model_names(), exc.message)
            return await self._fail(message_error(exc))
        except Exception as exc:  # a bug or a provider that broke its contract
            log.exception("%s/%s broke off", *self._model_names())
            return await self._fail(unknown_error(f"{type(exc).__name__}: {exc}"))
        await self.writer.write(self.builder.finish(error=self._shortfall))
        return self.message

    async def _attempts(self, request: ModelRequest) -> None:
        attempt = 0
        while True:
            try:
                handled = 0
                async for event in self._events(request):
                    handler = self._handlers.get(event.type)
                    if handler is not None and (waiting := handler(event)) is not None:
                        await waiting
                    handled += 1
                    if handled % YIELD_EVERY == 0:
                        await asyncio.sleep(0)
                await self.calls.wait()
                return
            except (ConnectionError, TimeoutError) as exc:  # a dropped or stalled stream
                error = ProviderError(f"{type(exc).__name__}: {exc}", retryable=True)
                if attempt >= MAX_RETRIES:
                    raise error from exc
                attempt += 1
                await self._retry(attempt, error)
            except ProviderError as exc:
                limit = UNREACHABLE_RETRIES if exc.kind == "unreachable" else MAX_RETRIES
                if not exc.retryable or attempt >= limit:
                    raise
                attempt += 1
                await self._retry(attempt, exc)

    def _events(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        taking = getattr(self.model, "stream_taking", None)
        if taking is None:
            return self.model.stream(request)
        events: AsyncIterator[StreamEvent] = taking(request, self._take_now)
        return events

    def _take_now(self, event: StreamEvent) -> object:
        """A text or reasoning delta, taken in the read that brought it (providers/stream.py's
        TakeNow); anything else, or anything once the run is being stopped, comes through
        the stream."""
        if event.type not in _DELTAS or self.abort.is_set():
            return NOT_TAKEN
        task = self._task
        if task is None or task.done() or task.cancelling():
            return NOT_TAKEN
        return self._delta(event)

    def _model_names(self) -> tuple[str, str]:
        return self.message.provider_id, self.message.model_id

    async def _retry(self, attempt: int, exc: ProviderError) -> None:
        """Show the failure (a retry part, status retry), wait, then go back to busy."""
        _count_failure(self.message.provider_id, exc)
        await self._stop_tools()
        delay = retry_delay(attempt, exc.retry_after_s)
        limit = UNREACHABLE_RETRIES if exc.kind == "unreachable" else MAX_RETRIES
        provider, model = self._model_names()
        log.warning("%s/%s retry %d in %.1fs: %s", provider, model, attempt, delay, exc.message)
        error = _api_error(exc, retry_plan(attempt, limit, delay))
        await self.writer.write(self.builder.add_retry(attempt, error))
        if self.set_status is not None:
            await self.set_status(
                StatusRetry(attempt=attempt, message=exc.message, next=now_ms() + int(delay * 1000))
            )
        await asyncio.sleep(delay)
        if self.set_status is not None:
            await self.set_status(StatusBusy())
        self.abort.clear()

    async def finish_aborted(self) -> AssistantMessage:
        """End as stopped: by a user, or (``stop_reason`` "shutdown") by the server's own
        stop, which clients label a restart."""
        if self.builder.done:  # the stop came as the message was being stored complete
            return self.message
        await self._stop_tools()
        self.builder.add_usage(self._estimated_usage())
        error = aborted_error(RESTART_INTERRUPTED) if self.stop_reason == "shutdown" else None
        frames = self.builder.fail(
            error or aborted_error(), tool_error=CLOSE_REASONS[self.stop_reason]
        )
        await self.writer.write(frames)
        return self.message

    def _estimated_usage(self) -> Tokens:
        """The tokens of a step stopped before the model reported its usage, estimated at
        four characters a token (clients show them as estimates on an aborted message):
        the request, unless a finished step counted it, and what streamed since."""
        input_tokens = 0 if self._reported else estimate_tokens(self._request_chars)
        output = estimate_tokens(self._unreported_chars)
        return Tokens(total=input_tokens + output, input=input_tokens, output=output)

    async def _fail(self, error: MessageError) -> AssistantMessage:
        await self._stop_tools()
        await self.writer.write(self.builder.fail(error, tool_error=CLOSE_REASONS["error"]))
        return self.message

    async def _finish_unstored(self, exc: StorageError) -> AssistantMessage:
        """The store refused a write (disk full, I/O error): stop the model call and end
        the message with that error, the message's own write first. Nothing already
        committed is touched."""
        await self._stop_tools()
        frames = self.builder.fail(unknown_error(exc.message), tool_error=CLOSE_REASONS["error"])
        await self.writer.write_message_first(frames)
        return self.message

    async def _stop_tools(self) -> None:
        self.abort.set()
        await self.calls.cancel()

    # ---- the stream ----------------------------------------------------------------------

    def _delta(self, event: Any) -> Awaitable[None] | None:
        kind: StreamKind = "reasoning" if event.type == "reasoning-delta" else "text"
        try:
            index = self.builder.grow(kind, event.id, event.delta)
        except BuilderError as exc:
            raise ProviderError(
                f"{event.type} for {event.id} arrived before its start event"
            ) from exc
        self._unreported_chars += len(event.delta)
        return self.writer.text_delta(index, event.delta)

    async def _start_step(self, event: Any) -> None:
        if self.snapshots is not None:
            self.step_snapshot = await self.snapshots.track()
        await self.writer.write(self.builder.start_step(snapshot=self.step_snapshot))

    async def _finish_step(self, event: Any) -> None:
        await self.calls.wait()  # the step's tools belong to it: their changes too
        end_snapshot = await self._record_patch()
        usage = event.usage
        tokens = usage.tokens()
        step_cost = self.model.cost(usage)
        self._reported, self._unreported_chars = True, 0
        frames = self.builder.finish_step(
            tokens, step_cost, event.finish_reason, snapshot=end_snapshot
        )
        await self.writer.write(frames)

    async def _record_patch(self) -> str | None:
        """Snapshot the end of the step; a patch part lists the files it changed."""
        if self.snapshots is None or self.step_snapshot is None:
            return None
        end = await self.snapshots.track()
        files = await self.snapshots.changed_files(self.step_snapshot)
        if files:
            absolute = [str(self.snapshots.project_dir / name) for name in files]
            self.patched.extend(absolute)
            await self.writer.write(self.builder.add_patch(self.step_snapshot, absolute))
        return end

    async def _finish(self, event: Any) -> None:
        self.builder.set_finish_reason(event.finish_reason)
        if event.finish_reason == "length":  # the answer was cut at the output limit
            self._shortfall = MessageOutputLengthError()

    async def _error(self, event: Any) -> None:
        raise ProviderError(
            event.message,
            retryable=event.retryable,
            status_code=event.status_code,
            retry_after_s=event.retry_after_s,
            kind=event.kind,
            provider_id=self.model.provider_id,
        )

    @property
    def blocked(self) -> bool:
        """A tool's permission or question was rejected without feedback: stop the loop."""
        return self.calls.blocked


def _metadata(event: Any) -> dict[str, Any] | None:
    metadata = getattr(event, "metadata", None)
    return metadata or None


def request_chars(request: ModelRequest) -> int:
    """About how much text a request sends (its system prompt and turns)."""
    size = len(request.system)
    for turn in request.messages:
        size += len(getattr(turn, "text", "") or getattr(turn, "output", "") or "")
    return size


def retry_delay(attempt: int, retry_after_s: float | None) -> float:
    """Exponential backoff (2 s, 4 s, 8 s … capped at 30 s); a retry-after wins."""
    if retry_after_s is not None:
        return max(0.0, retry_after_s)
    return float(min(RETRY_BASE_S * 2 ** (attempt - 1), RETRY_MAX_S))


def message_error(exc: ProviderError) -> MessageError:
    """The named error a message ends with when its model call failed."""
    if exc.kind == "auth":
        return ProviderAuthError(
            data=ProviderAuthErrorData(provider_id=exc.provider_id, message=exc.message)
        )
    if exc.kind == "context_overflow":
        return ContextOverflowError(data=ContextOverflowData(message=exc.message))
    if exc.kind == "output_length":
        return MessageOutputLengthError()
    if exc.kind == "content_filter":
        return ContentFilterError(data=MessageData(message=exc.message))
    return _api_error(exc)


def _api_error(exc: ProviderError, metadata: dict[str, str] | None = None) -> APIError:
    return APIError(
        data=APIErrorData(
            message=exc.message,
            status_code=exc.status_code,
            is_retryable=exc.retryable,
            metadata=metadata,
        )
    )


def retry_plan(attempt: int, limit: int, delay: float) -> dict[str, str]:
    """What a retry part tells clients of the retries to come (APIError metadata holds
    strings): how many there are at most, and how long, at most, until the last one."""
    later = sum(retry_delay(n, None) for n in range(attempt + 1, limit + 1))
    return {"maxAttempts": str(limit), "retryingForS": str(round(delay + later))}


def _count_failure(provider_id: str, exc: ProviderError) -> None:
    """A failed model call, for GET /metrics: its provider, class and whether it is retried."""
    metrics.count_provider_error(provider_id, exc.kind, exc.retryable)
