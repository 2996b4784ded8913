"""Compare two sessions prompt by prompt (``partwire eval``, a replay's report).

Each session is cut into turns: a user prompt and every assistant message up to the next
prompt. Turns are paired in order. For each pair: how alike the answers' text is
(difflib's ratio, 0 to 1), the tool calls each made and those that diverge (a call of
one with no call of the same tool and arguments in the other), errors (failed answers
and failed tool calls), tokens (every kind), cost, time to the first output and total
time. Pure functions over stored messages: the CLI and the web UI show the same figures.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from partwire.schema.message import AssistantMessage, MessageWithParts, UserMessage
from partwire.schema.part import CompactionPart, ReasoningPart, TextPart, ToolPart
from partwire.schema.tool_state import ToolStateError


@dataclass
class Turn:
    """One prompt and what answered it."""

    prompt: str
    text: str = ""
    calls: list[str] = field(default_factory=list)  # "tool {arguments}", in order
    errors: int = 0
    tokens: int = 0
    cost: float = 0.0
    first_output_ms: int | None = None
    total_ms: int | None = None


@dataclass
class TurnDiff:
    """A pair of turns, A's and B's (None where one session has fewer prompts)."""

    index: int
    prompt: str
    similarity: float
    diverging: list[str]
    a: Turn | None
    b: Turn | None


def _call(part: ToolPart) -> str:
    return f"{part.tool} {json.dumps(part.state.input, sort_keys=True, ensure_ascii=False)}"


def _first_output(entry: MessageWithParts) -> int | None:
    starts = [
        part.time.start
        for part in entry.parts
        if isinstance(part, TextPart | ReasoningPart) and part.time is not None
    ]
    starts += [
        part.state.time.start
        for part in entry.parts
        if isinstance(part, ToolPart) and hasattr(part.state, "time")
    ]
    return min(starts) if starts else None


def turns_of(history: list[MessageWithParts]) -> list[Turn]:
    """``history`` cut into turns, one per prompt (compaction requests are not prompts)."""
    turns: list[Turn] = []
    asked_at = 0
    for entry in history:
        info = entry.info
        if isinstance(info, UserMessage):
            if any(isinstance(p, CompactionPart) for p in entry.parts):
                continue
            words = [p.text for p in entry.parts if isinstance(p, TextPart) and not p.synthetic]
            turns.append(Turn(prompt=" ".join(words).strip()))
            asked_at = info.time.created
            continue
        if not turns or not isinstance(info, AssistantMessage):
            continue
        _add_answer(turns[-1], entry, info, asked_at)
    return turns


def _add_answer(turn: Turn, entry: MessageWithParts, info: AssistantMessage, asked: int) -> None:
    texts = [p.text for p in entry.parts if isinstance(p, TextPart) and not p.synthetic]
    turn.text = "\n".join(t for t in (turn.text, *texts) if t)
    calls = [p for p in entry.parts if isinstance(p, ToolPart)]
    turn.calls += [_call(p) for p in calls]
    turn.errors += int(info.error is not None and info.error.name != "MessageAbortedError")
    turn.errors += sum(isinstance(p.state, ToolStateError) for p in calls)
    turn.tokens += info.tokens.counted
    turn.cost += info.cost
    first = _first_output(entry)
    if first is not None and turn.first_output_ms is None:
        turn.first_output_ms = max(0, first - asked)
    if info.time.completed is not None:
        turn.total_ms = max(0, info.time.completed - asked)


def diverging(a: list[str], b: list[str]) -> list[str]:
    """Calls one side made that the other did not (as many times), A's first."""
    left, right = Counter(a), Counter(b)
    return [f"A: {c}" for c in (left - right).elements()] + [
        f"B: {c}" for c in (right - left).elements()
    ]


def compare(a: list[MessageWithParts], b: list[MessageWithParts]) -> list[TurnDiff]:
    """The two sessions' turns side by side, in prompt order."""
    turns_a, turns_b = turns_of(a), turns_of(b)
    pairs: list[TurnDiff] = []
    for index in range(max(len(turns_a), len(turns_b))):
        ta = turns_a[index] if index < len(turns_a) else None
        tb = turns_b[index] if index < len(turns_b) else None
        alike = difflib.SequenceMatcher(None, ta.text, tb.text).ratio() if ta and tb else 0.0
        either = ta or tb
        assert either is not None  # index is below the longer side's length
        pairs.append(
            TurnDiff(
                index=index + 1,
                prompt=either.prompt,
                similarity=round(alike, 3),
                diverging=diverging(ta.calls if ta else [], tb.calls if tb else []),
                a=ta,
                b=tb,
            )
        )
    return pairs


def totals(pairs: list[TurnDiff]) -> dict[str, Any]:
    """Sums over every turn (similarity: the mean)."""
    side = {"a": [p.a for p in pairs if p.a], "b": [p.b for p in pairs if p.b]}
    return {
        "prompts": len(pairs),
        "similarity": round(sum(p.similarity for p in pairs) / len(pairs), 3) if pairs else 0.0,
        "diverging": sum(len(p.diverging) for p in pairs),
        **{
            f"{key}_{name}": sum(getattr(t, key) or 0 for t in turns)
            for name, turns in side.items()
            for key in ("errors", "tokens", "cost", "total_ms")
        },
        "calls_a": sum(len(t.calls) for t in side["a"]),
        "calls_b": sum(len(t.calls) for t in side["b"]),
    }


def as_json(a_id: str, b_id: str, pairs: list[TurnDiff]) -> dict[str, Any]:
    return {"a": a_id, "b": b_id, "turns": [asdict(p) for p in pairs], "totals": totals(pairs)}


def ms(value: int | None) -> str:
    """Milliseconds for a report ("-" when not known)."""
    return "-" if value is None else f"{value:,}"


def as_markdown(a_id: str, b_id: str, pairs: list[TurnDiff]) -> str:
    """A report to paste into a pull request: a table, then the diverging calls."""
    lines = [
        f"# {a_id} (A) against {b_id} (B)",
        "",
        "| # | prompt | similarity | calls A/B | diverging | errors A/B | tokens A/B "
        "| cost A/B | first output ms A/B | total ms A/B |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pairs:
        a, b = p.a or Turn(""), p.b or Turn("")
        prompt = p.prompt.replace("|", "\\|").replace("\n", " ")[:60]
        lines.append(
            f"| {p.index} | {prompt} | {p.similarity:.2f} | {len(a.calls)}/{len(b.calls)} "
            f"| {len(p.diverging)} | {a.errors}/{b.errors} | {a.tokens:,}/{b.tokens:,} "
            f"| ${a.cost:.4f}/${b.cost:.4f} | {ms(a.first_output_ms)}/{ms(b.first_output_ms)} "
            f"| {ms(a.total_ms)}/{ms(b.total_ms)} |"
        )
    calls = [(p.index, c) for p in pairs for c in p.diverging]
    if calls:
        lines += ["", "## Diverging calls", ""]
        lines += [f"- prompt {index}: `{call}`" for index, call in calls]
    return "\n".join(lines) + "\n"
