"""Everything a tool run may reach in the session layer, bound into one ToolContext per call."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from partwire.config import Settings
from partwire.permission import Permissions
from partwire.question import Questions
from partwire.schema.event import TodoProps, TodoUpdated
from partwire.schema.message import MessageWithParts
from partwire.schema.part import ModelRef
from partwire.schema.permission import Agent, QuestionInfo, Todo, ToolRef
from partwire.storage.base import Store
from partwire.tools.base import MetadataUpdate, TodoAccess, ToolContext

if TYPE_CHECKING:
    from partwire.session.subtask import SubtaskRunner


@dataclass
class ToolHost:
    store: Store
    permissions: Permissions
    questions: Questions
    settings: Settings
    subtasks: SubtaskRunner | None = None

    def context(
        self,
        *,
        session_id: str,
        message_id: str,
        call_id: str,
        agent: Agent,
        model: ModelRef,
        history: list[MessageWithParts],
        abort: asyncio.Event,
        update_metadata: MetadataUpdate,
    ) -> ToolContext:
        tool = ToolRef(message_id=message_id, call_id=call_id)

        async def ask(
            permission: str,
            patterns: Sequence[str],
            *,
            always: Sequence[str] | None = None,
            metadata: dict[str, Any] | None = None,
        ) -> None:
            await self.permissions.ask(
                session_id=session_id,
                permission=permission,
                patterns=patterns,
                agent_rules=agent.permission,
                always=always,
                metadata=metadata,
                tool=tool,
            )

        async def questions(items: list[QuestionInfo]) -> list[list[str]]:
            return await self.questions.ask(session_id, items, tool)

        async def get_todos() -> list[Todo]:
            return await self.store.get_todos(session_id)

        async def set_todos(todos: list[Todo]) -> None:
            event = TodoUpdated(TodoProps(session_id=session_id, todos=todos))
            await self.store.put_todos(session_id, todos, [event])

        context = ToolContext(
            session_id=session_id,
            message_id=message_id,
            call_id=call_id,
            agent=agent.name,
            project_dir=self.settings.project_dir,
            abort=abort,
            messages=history,
            output_dir=self.settings.data_dir / "tool-output",
            update_metadata=update_metadata,
            asker=ask,
            questions=questions,
            todos=TodoAccess(get_todos, set_todos),
        )
        runner = self.subtasks
        if runner is not None:

            async def subtask(*, agent: str, description: str, prompt: str) -> tuple[str, str]:
                return await runner.run(
                    parent_id=session_id,
                    model=model,
                    agent=agent,
                    description=description,
                    prompt=prompt,
                    progress=update_metadata,
                )

            context.subtasks = subtask
        return context
