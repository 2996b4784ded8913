"""Replaying a recorded session against another model: tool calls answered from the
recording (nothing runs) or run live in a scratch worktree; a session an external loop
recorded replays too."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from partwire.config import Settings
from partwire.replays import start_replay
from partwire.runtime import Runtime
from partwire.schema.part import ModelRef
from partwire.server.runner import serve_in_background
from partwire.session.replay import NOT_RECORDED
from tests.reference import validate
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED
from tests.session.helpers import new_session

COUNT = {"command": "echo one >> counted.txt", "description": "count"}
OTHER = {"command": "echo two >> counted.txt", "description": "count again"}


async def _prompt(http: httpx.AsyncClient, sid: str, text: str) -> None:
    body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 200, response.text


async def _recorded(http: httpx.AsyncClient, model: ScriptedModel) -> str:
    model.enqueue(tool_reply("bash", COUNT, call_id="c1"), text_reply("counted"), text_reply("ok"))
    sid = str((await http.post("/session", json={"title": "counting"})).json()["id"])
    await _prompt(http, sid, "count")
    await _prompt(http, sid, "and now?")
    return sid


async def _replayed(http: httpx.AsyncClient, sid: str, prompts: int) -> list[dict[str, Any]]:
    """The replay's messages once every prompt is answered and it is idle."""
    for _ in range(200):
        messages: list[dict[str, Any]] = (await http.get(f"/session/{sid}/message")).json()
        users = [m for m in messages if m["info"]["role"] == "user"]
        done = messages and messages[-1]["info"].get("time", {}).get("completed")
        idle = sid not in (await http.get("/session/status")).json()
        if len(users) == prompts and done and idle:
            return messages
        await asyncio.sleep(0.05)
    raise AssertionError(f"replay {sid} did not finish")


def _calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in messages for p in m["parts"] if p["type"] == "tool"]


async def test_recorded_tools_answer_matching_calls_and_run_nothing(
    http: httpx.AsyncClient, model: ScriptedModel, project: Path
) -> None:
    source = await _recorded(http, model)
    assert (project / "counted.txt").read_text() == "one\n"
    recorded = _calls((await http.get(f"/session/{source}/message")).json())[0]
    model.enqueue(
        tool_reply("bash", {"description": "count", "command": "echo one >> counted.txt"}),
        tool_reply("bash", OTHER, call_id="c2"),  # not in the recording
        text_reply("replayed"),
        text_reply("ok again"),
    )
    asked = await http.post(
        f"/session/{source}/replay",
        json={"model": {"providerID": "scripted", "modelID": "scripted"}},
    )
    assert asked.status_code == 200, asked.text
    replay = asked.json()
    validate("Session", replay)
    assert replay["metadata"]["replayOf"] == {
        "sessionID": source,
        "model": "scripted/scripted",
        "tools": "recorded",
        "prompts": 2,
    }
    assert replay["title"] == "counting (replay: scripted/scripted)"
    messages = await _replayed(http, replay["id"], 2)
    users = [m["parts"][0]["text"] for m in messages if m["info"]["role"] == "user"]
    assert users == ["count", "and now?"]
    matched, diverged = _calls(messages)
    assert matched["state"]["status"] == "completed"
    assert matched["state"]["output"] == recorded["state"]["output"]
    assert matched["state"]["metadata"]["replayed"] == recorded["id"]
    assert diverged["state"] == {**diverged["state"], "status": "error"}
    assert diverged["state"]["error"] == NOT_RECORDED.format(tool="bash")
    assert (project / "counted.txt").read_text() == "one\n"  # nothing ran


async def test_replay_refuses_what_it_cannot_do(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    empty = (await http.post("/session", json={})).json()["id"]
    body = {"model": {"providerID": "scripted", "modelID": "scripted"}}
    nothing = await http.post(f"/session/{empty}/replay", json=body)
    assert nothing.status_code == 400 and "no prompt to replay" in nothing.text
    source = await _recorded(http, model)
    unknown = await http.post(
        f"/session/{source}/replay", json={"model": {"providerID": "nope", "modelID": "x"}}
    )
    assert unknown.status_code == 400
    bad_mode = await http.post(f"/session/{source}/replay", json={**body, "tools": "some"})
    assert bad_mode.status_code == 400 and bad_mode.json()["data"]["field"] == "tools"
    missing = await http.post("/session/ses_nope/replay", json=body)
    assert missing.status_code == 404
    live = await http.post(f"/session/{source}/replay", json={**body, "tools": "live"})
    assert live.status_code == 400 and "git" in live.text  # the project is no repository
    assert len((await http.get("/session")).json()) == 2  # nothing made by a refusal


@pytest.fixture
async def in_repo(settings: Settings, repo: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_in_background(replace(settings, project_dir=repo)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            yield client


async def test_live_tools_run_in_a_scratch_worktree_never_in_the_project(
    in_repo: httpx.AsyncClient, model: ScriptedModel, repo: Path, settings: Settings
) -> None:
    http = in_repo
    source = await _recorded(http, model)
    model.enqueue(tool_reply("bash", OTHER, call_id="live"), text_reply("ran"), text_reply("ok"))
    body = {"model": {"providerID": "scripted", "modelID": "scripted"}, "tools": "live"}
    replay = (await http.post(f"/session/{source}/replay", json=body)).json()
    scratch = Path(replay["directory"])
    assert scratch != repo and scratch.is_relative_to(settings.data_dir)
    messages = await _replayed(http, replay["id"], 2)
    assert _calls(messages)[0]["state"]["status"] == "completed"
    assert (scratch / "counted.txt").read_text() == "two\n"  # from the repository's HEAD
    assert (repo / "counted.txt").read_text() == "one\n"  # the user's files: untouched


async def test_a_session_an_external_loop_recorded_replays(
    runtime: Runtime, model: ScriptedModel
) -> None:
    session_id = await new_session(runtime)
    async with runtime.record(session_id, prompt="list the files", model="acme/m1") as msg:
        await msg.start_step()
        await msg.add_tool_call("call_1", "list", '{"path": "."}')
        await msg.add_tool_result("call_1", "README.md\nsrc", title="listed")
        await msg.finish_step({"input": 10, "output": 2})
    model.enqueue(tool_reply("list", {"path": "."}), text_reply("two entries"))
    replay = await start_replay(
        runtime, session_id, ModelRef(providerID="scripted", modelID="scripted"), "recorded"
    )
    for _ in range(200):
        messages = await runtime.store.list_messages(replay.id)
        if len(messages) == 3 and not runtime.loop.is_busy(replay.id):
            break
        await asyncio.sleep(0.05)
    tool = next(p for m in messages for p in m.parts if p.type == "tool")
    assert tool.state.status == "completed" and tool.state.output == "README.md\nsrc"  # type: ignore[union-attr]


async def test_compare_route_reports_a_replay_against_its_recording(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    source = await _recorded(http, model)
    model.enqueue(tool_reply("bash", OTHER, call_id="c2"), text_reply("counted"), text_reply("ok"))
    body = {"model": {"providerID": "scripted", "modelID": "scripted"}}
    replay = (await http.post(f"/session/{source}/replay", json=body)).json()["id"]
    await _replayed(http, replay, 2)
    report = (await http.get(f"/session/{source}/compare", params={"other": replay})).json()
    assert report["a"] == source and report["b"] == replay
    first, second = report["turns"]
    assert first["similarity"] == 1.0 and len(first["diverging"]) == 2
    assert first["b"]["errors"] == 1  # the call the recording had no answer for
    assert second["diverging"] == [] and report["totals"]["prompts"] == 2
    missing = await http.get(f"/session/{source}/compare", params={"other": "ses_nope"})
    assert missing.status_code == 404
    unnamed = await http.get(f"/session/{source}/compare")
    assert unnamed.status_code == 400
