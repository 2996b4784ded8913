"""Permissions: rulesets of (permission, pattern) → allow | ask | deny, and the asks.

A tool calls ``ask`` with the permission it needs (``bash``, ``edit``,
``external_directory``, …) and the subjects it touches (a command, a path, a
URL). Each subject is checked against the agent's rules followed by the
session's; the *last* matching rule wins, and no match means ask. A deny
raises at once; an ask publishes ``permission.asked`` and blocks only that tool
until ``reply``: once, always (adds allow rules to the session, durable) or
reject.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Container, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from partwire import ids
from partwire.errors import BadRequestError, NotFoundError, PermissionDeniedError, RejectedError
from partwire.schema.event import (
    Event,
    PermissionAsked,
    PermissionReplied,
    PermissionRepliedProps,
    SessionInfo,
    SessionUpdated,
    answered_by,
)
from partwire.schema.permission import (
    PermissionReply,
    PermissionRequest,
    QuestionRequest,
    ToolRef,
)
from partwire.schema.session import PermissionRule
from partwire.storage.base import Store

if TYPE_CHECKING:
    from partwire.tools.base import Asker

Action = Literal["allow", "ask", "deny"]


# Servers sharing a database: hands a command (an answer to an ask, an abort) to the
# server that holds what it names; True when one does (the command is sent).
Forward = Callable[[dict[str, Any]], Awaitable[bool]]


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    body = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.compile(body)  # no DOTALL: a wildcard never crosses a newline


# What a reply to an ask may carry (it goes to the model, and to the server holding the
# ask): each text, and the number of answers.
MAX_REPLY_CHARS = 10_000
MAX_ANSWERS = 64


def check_reply_size(reply: str | list[list[str]] | None) -> None:
    """A 400 for a reply message or question answers past the limits."""
    if isinstance(reply, str) and len(reply) > MAX_REPLY_CHARS:
        raise BadRequestError(
            f"message: at most {MAX_REPLY_CHARS} characters (got {len(reply)})", field="message"
        )
    if isinstance(reply, list):
        texts = [label for answer in reply for label in answer]
        if len(reply) > MAX_ANSWERS or any(len(answer) > MAX_ANSWERS for answer in reply):
            raise BadRequestError(
                f"answers: at most {MAX_ANSWERS} lists of {MAX_ANSWERS} labels", field="answers"
            )
        if any(len(text) > MAX_REPLY_CHARS for text in texts):
            raise BadRequestError(
                f"answers: each at most {MAX_REPLY_CHARS} characters", field="answers"
            )


def wildcard(pattern: str, text: str) -> bool:
    """``*`` matches any run of characters but a newline (``/`` included), ``?`` one.

    A trailing `` *`` also matches nothing at all, so ``ls *`` allows a bare ``ls``.
    """
    if pattern.endswith(" *") and text == pattern[:-2]:
        return True
    return _compile(pattern).fullmatch(text) is not None


def unchecked_rules(rules: Sequence[PermissionRule]) -> list[PermissionRule]:
    """The rules that apply to a subject that could not be checked (an opaque shell
    line): deny and ask rules, and allow rules for every subject (``*``) only, since
    what a narrower allow covers cannot be told."""
    return [rule for rule in rules if rule.action != "allow" or rule.pattern == "*"]


def evaluate(permission: str, subject: str, rules: Sequence[PermissionRule]) -> Action:
    for rule in reversed(rules):
        if wildcard(rule.permission, permission) and wildcard(rule.pattern, subject):
            return rule.action
    return "ask"


Asked = TypeVar("Asked", PermissionRequest, QuestionRequest)


class OpenElsewhere(Generic[Asked]):
    """The asks of one kind that other servers sharing the database hold open, as their
    events in the log say (every server's own come back through the log too)."""

    def __init__(self, asked: str, closed: tuple[str, ...]) -> None:
        self._asked, self._closed = asked, closed
        self._open: dict[str, Asked] = {}

    def observe(self, event: Event) -> None:
        if event.type == self._asked:
            request = cast(Asked, event.properties)
            self._open[request.id] = request
        elif event.type in self._closed:
            self._open.pop(getattr(event.properties, "request_id", ""), None)

    def besides(self, ours: Container[str]) -> list[Asked]:
        """The open asks that are not among this server's own."""
        return [request for request in self._open.values() if request.id not in ours]


@dataclass
class _Pending:
    request: PermissionRequest
    rules: list[PermissionRule]
    future: asyncio.Future[tuple[PermissionReply, str | None]]
    must_ask: bool = False


class Permissions:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: dict[str, _Pending] = {}
        # servers sharing a database: a reply to another server's ask is sent to it
        self.forward: Forward | None = None
        self._elsewhere = OpenElsewhere[PermissionRequest](
            "permission.asked", ("permission.replied",)
        )

    def holds(self, request_id: str) -> bool:
        """Whether the ask is this server's and still open."""
        return request_id in self._pending

    def pending(self) -> list[PermissionRequest]:
        """The open asks: this server's, then those other servers' events show."""
        return [p.request for p in self._pending.values()] + self._elsewhere.besides(self._pending)

    def observe(self, event: Event) -> None:
        """Servers sharing a database: follow every server's asks through the log."""
        self._elsewhere.observe(event)

    async def _rules(
        self, session_id: str, agent_rules: Sequence[PermissionRule]
    ) -> list[PermissionRule]:
        session = await self.store.get_session(session_id)
        return [*agent_rules, *(session.permission or [])]

    async def ask(
        self,
        *,
        session_id: str,
        permission: str,
        patterns: Sequence[str],
        agent_rules: Sequence[PermissionRule],
        always: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        tool: ToolRef | None = None,
        must_ask: bool = False,
        ruled: bool = True,
        request_id: str | None = None,
        registered: asyncio.Event | None = None,
    ) -> PermissionReply:
        """Return when every pattern is allowed (with the reply that allowed it: "once"
        when the rules did); raise when one is denied or rejected.

        ``must_ask`` (fail closed: the subject could not be checked) asks even when
        narrower rules allow it; only a rule that allows every subject (pattern ``*``)
        covers it, and an "always" reply then adds no rule. An ask that is not ``ruled``
        (a budget: the user's own limit) is always asked, whatever the rules say."""
        if ruled:
            rules = await self._rules(session_id, agent_rules)
            if must_ask:
                rules = unchecked_rules(rules)
            actions = [evaluate(permission, pattern, rules) for pattern in patterns]
            for pattern, action in zip(patterns, actions, strict=True):
                if action == "deny":
                    raise PermissionDeniedError(permission, pattern)
            if all(action == "allow" for action in actions):
                return "once"
        if must_ask or not ruled:
            always = []
        request = PermissionRequest(
            id=request_id or ids.ascending("per"),
            session_id=session_id,
            permission=permission,
            patterns=list(patterns),
            metadata=metadata or {},
            always=list(always if always is not None else patterns),
            tool=tool,
        )
        future: asyncio.Future[tuple[PermissionReply, str | None]] = (
            asyncio.get_running_loop().create_future()
        )
        self._pending[request.id] = _Pending(
            request, list(agent_rules), future, must_ask or not ruled
        )
        if registered is not None:  # a caller that returns once the ask is pending
            registered.set()
        try:
            await self.store.publish([PermissionAsked(request)])
            reply, message = await future
        finally:
            self._pending.pop(request.id, None)
        if reply == "reject":
            raise RejectedError("The user rejected permission to use this tool.", message)
        return reply

    def asker(
        self, session_id: str, agent_rules: Sequence[PermissionRule], tool: ToolRef | None = None
    ) -> Asker:
        """``ask`` bound to a session and its agent's rules, as tools call it."""

        async def ask(
            permission: str,
            patterns: Sequence[str],
            *,
            always: Sequence[str] | None = None,
            metadata: dict[str, Any] | None = None,
            must_ask: bool = False,
        ) -> None:
            await self.ask(
                session_id=session_id,
                permission=permission,
                patterns=patterns,
                agent_rules=agent_rules,
                always=always,
                metadata=metadata,
                tool=tool,
                must_ask=must_ask,
            )

        return ask

    async def effect(
        self,
        session_id: str,
        permission: str,
        patterns: Sequence[str],
        agent_rules: Sequence[PermissionRule],
    ) -> Action:
        """What the rules say of these subjects together: deny if any is denied, allow if
        all are allowed, else ask."""
        rules = await self._rules(session_id, agent_rules)
        actions = [evaluate(permission, pattern, rules) for pattern in patterns]
        if "deny" in actions:
            return "deny"
        return "allow" if all(a == "allow" for a in actions) else "ask"

    async def reply(
        self, request_id: str, reply: PermissionReply, message: str | None = None
    ) -> None:
        check_reply_size(message)
        pending = self._pending.get(request_id)
        if pending is None:
            command = {"op": "permission.reply", "id": request_id, "reply": reply}
            if self.forward is not None and await self.forward({**command, "message": message}):
                return
            raise NotFoundError("Permission request", request_id)
        request = pending.request
        await self._settle(pending, reply, message)
        if reply == "always" and request.always:  # a budget's "always" adds no rule
            await self._remember(request)
            await self._release_now_allowed(request.session_id)
        if reply == "reject":
            # opencode rejects the session's other pending asks too: the user said stop
            for other in [
                p for p in self._pending.values() if p.request.session_id == request.session_id
            ]:
                await self._settle(other, "reject", None)

    async def _settle(self, pending: _Pending, reply: PermissionReply, message: str | None) -> None:
        self._pending.pop(pending.request.id, None)
        props = PermissionRepliedProps(
            session_id=pending.request.session_id, request_id=pending.request.id, reply=reply
        )
        request = pending.request
        answered = answered_by(request.session_id, request.id)
        await self.store.publish([PermissionReplied(props), *answered])
        if not pending.future.done():
            pending.future.set_result((reply, message))

    async def _remember(self, request: PermissionRequest) -> None:
        session = await self.store.get_session(request.session_id)
        added = [
            PermissionRule(permission=request.permission, pattern=pattern, action="allow")
            for pattern in request.always
        ]
        updated = session.model_copy(update={"permission": [*(session.permission or []), *added]})
        await self.store.put_session(
            updated, [SessionUpdated(SessionInfo(session_id=updated.id, info=updated))]
        )

    async def _release_now_allowed(self, session_id: str) -> None:
        for pending in [p for p in self._pending.values() if p.request.session_id == session_id]:
            rules = await self._rules(session_id, pending.rules)
            request = pending.request
            if pending.must_ask:
                continue
            if all(evaluate(request.permission, p, rules) == "allow" for p in request.patterns):
                await self._settle(pending, "always", None)

    async def cancel_session(self, session_id: str) -> None:
        """Reject whatever the session is still asking (it was aborted or deleted)."""
        for pending in [p for p in self._pending.values() if p.request.session_id == session_id]:
            await self._settle(pending, "reject", None)
