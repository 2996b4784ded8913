"""Comparing two sessions run by scripted models with known differences."""

from __future__ import annotations

import difflib

from partwire.runtime import Runtime
from partwire.session.evaluation import as_json, as_markdown, compare, diverging, turns_of
from tests.scripted import ScriptedModel, finish, text_reply, tool_reply
from tests.session.helpers import new_session, prompt_body


async def _session(runtime: Runtime, model: ScriptedModel, *scripts: object) -> str:
    session_id = await new_session(runtime)
    model.enqueue(*scripts)  # type: ignore[arg-type]
    for text in ("one", "two"):
        await runtime.loop.prompt(session_id, prompt_body(text))
    return session_id


async def test_two_sessions_compare_prompt_by_prompt(
    runtime: Runtime, model: ScriptedModel
) -> None:
    a = await _session(
        runtime,
        model,
        text_reply("alpha beta"),
        tool_reply("read", {"filePath": "README.md"}),
        text_reply("done"),
    )
    failing = [*tool_reply("read", {"filePath": "nope.md"})[:-2], *finish("tool-calls", 30)]
    b = await _session(runtime, model, text_reply("alpha gamma"), failing, text_reply("done"))
    history_a = await runtime.store.list_messages(a)
    history_b = await runtime.store.list_messages(b)
    pairs = compare(history_a, history_b)
    assert [p.prompt for p in pairs] == ["one", "two"]
    first, second = pairs
    expected = difflib.SequenceMatcher(None, "alpha beta", "alpha gamma").ratio()
    assert first.similarity == round(expected, 3) and first.diverging == []
    assert second.similarity == 1.0  # both ended with "done"
    assert second.diverging == [
        'A: read {"filePath": "README.md"}',
        'B: read {"filePath": "nope.md"}',
    ]
    assert second.a is not None and second.b is not None
    assert (second.a.errors, second.b.errors) == (0, 1)  # B's read failed
    assert (second.a.tokens, second.b.tokens) == (30, 55)  # 15 + 15; 10 in 30 out + 15
    assert second.a.first_output_ms is not None and second.a.total_ms is not None
    assert second.a.total_ms >= second.a.first_output_ms
    report = as_json(a, b, pairs)
    assert report["totals"]["diverging"] == 2 and report["totals"]["calls_a"] == 1
    assert report["totals"]["errors_b"] == 1
    markdown = as_markdown(a, b, pairs)
    assert markdown.startswith(f"# {a} (A) against {b} (B)\n")
    assert "| 2 | two | 1.00 | 1/1 | 2 | 0/1 | 30/55 |" in markdown
    assert '- prompt 2: `B: read {"filePath": "nope.md"}`' in markdown


async def test_a_session_with_fewer_prompts_pairs_with_nothing(
    runtime: Runtime, model: ScriptedModel
) -> None:
    a = await _session(runtime, model, text_reply("x"), text_reply("y"))
    short = await new_session(runtime)
    model.enqueue(text_reply("x"))
    await runtime.loop.prompt(short, prompt_body("one"))
    pairs = compare(await runtime.store.list_messages(a), await runtime.store.list_messages(short))
    assert [(p.index, p.a is not None, p.b is not None) for p in pairs] == [
        (1, True, True),
        (2, True, False),
    ]
    assert pairs[1].similarity == 0.0
    assert len(turns_of(await runtime.store.list_messages(short))) == 1


def test_diverging_counts_repeated_calls() -> None:
    assert diverging(["read a", "read a", "ls"], ["read a", "ls", "ls"]) == ["A: read a", "B: ls"]
