"""v2 history pages cost what the page costs: a kept projection goes on from the last page."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from partwire.runtime import Runtime
from partwire.schema.event import Event
from partwire.server import v2_projections
from partwire.server.cursor import SESSION_PAGE
from partwire.server.routes.v2_history import durable_history
from tests.session.helpers import new_session

ANSWERS = 60  # each: a prompt, a step, a tool call and a text: 9 durable events


async def _long_session(runtime: Runtime) -> str:
    session_id = await new_session(runtime)
    for n in range(ANSWERS):
        async with runtime.record(session_id, prompt=f"question {n}") as msg:
            await msg.add_tool_call(f"call_{n}", "read", {"filePath": "notes.txt"})
            await msg.add_tool_result(f"call_{n}", "alpha")
            await msg.add_text_delta(f"answer {n}")
    return session_id


def _count_reads(runtime: Runtime) -> list[int]:
    """How many logged events each of the store's session pages returned."""
    reads: list[int] = []
    page = runtime.store.session_page

    async def counted(
        session_id: str, types: Sequence[str], *, after: str | None, through: str, limit: int
    ) -> list[Event]:
        events = await page(session_id, types, after=after, through=through, limit=limit)
        reads.append(len(events))
        return events

    runtime.store.session_page = counted  # type: ignore[method-assign]
    return reads


async def test_paging_forward_reads_only_the_page(runtime: Runtime) -> None:
    session_id = await _long_session(runtime)
    session = await runtime.store.get_session(session_id)
    reads = _count_reads(runtime)
    whole, _ = await durable_history(runtime, session)
    logged = sum(reads)  # the session's events a whole fold reads
    assert [e["durable"]["seq"] for e in whole] == list(range(1, len(whole) + 1))  # type: ignore[index]
    assert len(whole) > 500
    after, pages = 0, []
    while True:
        reads.clear()
        made, _ = await durable_history(runtime, session, after=after, limit=20)
        page = made[:20]
        pages.append(sum(reads))
        assert [e["durable"]["seq"] for e in page] == list(range(after + 1, after + 1 + len(page)))  # type: ignore[index]
        assert page == whole[after : after + 20]
        if len(made) <= 20:
            break
        after += 20
    # every page read one or two store pages from where the last one stopped, never the
    # session from its start (as each page did before: the last would read all of it)
    assert len(pages) > 20
    assert max(pages) <= 2 * SESSION_PAGE < logged


async def test_a_page_behind_the_kept_projection_folds_from_the_start(runtime: Runtime) -> None:
    session_id = await _long_session(runtime)
    session = await runtime.store.get_session(session_id)
    whole, _ = await durable_history(runtime, session)
    later, _ = await durable_history(runtime, session, after=200, limit=5)
    earlier, _ = await durable_history(runtime, session, after=3, limit=5)
    assert later[:5] == whole[200:205]
    assert earlier[:5] == whole[3:8]
    # a session that grew since its projection was kept goes on from it
    async with runtime.record(session_id, prompt="one more") as msg:
        await msg.add_text_delta("more")
    grown, _ = await durable_history(runtime, session, after=len(whole) - 1)
    assert grown[0] == whole[-1] and len(grown) > 1
    assert [e["durable"]["seq"] for e in grown] == list(range(len(whole), len(whole) + len(grown)))  # type: ignore[index]


async def test_a_page_further_back_starts_from_the_mark_before_it(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(v2_projections, "MARK_EVERY", 50)
    session_id = await _long_session(runtime)
    session = await runtime.store.get_session(session_id)
    reads = _count_reads(runtime)
    whole, _ = await durable_history(runtime, session)
    logged = sum(reads)
    for after in (430, 120, 260, 3):  # back and forth: each from the mark before it
        reads.clear()
        page, _ = await durable_history(runtime, session, after=after, limit=10)
        assert page[:10] == whole[after : after + 10], after
        assert sum(reads) <= 2 * SESSION_PAGE < logged, after
