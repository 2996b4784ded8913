"""The processor: one model call's normalized stream → parts, tool runs and a finished message.

Text and reasoning stream as ``message.part.delta`` events. The part row is
rewritten only when the part starts, ends, and when the text not yet in the row
has grown as long as the text already there (a geometric schedule), so the bytes
written stay linear in the length of the text.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from partwire import ids
from partwire.errors import AbortedError, ProviderError, RejectedError, ToolError
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
from partwire.schema.message import AssistantMessage, aborted_error, unknown_error
from partwire.schema.part import (
    APIError,
    APIErrorData,
    CreatedTime,
    FilePart,
    Part,
    PatchPart,
    ReasoningPart,
    RetryPart,
    StepFinishPart,
    StepStartPart,
    StreamTime,
    TextPart,
    ToolPart,
)
from partwire.schema.session import SessionStatus, StatusBusy, StatusRetry
from partwire.schema.tool_state import (
    FinishedTime,
    RunningTime,
    ToolState,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    check_transition,
)
from partwire.session.snapshot import Snapshots
from partwire.storage.base import Store
from partwire.tools.base import MetadataUpdate, Tool, ToolContext, ToolResult

FLUSH_MIN_CHARS = 16_384
ABORTED_TOOL = "Tool execution aborted"

ToolLookup = Callable[[str], Tool[Any] | None]
StatusUpdate = Callable[[SessionStatus], Awaitable[None]]
MAX_RETRIES = 5
RETRY_BASE_S = 2.0
RETRY_MAX_S = 30.0
ContextFactory = Callable[[str, MetadataUpdate, asyncio.Event], ToolContext]
DOOM_LOOP_THRESHOLD = 3


def now_ms() -> int:
    return int(time.time() * 1000)


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
        self.tools = tools
        self.make_context = make_context
        self.recent_calls = list(recent_calls or [])
        self.blocked = False
        self.streaming: dict[str, _Streaming] = {}
        self.tool_parts: dict[str, ToolPart] = {}
        self.tool_tasks: dict[str, asyncio.Task[None]] = {}
        self.abort = asyncio.Event()
        self._handlers: dict[str, Callable[[Any], Awaitable[None]]] = {
            "text-start": self._text_start,
            "text-delta": self._delta,
            "text-end": self._stream_end,
            "reasoning-start": self._reasoning_start,
            "reasoning-delta": self._delta,
            "reasoning-end": self._stream_end,
            "tool-input-start": self._tool_input_start,
            "tool-input-delta": self._tool_input_delta,
            "tool-call": self._tool_call,
            "start-step": self._start_step,
            "finish-step": self._finish_step,
            "finish": self._finish,
            "error": self._error,
        }

    # ---- the run -------------------------------------------------------------------------

    async def run(self, request: ModelRequest) -> AssistantMessage:
        """Consume the stream, retrying retryable failures; on cancellation, end as aborted."""
        try:
            await self._attempts(request)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return await self.finish_aborted()
        except ProviderError as exc:
            await self._close_open("error")
            self.message = self.message.model_copy(update={"error": _api_error(exc)})
        except Exception as exc:  # a bug or a provider that broke its contract
            await self._close_open("error")
            self.message = self.message.model_copy(
                update={"error": unknown_error(f"{type(exc).__name__}: {exc}")}
            )
        return await self._complete()

    async def _attempts(self, request: ModelRequest) -> None:
        attempt = 0
        while True:
            try:
                async for event in self.model.stream(request):
                    handler = self._handlers.get(event.type)
                    if handler is not None:
                        await handler(event)
                await self._wait_tools()
                return
            except (ConnectionError, TimeoutError) as exc:  # a dropped or stalled stream
                error = ProviderError(f"{type(exc).__name__}: {exc}", retryable=True)
                if attempt >= MAX_RETRIES:
                    raise error from exc
                attempt += 1
                await self._retry(attempt, error)
            except ProviderError as exc:
                if not exc.retryable or attempt >= MAX_RETRIES:
                    raise
                attempt += 1
                await self._retry(attempt, exc)

    async def _retry(self, attempt: int, exc: ProviderError) -> None:
        """Show the failure (a retry part, status retry), wait, then go back to busy."""
        await self._close_open("retry")
        delay = retry_delay(attempt, exc.retry_after_s)
        now = now_ms()
        await self._save(
            RetryPart(
                **self._base(),
                attempt=attempt,
                error=_api_error(exc),
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
        self.tool_tasks.clear()

    async def finish_aborted(self) -> AssistantMessage:
        await self._close_open("aborted")
        self.message = self.message.model_copy(update={"error": aborted_error()})
        return await self._complete()

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
        if current.pending_chars >= max(FLUSH_MIN_CHARS, current.flushed_chars):
            await self._flush(current)

    async def _flush(self, current: _Streaming) -> None:
        text = current.text()
        current.flushed_chars, current.pending_chars = len(text), 0
        part = current.part.model_copy(update={"text": text})
        await self.store.put_part(part, [], streaming=True)

    async def _stream_end(self, event: Any) -> None:
        current = self._streaming_for(event)
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

    # ---- tools ---------------------------------------------------------------------------

    async def _set_tool_state(self, call_id: str, state: ToolState) -> ToolPart:
        part = self.tool_parts[call_id]
        check_transition(part.state, state)
        updated = part.model_copy(update={"state": state})
        self.tool_parts[call_id] = updated
        await self._save(updated)
        return updated

    async def _tool_input_start(self, event: Any) -> None:
        part = ToolPart(
            **self._base(),
            call_id=event.id,
            tool=event.tool_name,
            state=ToolStatePending(),
        )
        self.tool_parts[event.id] = part
        await self._save(part)

    async def _tool_input_delta(self, event: Any) -> None:
        part = self.tool_parts.get(event.id)
        if part is None or not isinstance(part.state, ToolStatePending):
            return
        await self._set_tool_state(
            event.id, ToolStatePending(input={}, raw=part.state.raw + event.delta)
        )

    async def _tool_call(self, event: Any) -> None:
        if event.call_id not in self.tool_parts:
            await self._tool_input_start(_InputStart(event.call_id, event.tool_name))
        started = now_ms()
        try:
            args = json.loads(event.input or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            error = f"The {event.tool_name} tool input is not valid JSON ({exc}); send an object."
            state = ToolStateError(
                input={}, error=error, time=FinishedTime(start=started, end=now_ms())
            )
            await self._set_tool_state(event.call_id, state)
            return
        await self._set_tool_state(
            event.call_id, ToolStateRunning(input=args, time=RunningTime(start=started))
        )
        self.tool_tasks[event.call_id] = asyncio.create_task(
            self._execute(event.call_id, event.tool_name, args, started)
        )

    async def _execute(self, call_id: str, name: str, args: dict[str, Any], started: int) -> None:
        tool = self.tools(name)
        ctx = self._tool_context(call_id)
        try:
            if tool is None:
                raise ToolError(f"There is no tool named {name}; use one of the tools offered.")
            await self._check_doom_loop(ctx, name, args)
            result = await tool.run(args, ctx)
        except RejectedError as exc:
            self.blocked = self.blocked or exc.feedback is None
            state: ToolState = ToolStateError(
                input=args, error=exc.message, time=FinishedTime(start=started, end=now_ms())
            )
        except (ToolError, AbortedError) as exc:
            state = ToolStateError(
                input=args, error=exc.message, time=FinishedTime(start=started, end=now_ms())
            )
        except OSError as exc:
            state = ToolStateError(
                input=args,
                error=f"{name} failed: {exc}",
                time=FinishedTime(start=started, end=now_ms()),
            )
        else:
            state = ToolStateCompleted(
                input=args,
                output=result.output,
                title=result.title,
                metadata=result.metadata,
                time=FinishedTime(start=started, end=now_ms()),
                attachments=self._attachments(result) or None,
            )
        await self._set_tool_state(call_id, state)

    async def _check_doom_loop(self, ctx: ToolContext, name: str, args: dict[str, Any]) -> None:
        """The same call for the third time in a row needs the user's go-ahead."""
        call = (name, json.dumps(args, sort_keys=True))
        repeated = self.recent_calls[-(DOOM_LOOP_THRESHOLD - 1) :]
        self.recent_calls.append(call)
        if len(repeated) == DOOM_LOOP_THRESHOLD - 1 and all(c == call for c in repeated):
            await ctx.ask(
                "doom_loop", [name], always=[name], metadata={"tool": name, "input": args}
            )

    def _attachments(self, result: ToolResult) -> list[dict[str, Any]]:
        return [
            FilePart(**self._base(), mime=item.mime, url=item.url, filename=item.filename).wire()
            for item in result.attachments
        ]

    def _tool_context(self, call_id: str) -> ToolContext:
        async def update(title: str | None, metadata: dict[str, Any]) -> None:
            part = self.tool_parts[call_id]
            if isinstance(part.state, ToolStateRunning):
                state = part.state.model_copy(
                    update={"title": title or part.state.title, "metadata": metadata}
                )
                await self._set_tool_state(call_id, state)

        return self.make_context(call_id, update, self.abort)

    async def _wait_tools(self) -> None:
        if self.tool_tasks:
            await asyncio.gather(*self.tool_tasks.values())

    # ---- steps and the end ---------------------------------------------------------------

    async def _start_step(self, event: Any) -> None:
        if self.snapshots is not None:
            self.step_snapshot = await self.snapshots.track()
        await self._save(StepStartPart(**self._base(), snapshot=self.step_snapshot))

    async def _finish_step(self, event: Any) -> None:
        await self._wait_tools()  # the step's tools belong to it: their changes too
        end_snapshot = await self._record_patch()
        usage = event.usage
        tokens = Tokens(
            total=usage.input + usage.output + usage.reasoning,
            input=usage.input,
            output=usage.output,
            reasoning=usage.reasoning,
            cache=Tokens.Cache(read=usage.cache_read, write=usage.cache_write),
        )
        await self._save(
            StepFinishPart(
                **self._base(),
                reason=event.finish_reason,
                tokens=tokens,
                cost=0,
                snapshot=end_snapshot,
            )
        )
        self.message = self.message.model_copy(
            update={"tokens": self.message.tokens.plus(tokens), "finish": event.finish_reason}
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
        self.message = self.message.model_copy(update={"finish": event.finish_reason})

    async def _error(self, event: Any) -> None:
        raise ProviderError(
            event.message,
            retryable=event.retryable,
            status_code=event.status_code,
            retry_after_s=event.retry_after_s,
        )

    async def _close_open(self, why: str) -> None:
        """Bring every open part to a terminal state (abort or failure)."""
        self.abort.set()
        for task in self.tool_tasks.values():
            task.cancel()
        if self.tool_tasks:
            await asyncio.gather(*self.tool_tasks.values(), return_exceptions=True)
        for current in list(self.streaming.values()):
            await self._end_streaming(current)
        self.streaming.clear()
        now = now_ms()
        for call_id, part in list(self.tool_parts.items()):
            state = part.state
            if isinstance(state, ToolStatePending | ToolStateRunning):
                start = state.time.start if isinstance(state, ToolStateRunning) else now
                error = {
                    "aborted": ABORTED_TOOL,
                    "retry": "The model call failed before this tool ran; it was retried",
                }.get(why, "The model call failed")
                await self._set_tool_state(
                    call_id,
                    ToolStateError(
                        input=state.input, error=error, time=FinishedTime(start=start, end=now)
                    ),
                )


@dataclass(frozen=True)
class _InputStart:
    id: str
    tool_name: str
    type: str = "tool-input-start"


def message_event(message: AssistantMessage) -> Draft:
    return MessageUpdated(MessageInfoProps(session_id=message.session_id, info=message))


def retry_delay(attempt: int, retry_after_s: float | None) -> float:
    """Exponential backoff (2 s, 4 s, 8 s … capped at 30 s); a retry-after wins."""
    if retry_after_s is not None:
        return max(0.0, retry_after_s)
    return float(min(RETRY_BASE_S * 2 ** (attempt - 1), RETRY_MAX_S))


def _api_error(exc: ProviderError) -> APIError:
    return APIError(
        data=APIErrorData(
            message=exc.message, status_code=exc.status_code, is_retryable=exc.retryable
        )
    )
