"""A session's title made by its model from the first prompt, as opencode's title agent
does. Until it answers (and if it fails) the title is the prompt's own first words; a
title the user set meanwhile is never replaced."""

from __future__ import annotations

import asyncio
import logging
import re

from partwire.clock import now_ms
from partwire.providers.base import LanguageModel
from partwire.providers.stream import ModelRequest, StreamError, TextDelta, UserTurn
from partwire.schema.event import SessionInfo, SessionUpdated
from partwire.session.admission import StartGate
from partwire.session.prompt import TITLE_LENGTH, shorten_title
from partwire.storage.base import Store

log = logging.getLogger(__name__)

TITLE_TIMEOUT_S = 30.0
TITLE_SYSTEM = (
    "You name conversations. Reply with only a title for the conversation that starts "
    f"with the user's message below: at most {TITLE_LENGTH} characters, in the user's "
    "language, no quotes, no markdown, no full stop at the end. Do not answer the message."
)
_PROMPT_CHARS = 4000
_MARKS = "#*_`\"' \u201c\u201d\u2018\u2019"  # markdown, and straight and curly quotes


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_STRONG = re.compile(r"(\*\*|__|~~)(.+?)\1")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_CODE = re.compile(r"`+([^`]*)`+")


def plain_text(line: str) -> str:
    """``line`` with inline markdown taken out: links and images keep their text, and
    emphasis, strong, strike-through and code marks go (``snake_case`` stays)."""
    for pattern in (_LINK, _CODE):
        line = pattern.sub(r"\1", line)
    for pattern in (_STRONG, _EMPHASIS):
        line = pattern.sub(r"\2", line)
    return line


def clean_title(raw: str) -> str | None:
    """The first line the model wrote, as plain text: without quotes, markdown or a final
    stop."""
    for line in raw.splitlines():
        title = plain_text(line.strip()).strip(_MARKS)
        if title.lower().startswith("title:"):
            title = title[len("title:") :].strip(_MARKS)
        title = title.rstrip(".").strip()
        if title:
            return shorten_title(title)
    return None


async def generate_title(model: LanguageModel, prompt: str) -> str | None:
    request = ModelRequest(system=TITLE_SYSTEM, messages=(UserTurn(text=prompt[:_PROMPT_CHARS]),))
    text = ""
    async for event in model.stream(request):
        if isinstance(event, TextDelta):
            text += event.delta
        elif isinstance(event, StreamError):
            log.warning("title for a session failed: %s", event.message)
            return None
    return clean_title(text)


class Titler:
    """Runs title requests in the background, one a session, and stores the answer. A
    request is start work, as an answer's start is: while answers wait at ``starts``
    (a burst of new sessions on a busy server), it waits behind them."""

    def __init__(self, store: Store, starts: StartGate | None = None) -> None:
        self.store = store
        self.starts = starts or StartGate()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, session_id: str, model: LanguageModel, prompt: str, placeholder: str) -> None:
        task = asyncio.create_task(self._title(session_id, model, prompt, placeholder))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _title(
        self, session_id: str, model: LanguageModel, prompt: str, placeholder: str
    ) -> None:
        await self.starts.turn(after_answers=True)
        try:
            async with asyncio.timeout(TITLE_TIMEOUT_S):
                title = await generate_title(model, prompt)
        except Exception as exc:  # a title is a nicety: the placeholder stays
            log.warning("title for %s failed: %s: %s", session_id, type(exc).__name__, exc)
            return
        if not title:
            return
        session = await self.store.get_session(session_id)
        if session.title != placeholder:
            return  # renamed meanwhile: the user's title wins
        stamp = session.time.model_copy(update={"updated": now_ms()})
        updated = session.model_copy(update={"title": title, "time": stamp})
        await self.store.put_session(
            updated, [SessionUpdated(SessionInfo(session_id=session_id, info=updated))]
        )

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
