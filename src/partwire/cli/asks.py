"""Answering permission asks and questions at the terminal during ``partwire run``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.text import Text

from partwire.client.http import PartwireClient
from partwire.schema.event import Event, SessionInfo
from partwire.schema.permission import PermissionReply, PermissionRequest, QuestionRequest

_CHOICES: dict[str, PermissionReply] = {"o": "once", "a": "always", "r": "reject"}


@dataclass
class Answerer:
    """Answers the asks of one session and of the sub-agent sessions it starts."""

    client: PartwireClient
    console: Console
    auto_allow: bool
    family: set[str] = field(default_factory=set)
    interactive: bool = field(default_factory=sys.stdin.isatty)

    async def handle(self, event: Event) -> None:
        handlers: dict[str, Callable[[Any], Awaitable[None]]] = {
            "session.created": self._child,
            "permission.asked": self.permission,
            "question.asked": self.question,
        }
        handler = handlers.get(event.type)
        if handler is not None:
            await handler(event.properties)

    async def _child(self, props: SessionInfo) -> None:
        if props.info.parent_id in self.family:
            self.family.add(props.info.id)

    async def _read(self, prompt: str) -> str:
        """A line typed at the terminal; end of input counts as an empty answer."""
        try:
            line = await asyncio.to_thread(self.console.input, Text(prompt))
        except EOFError:
            return ""
        return line.strip().lower()

    async def permission(self, request: PermissionRequest) -> None:
        if request.session_id not in self.family:
            return
        subject = ", ".join(request.patterns)
        self.console.print(
            Text.assemble(
                ("? ", "yellow"), ("permission ", "bold"), f"{request.permission}: {subject}"
            )
        )
        if self.auto_allow:
            reply: PermissionReply = "once"
        elif self.interactive:
            choice = await self._read("  allow [o]nce, [a]lways, or [r]eject? ")
            reply = _CHOICES.get(choice[:1], "reject") if choice else "reject"
        else:
            reply = "reject"
            self.console.print(
                "  rejected: no terminal to ask at (pass --yes to allow)", style="dim"
            )
        await self.client.reply_permission(request.id, reply)

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
            picked = await self._read("  number(s), comma separated (empty to dismiss): ")
            if not picked:
                await self.client.reject_question(request.id)
                return
            chosen = [int(n) for n in picked.replace(" ", "").split(",") if n.isdigit()]
            answers.append(
                [item.options[n - 1].label for n in chosen if 0 < n <= len(item.options)]
            )
        await self.client.reply_question(request.id, answers)
