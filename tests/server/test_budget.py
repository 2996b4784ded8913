"""Budgets that pause and ask: a step that would pass the session's (or its project's)
budget waits for the ``budget`` permission; once, always and reject; spend in the
session; the inputs that set a budget."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from partwire.config import Settings
from partwire.server.runner import serve_in_background
from tests.reference import validate
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED
from tests.server.watch import Watch

STEP_TOKENS = 15  # tests.scripted.finish: 10 in, 5 out


def _three_reads_then_text(model: ScriptedModel) -> None:
    files = ("README.md", "src/app.py", "notes.txt")  # three calls, none repeated
    model.enqueue(
        *(tool_reply("read", {"filePath": f}, call_id=f"r{i}") for i, f in enumerate(files)),
        text_reply("done"),
    )


async def _start(http: httpx.AsyncClient, **session: Any) -> str:
    created = await http.post("/session", json=session)
    assert created.status_code == 200, created.text
    sid = str(created.json()["id"])
    body = {"parts": [{"type": "text", "text": "read thrice"}], "model": SCRIPTED}
    assert (await http.post(f"/session/{sid}/prompt_async", json=body)).status_code == 204
    return sid


def _asked(watch: Watch) -> list[dict[str, Any]]:
    return [
        e["properties"]
        for e in watch.events
        if e["type"] == "permission.asked" and e["properties"]["permission"] == "budget"
    ]


def _idle(sid: str) -> Any:
    return lambda e: e["properties"]["sessionID"] == sid


async def test_a_step_past_the_budget_waits_and_once_allows_another_budget(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    _three_reads_then_text(model)
    async with Watch(http) as watch:
        sid = await _start(http, budget={"tokens": 40})
        ask = await watch.wait_for("permission.asked")
        assert len(model.requests) == 2  # paused before the third step, not inside one
        validate("EventPermissionAsked", ask)
        props = ask["properties"]
        assert props["permission"] == "budget" and "tool" not in props
        assert props["patterns"] == ["30 of 40 tokens spent"]
        assert props["metadata"] == {
            "budget": {"tokens": 40, "granted": 0},
            "kind": "tokens",
            "spent": 30,
            "step": STEP_TOKENS,
            "limit": 40,
        }
        assert (await http.get("/session/status")).json()[sid]["type"] == "busy"
        assert [p["id"] for p in (await http.get("/permission")).json()] == [props["id"]]
        reply = await http.post(f"/permission/{props['id']}/reply", json={"reply": "once"})
        assert reply.status_code == 200, reply.text
        await watch.wait_for("session.idle", _idle(sid))
        assert len(_asked(watch)) == 1  # 60 of 80 after: no second ask
    session = (await http.get(f"/session/{sid}")).json()
    validate("Session", session)
    assert session["metadata"]["budget"] == {"tokens": 40, "granted": 1}
    assert session["tokens"] == {
        "input": 40,
        "output": 20,
        "reasoning": 0,
        "cache": {"read": 0, "write": 0},
    }
    assert len(model.requests) == 4


async def test_reject_stops_before_the_step_and_keeps_what_was_streamed(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    _three_reads_then_text(model)
    async with Watch(http) as watch:
        sid = await _start(http, budget={"tokens": 40})
        ask = await watch.wait_for("permission.asked")
        await http.post(f"/permission/{ask['properties']['id']}/reply", json={"reply": "reject"})
        await watch.wait_for("session.idle", _idle(sid))
    assert len(model.requests) == 2
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert [m["info"]["role"] for m in messages] == ["user", "assistant", "assistant"]
    calls = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
    assert [c["state"]["status"] for c in calls] == ["completed", "completed"]
    assert (await http.get("/session/status")).json() == {}
    session = (await http.get(f"/session/{sid}")).json()
    assert session["metadata"]["budget"] == {"tokens": 40, "granted": 0}


async def test_always_lifts_the_limit_and_rules_never_answer_for_the_user(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    _three_reads_then_text(model)
    allow_all = [{"permission": "*", "pattern": "*", "action": "allow"}]
    async with Watch(http) as watch:
        sid = await _start(http, budget={"tokens": 40}, permission=allow_all)
        ask = await watch.wait_for("permission.asked")  # an allow-all rule does not answer it
        await http.post(f"/permission/{ask['properties']['id']}/reply", json={"reply": "always"})
        await watch.wait_for("session.idle", _idle(sid))
        assert len(_asked(watch)) == 1
    session = (await http.get(f"/session/{sid}")).json()
    assert session["metadata"]["budget"] == {"granted": 0}
    assert len(model.requests) == 4
    assert session["permission"] == allow_all  # "always" added no rule


async def test_cost_counts_and_an_abort_while_asking_ends_the_run(
    http: httpx.AsyncClient, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "cost", lambda usage: 0.25)
    _three_reads_then_text(model)
    async with Watch(http) as watch:
        sid = await _start(http, budget={"cost": 0.7})
        ask = await watch.wait_for("permission.asked")
        assert ask["properties"]["patterns"] == ["$0.50 of $0.70 spent"]
        await http.post(f"/session/{sid}/abort")
        await watch.wait_for("session.idle", _idle(sid))
        replied = await watch.wait_for("permission.replied")
    assert replied["properties"]["reply"] == "reject"
    session = (await http.get(f"/session/{sid}")).json()
    assert session["cost"] == pytest.approx(0.5)
    assert len(model.requests) == 2


@pytest.fixture
async def budgeted(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A server whose project gives every session a budget of 40 tokens."""
    async with serve_in_background(replace(settings, budget={"tokens": 40})) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            yield client


async def test_the_projects_budget_applies_unless_the_session_has_one(
    budgeted: httpx.AsyncClient, model: ScriptedModel
) -> None:
    http = budgeted
    _three_reads_then_text(model)
    async with Watch(http) as watch:
        sid = await _start(http)
        ask = await watch.wait_for("permission.asked")
        assert ask["properties"]["metadata"]["budget"] == {"tokens": 40, "granted": 0}
        await http.post(f"/permission/{ask['properties']['id']}/reply", json={"reply": "once"})
        await watch.wait_for("session.idle", _idle(sid))
    # "once" gave the session a budget of its own: the project's, once more
    own = (await http.get(f"/session/{sid}")).json()["metadata"]["budget"]
    assert own == {"tokens": 40, "granted": 1}
    _three_reads_then_text(model)
    async with Watch(http) as watch:
        roomy = await _start(http, budget={"tokens": 1000})
        await watch.wait_for("session.idle", _idle(roomy))
        assert _asked(watch) == []


async def test_budget_inputs_are_checked_and_kept(http: httpx.AsyncClient) -> None:
    for bad, field in (
        ({"budget": {"tokens": -1}}, "budget.tokens"),
        ({"budget": {"cost": "lots"}}, "budget.cost"),
        ({"budget": {"tokens": 5, "hours": 1}}, "budget.hours"),
        ({"metadata": {"budget": {"tokens": 0}}}, "metadata.budget.tokens"),
    ):
        refused = await http.post("/session", json=bad)
        assert refused.status_code == 400, bad
        assert refused.json()["data"]["field"] == field
    assert len((await http.get("/session")).json()) == 0
    sid = (await http.post("/session", json={"budget": {"cost": 2.5}})).json()["id"]
    patched = await http.patch(f"/session/{sid}", json={"metadata": {"team": "a"}})
    assert patched.json()["metadata"] == {"team": "a", "budget": {"cost": 2.5, "granted": 0}}
    raised = await http.patch(f"/session/{sid}", json={"budget": {"cost": 5}})
    assert raised.json()["metadata"]["budget"] == {"cost": 5.0, "granted": 0}
    dropped = await http.patch(f"/session/{sid}", json={"budget": None})
    assert dropped.json()["metadata"] == {"team": "a"}


async def test_a_sessions_own_writes_never_undo_its_spend(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    """A rename that read the session before an answer completed keeps the new spend."""
    model.gate = asyncio.Event()
    model.enqueue(text_reply("one"))
    sid = (await http.post("/session", json={})).json()["id"]
    body = {"parts": [{"type": "text", "text": "go"}], "model": SCRIPTED}
    async with Watch(http) as watch:
        await http.post(f"/session/{sid}/prompt_async", json=body)
        model.gate.set()
        await watch.wait_for("session.idle", _idle(sid))
    renamed = await http.patch(f"/session/{sid}", json={"title": "renamed"})
    assert renamed.json()["tokens"]["output"] == 5 and renamed.json()["title"] == "renamed"
