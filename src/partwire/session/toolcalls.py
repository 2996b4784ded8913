"""The tool calls of one model call: pending → running → completed | error.

A call's part is created when its input starts streaming, grows its ``raw``
input, turns running when the call is complete, and ends completed or in error.
Tools run as tasks, so several calls of one step run side by side; abort
cancels them and closes whatever is still open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from partwire.clock import now_ms as _now
from partwire.errors import AbortedError, RejectedError, ToolError
from partwire.schema.message import ABORTED_TOOL, TOOL_RESTART_INTERRUPTED
from partwire.schema.part import FilePart, Part, ToolPart
from partwire.schema.tool_state import (
    FinishedTime,
    RunningTime,
    ToolState,
    ToolStateCompleted,
    ToolStateError,
    ToolStatePending,
    ToolStateRunning,
    check_transition,
)
from partwire.tools.base import MetadataUpdate, Tool, ToolContext, ToolResult

DOOM_LOOP_THRESHOLD = 3
_CLOSE_REASONS = {
    "aborted": ABORTED_TOOL,
    "shutdown": TOOL_RESTART_INTERRUPTED,
    "retry": "The model call failed before this tool ran; it was retried",
}

ToolLookup = Callable[[str], Tool[Any] | None]
ContextFactory = Callable[[str, MetadataUpdate, asyncio.Event], ToolContext]
SavePart = Callable[[Part], Awaitable[None]]


ARGS_EVERY_DELTA_CHARS = 4096


def args_update_due(pending_chars: int, shown_chars: int) -> bool:
    """Whether a call's streaming arguments should be written and published now. Every
    delta while they are short; past that, once what is new is a quarter of what is
    shown, so the bytes written for a call stay linear in its arguments' length (each
    update holds all of them)."""
    return shown_chars + pending_chars <= ARGS_EVERY_DELTA_CHARS or (
        pending_chars * 4 >= shown_chars
    )


def _error(args: dict[str, Any], message: str, started: int) -> ToolStateError:
    return ToolStateError(input=args, error=message, time=FinishedTime(start=started, end=_now()))


class ToolCalls:
    def __init__(
        self,
        *,
        base: Callable[[], dict[str, str]],
        save: SavePart,
        lookup: ToolLookup,
        make_context: ContextFactory,
        recent: list[tuple[str, str]],
        abort: asyncio.Event,
    ) -> None:
        self.base = base
        self.save = save
        self.lookup = lookup
        self.make_context = make_context
        self.recent = recent
        self.abort = abort
        self.parts: dict[str, ToolPart] = {}
        # arguments streamed but not yet in their part (see args_update_due)
        self._raw: dict[str, list[str]] = {}
        self._raw_chars: dict[str, int] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.blocked = False

    async def _set_state(self, call_id: str, state: ToolState) -> None:
        part = self.parts[call_id]
        check_transition(part.state, state)
        updated = part.model_copy(update={"state": state})
        self.parts[call_id] = updated
        await self.save(updated)

    async def input_start(self, call_id: str, tool_name: str) -> None:
        part = ToolPart(**self.base(), call_id=call_id, tool=tool_name, state=ToolStatePending())
        self.parts[call_id] = part
        await self.save(part)

    async def input_delta(self, call_id: str, delta: str) -> None:
        part = self.parts.get(call_id)
        if part is None or not isinstance(part.state, ToolStatePending):
            return
        chunks = self._raw.setdefault(call_id, [part.state.raw] if part.state.raw else [])
        chunks.append(delta)
        self._raw_chars[call_id] = self._raw_chars.get(call_id, len(part.state.raw)) + len(delta)
        if args_update_due(self._raw_chars[call_id] - len(part.state.raw), len(part.state.raw)):
            raw = "".join(chunks)
            self._raw[call_id] = [raw]
            await self._set_state(call_id, ToolStatePending(input={}, raw=raw))

    async def call(self, call_id: str, tool_name: str, raw: str) -> None:
        """The model finished the call: parse its input and start the tool."""
        if call_id not in self.parts:
            await self.input_start(call_id, tool_name)
        started = _now()
        try:
            args = json.loads(raw or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            message = f"The {tool_name} tool input is not valid JSON ({exc}); send an object."
            await self._set_state(call_id, _error({}, message, started))
            return
        await self._set_state(
            call_id, ToolStateRunning(input=args, time=RunningTime(start=started))
        )
        self.tasks[call_id] = asyncio.create_task(self._execute(call_id, tool_name, args, started))

    async def _execute(self, call_id: str, name: str, args: dict[str, Any], started: int) -> None:
        tool = self.lookup(name)
        ctx = self._context(call_id)
        try:
            if tool is None:
                raise ToolError(f"There is no tool named {name}; use one of the tools offered.")
            await self._check_doom_loop(ctx, name, args)
            result = await tool.run(args, ctx)
        except RejectedError as exc:
            self.blocked = self.blocked or exc.feedback is None
            state: ToolState = _error(args, exc.message, started)
        except (ToolError, AbortedError) as exc:
            state = _error(args, exc.message, started)
        except OSError as exc:
            state = _error(args, f"{name} failed: {exc}", started)
        else:
            state = ToolStateCompleted(
                input=args,
                output=result.output,
                title=result.title,
                metadata=result.metadata,
                time=FinishedTime(start=started, end=_now()),
                attachments=self._attachments(result) or None,
            )
        await self._set_state(call_id, state)

    async def _check_doom_loop(self, ctx: ToolContext, name: str, args: dict[str, Any]) -> None:
        """The same call for the third time in a row needs the user's go-ahead."""
        call = (name, json.dumps(args, sort_keys=True))
        repeated = self.recent[-(DOOM_LOOP_THRESHOLD - 1) :]
        self.recent.append(call)
        if len(repeated) == DOOM_LOOP_THRESHOLD - 1 and all(c == call for c in repeated):
            metadata = {"tool": name, "input": args}
            await ctx.ask("doom_loop", [name], always=[name], metadata=metadata)

    def _attachments(self, result: ToolResult) -> list[dict[str, Any]]:
        return [
            FilePart(**self.base(), mime=item.mime, url=item.url, filename=item.filename).wire()
            for item in result.attachments
        ]

    def _context(self, call_id: str) -> ToolContext:
        async def update(title: str | None, metadata: dict[str, Any]) -> None:
            part = self.parts[call_id]
            if isinstance(part.state, ToolStateRunning):
                state = part.state.model_copy(
                    update={"title": title or part.state.title, "metadata": metadata}
                )
                await self._set_state(call_id, state)

        return self.make_context(call_id, update, self.abort)

    async def wait(self) -> None:
        if self.tasks:
            await asyncio.gather(*self.tasks.values())

    async def cancel(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    async def fail_open(self, why: str) -> None:
        """End every pending or running call in error (``why``: aborted, retry, error)."""
        message = _CLOSE_REASONS.get(why, "The model call failed")
        now = _now()
        for call_id, part in list(self.parts.items()):
            state = part.state
            if isinstance(state, ToolStatePending | ToolStateRunning):
                start = state.time.start if isinstance(state, ToolStateRunning) else now
                error = ToolStateError(
                    input=state.input, error=message, time=FinishedTime(start=start, end=now)
                )
                await self._set_state(call_id, error)
