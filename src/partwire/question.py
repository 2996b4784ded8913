"""Questions the model asks the user (the ``question`` tool), answered over HTTP."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from partwire import ids
from partwire.errors import BadRequestError, NotFoundError, RejectedError
from partwire.permission import OpenElsewhere, check_reply_size
from partwire.schema.event import (
    Event,
    QuestionAsked,
    QuestionRef,
    QuestionRejected,
    QuestionReplied,
    QuestionRepliedProps,
    answered_by,
)
from partwire.schema.permission import QuestionInfo, QuestionRequest, ToolRef
from partwire.storage.base import Store

Answers = list[list[str]]


if TYPE_CHECKING:
    from partwire.permission import Forward


@dataclass
class _Pending:
    request: QuestionRequest
    future: asyncio.Future[Answers | None]


class Questions:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: dict[str, _Pending] = {}
        # servers sharing a database: an answer to another server's question is sent to it
        self.forward: Forward | None = None
        self._elsewhere = OpenElsewhere[QuestionRequest](
            "question.asked", ("question.replied", "question.rejected")
        )

    def holds(self, request_id: str) -> bool:
        """Whether the ask is this server's and still open."""
        return request_id in self._pending

    def pending(self) -> list[QuestionRequest]:
        """The open questions: this server's, then those other servers' events show."""
        return [p.request for p in self._pending.values()] + self._elsewhere.besides(self._pending)

    def observe(self, event: Event) -> None:
        """Servers sharing a database: follow every server's questions through the log."""
        self._elsewhere.observe(event)

    async def ask(
        self, session_id: str, questions: list[QuestionInfo], tool: ToolRef | None = None
    ) -> Answers:
        """Publish the questions and wait; raises RejectedError if the user dismisses them."""
        request = QuestionRequest(
            id=ids.ascending("que"), session_id=session_id, questions=questions, tool=tool
        )
        future: asyncio.Future[Answers | None] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = _Pending(request, future)
        try:
            await self.store.publish([QuestionAsked(request)])
            answers = await future
        finally:
            self._pending.pop(request.id, None)
        if answers is None:
            raise RejectedError("The user dismissed the question.")
        return answers

    def _take(self, request_id: str) -> _Pending:
        pending = self._pending.get(request_id)
        if pending is None:
            raise NotFoundError("Question request", request_id)
        return pending

    async def reply(self, request_id: str, answers: Answers) -> None:
        check_reply_size(answers)
        if request_id not in self._pending and await self._forwarded(
            {"op": "question.reply", "id": request_id, "answers": answers}
        ):
            return
        pending = self._take(request_id)
        expected = len(pending.request.questions)
        if len(answers) != expected:
            raise BadRequestError(
                f"Expected {expected} answer(s), one list of labels per question; "
                f"got {len(answers)}",
                field="answers",
            )
        self._pending.pop(request_id, None)
        props = QuestionRepliedProps(
            session_id=pending.request.session_id, request_id=request_id, answers=answers
        )
        answered = answered_by(pending.request.session_id, request_id)
        await self.store.publish([QuestionReplied(props), *answered])
        if not pending.future.done():
            pending.future.set_result(answers)

    async def _forwarded(self, command: dict[str, Any]) -> bool:
        return self.forward is not None and await self.forward(command)

    async def reject(self, request_id: str) -> None:
        if request_id not in self._pending and await self._forwarded(
            {"op": "question.reject", "id": request_id}
        ):
            return
        pending = self._take(request_id)
        self._pending.pop(request_id, None)
        ref = QuestionRef(session_id=pending.request.session_id, request_id=request_id)
        answered = answered_by(pending.request.session_id, request_id)
        await self.store.publish([QuestionRejected(ref), *answered])
        if not pending.future.done():
            pending.future.set_result(None)

    async def cancel_session(self, session_id: str) -> None:
        for pending in [p for p in self._pending.values() if p.request.session_id == session_id]:
            await self.reject(pending.request.id)
