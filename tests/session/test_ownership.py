"""Session leases as the session layer uses them (the Postgres leases are exercised by
tests/server/test_instances.py; here a fake shows the bookkeeping)."""

from __future__ import annotations

import asyncio

import pytest

from partwire.session import ownership
from partwire.session.ownership import Ownership


class FakeLeases:
    def __init__(self, taken_by_others: set[str], expired: list[str]) -> None:
        self.others = taken_by_others
        self.expired_ids = expired
        self.mine: set[str] = set()
        self.renewed: list[list[str]] = []
        self.marked: set[tuple[str, str]] = set()

    async def acquire(self, session_id: str) -> bool:
        if session_id in self.others:
            return False
        self.mine.add(session_id)
        return True

    async def renew(self, session_ids: list[str]) -> None:
        self.renewed.append(session_ids)

    async def release(self, session_id: str) -> None:
        self.mine.discard(session_id)

    async def expired(self) -> list[str]:
        found, self.expired_ids = self.expired_ids, []
        return found

    async def mark_no_reply(self, session_id: str, message_id: str) -> None:
        self.marked.add((session_id, message_id))

    async def no_reply(self, session_id: str) -> set[str]:
        return {message for session, message in self.marked if session == session_id}


async def test_without_leases_every_session_is_ours() -> None:
    assert await Ownership().acquire("ses_1")


async def test_prompts_kept_from_answers_are_marked_where_every_server_reads_them() -> None:
    assert await Ownership().no_reply("ses_1") == set()  # one server: only in memory
    owner = Ownership(FakeLeases(set(), []))
    await owner.mark_no_reply("ses_1", "msg_a")
    await owner.mark_no_reply("ses_2", "msg_b")
    assert await owner.no_reply("ses_1") == {"msg_a"}


async def test_a_lease_is_taken_once_and_kept_while_a_new_run_needs_it() -> None:
    leases = FakeLeases({"ses_other"}, [])
    owner = Ownership(leases)
    assert await owner.acquire("ses_1") and await owner.acquire("ses_1")
    assert not await owner.acquire("ses_other")
    await owner.release("ses_1", lambda: True)  # a new run took the session meanwhile
    assert leases.mine == {"ses_1"}
    await owner.release("ses_1", lambda: False)
    assert leases.mine == set() and owner.held == set()


async def test_held_leases_are_renewed_and_a_gone_servers_sessions_taken_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ownership, "SWEEP_EVERY_S", 0.01)
    monkeypatch.setattr(ownership, "RENEW_EVERY_S", 0.0)
    leases = FakeLeases(set(), ["ses_gone", "ses_deleted"])
    owner = Ownership(leases)
    await owner.acquire("ses_mine")
    taken: list[str] = []

    async def take_over(session_id: str) -> None:
        if session_id == "ses_deleted":
            raise LookupError(session_id)
        taken.append(session_id)

    keeping = asyncio.create_task(owner.keep(take_over))
    await asyncio.sleep(0.1)
    keeping.cancel()
    assert taken == ["ses_gone"]
    assert "ses_deleted" not in owner.held and "ses_deleted" not in leases.mine
    assert ["ses_gone", "ses_mine"] in leases.renewed
