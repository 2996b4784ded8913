"""``partwire replay`` and ``partwire eval``: replay recorded sessions against another
model and compare sessions prompt by prompt (session/evaluation.py), as a terminal
table, JSON or a markdown report."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Literal

from rich.console import Console
from rich.table import Table

from partwire.cli.run import connected
from partwire.client.http import PartwireClient
from partwire.config import Settings
from partwire.errors import BadRequestError
from partwire.schema.session import Session
from partwire.session.evaluation import (
    Turn,
    TurnDiff,
    as_json,
    as_markdown,
    compare,
    ms,
    totals,
)

Format = Literal["table", "json", "markdown"]
Tools = Literal["recorded", "live"]
POLL_S = 0.2


def _pair(a: Turn | None, b: Turn | None, show: Callable[[Turn], str]) -> str:
    """A's figure/B's figure ("-" for a side without this prompt)."""
    return f"{show(a) if a else '-'}/{show(b) if b else '-'}"


def _table(a_id: str, b_id: str, pairs: list[TurnDiff]) -> Table:
    table = Table(title=f"A {a_id}  ·  B {b_id}", box=None, pad_edge=False)
    for column in ("#", "prompt", "alike", "calls A/B", "diverging", "errors A/B"):
        table.add_column(column, no_wrap=column != "prompt")
    for column in ("tokens A/B", "cost A/B", "first ms A/B", "total ms A/B"):
        table.add_column(column, no_wrap=True, justify="right")
    for p in pairs:
        table.add_row(
            str(p.index),
            p.prompt[:50],
            f"{p.similarity:.2f}",
            _pair(p.a, p.b, lambda t: str(len(t.calls))),
            str(len(p.diverging)),
            _pair(p.a, p.b, lambda t: str(t.errors)),
            _pair(p.a, p.b, lambda t: f"{t.tokens:,}"),
            _pair(p.a, p.b, lambda t: f"${t.cost:.4f}"),
            _pair(p.a, p.b, lambda t: ms(t.first_output_ms)),
            _pair(p.a, p.b, lambda t: ms(t.total_ms)),
        )
    return table


def _print(out: Console, a_id: str, b_id: str, pairs: list[TurnDiff], fmt: Format) -> None:
    if fmt == "json":
        print(json.dumps(as_json(a_id, b_id, pairs), indent=2))
    elif fmt == "markdown":
        print(as_markdown(a_id, b_id, pairs), end="")
    else:
        out.print(_table(a_id, b_id, pairs))
        for p in pairs:
            for call in p.diverging:
                out.print(f"  prompt {p.index} diverges: {call}", soft_wrap=True)
        summary = totals(pairs)
        out.print(
            f"{summary['prompts']} prompts · mean similarity {summary['similarity']:.2f} · "
            f"{summary['diverging']} diverging calls · errors {summary['errors_a']}/"
            f"{summary['errors_b']} · tokens {summary['tokens_a']:,}/{summary['tokens_b']:,}"
        )


async def _pairs(client: PartwireClient, a_id: str, b_id: str) -> list[TurnDiff]:
    return compare(await client.messages(a_id), await client.messages(b_id))


async def eval_sessions(
    settings: Settings, attach: str | None, a_id: str, b_id: str, fmt: Format
) -> int:
    async with connected(attach, settings, Console(stderr=True)) as client:
        pairs = await _pairs(client, a_id, b_id)
    _print(Console(highlight=False, soft_wrap=True), a_id, b_id, pairs, fmt)
    return 0


async def wait_replayed(client: PartwireClient, replay: Session, limit_s: float = 3600) -> None:
    """Until the replay answered every prompt it sends and is idle."""
    origin = (replay.metadata or {}).get("replayOf") or {}
    prompts = int(origin.get("prompts", 0))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while loop.time() < deadline:
        messages = await client.messages(replay.id)
        asked = sum(1 for m in messages if m.info.role == "user")
        answered = bool(messages) and messages[-1].info.role == "assistant"
        last = messages[-1].info if messages else None
        completed = last is not None and getattr(last.time, "completed", None) is not None
        if asked >= prompts and answered and completed and replay.id not in await client.status():
            return
        await asyncio.sleep(POLL_S)
    raise BadRequestError(f"replay {replay.id} did not finish in {limit_s:.0f} s")


async def replay_session(
    settings: Settings, attach: str | None, session_id: str, model: str, tools: Tools, fmt: Format
) -> int:
    err = Console(stderr=True, highlight=False)
    async with connected(attach, settings, err) as client:
        replay = await client.replay(session_id, model, tools)
        prompts = (replay.metadata or {}).get("replayOf", {}).get("prompts", 0)
        err.print(f"[dim]replaying {prompts} prompts of {session_id} with {model}[/dim]")
        err.print(f"[dim]session {replay.id}[/dim]")
        await wait_replayed(client, replay)
        pairs = await _pairs(client, session_id, replay.id)
    _print(Console(highlight=False, soft_wrap=True), session_id, replay.id, pairs, fmt)
    return 0


def _tagged(session: Session, tag: str) -> bool:
    tags = (session.metadata or {}).get("tags")
    replayed = (session.metadata or {}).get("replayOf") is not None
    return isinstance(tags, list) and tag in tags and not replayed


async def eval_tagged(
    settings: Settings, attach: str | None, tag: str, model: str, tools: Tools, fmt: Format
) -> int:
    """Replay every session tagged ``tag`` (``metadata.tags``) with ``model``, one after
    the other, and compare each with its replay."""
    err = Console(stderr=True, highlight=False)
    out = Console(highlight=False, soft_wrap=True)
    results: list[tuple[str, str, list[TurnDiff]]] = []
    async with connected(attach, settings, err) as client:
        found = [s for s in await client.list_sessions() if _tagged(s, tag)]
        if not found:
            raise BadRequestError(f"no session is tagged {tag!r} (metadata.tags)")
        for session in sorted(found, key=lambda s: s.time.created):
            replay = await client.replay(session.id, model, tools)
            err.print(f"[dim]replaying {session.id} as {replay.id}[/dim]")
            await wait_replayed(client, replay)
            results.append((session.id, replay.id, await _pairs(client, session.id, replay.id)))
    if fmt == "json":
        print(json.dumps([as_json(a, b, pairs) for a, b, pairs in results], indent=2))
        return 0
    for a_id, b_id, pairs in results:
        _print(out, a_id, b_id, pairs, fmt)
    return 0
