"""Which history a fork holds: up to a message (opencode's fork) or up to a part.

A fork at a part keeps everything before the part's message and that message's parts
up to and including the part (``cut="after"``: a tool call with its result) or up to
just before it (``cut="before"``: the model, prompted again, calls anew; a message left
with nothing but its step's start is left out). The message cut short keeps the usage
of the steps it still holds, and a part still open when the fork was taken (the
session was busy) is closed as a crash's would be, so the copy is a finished
conversation a model can be given.
"""

from __future__ import annotations

from typing import Literal

from partwire.clock import now_ms
from partwire.errors import BadRequestError, NotFoundError
from partwire.schema.base import Tokens
from partwire.schema.message import AssistantMessage, MessageWithParts, aborted_error
from partwire.schema.part import Part, ReasoningPart, StepFinishPart, TextPart, ToolPart

Cut = Literal["after", "before"]
FORK_INTERRUPTED = "the session was forked before this tool call returned"
FORK_UNFINISHED = "the session was forked while this message was being written"
# a message cut down to these says nothing: the fork leaves it out
_BOOKKEEPING = frozenset({"step-start", "snapshot"})


def forked_history(
    history: list[MessageWithParts],
    message_id: str | None,
    part_id: str | None = None,
    cut: Cut | None = None,
) -> list[MessageWithParts]:
    """The messages a fork of ``history`` holds (positions by history order, never ids)."""
    if part_id is None:
        if cut is not None:
            raise BadRequestError("cut applies to a fork at a part: give partID", field="cut")
        return _before_message(history, message_id)
    index, position = _find_part(history, message_id, part_id)
    entry = history[index]
    keep = position + 1 if (cut or "after") == "after" else position
    kept = [*history[:index]]
    if any(p.type not in _BOOKKEEPING for p in entry.parts[:keep]):
        kept.append(_cut_short(entry, entry.parts[:keep]))
    return [_finished(e) for e in kept]


def _before_message(
    history: list[MessageWithParts], message_id: str | None
) -> list[MessageWithParts]:
    if message_id is None:
        return [_finished(e) for e in history]
    index = next((i for i, e in enumerate(history) if e.info.id == message_id), None)
    if index is None:
        raise NotFoundError("Message", message_id)
    return [_finished(e) for e in history[:index]]


def _find_part(
    history: list[MessageWithParts], message_id: str | None, part_id: str
) -> tuple[int, int]:
    for index, entry in enumerate(history):
        for position, part in enumerate(entry.parts):
            if part.id == part_id:
                if message_id is not None and entry.info.id != message_id:
                    raise BadRequestError(
                        f"part {part_id} belongs to message {entry.info.id}, not {message_id}",
                        field="partID",
                    )
                return index, position
    raise NotFoundError("Part", part_id)


def _cut_short(entry: MessageWithParts, parts: list[Part]) -> MessageWithParts:
    """``entry`` holding only ``parts``: an assistant message counts the usage of the
    steps it keeps, and an error that came after the cut is not its own."""
    if len(parts) == len(entry.parts) or not isinstance(entry.info, AssistantMessage):
        return entry.model_copy(update={"parts": parts})
    steps = [p for p in parts if isinstance(p, StepFinishPart)]
    tokens = Tokens()
    for step in steps:
        tokens = tokens.plus(step.tokens)
    info = entry.info.model_copy(
        update={
            "tokens": tokens,
            "cost": sum(step.cost for step in steps),
            "finish": steps[-1].reason if steps else None,
            "error": None,
        }
    )
    return MessageWithParts(info=info, parts=parts)


def _finished(entry: MessageWithParts) -> MessageWithParts:
    """``entry`` with every open part closed and, for an assistant message still being
    written, an end: a busy session's fork is a finished copy."""
    from partwire.builder import StreamingMessageBuilder  # only a busy session's fork

    info = entry.info
    open_message = isinstance(info, AssistantMessage) and info.time.completed is None
    if not open_message and not any(_open(part) for part in entry.parts):
        return entry  # the common case: no builder is made
    builder = StreamingMessageBuilder.resume(info.id, entry.parts, session_id=info.session_id)
    builder.close_open(FORK_INTERRUPTED)
    if isinstance(info, AssistantMessage) and info.time.completed is None:
        info = info.model_copy(
            update={
                "time": info.time.model_copy(update={"completed": now_ms()}),
                "error": info.error or aborted_error(FORK_UNFINISHED),
            }
        )
    return MessageWithParts(info=info, parts=builder.parts)


def _open(part: Part) -> bool:
    """A text still streaming, or a tool call without its result."""
    if isinstance(part, TextPart | ReasoningPart):
        return part.time is not None and part.time.end is None
    return isinstance(part, ToolPart) and part.state.status in ("pending", "running")
