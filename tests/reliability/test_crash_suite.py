"""kill -9 at random points of scripted sessions, then restart: nothing a client saw is
lost, everything is terminal, and a client that resumes converges with the server.

Each iteration runs one scenario (streaming text, a long bash, a pending permission, a
pending question, a sub-agent task), kills the server at a random point of it, sometimes
kills the next one again during start-up recovery, restarts, resumes a client with
Last-Event-ID and checks, on the SQLite file and on a Postgres database. Violations are
counted by class and written to ``test-artifacts/crash-suite-<sqlite|postgres>.json``.
``PARTWIRE_RELIABILITY_ITERATIONS`` (per scenario,
default 2) and ``PARTWIRE_RELIABILITY_SEED`` set the run; ``make reliability`` runs more.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from partwire.client.http import PartwireClient
from partwire.schema.event import Event
from tests.reliability.harness import Follower, Served, Violations, open_parts


@dataclass(frozen=True)
class Scenario:
    prompt: str
    agent: str | None
    # is this the event after which to kill (given the session id and a random count)?
    trigger: Callable[[Event, str, int], bool]


_delta_counts: dict[str, int] = {}


def _nth_delta(child: bool) -> Callable[[Event, str, int], bool]:
    def trigger(event: Event, sid: str, nth: int) -> bool:
        if event.type != "message.part.delta":
            return False
        in_child = event.session_id != sid
        if in_child != child:
            return False
        _delta_counts[sid] = _delta_counts.get(sid, 0) + 1
        return _delta_counts[sid] >= nth

    return trigger


def _running_tool(tool: str) -> Callable[[Event, str, int], bool]:
    def trigger(event: Event, sid: str, nth: int) -> bool:
        part = getattr(event.properties, "part", None)
        return (
            event.type == "message.part.updated"
            and getattr(part, "tool", None) == tool
            and part.state.status == "running"  # type: ignore[union-attr]
        )

    return trigger


def _event(kind: str) -> Callable[[Event, str, int], bool]:
    return lambda event, sid, nth: event.type == kind


SCENARIOS = {
    "text": Scenario("long 100000", None, _nth_delta(child=False)),
    "bash": Scenario("bash sleep 2 && echo slept", None, _running_tool("bash")),
    "permission": Scenario("bash echo asked", "plan", _event("permission.asked")),
    "question": Scenario("question", None, _event("question.asked")),
    "task": Scenario("task long 100000", None, _nth_delta(child=True)),
}


# every class of violation the checks count (all reported, zeros included)
CLASSES = (
    "integrity-check",
    "not-terminal",
    "delta-seen-but-lost",
    "resumed-state-differs",
    "status-differs-or-busy",
    "permission-ask-left-open",
    "question-left-open",
    "resume-needed-resync",
    "restart-not-announced",
    "new-prompt-failed",
)


async def _family(http: httpx.AsyncClient, sid: str) -> list[str]:
    children = (await http.get(f"/session/{sid}/children")).json()
    return [sid, *(child["id"] for child in children)]


async def _start_scenario(served: Served, follower: Follower, scenario: Scenario) -> str:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        sid = str((await http.post("/session", json={})).json()["id"])
        body: dict[str, Any] = {"parts": [{"type": "text", "text": scenario.prompt}]}
        if scenario.agent:
            body["agent"] = scenario.agent
        response = await http.post(f"/session/{sid}/prompt_async", json=body)
        assert response.status_code == 204, response.text
    return sid


async def _check_stored(
    served: Served, follower: Follower, sid: str, seen: dict[str, str], bad: Violations
) -> None:
    async with PartwireClient(served.url) as client, httpx.AsyncClient(base_url=served.url) as http:
        family = await _family(http, sid)
        for session_id in family:
            raw = (await http.get(f"/session/{session_id}/message")).json()
            bad["not-terminal"] += len(open_parts(raw))
            stored = {p["id"]: p.get("text", "") for m in raw for p in m["parts"]}
            for part_id, text in seen.items():
                if part_id in stored and not stored[part_id].startswith(text):
                    bad["delta-seen-but-lost"] += 1
            wire = [m.wire() for m in await client.messages(session_id)]
            if [m.wire() for m in follower.state.messages(session_id)] != wire:
                bad["resumed-state-differs"] += 1
        status = await client.status()
        if set(follower.state.session_status) != set(status) or status:
            bad["status-differs-or-busy"] += 1
        permissions = {p.id for p in await client.permissions()}
        questions = {q.id for q in await client.questions()}
        if set(follower.state.permission) != permissions or permissions:
            bad["permission-ask-left-open"] += 1
        if set(follower.state.question) != questions or questions:
            bad["question-left-open"] += 1


async def _check_new_prompt(served: Served, sid: str, bad: Violations) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        body = {"parts": [{"type": "text", "text": "long 3"}]}
        response = await http.post(f"/session/{sid}/message", json=body)
        if response.status_code != 200:
            bad["new-prompt-failed"] += 1
            return
        answer = response.json()
        texts = [p["text"] for p in answer["parts"] if p["type"] == "text"]
        if answer["info"].get("finish") != "stop" or texts != ["w0 w1 w2 "]:
            bad["new-prompt-failed"] += 1


async def _iteration(
    served: Served, name: str, rng: random.Random, bad: Violations, notes: Counter[str]
) -> None:
    scenario = SCENARIOS[name]
    follower = Follower(served.url)
    await follower.connect()
    sid = await _start_scenario(served, follower, scenario)
    nth = rng.randint(1, 150)
    await follower.wait_for(lambda e: scenario.trigger(e, sid, nth))
    await asyncio.sleep(rng.uniform(0, 0.15))
    seen = follower.texts()
    before = follower.instances[-1]
    await served.kill()
    await follower.drop()

    if rng.random() < 0.35:  # die again while the next start recovers
        await served.spawn()
        await asyncio.sleep(rng.uniform(0.3, 1.2))
        await served.kill()
        notes["startup-crashes"] += 1
    await served.start()

    resyncs = follower.resyncs
    await follower.connect()
    await follower.settle()
    if follower.resyncs != resyncs:
        bad["resume-needed-resync"] += 1
    if follower.instances[-1] == before:
        bad["restart-not-announced"] += 1
    problems = served.integrity()
    bad["integrity-check"] += len(problems)
    await _check_stored(served, follower, sid, seen, bad)
    await _check_new_prompt(served, sid, bad)
    await follower.drop()


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
async def test_kill_9_at_random_points_then_resume(
    tmp_path: Path, project: Path, database: str, request: pytest.FixtureRequest
) -> None:
    iterations = int(os.environ.get("PARTWIRE_RELIABILITY_ITERATIONS", "2"))
    seed = int(os.environ.get("PARTWIRE_RELIABILITY_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    url = request.getfixturevalue("postgres").new_database() if database == "postgres" else None
    served = Served(project, tmp_path / "state", database_url=url)
    bad, notes = Violations(dict.fromkeys(CLASSES, 0)), Counter[str]()
    plan = [name for name in SCENARIOS for _ in range(iterations)]
    rng.shuffle(plan)
    await served.start()
    try:
        for name in plan:
            async with asyncio.timeout(120):  # one iteration; fail, never hang
                await _iteration(served, name, rng, bad, notes)
            notes[f"scenario:{name}"] += 1
    finally:
        await served.stop()
    report = bad.report(f"crash-suite-{database}", len(plan), {"seed": seed, **notes})
    print(report)
    assert not +bad, f"{report}\n(seed {seed}: PARTWIRE_RELIABILITY_SEED={seed} reruns it)"
