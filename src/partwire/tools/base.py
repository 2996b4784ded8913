"""A tool is declared once: id, description, a pydantic parameters model, execute()."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from partwire.errors import ToolArgumentsError, ToolError
from partwire.providers.stream import ToolSpec
from partwire.schema.message import MessageWithParts
from partwire.schema.permission import QuestionInfo, Todo
from partwire.skills import Skill
from partwire.tools.truncate import truncate

A = TypeVar("A", bound=BaseModel)

MetadataUpdate = Callable[[str | None, dict[str, Any]], Awaitable[None]]


class Asker(Protocol):
    async def __call__(
        self,
        permission: str,
        patterns: Sequence[str],
        *,
        always: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        must_ask: bool = False,
    ) -> None: ...


class Subtasks(Protocol):
    async def __call__(self, *, agent: str, description: str, prompt: str) -> tuple[str, str]:
        """Run a sub-agent in a child session; returns (child session id, its final text).

        While it runs, the calling tool part's metadata shows the child's progress.
        """
        ...


async def _no_metadata(title: str | None, metadata: dict[str, Any]) -> None:
    return None


async def allow_all(
    permission: str,
    patterns: Sequence[str],
    *,
    always: Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
    must_ask: bool = False,
) -> None:
    """The ask used outside a session (direct tool calls in tests): everything is allowed."""
    return None


async def _no_questions(questions: list[QuestionInfo]) -> list[list[str]]:
    raise ToolError("Questions cannot be asked here: there is no user attached.")


async def _no_subtasks(*, agent: str, description: str, prompt: str) -> tuple[str, str]:
    raise ToolError("Sub-agents cannot run here.")


@dataclass
class TodoAccess:
    """The session's todo list, read and written through the session layer."""

    get: Callable[[], Awaitable[list[Todo]]]
    set: Callable[[list[Todo]], Awaitable[None]]


def _memory_todos() -> TodoAccess:
    items: list[Todo] = []

    async def get() -> list[Todo]:
        return list(items)

    async def put(todos: list[Todo]) -> None:
        items[:] = todos

    return TodoAccess(get, put)


async def _no_editor(path: Path) -> str | None:
    return None


async def _no_skills() -> list[Skill]:
    return []


@dataclass
class ToolContext:
    """What a running tool may know and do."""

    session_id: str
    message_id: str
    call_id: str
    agent: str
    project_dir: Path
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    messages: list[MessageWithParts] = field(default_factory=list)
    output_dir: Path | None = None
    update_metadata: MetadataUpdate = _no_metadata
    asker: Asker = allow_all
    questions: Callable[[list[QuestionInfo]], Awaitable[list[list[str]]]] = _no_questions
    todos: TodoAccess = field(default_factory=_memory_todos)
    subtasks: Subtasks = _no_subtasks
    # the text an attached editor has for a file (unsaved changes too); None: read the disk
    editor_text: Callable[[Path], Awaitable[str | None]] = _no_editor
    skills: Callable[[], Awaitable[list[Skill]]] = _no_skills

    @property
    def idempotency_key(self) -> str:
        """Stable for one tool call (its callID), also across a crash and a retry of the
        same call: a tool with side effects may record it and refuse to repeat work."""
        return self.call_id

    async def metadata(self, *, title: str | None = None, **values: Any) -> None:
        """Update the running tool part live (published as message.part.updated)."""
        await self.update_metadata(title, values)

    async def ask(
        self,
        permission: str,
        patterns: Sequence[str],
        *,
        always: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        must_ask: bool = False,
    ) -> None:
        """Return once allowed; raise PermissionDeniedError or RejectedError otherwise.

        ``must_ask``: no allow rule applies (the subject could not be checked); deny
        rules still do."""
        await self.asker(permission, patterns, always=always, metadata=metadata, must_ask=must_ask)


@dataclass(frozen=True)
class Attachment:
    mime: str
    url: str
    filename: str | None = None


@dataclass(frozen=True)
class ToolResult:
    title: str
    output: str
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True)
class Tool(Generic[A]):
    id: str
    description: str
    parameters: type[A]
    execute: Callable[[A, ToolContext], Awaitable[ToolResult]]

    def spec(self) -> ToolSpec:
        """What the model is offered. Every step of every session asks, so it is made once
        (pydantic's schema generation costs milliseconds) and shared: its ``parameters``
        are read-only, and a caller that would change them changes a copy."""
        return self._spec

    @functools.cached_property
    def _spec(self) -> ToolSpec:
        return ToolSpec(self.id, self.description, self.parameters.model_json_schema())

    def parse(self, raw: dict[str, Any]) -> A:
        """Validate the model's arguments; errors are written for the model to fix."""
        try:
            return self.parameters.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolArgumentsError(self.id, problems) from None

    async def run(self, raw: dict[str, Any], ctx: ToolContext) -> ToolResult:
        result = await self.execute(self.parse(raw), ctx)
        # a huge output is cut off the loop
        return await asyncio.to_thread(truncate, result, ctx.output_dir, ctx.call_id)
