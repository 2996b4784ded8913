"""Answering permission asks and questions at the terminal during ``partwire run``.

Answers are read from standard input by the event loop itself (no thread blocked in
``input()``), so Ctrl-C at a prompt ends the run at once."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from partwire.client.http import PartwireClient
from partwire.schema.event import Event, SessionInfo
from partwire.schema.permission import PermissionReply, PermissionRequest, QuestionRequest
from partwire.session.budget import BUDGET_PERMISSION
from partwire.session.toolcalls import DOOM_LOOP_THRESHOLD

_CHOICES: dict[str, PermissionReply] = {
    "o": "once",
    "once": "once",
    "a": "always",
    "always": "always",
    "r": "reject",
    "reject": "reject",
}
_TIMES = {2: "twice", 3: "three times", 4: "four times"}


class Interrupted(Exception):
    """Ctrl-C while a prompt waited for an answer."""


def describe(request: PermissionRequest) -> str:
    """What is being asked, in words: the doom-loop guard says what it saw."""
    subject = ", ".join(request.patterns)
    if request.permission == "doom_loop":
        times = _TIMES.get(DOOM_LOOP_THRESHOLD, f"{DOOM_LOOP_THRESHOLD} times")
        tool = request.metadata.get("tool") or subject
        return (
            f"the model made the same {tool} call {times} in a row, "
            "with the same input: it may be stuck in a loop. Let it run again?"
        )
    if request.permission == BUDGET_PERMISSION:
        return (
            f"the session's budget: {subject}, and the next step would pass it. "
            "Allow it another budget's worth ([o]nce), lift the limit ([a]lways), "
            "or stop here ([r]eject)?"
        )
    return f"{request.permission}: {subject}"


def parse_choices(answer: str, count: int) -> list[int] | None:
    """Option numbers from "1", "1,3" or "2 3"; None when anything is not one of them."""
    words = answer.replace(",", " ").split()
    numbers = [int(w) for w in words if w.isdigit()]
    if not words or len(numbers) != len(words) or not all(0 < n <= count for n in numbers):
        return None
    return list(dict.fromkeys(numbers))


async def read_line(fd: int) -> str | None:
    """One line typed at the terminal, read without a thread; None at end of input."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    data = os.read(fd, 4096)
    return data.decode(errors="replace") if data else None


@dataclass
class Answerer:
    """Answers the asks of one session and of the sub-agent sessions it starts."""

    client: PartwireClient
    console: Console
    auto_allow: bool
    family: set[str] = field(default_factory=set)
    interactive: bool = field(default_factory=sys.stdin.isatty)
    reading: asyncio.Task[str | None] | None = None

    async def handle(self, event: Event) -> None:
        handlers: dict[str, Callable[[Any], Awaitable[None]]] = {
            "session.created": self._child,
            "permission.asked": self.permission,
            "question.asked": self.question,
        }
        handler = handlers.get(event.type)
        if handler is not None:
            await handler(event.properties)

    def interrupt(self) -> bool:
        """Ctrl-C: stop waiting at a prompt. False when no prompt was waiting."""
        if self.reading is None or self.reading.done():
            return False
        self.reading.cancel()
        return True

    async def _child(self, props: SessionInfo) -> None:
        if props.info.parent_id in self.family:
            self.family.add(props.info.id)

    async def _ask(self, prompt: str) -> str | None:
        """The answer typed after ``prompt``, stripped; None at end of input."""
        self.console.print(Text(prompt), end="")
        self.reading = asyncio.ensure_future(read_line(sys.stdin.fileno()))
        try:
            line = await self.reading
        except asyncio.CancelledError:
            self.console.print()
            raise Interrupted from None
        finally:
            self.reading = None
        return None if line is None else line.strip()

    async def permission(self, request: PermissionRequest) -> None:
        if request.session_id not in self.family:
            return
        self.console.print(
            Text.assemble(("? ", "yellow"), ("permission ", "bold"), describe(request))
        )
        budget = request.permission == BUDGET_PERMISSION
        if self.auto_allow and not budget:  # --yes allows tools, never more spend
            reply: PermissionReply = "once"
            self.console.print("  allowed once (--yes)", style="dim")
        elif self.interactive:
            reply = await self._permission_reply()
        else:
            reply = "reject"
            hint = "raise the budget to go on" if budget else "pass --yes to allow"
            self.console.print(f"  rejected: no terminal to ask at ({hint})", style="dim")
        await self.client.reply_permission(request.id, reply)

    async def _permission_reply(self) -> PermissionReply:
        while True:
            answer = await self._ask("  allow [o]nce, [a]lways, or [r]eject? ")
            if answer is None:
                self.console.print("  rejected: end of input", style="dim")
                return "reject"
            choice = _CHOICES.get(answer.lower())
            if choice is not None:
                return choice
            self.console.print("  type o, a or r (Ctrl-C stops the run)", style="yellow")

    async def question(self, request: QuestionRequest) -> None:
        if request.session_id not in self.family:
            return
        if not self.interactive:
            self.console.print("? a question was asked; dismissed (no terminal)", style="yellow")
            await self.client.reject_question(request.id)
            return
        answers: list[list[str]] = []
        for item in request.questions:
            self.console.print(Text.assemble(("? ", "yellow"), (item.question, "bold")))
            for number, option in enumerate(item.options, 1):
                self.console.print(f"  {number}. {option.label} — {option.description}")
            chosen = await self._choices(len(item.options))
            if chosen is None:
                await self.client.reject_question(request.id)
                self.console.print("  dismissed", style="dim")
                return
            answers.append([item.options[n - 1].label for n in chosen])
        await self.client.reply_question(request.id, answers)

    async def _choices(self, count: int) -> list[int] | None:
        while True:
            answer = await self._ask("  number(s), comma separated (empty to dismiss): ")
            if not answer:
                return None
            chosen = parse_choices(answer, count)
            if chosen is not None:
                return chosen
            self.console.print(
                f"  pick numbers from 1 to {count}, like 1 or 1,2 (Ctrl-C stops the run)",
                style="yellow",
            )
