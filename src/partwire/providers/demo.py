"""The offline demo model ``demo/demo``: deterministic, keyless, and uses real tools.

Its reply depends only on the last user text, the tool results that followed it,
and the project's files. ``long N`` streams N one-word deltas; ``retry`` fails
once with a retryable error, then answers; the summary instruction of a
compaction gets a summary of the user's prompts; the tool prompts are in
``demo_prompts.py``; anything else gets a reasoning part and a markdown answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from partwire.config import Settings
from partwire.providers.demo_prompts import plan_for
from partwire.providers.registry import register_provider
from partwire.providers.stream import (
    SUMMARY_PROMPT,
    Finish,
    FinishReason,
    FinishStep,
    ModelRequest,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StartStep,
    StreamError,
    StreamEvent,
    StreamStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolResultTurn,
    Turn,
    Usage,
    UserTurn,
)
from partwire.words import plural

_LONG = re.compile(r"^\s*long\s+(\d+)\s*$", re.IGNORECASE)
MAX_LONG = 1_000_000
RETRY_AFTER_S = 1.0


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _words(text: str) -> list[str]:
    """Split text into deltas that keep their trailing whitespace (one word each)."""
    return re.findall(r"\S+\s*|\s+", text)


class DemoModel:
    provider_id = "demo"
    model_id = "demo"
    context_limit = 200_000

    def __init__(self, project_dir: Path, delay_ms: float) -> None:
        self.project_dir = project_dir
        self.delay_s = delay_ms / 1000
        self.failed_once = False  # one instance serves one step: `retry` fails its first call

    def cost(self, usage: Usage) -> float:
        return 0.0

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        input_tokens = sum(_tokens(_turn_text(t)) for t in request.messages)
        prompt, _ = _last_prompt(request.messages)
        if prompt.strip().lower() == "retry" and not self.failed_once:
            self.failed_once = True
            return _fail_once()
        return _Reply(self.project_dir, self.delay_s, input_tokens).stream(request.messages)


class _Reply:
    """One model call's worth of state."""

    def __init__(self, project_dir: Path, delay_s: float, input_tokens: int) -> None:
        self.project_dir = project_dir
        self.delay_s = delay_s
        self.input_tokens = input_tokens

    async def stream(self, messages: tuple[Turn, ...]) -> AsyncIterator[StreamEvent]:
        prompt, results = _last_prompt(messages)
        yield StreamStart()
        yield StartStep()
        if prompt == SUMMARY_PROMPT:
            async for event in self._say(_summary_of(messages)):
                yield event
            return
        plan = plan_for(prompt, self.project_dir)
        if plan is not None and len(results) < plan.repeat and not any(r.is_error for r in results):
            async for event in self._tool_call(plan.tool, plan.args, len(results)):
                yield event
            return
        if results:
            async for event in self._say(_summarize(results)):
                yield event
            return
        async for event in self._answer(prompt):
            yield event

    async def _say(self, text: str) -> AsyncIterator[StreamEvent]:
        async for event in self._text(text):
            yield event
        for event in self._finish("stop", text):
            yield event

    async def _answer(self, prompt: str) -> AsyncIterator[StreamEvent]:
        if match := _LONG.match(prompt):
            count = min(int(match.group(1)), MAX_LONG)
            async for event in self._deltas(f"w{i} " for i in range(count)):
                yield event
            for event in self._finish("stop", "w0 " * count):
                yield event
            return
        reasoning = (
            f"The user wrote {plural(len(prompt.split()), 'word')}. "
            "I will echo them back in markdown."
        )
        yield ReasoningStart("r0")
        for word in _words(reasoning):
            await self._pause()
            yield ReasoningDelta("r0", word)
        yield ReasoningEnd("r0")
        answer = _markdown_answer(prompt)
        async for event in self._text(answer):
            yield event
        for event in self._finish("stop", reasoning + answer):
            yield event

    async def _text(self, text: str) -> AsyncIterator[StreamEvent]:
        async for event in self._deltas(iter(_words(text))):
            yield event

    async def _deltas(self, words: Iterable[str]) -> AsyncIterator[StreamEvent]:
        yield TextStart("t0")
        for word in words:
            await self._pause()
            yield TextDelta("t0", word)
        yield TextEnd("t0")

    async def _tool_call(
        self, tool: str, args: dict[str, Any], attempt: int
    ) -> AsyncIterator[StreamEvent]:
        call_id = f"call_demo_{tool}_{attempt}"
        raw = json.dumps(args)
        yield ToolInputStart(call_id, tool)
        for chunk in (raw[i : i + 8] for i in range(0, len(raw), 8)):
            await self._pause()
            yield ToolInputDelta(call_id, chunk)
        yield ToolInputEnd(call_id)
        yield ToolCall(call_id, tool, raw)
        for event in self._finish("tool-calls", raw):
            yield event

    def _finish(self, reason: FinishReason, output: str) -> list[StreamEvent]:
        usage = Usage(input=self.input_tokens, output=_tokens(output))
        return [FinishStep(reason, usage), Finish(reason)]

    async def _pause(self) -> None:
        await asyncio.sleep(self.delay_s)


async def _fail_once() -> AsyncIterator[StreamEvent]:
    yield StreamStart()
    yield StreamError(
        "Simulated overload (the demo's `retry` prompt fails once)",
        retryable=True,
        status_code=529,
        retry_after_s=RETRY_AFTER_S,
    )


def _summary_of(messages: tuple[Turn, ...]) -> str:
    asked = [t.text for t in messages if isinstance(t, UserTurn) and t.text != SUMMARY_PROMPT]
    lines = "\n".join(f"- {text.splitlines()[0][:80]}" for text in asked if text.strip())
    return f"## Summary\n\nThe user asked, in order:\n\n{lines or '- nothing yet'}\n"


def _turn_text(turn: Turn) -> str:
    if isinstance(turn, ToolResultTurn):
        return turn.output
    return turn.text


def _last_prompt(messages: tuple[Turn, ...]) -> tuple[str, list[ToolResultTurn]]:
    """The last user text and the tool results that came after it. A text-only answer
    after that prompt does not reset them: a prompt sent while an earlier one was being
    answered is stored when it arrives, so the earlier answer can follow it."""
    results: list[ToolResultTurn] = []
    for turn in reversed(messages):
        if isinstance(turn, UserTurn):
            return turn.text, list(reversed(results))
        if isinstance(turn, ToolResultTurn):
            results.append(turn)
    return "", list(reversed(results))


def _summarize(results: list[ToolResultTurn]) -> str:
    lines: list[str] = []
    for result in results:
        if result.is_error:
            lines.append(f"The `{result.tool}` tool failed: {result.output}")
            continue
        body = [line for line in result.output.splitlines() if line.strip()]
        preview = "\n".join(f"    {line}" for line in body[:8])
        more = f"\n\n…and {plural(len(body) - 8, 'more line')}." if len(body) > 8 else ""
        lines.append(
            f"The `{result.tool}` tool returned {plural(len(body), 'line')}:\n\n{preview}{more}"
        )
    return "\n\n".join(lines) + "\n"


def _markdown_answer(prompt: str) -> str:
    words = prompt.split()
    return (
        "## Demo model\n\n"
        f"You said: **{' '.join(words[:40])}{' …' if len(words) > 40 else ''}**\n\n"
        f"- words: {len(words)}\n"
        f"- characters: {len(prompt)}\n\n"
        "```python\n"
        f"words = {len(words)}  # counted by the demo model\n"
        "```\n\n"
        "Try `list`, a file path such as `README.md`, `glob **/*.py`, `bash ls`, `todo`, "
        "`question`, `task list`, `loop`, `retry` or `long 200`.\n"
    )


def _factory(model_id: str, settings: Settings) -> DemoModel:
    return DemoModel(settings.project_dir, settings.demo_delay_ms)


def register() -> None:
    register_provider("demo", _factory, ("demo",))
