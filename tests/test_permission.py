"""Servers sharing a database list each other's open asks: Permissions and Questions
follow every server's asked/answered events beside their own pending asks."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from partwire.permission import Permissions
from partwire.question import Questions
from partwire.schema.event import (
    PermissionAsked,
    PermissionReplied,
    PermissionRepliedProps,
    QuestionAsked,
    QuestionRef,
    QuestionRejected,
    QuestionReplied,
    QuestionRepliedProps,
)
from partwire.schema.permission import PermissionRequest, QuestionInfo, QuestionRequest
from partwire.storage.base import Store


class _Published:
    """A store that only takes events (what asks and replies publish)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.published = asyncio.Event()

    async def publish(self, events: list[Any]) -> None:
        self.events += events
        self.published.set()

    async def get_session(self, session_id: str) -> Any:
        return SimpleNamespace(id=session_id, permission=None)  # no rules of its own


def _permission(request_id: str) -> PermissionRequest:
    return PermissionRequest(id=request_id, session_id="ses_x", permission="bash", patterns=["ls"])


async def test_other_servers_asks_are_listed_until_answered_and_ours_once() -> None:
    store = _Published()
    permissions = Permissions(cast(Store, store))
    asking = asyncio.create_task(
        permissions.ask(
            session_id="ses_x", permission="bash", patterns=["rm"], agent_rules=[],
            request_id="per_ours",
        )
    )  # fmt: skip
    await store.published.wait()
    ours = store.events[0]  # our own ask comes back through the log too
    theirs = PermissionAsked(_permission("per_theirs")).with_id("evt_1")
    for event in (ours.with_id("evt_0"), theirs):
        permissions.observe(event)
    assert [p.id for p in permissions.pending()] == ["per_ours", "per_theirs"]
    assert permissions.holds("per_ours") and not permissions.holds("per_theirs")
    reply = PermissionRepliedProps(session_id="ses_x", request_id="per_theirs", reply="once")
    permissions.observe(PermissionReplied(reply).with_id("evt_2"))
    assert [p.id for p in permissions.pending()] == ["per_ours"]
    await permissions.reply("per_ours", "once")
    await asking
    permissions.observe(store.events[-1].with_id("evt_3"))
    assert permissions.pending() == []


def test_other_servers_questions_are_listed_until_replied_or_rejected() -> None:
    questions = Questions(cast(Store, _Published()))
    info = QuestionInfo.model_validate({"question": "?", "header": "h", "options": []})
    for request_id in ("que_a", "que_b"):
        request = QuestionRequest(id=request_id, session_id="ses_x", questions=[info])
        questions.observe(QuestionAsked(request).with_id(f"evt_{request_id}"))
    assert [q.id for q in questions.pending()] == ["que_a", "que_b"]
    replied = QuestionRepliedProps(session_id="ses_x", request_id="que_a", answers=[["x"]])
    questions.observe(QuestionReplied(replied).with_id("evt_1"))
    assert [q.id for q in questions.pending()] == ["que_b"]
    questions.observe(
        QuestionRejected(QuestionRef(session_id="ses_x", request_id="que_b")).with_id("evt_2")
    )
    assert questions.pending() == [] and not questions.holds("que_b")
