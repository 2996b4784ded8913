"""Each documented demo prompt shows its feature offline, through the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.server.watch import Watch


async def _demo(http: httpx.AsyncClient, text: str, agent: str = "build") -> tuple[str, Watch]:
    watch = await Watch(http).__aenter__()
    sid = (await http.post("/session", json={})).json()["id"]
    body = {"parts": [{"type": "text", "text": text}], "agent": agent}
    assert (await http.post(f"/session/{sid}/prompt_async", json=body)).status_code == 204
    return str(sid), watch


async def _finish(http: httpx.AsyncClient, sid: str, watch: Watch) -> list[dict[str, Any]]:
    await watch.wait_for("session.idle", lambda e: e["properties"]["sessionID"] == sid)
    await watch.__aexit__(None, None, None)
    messages: list[dict[str, Any]] = (await http.get(f"/session/{sid}/message")).json()
    return messages


def _tools(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in messages for p in m["parts"] if p["type"] == "tool"]


async def test_bash_runs_and_asks_under_plan(http: httpx.AsyncClient) -> None:
    sid, watch = await _demo(http, "bash echo from-the-demo", agent="plan")
    asked = await watch.wait_for("permission.asked")
    assert asked["properties"]["permission"] == "bash"
    assert asked["properties"]["patterns"] == ["echo from-the-demo"]
    await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "once"})
    tool = _tools(await _finish(http, sid, watch))[0]
    assert tool["state"]["output"].strip() == "from-the-demo"


async def test_write_and_edit_change_files(http: httpx.AsyncClient, project: Path) -> None:
    sid, watch = await _demo(http, "write docs/hello.txt hello world")
    await _finish(http, sid, watch)
    assert (project / "docs" / "hello.txt").read_text() == "hello world\n"
    sid, watch = await _demo(http, "edit docs/hello.txt world => there")
    tool = _tools(await _finish(http, sid, watch))[0]
    assert (project / "docs" / "hello.txt").read_text() == "hello there\n"
    assert "+hello there" in tool["state"]["metadata"]["diff"]


async def test_question_waits_for_the_user(http: httpx.AsyncClient) -> None:
    sid, watch = await _demo(http, "question")
    asked = await watch.wait_for("question.asked")
    assert asked["properties"]["questions"][0]["header"] == "Colour"
    answers = {"answers": [["Blue"]]}
    await http.post(f"/question/{asked['properties']['id']}/reply", json=answers)
    messages = await _finish(http, sid, watch)
    assert '"Which colour should the demo use?"="Blue"' in _tools(messages)[0]["state"]["output"]
    assert "Blue" in messages[-1]["parts"][1]["text"]


async def test_todo_writes_the_list(http: httpx.AsyncClient) -> None:
    sid, watch = await _demo(http, "todo")
    await watch.wait_for("todo.updated")
    await _finish(http, sid, watch)
    todos = (await http.get(f"/session/{sid}/todo")).json()
    assert [t["status"] for t in todos] == ["completed", "in_progress", "pending"]


async def test_task_delegates_to_a_sub_agent(http: httpx.AsyncClient) -> None:
    sid, watch = await _demo(http, "task list")
    child = await watch.wait_for(
        "session.created", lambda e: e["properties"]["info"].get("parentID") == sid
    )
    messages = await _finish(http, sid, watch)
    tool = _tools(messages)[0]
    assert tool["tool"] == "task" and "README.md" in tool["state"]["output"]
    child_tools = _tools(
        (await http.get(f"/session/{child['properties']['info']['id']}/message")).json()
    )
    assert [t["tool"] for t in child_tools] == ["list"]


async def test_loop_repeats_a_call_and_hits_the_doom_loop_ask(http: httpx.AsyncClient) -> None:
    sid, watch = await _demo(http, "loop")
    asked = await watch.wait_for("permission.asked")
    assert asked["properties"]["permission"] == "doom_loop"
    await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "once"})
    tools = _tools(await _finish(http, sid, watch))
    assert [t["tool"] for t in tools] == ["list", "list", "list"]
    assert all(t["state"]["status"] == "completed" for t in tools)


async def test_retry_fails_once_then_answers(http: httpx.AsyncClient) -> None:
    sid, watch = await _demo(http, "retry")
    status = await watch.wait_for(
        "session.status", lambda e: e["properties"]["status"]["type"] == "retry"
    )
    assert "Simulated overload" in status["properties"]["status"]["message"]
    messages = await _finish(http, sid, watch)
    kinds = [p["type"] for p in messages[1]["parts"]]
    assert kinds[:2] == ["retry", "step-start"] and "error" not in messages[1]["info"]


async def test_a_path_outside_the_project_asks_external_directory(
    http: httpx.AsyncClient, project: Path
) -> None:
    sid, watch = await _demo(http, "../secret.txt")
    asked = await watch.wait_for("permission.asked")
    assert asked["properties"]["permission"] == "external_directory"
    assert asked["properties"]["patterns"] == [f"{project.parent}/*"]
    await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "reject"})
    messages = await _finish(http, sid, watch)
    assert _tools(messages)[0]["state"]["status"] == "error"
