"""The one writer of parts: a builder's frames → store writes and events.

Every producer's parts reach the store here, the processor's and a recording's alike:
a part row with ``message.part.updated`` when a part starts, changes state or ends;
text as ``message.part.delta``, with the row rewritten only on a geometric schedule (the
text not yet in the row as long as the text already there), so the bytes written stay
linear in the text's length; streamed tool arguments on a schedule of their own, for
the same reason; and the message info when the message ends. The store commits each
write before its events are published (durable before visible) and groups the writes
of a burst into one commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeGuard

from partwire import metrics
from partwire.clock import now_ms
from partwire.errors import StorageError
from partwire.schema.event import (
    Draft,
    MessagePartUpdated,
    MessageUpdated,
    PartDeltaProps,
    PartUpdatedProps,
    SessionError,
    SessionErrorProps,
)
from partwire.schema.event import MessageInfo as MessageInfoProps
from partwire.schema.message import AssistantMessage, Message
from partwire.schema.part import Part
from partwire.storage.base import Store, WriteBatch

if TYPE_CHECKING:  # a prompt's parts are saved without loading the builder (a lean start)
    from partwire.builder import StreamingMessageBuilder
    from partwire.schema.frames import BuiltMessage, Frame

log = logging.getLogger(__name__)
FLUSH_MIN_CHARS = 16_384
SAVE_LATER_EVERY_S = 1.0
SAVE_LATER_TRIES = 600  # ten minutes of a store that takes no write; then recovery does it
_later: set[asyncio.Task[None]] = set()  # the background writes, kept until they end
ARGS_EVERY_DELTA_CHARS = 4096


def flush_due(pending_chars: int, flushed_chars: int) -> bool:
    """Whether a streaming part's row should be rewritten now: once the text not yet in it
    is as long as the text already there (and at least FLUSH_MIN_CHARS)."""
    return pending_chars >= max(FLUSH_MIN_CHARS, flushed_chars)


def args_update_due(pending_chars: int, shown_chars: int) -> bool:
    """Whether a call's streaming arguments should be written and published now. Every
    delta while they are short; past that, once what is new is a quarter of what is
    shown, so the bytes written for a call stay linear in its arguments' length (each
    update holds all of them)."""
    return shown_chars + pending_chars <= ARGS_EVERY_DELTA_CHARS or (
        pending_chars * 4 >= shown_chars
    )


def part_event(part: Part, time: int | None = None) -> Draft:
    props = PartUpdatedProps(session_id=part.session_id, part=part, time=time or now_ms())
    return MessagePartUpdated(props)


def message_event(info: Message) -> Draft:
    return MessageUpdated(MessageInfoProps(session_id=info.session_id, info=info))


async def save_part(
    store: Store, part: Part, *, streaming: bool = False, time: int | None = None
) -> None:
    """Store ``part`` whole and publish it (a part edited after the fact, a copy): its
    row with ``part_event``, as the writer's batches add a frame's part (``_add_row``)."""
    await store.put_part(part, [part_event(part, time)], streaming=streaming)


async def save_message(store: Store, info: Message) -> None:
    await store.put_message(info, [message_event(info)])


async def save_parts(store: Store, info: Message, parts: list[Part]) -> None:
    """Parts whole at once (a note's) joining message ``info``: through the builder, each
    written and published once, in one commit."""
    batch = store.batch()
    add_parts(batch, store, info, parts)
    await batch.commit()


def add_parts(batch: WriteBatch, store: Store, info: Message, parts: list[Part]) -> None:
    """``save_parts``, the rows added to ``batch`` (a prompt's: committed with its message
    and its session's touch)."""
    from partwire.builder import StreamingMessageBuilder  # with the first prompt: a lean start

    builder = StreamingMessageBuilder(info.id, info.role, session_id=info.session_id)
    frames = [frame for part in parts for frame in builder.add_part(part)]
    MessageWriter(store, builder, info).add_rows(batch, frames)


def _session_error(info: Message) -> Draft:
    error = getattr(info, "error", None)
    return SessionError(SessionErrorProps(session_id=info.session_id, error=error))


def completed_info(info: Message, built: BuiltMessage) -> Message:
    """``info`` once its message ended: an assistant message gains the built message's
    tokens, cost, finish and error, and its completion time."""
    if not isinstance(info, AssistantMessage):
        return info
    return info.model_copy(
        update={
            "tokens": info.tokens.plus(built.tokens),
            "cost": info.cost + built.cost,
            "finish": built.finish or info.finish,
            "error": built.error,
            "time": info.time.model_copy(update={"completed": now_ms()}),
        }
    )


def _usage_counted(info: Message, built: BuiltMessage) -> TypeGuard[AssistantMessage]:
    """Whether an ended message used tokens or cost anything (an answer's, not a prompt's)."""
    return isinstance(info, AssistantMessage) and bool(built.cost or built.tokens.counted)


def _count_usage(info: AssistantMessage, built: BuiltMessage) -> None:
    """An answer's tokens (by kind) and cost, for GET /metrics."""
    tokens = built.tokens
    kinds = {
        "input": tokens.input,
        "output": tokens.output,
        "reasoning": tokens.reasoning,
        "cache_read": tokens.cache.read,
        "cache_write": tokens.cache.write,
    }
    metrics.count_usage(info.provider_id, info.model_id, kinds, built.cost)


def _completed_next(frames: list[Frame], position: int) -> bool:
    after = frames[position + 1] if position + 1 < len(frames) else None
    start = frames[position]
    return (
        after is not None
        and after.type == "part_complete"
        and start.type == "part_start"
        and after.part_index == start.part_index
    )


class MessageWriter:
    """Writes the frames of one message's builder (``info`` is the message's row)."""

    def __init__(self, store: Store, builder: StreamingMessageBuilder, info: Message) -> None:
        self.store = store
        self.builder = builder
        self.info = info
        self._pending: dict[int, int] = {}  # text streamed since the row was written
        self._flushed: dict[int, int] = {}  # … and the text in the row, by part index
        self._args: dict[int, int] = {}  # streamed arguments, by part index
        self._args_shown: dict[int, int] = {}  # … and how much of them the part shows

    async def write(self, frames: list[Frame]) -> None:
        """The frames' rows, those between two text deltas in one commit."""
        batch = self.store.batch()
        completed: BuiltMessage | None = None
        for position, frame in enumerate(frames):
            if frame.type == "part_delta" and frame.args_delta is None:
                assert frame.delta is not None
                await batch.commit()  # the rows before the delta, first
                if (waiting := self.text_delta(frame.part_index, frame.delta)) is not None:
                    await waiting
                continue
            self._add_row(batch, frames, position)
            if frame.type == "message_complete":
                completed = frame.message
        await batch.commit()
        if completed is not None and _usage_counted(self.info, completed):
            _count_usage(self.info, completed)

    def add_rows(self, batch: WriteBatch, frames: list[Frame]) -> None:
        """The rows of ``frames`` (whole parts, no text deltas) added to ``batch``."""
        for position in range(len(frames)):
            self._add_row(batch, frames, position)

    def _add_row(self, batch: WriteBatch, frames: list[Frame], position: int) -> None:
        frame = frames[position]
        if frame.type == "part_start":
            if not _completed_next(frames, position):  # else written once, complete
                streaming = frame.part.type in ("text", "reasoning")
                batch.put_part(frame.part, [part_event(frame.part)], streaming=streaming)
        elif frame.type == "part_delta":
            assert frame.args_delta is not None, "text deltas are not rows"
            self._args_delta(batch, frame.part_index, frame.args_delta)
        elif frame.type in ("part_update", "part_complete"):
            self._pending.pop(frame.part_index, None)
            batch.put_part(frame.part, [part_event(frame.part)])
        elif frame.type == "message_complete":
            self._complete(batch, frame.message)

    async def write_message_first(self, frames: list[Frame]) -> None:
        """The store refused a write (disk full, its lock held elsewhere): clients are told
        the message's end at once (unlogged), then it is written first, as the small write
        likeliest to fit, and the parts' ends follow as far as they fit (recovery closes
        what is left at the next start). When even the message cannot be written, clients
        are told the session's error too, the write is tried again in the background until
        the store takes it, and the StorageError goes on up."""
        for frame in frames:
            if frame.type != "message_complete":
                continue
            self.info = completed_info(self.info, frame.message)
            self.store.announce([message_event(self.info)])
            try:
                await save_message(self.store, self.info)
            except StorageError:
                self.store.announce([_session_error(self.info)])
                task = asyncio.create_task(self._save_later(self.info))
                _later.add(task)
                task.add_done_callback(_later.discard)
                raise
        with contextlib.suppress(StorageError):
            await self.write([f for f in frames if f.type != "message_complete"])

    async def _save_later(self, info: Message) -> None:
        for _ in range(SAVE_LATER_TRIES):
            await asyncio.sleep(SAVE_LATER_EVERY_S)
            try:
                await save_message(self.store, info)
                return
            except StorageError:
                continue
            except Exception:  # the store closed meanwhile: recovery ends it at the start
                log.warning("message %s: its end was not stored before the stop", info.id)
                return
        log.error("message %s: its end could not be stored; recovery ends it", info.id)

    def text_delta(self, index: int, delta: str) -> Awaitable[None] | None:
        """Text the builder's part ``index`` grew by: a delta event; the row is rewritten
        on the geometric schedule, so a crash loses little. None when that is all queued,
        else what to await (the row's rewrite, or the store's backpressure) before the
        next: most tokens are one call, not a coroutine."""
        part = self.builder.stored_part(index)  # as stored: joining the text is O(text)
        waiting = self.store.append_delta(
            PartDeltaProps.streamed(part.session_id, part.message_id, part.id, delta)
        )
        pending = self._pending.get(index, 0) + len(delta)
        if not flush_due(pending, self._flushed.get(index, 0)):
            self._pending[index] = pending
            return waiting
        text = self.builder.streamed_text(index)
        self._flushed[index], self._pending[index] = len(text), 0
        rewrite = self.store.put_part(part.model_copy(update={"text": text}), [], streaming=True)
        return rewrite if waiting is None else _in_turn(waiting, rewrite)

    def _args_delta(self, batch: WriteBatch, index: int, delta: str) -> None:
        total = self._args.get(index, 0) + len(delta)
        self._args[index] = total
        shown = self._args_shown.get(index, 0)
        if args_update_due(total - shown, shown):
            self._args_shown[index] = total
            part = self.builder.part(index)
            batch.put_part(part, [part_event(part)])

    def _complete(self, batch: WriteBatch, built: BuiltMessage) -> None:
        """The message's end, with its usage added to the session's totals."""
        self.info = completed_info(self.info, built)
        batch.put_message(self.info, [message_event(self.info)])
        if _usage_counted(self.info, built):
            batch.add_spend(self.info.session_id, built.tokens, built.cost)


async def _in_turn(*awaitables: Awaitable[None]) -> None:
    for awaitable in awaitables:
        await awaitable
