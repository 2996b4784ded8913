"""The demo model: deterministic, offline, and its documented prompts behave as documented."""

from __future__ import annotations

import json
from pathlib import Path

from partwire.providers.demo import DemoModel
from partwire.providers.stream import (
    AssistantTurn,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolResultTurn,
    UserTurn,
)


async def _run(
    model: DemoModel, *turns: UserTurn | ToolResultTurn | AssistantTurn
) -> list[StreamEvent]:
    return [e async for e in model.stream(ModelRequest("", tuple(turns)))]


def _types(events: list[StreamEvent]) -> list[str]:
    return [e.type for e in events]


async def test_default_is_reasoning_then_a_markdown_answer(project: Path) -> None:
    events = await _run(DemoModel(project, 0), UserTurn("hello there"))
    types = _types(events)
    assert types.index("reasoning-start") < types.index("reasoning-end") < types.index("text-start")
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    assert text.startswith("## Demo model") and "**hello there**" in text
    assert types[-2:] == ["finish-step", "finish"]
    assert events[-1].finish_reason == "stop"  # type: ignore[union-attr]


async def test_same_prompt_same_stream(project: Path) -> None:
    first = await _run(DemoModel(project, 0), UserTurn("be deterministic"))
    second = await _run(DemoModel(project, 0), UserTurn("be deterministic"))
    assert first == second


async def test_long_n_streams_n_one_word_deltas(project: Path) -> None:
    events = await _run(DemoModel(project, 0), UserTurn("long 250"))
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 250
    assert deltas[0] == "w0 " and deltas[-1] == "w249 "
    assert all(len(d.split()) == 1 for d in deltas)


async def test_list_calls_the_list_tool_then_summarizes(project: Path) -> None:
    events = await _run(DemoModel(project, 0), UserTurn("list"))
    [call] = [e for e in events if isinstance(e, ToolCall)]
    assert call.tool_name == "list" and json.loads(call.input) == {"path": "."}
    assert events[-1].finish_reason == "tool-calls"  # type: ignore[union-attr]
    result = ToolResultTurn(call.call_id, "list", "README.md\nsrc/\n")
    after = await _run(DemoModel(project, 0), UserTurn("list"), result)
    text = "".join(e.delta for e in after if isinstance(e, TextDelta))
    assert "`list` tool returned 2 lines" in text and "README.md" in text


async def test_a_prompt_queued_during_an_answer_is_answered_once(project: Path) -> None:
    """A prompt sent while an earlier one was answered is stored first, so the earlier
    answer follows it in history: its tool result still counts (no second call)."""
    result = ToolResultTurn("call_demo_list_0", "list", "README.md\n")
    history = (UserTurn("hello"), UserTurn("list"), AssistantTurn("Hello back."), result)
    after = await _run(DemoModel(project, 0), *history)
    assert not [e for e in after if isinstance(e, ToolCall)]
    assert "`list` tool returned 1 line:" in "".join(
        e.delta for e in after if isinstance(e, TextDelta)
    )


async def test_an_existing_path_is_read_and_a_missing_one_is_not(project: Path) -> None:
    events = await _run(DemoModel(project, 0), UserTurn("src/app.py"))
    [call] = [e for e in events if isinstance(e, ToolCall)]
    assert call.tool_name == "read" and json.loads(call.input) == {"filePath": "src/app.py"}
    missing = await _run(DemoModel(project, 0), UserTurn("src/nope.py"))
    assert not [e for e in missing if isinstance(e, ToolCall)]


async def test_a_tool_error_is_reported_in_the_summary(project: Path) -> None:
    result = ToolResultTurn("c", "read", "File not found: x", is_error=True)
    events = await _run(DemoModel(project, 0), UserTurn("x"), result)
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    assert "`read` tool failed: File not found: x" in text
