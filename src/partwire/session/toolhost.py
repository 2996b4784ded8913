"""Everything a tool run may reach in the session layer, bound into one ToolContext per call."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from partwire.config import Settings, user_config_dir
from partwire.editor import EditorFiles
from partwire.permission import Permissions
from partwire.question import Questions
from partwire.schema.event import TodoProps, TodoUpdated
from partwire.schema.message import MessageWithParts
from partwire.schema.part import ModelRef
from partwire.schema.permission import Agent, QuestionInfo, Todo, ToolRef
from partwire.skills import Shelf, Skill
from partwire.storage.base import Store
from partwire.tools.base import MetadataUpdate, TodoAccess, ToolContext


class ChildRuns(Protocol):
    """What the task tool's sub-agent runs need (session/subtask.py's SubtaskRunner); a
    protocol, so this module imports nothing that imports it back."""

    async def run(
        self,
        *,
        parent_id: str,
        model: ModelRef,
        agent: str,
        description: str,
        prompt: str,
        progress: MetadataUpdate,
    ) -> tuple[str, str]: ...


@dataclass
class _CallScope:
    """One tool call's view of the session: who it is, and the services bound to it."""

    host: ToolHost
    session_id: str
    tool: ToolRef
    agent: Agent
    model: ModelRef
    update_metadata: MetadataUpdate

    async def questions(self, items: list[QuestionInfo]) -> list[list[str]]:
        return await self.host.questions.ask(self.session_id, items, self.tool)

    async def get_todos(self) -> list[Todo]:
        return await self.host.store.get_todos(self.session_id)

    async def set_todos(self, todos: list[Todo]) -> None:
        event = TodoUpdated(TodoProps(session_id=self.session_id, todos=todos))
        await self.host.store.put_todos(self.session_id, todos, [event])

    async def subtask(self, *, agent: str, description: str, prompt: str) -> tuple[str, str]:
        runner = self.host.subtasks
        assert runner is not None
        return await runner.run(
            parent_id=self.session_id,
            model=self.model,
            agent=agent,
            description=description,
            prompt=prompt,
            progress=self.update_metadata,
        )


@dataclass
class ToolHost:
    store: Store
    permissions: Permissions
    questions: Questions
    settings: Settings
    editor: EditorFiles | None = None
    subtasks: ChildRuns | None = None
    shelf: Shelf = field(default_factory=Shelf)

    async def skills(self) -> list[Skill]:
        """The skills of this project (and the user's), as read from disk within the last
        second (skills.FRESH_S)."""
        user_dir = user_config_dir(self.settings.source_env)
        return await self.shelf.skills(self.settings.project_dir, user_dir)

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
        scope = _CallScope(self, session_id, tool, agent, model, update_metadata)
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
            asker=self.permissions.asker(session_id, agent.permission, tool),
            questions=scope.questions,
            todos=TodoAccess(scope.get_todos, scope.set_todos),
        )
        if self.subtasks is not None:
            context.subtasks = scope.subtask
        context.skills = self.skills
        if self.editor is not None:
            editor = self.editor

            async def editor_text(path: Path) -> str | None:
                return await editor.text(session_id, path)

            context.editor_text = editor_text
        return context
