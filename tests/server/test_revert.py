"""Snapshots, patch parts, diff, revert / unrevert, fork — in a real git repository."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from partwire.config import Settings
from partwire.server.runner import serve_in_background
from tests.reference import response_schema, validate, validate_schema
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED
from tests.server.watch import Watch

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

EDIT = {
    "filePath": "README.md",
    "oldString": "A sample project.",
    "newString": "An edited project.",
}


def _git(project: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=project, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(project: Path) -> Path:
    _git(project, "init", "-q")
    _git(project, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    _git(project, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    return project


@pytest.fixture
async def http(settings: Settings, repo: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_in_background(replace(settings, project_dir=repo)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            yield client


async def _run(http: httpx.AsyncClient, sid: str, text: str) -> None:
    body = {"parts": [{"type": "text", "text": text}], "model": SCRIPTED}
    response = await http.post(f"/session/{sid}/message", json=body)
    assert response.status_code == 200, response.text


async def _session_with_edits(http: httpx.AsyncClient, model: ScriptedModel) -> str:
    model.enqueue(
        tool_reply("edit", EDIT, call_id="e"),
        text_reply("edited"),
        tool_reply("write", {"filePath": "added.txt", "content": "new\n"}, call_id="w"),
        text_reply("written"),
    )
    sid = str((await http.post("/session", json={})).json()["id"])
    await _run(http, sid, "edit the readme")
    await _run(http, sid, "add a file")
    return sid


async def test_steps_snapshot_and_patch_without_touching_the_users_git(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path
) -> None:
    index_before = (repo / ".git" / "index").read_bytes()
    async with Watch(http) as watch:
        sid = await _session_with_edits(http, model)
        diff_event = await watch.wait_for("session.diff")
    validate("EventSessionDiff", diff_event)
    messages = (await http.get(f"/session/{sid}/message")).json()
    first = messages[1]["parts"]
    kinds = [p["type"] for p in first]
    assert kinds == ["step-start", "tool", "patch", "step-finish"]
    start, patch, finish = first[0], first[2], first[3]
    validate("PatchPart", patch)
    assert patch["hash"] == start["snapshot"] and patch["files"] == [str(repo / "README.md")]
    assert finish["snapshot"] != start["snapshot"]
    # the user's repository saw nothing: same index, the change is an unstaged edit
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert _git(repo, "status", "--porcelain").splitlines() == [" M README.md", "?? added.txt"]
    assert len(_git(repo, "log", "--oneline").splitlines()) == 1
    diff = (await http.get(f"/session/{sid}/diff")).json()
    validate_schema(response_schema("/session/{sessionID}/diff", "get"), diff)
    assert {(d["file"], d["status"]) for d in diff} == {
        ("README.md", "modified"),
        ("added.txt", "added"),
    }
    readme = next(d for d in diff if d["file"] == "README.md")
    assert (readme["additions"], readme["deletions"]) == (1, 1)
    session = (await http.get(f"/session/{sid}")).json()
    assert session["summary"] == {"additions": 2, "deletions": 1, "files": 2}


async def test_revert_restores_files_and_unrevert_brings_them_back(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path
) -> None:
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    first_answer = messages[1]["info"]["id"]
    reverted = await http.post(f"/session/{sid}/revert", json={"messageID": first_answer})
    assert reverted.status_code == 200, reverted.text
    session = reverted.json()
    validate("Session", session)
    assert session["revert"]["messageID"] == first_answer
    assert "-An edited project." in session["revert"]["diff"]
    assert (repo / "README.md").read_text() == "# Sample\n\nA sample project.\n"
    assert not (repo / "added.txt").exists()

    restored = (await http.post(f"/session/{sid}/unrevert")).json()
    assert "revert" not in restored
    assert "An edited project." in (repo / "README.md").read_text()
    assert (repo / "added.txt").read_text() == "new\n"


async def test_a_prompt_after_revert_drops_the_hidden_messages(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path
) -> None:
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    second_prompt = messages[3]["info"]["id"]
    await http.post(f"/session/{sid}/revert", json={"messageID": second_prompt})
    assert not (repo / "added.txt").exists()
    assert "An edited project." in (repo / "README.md").read_text()
    model.enqueue(text_reply("fresh start"))
    async with Watch(http) as watch:
        await _run(http, sid, "something else")
        removed = [e for e in watch.events if e["type"] == "message.removed"]
    assert len(removed) == 3  # the second prompt and its two answers
    validate("EventMessageRemoved", removed[0])
    after = (await http.get(f"/session/{sid}/message")).json()
    assert [m["info"]["role"] for m in after] == [
        "user",
        "assistant",
        "assistant",
        "user",
        "assistant",
    ]
    assert "revert" not in (await http.get(f"/session/{sid}")).json()


async def test_fork_copies_the_messages_before_a_point(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    cut = messages[3]["info"]["id"]
    response = await http.post(f"/session/{sid}/fork", json={"messageID": cut})
    fork = response.json()
    validate("Session", fork)
    assert fork["id"] != sid and fork["title"].endswith("(fork)")
    copied = (await http.get(f"/session/{fork['id']}/message")).json()
    assert len(copied) == 3
    assert [m["info"]["role"] for m in copied] == ["user", "assistant", "assistant"]
    assert all(m["info"]["sessionID"] == fork["id"] for m in copied)
    assert copied[1]["info"]["parentID"] == copied[0]["info"]["id"]
    assert [p["type"] for p in copied[1]["parts"]] == [p["type"] for p in messages[1]["parts"]]
    everything = (await http.post(f"/session/{sid}/fork")).json()
    assert len((await http.get(f"/session/{everything['id']}/message")).json()) == 6


async def test_revert_and_fork_errors(http: httpx.AsyncClient) -> None:
    sid = (await http.post("/session", json={})).json()["id"]
    missing = await http.post(f"/session/{sid}/revert", json={"messageID": "msg_nope"})
    assert missing.status_code == 404
    bad = await http.post(f"/session/{sid}/revert", json={"messageID": "nope"})
    assert bad.status_code == 400 and bad.json()["data"]["field"] == "messageID"
    assert (
        await http.post(f"/session/{sid}/fork", json={"messageID": "msg_nope"})
    ).status_code == 404
    assert (await http.post("/session/ses_nope/unrevert")).status_code == 404


async def test_revert_to_a_part_keeps_what_came_before_it(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path
) -> None:
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    write_step = messages[4]  # the assistant message whose tool wrote added.txt
    tool = next(p for p in write_step["parts"] if p["type"] == "tool")
    response = await http.post(
        f"/session/{sid}/revert", json={"messageID": write_step["info"]["id"], "partID": tool["id"]}
    )
    assert response.json()["revert"]["partID"] == tool["id"]
    assert not (repo / "added.txt").exists()
    assert "An edited project." in (repo / "README.md").read_text()  # an earlier step: kept
    model.enqueue(text_reply("again"))
    async with Watch(http) as watch:
        await _run(http, sid, "next")
        removed = [
            e["properties"]["partID"] for e in watch.events if e["type"] == "message.part.removed"
        ]
    kept = (await http.get(f"/session/{sid}/message")).json()[4]
    assert kept["info"]["id"] == write_step["info"]["id"]
    assert [p["id"] for p in kept["parts"]] == [
        p["id"] for p in write_step["parts"] if p["id"] < tool["id"]
    ]
    assert tool["id"] in removed


async def test_v2_revert_stages_clears_and_commits(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path
) -> None:
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    second_prompt = messages[3]["info"]["id"]
    staged = await http.post(f"/api/session/{sid}/revert/stage", json={"messageID": second_prompt})
    assert staged.status_code == 200, staged.text
    validate_schema(response_schema("/api/session/{sessionID}/revert/stage", "post"), staged.json())
    state = staged.json()["data"]
    assert state["messageID"] == second_prompt
    assert not (repo / "added.txt").exists()  # the second prompt's file is gone
    assert "An edited project." in (repo / "README.md").read_text()  # the first's stays

    cleared = await http.post(f"/api/session/{sid}/revert/clear")
    assert cleared.status_code == 204 and (repo / "added.txt").exists()
    assert (await http.get(f"/session/{sid}")).json().get("revert") is None

    # stage without the files: the boundary only; commit drops what it hides
    await http.post(
        f"/api/session/{sid}/revert/stage", json={"messageID": second_prompt, "files": False}
    )
    assert (repo / "added.txt").exists()
    committed = await http.post(f"/api/session/{sid}/revert/commit")
    assert committed.status_code == 204
    left = [m["info"]["id"] for m in (await http.get(f"/session/{sid}/message")).json()]
    assert left == [m["info"]["id"] for m in messages[:3]]
    assert (await http.get(f"/session/{sid}")).json().get("revert") is None


async def test_revert_never_deletes_through_a_symlink_out_of_the_project(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me\n")
    (repo / "linkdir").symlink_to(outside, target_is_directory=True)
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    info = (await http.get(f"/session/{sid}")).json()
    patch = next(p for m in messages for p in m["parts"] if p["type"] == "patch")
    patch["files"] = [str(repo / "linkdir" / "victim.txt")]
    imported = await http.post("/session/import", json={"info": info, "messages": messages})
    assert imported.status_code == 200, imported.text
    copy = imported.json()["id"]
    copied = (await http.get(f"/session/{copy}/message")).json()
    reverted = await http.post(
        f"/session/{copy}/revert", json={"messageID": copied[1]["info"]["id"]}
    )
    assert reverted.status_code == 200, reverted.text
    assert (outside / "victim.txt").read_text() == "keep me\n"


async def test_patch_parts_that_leave_the_project_are_refused(
    http: httpx.AsyncClient, model: ScriptedModel, repo: Path
) -> None:
    sid = await _session_with_edits(http, model)
    messages = (await http.get(f"/session/{sid}/message")).json()
    info = (await http.get(f"/session/{sid}")).json()
    message = next(m for m in messages if any(p["type"] == "patch" for p in m["parts"]))
    patch = next(p for p in message["parts"] if p["type"] == "patch")
    before = len((await http.get("/session")).json())
    for outside in ("/etc/passwd", str(repo / ".." / "elsewhere.txt"), "../up.txt"):
        patch["files"] = [outside]
        imported = await http.post("/session/import", json={"info": info, "messages": messages})
        assert imported.status_code == 400, (outside, imported.text)
        assert "outside the project" in imported.json()["data"]["message"]
        route = f"/session/{sid}/message/{message['info']['id']}/part/{patch['id']}"
        patched = await http.patch(route, json=patch)
        assert patched.status_code == 400, (outside, patched.text)
    assert len((await http.get("/session")).json()) == before  # nothing stored
    stored = (await http.get(f"/session/{sid}/message")).json()
    kept = next(p for m in stored for p in m["parts"] if p["id"] == patch["id"])
    assert kept["files"] == [str(repo / "README.md")]
