"""Rows written together, in one commit, all of them or none: a prompt with its parts
and its session's touch, or a message's end with its last parts and its usage. Each row
keeps its own events, logged in the order the rows were added."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from partwire.errors import IdConflictError
from partwire.schema.base import Tokens
from partwire.schema.event import Draft
from partwire.schema.message import Message
from partwire.schema.part import Part
from partwire.schema.session import Session
from partwire.storage.writes import (
    IdTakenError,
    MessagePut,
    PartPut,
    SessionPut,
    SpendAdd,
    Write,
    WriteContext,
)


@dataclass
class Together(Write):
    """Several writes as one: the writer's one-by-one retry of a failed batch retries them
    as one too, so a part never lands without the message it joins."""

    writes: list[Write] = field(default_factory=list)

    def apply(self, ctx: WriteContext) -> None:
        for write in self.writes:
            write.apply(ctx)


class Batch:
    """Rows added in order, then committed at once (``commit``); an empty batch commits
    nothing."""

    def __init__(self, submit: Callable[[Write], asyncio.Future[None]]) -> None:
        self._submit = submit
        self._writes: list[Write] = []

    def put_session(self, session: Session, events: list[Draft]) -> None:
        self._writes.append(SessionPut(events=events, session=session))

    def put_message(self, message: Message, events: list[Draft]) -> None:
        self._writes.append(MessagePut(events=events, message=message))

    def put_part(self, part: Part, events: list[Draft], *, streaming: bool = False) -> None:
        self._writes.append(PartPut(events=events, part=part, streaming=streaming))

    def add_spend(self, session_id: str, tokens: Tokens, cost: float) -> None:
        self._writes.append(SpendAdd(session_id=session_id, tokens=tokens, cost=cost))

    async def commit(self) -> None:
        writes, self._writes = self._writes, []
        if not writes:
            return
        try:
            await self._submit(writes[0] if len(writes) == 1 else Together(writes=writes))
        except IdTakenError as exc:
            raise IdConflictError(exc.field, exc.identifier) from None
