"""A resume storm: 20 clients drop and resume at random while 5 sessions stream. Each
client gets every logged event exactly once and in order (the same sequence as a client
that never dropped), and its reduced state equals what the server stores.

``PARTWIRE_RELIABILITY_STORM_WORDS`` sets how long each session streams (default 600
words per prompt, two prompts per session), on the SQLite file and on a Postgres database;
counts go to ``test-artifacts/resume-storm-<sqlite|postgres>.json``.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from pathlib import Path

import httpx
import pytest

from partwire.client.http import PartwireClient
from tests.reliability.harness import Follower, Served, Violations

CLIENTS = 20
SESSIONS = 5
STORM_LIMIT_S = 300
IDLE_LIMIT_S = 120


async def _storm(follower: Follower, rng: random.Random, stop: asyncio.Event) -> int:
    """Drop and resume until ``stop``; returns the number of drops."""
    drops = 0
    while not stop.is_set():
        await asyncio.sleep(rng.uniform(0.01, 0.15))
        await follower.connect()  # drops the current stream, resumes from the last id
        drops += 1
    return drops


async def _all_idle(url: str, sessions: list[str]) -> None:
    deadline = time.monotonic() + IDLE_LIMIT_S
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        while time.monotonic() < deadline:
            busy = (await http.get("/session/status")).json()
            if not any(s in busy for s in sessions):
                return
            await asyncio.sleep(0.05)
        stuck = {s: busy.get(s) for s in sessions if s in busy}
        last = {s: (await http.get(f"/session/{s}/message")).json()[-1]["info"] for s in stuck}
    raise AssertionError(f"sessions still busy after {IDLE_LIMIT_S} s: {stuck}; last: {last}")


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
async def test_resume_storm_loses_and_repeats_nothing(
    tmp_path: Path, project: Path, database: str, request: pytest.FixtureRequest
) -> None:
    words = int(os.environ.get("PARTWIRE_RELIABILITY_STORM_WORDS", "600"))
    seed = int(os.environ.get("PARTWIRE_RELIABILITY_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    url = request.getfixturevalue("postgres").new_database() if database == "postgres" else None
    served = Served(project, tmp_path / "state", delay_ms=2, database_url=url)
    await served.start()
    bad = Violations(
        dict.fromkeys(
            ("duplicate-event", "missing-event", "out-of-order", "resync", "state-differs"), 0
        )
    )
    try:
        witness = Follower(served.url)
        await witness.connect()
        clients = [Follower(served.url) for _ in range(CLIENTS)]
        for client in clients:
            await client.connect()
        start = len(witness.logged)
        firsts = [len(c.logged) for c in clients]

        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            sessions = [
                (await http.post("/session", json={})).json()["id"] for _ in range(SESSIONS)
            ]
            for text in (f"long {words}", "list"):
                for sid in sessions:
                    body = {"parts": [{"type": "text", "text": text}]}
                    assert (
                        await http.post(f"/session/{sid}/prompt_async", json=body)
                    ).status_code == 204
                # the long answers stream before the second prompts come (a run answers
                # the newest prompt it finds: both at once would skip the long ones)
                for _ in range(200):
                    if set(sessions) <= set((await http.get("/session/status")).json()):
                        break
                    await asyncio.sleep(0.01)
        stop = asyncio.Event()
        storms = [
            asyncio.create_task(_storm(c, random.Random(rng.random()), stop)) for c in clients
        ]
        async with asyncio.timeout(STORM_LIMIT_S):  # fail, never hang, if something sticks
            await _all_idle(served.url, sessions)
            stop.set()
            drops = sum(await asyncio.gather(*storms))
            for follower in (witness, *clients):
                await follower.connect()  # a final resume catches up
                await follower.settle(quiet_s=0.5)

        expected = witness.logged[start:]
        async with PartwireClient(served.url) as api:
            stored = {sid: [m.wire() for m in await api.messages(sid)] for sid in sessions}
        for client, first in zip(clients, firsts, strict=True):
            got = client.logged[first:]
            bad["duplicate-event"] += len(got) - len(set(got))
            bad["missing-event"] += len(set(expected) - set(got))
            if got != expected and len(got) == len(set(got)) and set(got) == set(expected):
                bad["out-of-order"] += 1
            bad["resync"] += client.resyncs
            for sid in sessions:
                if [m.wire() for m in client.state.messages(sid)] != stored[sid]:
                    bad["state-differs"] += 1
        for follower in (witness, *clients):
            await follower.drop()
    finally:
        await served.stop()
    events = len(expected)
    report = bad.report(
        f"resume-storm-{database}", CLIENTS, {"seed": seed, "drops": drops, "events": events}
    )
    print(f"{report}\n  drops: {drops}, logged events per client: {events}")
    assert drops >= CLIENTS and events > SESSIONS * words
    assert not +bad, f"{report}\n(seed {seed})"
