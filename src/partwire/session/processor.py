"""The processor: one model call's normalized stream → parts, tool runs and a finished message.

Text and reasoning stream as ``message.part.delta`` events. The part row is
rewritten only when the part starts, ends, and when the text not yet in the row
has grown as long as the text already there (a geometric schedule), so the bytes
written stay linear in the length of the text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from partwire import ids
from partwire.clock import now_ms
from partwire.errors import ProviderError, StorageError
from partwire.providers.base import LanguageModel
from partwire.providers.stream import ModelRequest
from partwire.schema.base import Tokens
from partwire.schema.event import (
    Draft,
    MessagePartUpdated,
    MessageUpdated,
    PartDeltaProps,
    PartUpdatedProps,
)
from partwire.schema.event import MessageInfo as MessageInfoProps
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
from partwire.schema.part import (
    APIError,
    APIErrorData,
    CreatedTime,
    Part,
    PatchPart,
    ReasoningPart,
    RetryPart,
    StepFinishPart,
    StepStartPart,
    StreamTime,
    TextPart,
)
from partwire.schema.session import SessionStatus, StatusBusy, StatusRetry
from partwire.session.compaction import estimate_tokens
from partwire.session.snapshot import Snapshots
from partwire.session.toolcalls import ContextFactory, ToolCalls, ToolLookup
from partwire.storage.base import Store

FLUSH_MIN_CHARS = 16_384

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


def flush_due(pending_chars: int, flushed_chars: int) -> bool:
    """Whether a streaming part's row should be rewritten now: once the text not yet in it
    is as long as the text already there (and at least FLUSH_MIN_CHARS)."""
    return pending_chars >= max(FLUSH_MIN_CHARS, flushed_chars)


@dataclass
class _Streaming:
    """A text or reasoning part that is receiving deltas."""

    part: TextPart | ReasoningPart
    chunks: list[str] = field(default_factory=list)
    flushed_chars: int = 0
    pending_chars: int = 0

    def text(self) -> str:
        joined = "".join(self.chunks)
        self.chunks = [joined]
        return joined


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
        self.message = message
        self.model = model
        self.streaming: dict[str, _Streaming] = {}
        self.abort = asyncio.Event()
        # what an aborted step is counted as when the model never reported its usage
        self._request_chars = 0
        self._unreported_chars = 0
        self._reported = False
        self.stop_reason: Literal["aborted", "shutdown"] = "aborted"
        self.calls = ToolCalls(
            base=self._base,
            save=self._save,
            lookup=tools,
            make_context=make_context,
            recent=list(recent_calls or []),
            abort=self.abort,
        )
        self._handlers: dict[str, Callable[[Any], Awaitable[None]]] = {
            "text-start": self._text_start,
            "text-delta": self._delta,
            "text-end": self._stream_end,
            "reasoning-start": self._reasoning_start,
            "reasoning-delta": self._delta,
            "reasoning-end": self._stream_end,
            "tool-input-start": lambda e: self.calls.input_start(e.id, e.tool_name),
            "tool-input-delta": lambda e: self.calls.input_delta(e.id, e.delta),
            "tool-call": lambda e: self.calls.call(e.call_id, e.tool_name, e.input),
            "start-step": self._start_step,
            "finish-step": self._finish_step,
            "finish": self._finish,
            "error": self._error,
        }

    # ---- the run -------------------------------------------------------------------------

    async def run(self, request: ModelRequest) -> AssistantMessage:
        """Consume the stream, retrying retryable failures; on cancellation, end as aborted."""
        self.store.clear_failure()
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
            log.warning("%s/%s failed: %s", *self._model_names(), exc.message)
            await self._close_open("error")
            self.message = self.message.model_copy(update={"error": message_error(exc)})
        except Exception as exc:  # a bug or a provider that broke its contract
            log.exception("%s/%s broke off", *self._model_names())
            await self._close_open("error")
            self.message = self.message.model_copy(
                update={"error": unknown_error(f"{type(exc).__name__}: {exc}")}
            )
        return await self._complete()

    async def _attempts(self, request: ModelRequest) -> None:
        attempt = 0
        while True:
            try:
                handled = 0
                async for event in self.model.stream(request):
                    handler = self._handlers.get(event.type)
                    if handler is not None:
                        await handler(event)
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

    def _model_names(self) -> tuple[str, str]:
        return self.message.provider_id, self.message.model_id

    async def _retry(self, attempt: int, exc: ProviderError) -> None:
        """Show the failure (a retry part, status retry), wait, then go back to busy."""
        await self._close_open("retry")
        delay = retry_delay(attempt, exc.retry_after_s)
        limit = UNREACHABLE_RETRIES if exc.kind == "unreachable" else MAX_RETRIES
        provider, model = self._model_names()
        log.warning("%s/%s retry %d in %.1fs: %s", provider, model, attempt, delay, exc.message)
        now = now_ms()
        await self._save(
            RetryPart(
                **self._base(),
                attempt=attempt,
                error=_api_error(exc, retry_plan(attempt, limit, delay)),
                time=CreatedTime(created=now),
            )
        )
        if self.set_status is not None:
            await self.set_status(
                StatusRetry(attempt=attempt, message=exc.message, next=now + int(delay * 1000))
            )
        await asyncio.sleep(delay)
        if self.set_status is not None:
            await self.set_status(StatusBusy())
        self.abort.clear()
        self.calls.tasks.clear()

    async def finish_aborted(self) -> AssistantMessage:
        """End as stopped: by a user, or (``stop_reason`` "shutdown") by the server's own
        stop, which clients label a restart."""
        await self._close_open(self.stop_reason)
        estimate = self._estimated_usage()
        error = aborted_error(RESTART_INTERRUPTED) if self.stop_reason == "shutdown" else None
        self.message = self.message.model_copy(
            update={
                "error": error or aborted_error(),
                "tokens": self.message.tokens.plus(estimate),
            }
        )
        return await self._complete()

    def _estimated_usage(self) -> Tokens:
        """The tokens of a step stopped before the model reported its usage, estimated at
        four characters a token (clients show them as estimates on an aborted message):
        the request, unless a finished step counted it, and what streamed since."""
        input_tokens = 0 if self._reported else estimate_tokens(self._request_chars)
        output = estimate_tokens(self._unreported_chars)
        return Tokens(total=input_tokens + output, input=input_tokens, output=output)

    async def _finish_unstored(self, exc: StorageError) -> AssistantMessage:
        """The store refused a write (disk full, I/O error): stop the model call and end
        the message with that error. The small message write goes first, as it is the
        likeliest to fit; closing the parts is best effort (recovery closes what is left
        at the next start). Nothing already committed is touched."""
        self.abort.set()
        await self.calls.cancel()
        self.message = self.message.model_copy(update={"error": unknown_error(exc.message)})
        finished = await self._complete()
        with contextlib.suppress(StorageError):
            await self._close_open("error")
        return finished

    async def _complete(self) -> AssistantMessage:
        finished = self.message.model_copy(
            update={"time": self.message.time.model_copy(update={"completed": now_ms()})}
        )
        self.message = finished
        await self.store.put_message(finished, [message_event(finished)])
        return finished

    # ---- parts ---------------------------------------------------------------------------

    async def _save(self, part: Part, *, streaming: bool = False) -> None:
        event = MessagePartUpdated(
            PartUpdatedProps(session_id=part.session_id, part=part, time=now_ms())
        )
        await self.store.put_part(part, [event], streaming=streaming)

    def _base(self) -> dict[str, str]:
        return {
            "id": ids.part_id(),
            "session_id": self.message.session_id,
            "message_id": self.message.id,
        }

    async def _text_start(self, event: Any) -> None:
        part = TextPart(**self._base(), text="", time=StreamTime(start=now_ms()))
        self.streaming[event.id] = _Streaming(part)
        await self._save(part, streaming=True)

    async def _reasoning_start(self, event: Any) -> None:
        part = ReasoningPart(**self._base(), text="", time=StreamTime(start=now_ms()))
        self.streaming["reasoning:" + event.id] = _Streaming(part)
        await self._save(part, streaming=True)

    def _streaming_for(self, event: Any) -> _Streaming:
        key = "reasoning:" + event.id if event.type.startswith("reasoning") else event.id
        current = self.streaming.get(key)
        if current is None:
            raise ProviderError(f"{event.type} for {event.id} arrived before its start event")
        return current

    async def _delta(self, event: Any) -> None:
        current = self._streaming_for(event)
        current.chunks.append(event.delta)
        current.pending_chars += len(event.delta)
        self._unreported_chars += len(event.delta)
        part = current.part
        await self.store.append_delta(
            PartDeltaProps(
                session_id=part.session_id,
                message_id=part.message_id,
                part_id=part.id,
                field="text",
                delta=event.delta,
            )
        )
        if flush_due(current.pending_chars, current.flushed_chars):
            await self._flush(current)

    async def _flush(self, current: _Streaming) -> None:
        text = current.text()
        current.flushed_chars, current.pending_chars = len(text), 0
        part = current.part.model_copy(update={"text": text})
        await self.store.put_part(part, [], streaming=True)

    async def _stream_end(self, event: Any) -> None:
        current = self._streaming_for(event)
        metadata = getattr(event, "metadata", None)
        if metadata:
            current.part = current.part.model_copy(update={"metadata": metadata})
        await self._end_streaming(current)
        key = "reasoning:" + event.id if event.type.startswith("reasoning") else event.id
        self.streaming.pop(key, None)

    async def _end_streaming(self, current: _Streaming) -> None:
        part = current.part
        assert part.time is not None
        ended = part.model_copy(
            update={"text": current.text(), "time": StreamTime(start=part.time.start, end=now_ms())}
        )
        await self._save(ended)

    # ---- steps and the end ---------------------------------------------------------------

    async def _start_step(self, event: Any) -> None:
        if self.snapshots is not None:
            self.step_snapshot = await self.snapshots.track()
        await self._save(StepStartPart(**self._base(), snapshot=self.step_snapshot))

    async def _finish_step(self, event: Any) -> None:
        await self.calls.wait()  # the step's tools belong to it: their changes too
        end_snapshot = await self._record_patch()
        usage = event.usage
        tokens = Tokens(
            total=usage.input + usage.output + usage.reasoning,
            input=usage.input,
            output=usage.output,
            reasoning=usage.reasoning,
            cache=Tokens.Cache(read=usage.cache_read, write=usage.cache_write),
        )
        step_cost = self.model.cost(usage)
        self._reported, self._unreported_chars = True, 0
        await self._save(
            StepFinishPart(
                **self._base(),
                reason=event.finish_reason,
                tokens=tokens,
                cost=step_cost,
                snapshot=end_snapshot,
            )
        )
        self.message = self.message.model_copy(
            update={
                "tokens": self.message.tokens.plus(tokens),
                "finish": event.finish_reason,
                "cost": self.message.cost + step_cost,
            }
        )

    async def _record_patch(self) -> str | None:
        """Snapshot the end of the step; a patch part lists the files it changed."""
        if self.snapshots is None or self.step_snapshot is None:
            return None
        end = await self.snapshots.track()
        files = await self.snapshots.changed_files(self.step_snapshot)
        if files:
            absolute = [str(self.snapshots.project_dir / name) for name in files]
            self.patched.extend(absolute)
            await self._save(PatchPart(**self._base(), hash=self.step_snapshot, files=absolute))
        return end

    async def _finish(self, event: Any) -> None:
        update: dict[str, Any] = {"finish": event.finish_reason}
        if event.finish_reason == "length":  # the answer was cut at the output limit
            update["error"] = MessageOutputLengthError()
        self.message = self.message.model_copy(update=update)

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

    async def _close_open(self, why: str) -> None:
        """Bring every open part to a terminal state (abort or failure)."""
        self.abort.set()
        await self.calls.cancel()
        for current in list(self.streaming.values()):
            await self._end_streaming(current)
        self.streaming.clear()
        await self.calls.fail_open(why)


def message_event(message: AssistantMessage) -> Draft:
    return MessageUpdated(MessageInfoProps(session_id=message.session_id, info=message))


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
