"""Running a sub-agent for the task tool: a child session whose progress shows in the parent."""

from __future__ import annotations

import asyncio
from typing import Any

from partwire.bus import Bus, Subscription
from partwire.errors import ToolError
from partwire.schema.input import PromptInput, SessionCreateInput, TextPartInput
from partwire.schema.part import ModelRef, TextPart, ToolPart
from partwire.session.agents import get_agent
from partwire.session.loop import SessionLoop
from partwire.session.sessions import Sessions
from partwire.tools.base import MetadataUpdate


class SubtaskRunner:
    def __init__(self, sessions: Sessions, loop: SessionLoop, bus: Bus) -> None:
        self.sessions = sessions
        self.loop = loop
        self.bus = bus

    async def run(
        self,
        *,
        parent_id: str,
        model: ModelRef,
        agent: str,
        description: str,
        prompt: str,
        progress: MetadataUpdate,
    ) -> tuple[str, str]:
        """Run ``prompt`` with ``agent`` in a new child session; returns (child id, answer)."""
        if get_agent(agent).mode == "primary":
            raise ToolError(f"{agent} is not a sub-agent; use subagent_type general.")
        title = f"{description} (@{agent} subagent)"
        child = await self.sessions.create(SessionCreateInput(parent_id=parent_id, title=title))
        await progress(description, {"sessionId": child.id, "summary": []})
        # before the child starts
        subscription = self.bus.subscribe("message.part.updated", session_id=child.id)
        watcher = asyncio.create_task(self._mirror(subscription, child.id, description, progress))
        body = PromptInput(parts=[TextPartInput(text=prompt)], agent=agent, model=model)
        try:
            result = await self.loop.prompt(child.id, body)
        except asyncio.CancelledError:
            await self.loop.abort(child.id)  # the parent was aborted: so is the child
            raise
        finally:
            watcher.cancel()
        if result.info.error is not None:
            message = getattr(result.info.error.data, "message", result.info.error.name)
            raise ToolError(f"The {agent} sub-agent failed: {message}")
        texts = [p.text for p in result.parts if isinstance(p, TextPart) and p.text.strip()]
        return child.id, texts[-1] if texts else "(the sub-agent gave no answer)"

    async def _mirror(
        self,
        subscription: Subscription,
        child_id: str,
        description: str,
        progress: MetadataUpdate,
    ) -> None:
        """Keep the parent's running part showing the child's tool calls as they change."""
        summary: dict[str, dict[str, Any]] = {}
        try:
            async for event in subscription:
                part = getattr(event.properties, "part", None)
                if not isinstance(part, ToolPart) or part.session_id != child_id:
                    continue
                state: dict[str, Any] = {"status": part.state.status}
                title = getattr(part.state, "title", None)
                if title:
                    state["title"] = title
                summary[part.id] = {"id": part.id, "tool": part.tool, "state": state}
                await progress(
                    description, {"sessionId": child_id, "summary": list(summary.values())}
                )
        finally:
            subscription.close()
