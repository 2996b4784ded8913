"""The tool calls of one model call: pending → running → completed | error.

The builder owns each call's part (it checks every state change); this module runs the
tools. A call's part is created when its input starts streaming, grows its ``raw``
input, turns running when the call is complete, and ends completed or in error. Tools
run as tasks, so several calls of one step run side by side; abort cancels them and the
builder closes whatever is still open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from partwire import ids
from partwire.builder import StreamingMessageBuilder
from partwire.errors import AbortedError, RejectedError, ToolError
from partwire.schema.message import ABORTED_TOOL, TOOL_RESTART_INTERRUPTED
from partwire.schema.part import FilePart
from partwire.schema.tool_state import ToolStateRunning
from partwire.session.writer import MessageWriter
from partwire.tools.base import MetadataUpdate, Tool, ToolContext, ToolResult

DOOM_LOOP_THRESHOLD = 3
CLOSE_REASONS = {
    "aborted": ABORTED_TOOL,
    "shutdown": TOOL_RESTART_INTERRUPTED,
    "error": "The model call failed",
}

ToolLookup = Callable[[str], Tool[Any] | None]
ContextFactory = Callable[[str, MetadataUpdate, asyncio.Event], ToolContext]


class ToolCalls:
    def __init__(
        self,
        *,
        builder: StreamingMessageBuilder,
        writer: MessageWriter,
        lookup: ToolLookup,
        make_context: ContextFactory,
        recent: list[tuple[str, str]],
        abort: asyncio.Event,
    ) -> None:
        self.builder = builder
        self.writer = writer
        self.lookup = lookup
        self.make_context = make_context
        self.recent = recent
        self.abort = abort
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.blocked = False

    async def input_start(self, call_id: str, tool_name: str) -> None:
        await self.writer.write(self.builder.start_tool_call(call_id, tool_name))

    async def input_delta(self, call_id: str, delta: str) -> None:
        if self.builder.accepts_arguments(call_id):  # a stray delta changes nothing
            await self.writer.write(self.builder.add_tool_args_delta(call_id, delta))

    async def call(self, call_id: str, tool_name: str, raw: str) -> None:
        """The model finished the call: its input becomes the call's arguments (or, when it
        is not a JSON object, an error the model sees) and the tool starts."""
        frames = self.builder.add_tool_call(call_id, tool_name, raw, bad_arguments="error")
        await self.writer.write(frames)
        state = self.builder.tool_part(call_id).state
        if isinstance(state, ToolStateRunning):
            task = self._execute(call_id, tool_name, state.input)
            self.tasks[call_id] = asyncio.create_task(task)

    async def _execute(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        tool = self.lookup(name)
        ctx = self._context(call_id)
        try:
            if tool is None:
                raise ToolError(f"There is no tool named {name}; use one of the tools offered.")
            await self._check_doom_loop(ctx, name, args)
            result = await tool.run(args, ctx)
        except RejectedError as exc:
            self.blocked = self.blocked or exc.feedback is None
            await self._result(call_id, exc.message, is_error=True)
        except (ToolError, AbortedError) as exc:
            await self._result(call_id, exc.message, is_error=True)
        except OSError as exc:
            await self._result(call_id, f"{name} failed: {exc}", is_error=True)
        else:
            await self.writer.write(
                self.builder.add_tool_result(
                    call_id,
                    result.output,
                    title=result.title,
                    metadata=result.metadata,
                    attachments=self._attachments(result),
                )
            )

    async def _result(self, call_id: str, text: str, *, is_error: bool) -> None:
        await self.writer.write(self.builder.add_tool_result(call_id, text, is_error))

    async def _check_doom_loop(self, ctx: ToolContext, name: str, args: dict[str, Any]) -> None:
        """The same call for the third time in a row needs the user's go-ahead."""
        call = (name, json.dumps(args, sort_keys=True))
        repeated = self.recent[-(DOOM_LOOP_THRESHOLD - 1) :]
        self.recent.append(call)
        if len(repeated) == DOOM_LOOP_THRESHOLD - 1 and all(c == call for c in repeated):
            metadata = {"tool": name, "input": args}
            await ctx.ask("doom_loop", [name], always=[name], metadata=metadata)

    def _attachments(self, result: ToolResult) -> list[dict[str, Any]]:
        base = {"session_id": self.builder.session_id, "message_id": self.builder.message_id}
        return [
            FilePart(
                id=ids.part_id(), **base, mime=item.mime, url=item.url, filename=item.filename
            ).wire()
            for item in result.attachments
        ]

    def _context(self, call_id: str) -> ToolContext:
        async def update(title: str | None, metadata: dict[str, Any]) -> None:
            if isinstance(self.builder.tool_part(call_id).state, ToolStateRunning):
                frames = self.builder.update_tool(call_id, title=title, metadata=metadata)
                await self.writer.write(frames)

        return self.make_context(call_id, update, self.abort)

    async def wait(self) -> None:
        if self.tasks:
            await asyncio.gather(*self.tasks.values())

    async def cancel(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()
