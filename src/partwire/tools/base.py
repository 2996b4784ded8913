"""A tool is declared once: id, description, a pydantic parameters model, execute()."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from partwire.errors import ToolArgumentsError
from partwire.providers.stream import ToolSpec

A = TypeVar("A", bound=BaseModel)

MetadataUpdate = Callable[[str | None, dict[str, Any]], Awaitable[None]]


async def _no_metadata(title: str | None, metadata: dict[str, Any]) -> None:
    return None


@dataclass
class ToolContext:
    """What a running tool may know and do."""

    session_id: str
    message_id: str
    call_id: str
    agent: str
    project_dir: Path
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    update_metadata: MetadataUpdate = _no_metadata

    async def metadata(self, *, title: str | None = None, **values: Any) -> None:
        """Update the running tool part live (published as message.part.updated)."""
        await self.update_metadata(title, values)


@dataclass(frozen=True)
class ToolResult:
    title: str
    output: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool(Generic[A]):
    id: str
    description: str
    parameters: type[A]
    execute: Callable[[A, ToolContext], Awaitable[ToolResult]]

    def spec(self) -> ToolSpec:
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
        return await self.execute(self.parse(raw), ctx)
