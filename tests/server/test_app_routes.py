"""The routes opencode's TUI and SDK call beyond v1's core: vcs status and diffs, the
user's config, provider auth methods, client logs and the /experimental answers."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest

from tests.reference import validate_schema
from tests.server.conftest import git


async def test_vcs_status_and_diff_follow_git(http: httpx.AsyncClient, repo: Path) -> None:
    (repo / "notes.txt").write_text("alpha\nBETA\ngamma\n")
    (repo / "new.txt").write_text("one\ntwo\n")
    (repo / "README.md").unlink()
    status = {e["file"]: e for e in (await http.get("/vcs/status")).json()}
    assert status["notes.txt"] == {
        "file": "notes.txt", "additions": 2, "deletions": 1, "status": "modified",
    }  # fmt: skip
    assert status["new.txt"]["status"] == "added" and status["README.md"]["status"] == "deleted"
    diff = {e["file"]: e for e in (await http.get("/vcs/diff?mode=git")).json()}
    assert "+BETA" in diff["notes.txt"]["patch"] and "-beta" in diff["notes.txt"]["patch"]
    assert diff["new.txt"]["patch"].endswith("+one\n+two\n")
    assert diff["README.md"]["status"] == "deleted"

    # branch mode: everything since the branch left main, committed or not
    git(repo, "checkout", "-qb", "feature")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "work")
    (repo / "later.txt").write_text("later\n")
    assert (await http.get("/vcs/diff?mode=git")).json()[0]["file"] == "later.txt"
    branch = {e["file"] for e in (await http.get("/vcs/diff?mode=branch")).json()}
    assert branch == {"notes.txt", "new.txt", "README.md", "later.txt"}
    assert (await http.get("/vcs/diff")).status_code == 400  # mode is required
    raw = await http.get("/vcs/diff/raw")
    assert raw.headers["content-type"].startswith("text/x-diff")
    assert "+++ b/later.txt" in raw.text


async def test_outside_git_there_is_nothing_to_diff(http: httpx.AsyncClient) -> None:
    assert (await http.get("/vcs/status")).json() == []
    assert (await http.get("/vcs/diff?mode=git")).json() == []


async def test_global_config_is_the_users_file(http: httpx.AsyncClient, tmp_path: Path) -> None:
    user_file = tmp_path / "config" / "partwire.json"
    assert (await http.get("/global/config")).json() == {}
    patched = await http.patch(
        "/global/config", json={"provider": {"openai": {"options": {"apiKey": "sk-secret"}}}}
    )
    assert patched.status_code == 200
    assert patched.json()["provider"]["openai"]["options"]["apiKey"] == "[redacted]"
    assert (
        json.loads(user_file.read_text())["provider"]["openai"]["options"]["apiKey"] == "sk-secret"
    )
    # it takes effect: openai is configured now, authenticated by an API key
    auth = (await http.get("/provider/auth")).json()
    assert auth == {"openai": [{"type": "api", "label": "API key"}]}
    before = user_file.read_text()
    for wrong in ({"options": 5}, {"options": {"headers": []}}, {"models": "x"}):
        bad = await http.patch("/global/config", json={"provider": {"openai": wrong}})
        assert bad.status_code == 400 and "must be an object" in bad.text
        assert user_file.read_text() == before  # a bad patch changes nothing


async def test_a_client_log_line_goes_to_the_log(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="client.tui"):
        body = {"service": "tui", "level": "warn", "message": "it broke", "extra": {"n": 1}}
        assert (await http.post("/log", json=body)).json() is True
    (record,) = [r for r in caplog.records if r.name == "client.tui"]
    assert record.levelno == logging.WARNING and record.getMessage() == 'it broke {"n": 1}'
    wrong = await http.post("/log", json={"service": "tui", "level": "loud", "message": "x"})
    assert wrong.status_code == 400


async def test_git_init_and_the_tool_list(http: httpx.AsyncClient, project: Path) -> None:
    assert not (project / ".git").exists()
    made = (await http.post("/project/git/init")).json()
    assert (project / ".git").is_dir() and made["vcs"] == "git"
    assert (await http.post("/project/git/init")).status_code == 200  # once is enough
    listed = (await http.get("/experimental/tool?provider=demo&model=demo")).json()
    assert {"read", "bash", "skill"} <= {t["id"] for t in listed}
    assert listed[0]["parameters"]["type"] == "object"
    unknown = await http.get("/experimental/tool?provider=nope&model=x")
    assert unknown.status_code in (400, 404)


async def test_tool_ids_and_project_copies(http: httpx.AsyncClient) -> None:
    ids = (await http.get("/experimental/tool/ids")).json()
    assert {"bash", "read", "edit", "write", "task"} <= set(ids) and ids == sorted(ids)
    project = (await http.get("/project/current")).json()["id"]
    refreshed = await http.post(f"/experimental/project/{project}/copy/refresh")
    assert refreshed.status_code == 204
    unknown = await http.post("/experimental/project/nope/copy/refresh")
    assert unknown.status_code == 404
    directories = (await http.get(f"/project/{project}/directories")).json()
    validate_schema({"$ref": "#/components/schemas/ProjectDirectories"}, directories)
    assert (await http.get("/project/nope/directories")).status_code == 404


async def test_an_api_key_set_through_auth_connects_the_provider(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    before = (await http.get("/provider")).json()
    assert "openai" not in before["connected"]
    put = await http.put("/auth/openai", json={"type": "api", "key": "sk-stored-key"})
    assert put.status_code == 200 and put.json() is True
    after = (await http.get("/provider")).json()
    assert "openai" in after["connected"]
    stored = tmp_path / "data" / "auth.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert json.loads(stored.read_text()) == {"openai": {"type": "api", "key": "sk-stored-key"}}
    assert "sk-stored-key" not in (await http.get("/config")).text
    assert "sk-stored-key" not in (await http.get("/provider")).text
    assert (await http.get("/provider/auth")).json()["openai"][0]["type"] == "api"

    oauth = {"type": "oauth", "refresh": "r", "access": "a", "expires": 1}
    refused = await http.put("/auth/openai", json=oauth)
    assert refused.status_code == 400 and "API keys only" in refused.text
    unknown = await http.put("/auth/nowhere", json={"type": "api", "key": "k"})
    assert unknown.status_code == 400 and "nowhere" in unknown.text
    empty = await http.put("/auth/openai", json={"type": "api", "key": ""})
    assert empty.status_code == 400

    assert (await http.delete("/auth/openai")).json() is True
    assert "openai" not in (await http.get("/provider")).json()["connected"]
    assert (await http.delete("/auth/openai")).status_code == 404


async def test_every_projects_sessions(http: httpx.AsyncClient, project: Path) -> None:
    first = (await http.post("/session", json={"title": "alpha one"})).json()
    child = (await http.post("/session", json={"parentID": first["id"]})).json()
    old = (await http.post("/session", json={"title": "archived"})).json()
    await http.patch(f"/session/{old['id']}", json={"time": {"archived": 1}})
    listed = (await http.get("/experimental/session")).json()
    assert [s["id"] for s in listed] == [child["id"], first["id"]]  # newest first
    assert listed[0]["project"]["worktree"] == str(project)
    roots = (await http.get("/experimental/session?roots=true")).json()
    assert [s["id"] for s in roots] == [first["id"]]
    found = (await http.get("/experimental/session?search=ALPHA")).json()
    assert [s["id"] for s in found] == [first["id"]]
    everything = (await http.get("/experimental/session?archived=true")).json()
    assert {s["id"] for s in everything} == {first["id"], child["id"], old["id"]}
    page = (await http.get(f"/experimental/session?cursor={listed[0]['time']['updated']}")).json()
    assert child["id"] not in [s["id"] for s in page]
