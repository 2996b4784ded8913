"""Sandbox worktrees (/experimental/worktree) and applying a patch (/vcs/apply)."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.reference import event_schema_name, response_schema, validate, validate_schema
from tests.server.conftest import git
from tests.server.watch import Watch


async def test_a_worktree_is_made_started_reset_and_removed(
    http: httpx.AsyncClient, repo: Path
) -> None:
    start = {"commands": {"start": "echo started > started.txt"}}
    project_id = (await http.get("/project/current")).json()["id"]
    assert (await http.patch(f"/project/{project_id}", json=start)).status_code == 200
    async with Watch(http) as watch:
        made = await http.post(
            "/experimental/worktree", json={"name": "Fix Login!", "startCommand": "touch extra"}
        )
        assert made.status_code == 200, made.text
        tree = made.json()
        validate_schema(response_schema("/experimental/worktree", "post"), tree)
        assert tree["name"] == "fix-login" and tree["branch"] == "partwire/fix-login"
        directory = Path(tree["directory"])
        assert (directory / "notes.txt").read_text() == "alpha\nbeta\n"
        ready = await watch.wait_for("worktree.ready")
        validate(event_schema_name("worktree.ready"), ready)
        assert ready["properties"] == {"name": "fix-login", "branch": "partwire/fix-login"}
    assert (directory / "started.txt").read_text() == "started\n"
    assert (directory / "extra").exists()  # the request's own command ran after
    again = (await http.post("/experimental/worktree", json={"name": "fix login"})).json()
    assert again["name"].startswith("fix-login-") and again["directory"] != tree["directory"]
    listed = (await http.get("/experimental/worktree")).json()
    assert listed == sorted([tree["directory"], again["directory"]])
    assert str(repo) not in listed  # the user's own checkout is not a sandbox

    # reset: the branch goes back to the default branch and every change is dropped
    (directory / "notes.txt").write_text("changed\n")
    git(directory, "commit", "-qam", "work in the sandbox")
    (directory / "untracked.txt").write_text("x\n")
    reset = await http.post("/experimental/worktree/reset", json={"directory": str(directory)})
    assert reset.status_code == 200 and reset.json() is True
    assert (directory / "notes.txt").read_text() == "alpha\nbeta\n"
    assert not (directory / "untracked.txt").exists()
    assert git(directory, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")

    for path in ("/experimental/worktree/reset", "/experimental/worktree"):
        method = "POST" if path.endswith("reset") else "DELETE"
        refused = await http.request(method, path, json={"directory": str(repo)})
        assert refused.status_code == 400, path
        validate("WorktreeError", refused.json())
        assert "primary workspace" in refused.json()["data"]["message"]
    elsewhere = repo / "src"
    refused = await http.request(
        "DELETE", "/experimental/worktree", json={"directory": str(elsewhere)}
    )
    assert refused.status_code == 400 and elsewhere.is_dir()

    removed = await http.request(
        "DELETE", "/experimental/worktree", json={"directory": str(directory)}
    )
    assert removed.json() is True and not directory.exists()
    assert "partwire/fix-login\n" not in git(repo, "branch", "--format=%(refname:short)")
    assert (await http.get("/experimental/worktree")).json() == [again["directory"]]
    gone = await http.request(
        "DELETE", "/experimental/worktree", json={"directory": str(directory)}
    )
    assert gone.json() is True  # removing what is gone already is done


async def test_a_failing_start_command_is_announced(http: httpx.AsyncClient, repo: Path) -> None:
    async with Watch(http) as watch:
        made = await http.post("/experimental/worktree", json={"startCommand": "exit 7"})
        assert made.status_code == 200
        failed = await watch.wait_for("worktree.failed")
    validate(event_schema_name("worktree.failed"), failed)
    assert "exited with 7" in failed["properties"]["message"]
    assert "-" in made.json()["name"]  # no name given: two random words


async def test_worktrees_need_git(http: httpx.AsyncClient) -> None:
    refused = await http.post("/experimental/worktree", json={})
    assert refused.status_code == 400
    assert refused.json()["name"] == "WorktreeNotGitError"
    assert (await http.get("/experimental/worktree")).json() == []  # none can exist


async def test_vcs_apply_applies_a_patch_whole_or_not_at_all(
    http: httpx.AsyncClient, repo: Path
) -> None:
    (repo / "notes.txt").write_text("alpha\nBETA\n")
    (repo / "new.txt").write_text("fresh\n")
    git(repo, "add", "-N", "new.txt")
    patch = git(repo, "diff")
    git(repo, "checkout", "--", "notes.txt")
    git(repo, "rm", "-q", "--cached", "new.txt")
    (repo / "new.txt").unlink()
    applied = await http.post("/vcs/apply", json={"patch": patch})
    assert applied.status_code == 200 and applied.json() == {"applied": True}
    validate_schema(response_schema("/vcs/apply", "post"), applied.json())
    assert (repo / "notes.txt").read_text() == "alpha\nBETA\n"
    assert (repo / "new.txt").read_text() == "fresh\n"
    again = await http.post("/vcs/apply", json={"patch": patch})  # no longer applies
    assert again.status_code == 400
    validate("VcsApplyError", again.json())
    assert again.json()["data"]["reason"] == "not-clean"
    assert (repo / "notes.txt").read_text() == "alpha\nBETA\n"  # nothing half-applied
    garbage = await http.post("/vcs/apply", json={"patch": "not a patch"})
    assert garbage.status_code == 400 and garbage.json()["name"] == "VcsApplyError"
    assert (await http.post("/vcs/apply", json={})).status_code == 400


async def test_vcs_apply_outside_git_says_so(http: httpx.AsyncClient) -> None:
    refused = await http.post("/vcs/apply", json={"patch": "x"})
    assert refused.status_code == 400
    assert refused.json()["data"]["reason"] == "non-git"


async def test_paths_the_os_cannot_take_are_refused_not_crashed_on(
    http: httpx.AsyncClient, repo: Path
) -> None:
    session_id = (await http.post("/session", json={})).json()["id"]
    project_id = (await http.get("/project/current")).json()["id"]
    copy = f"/experimental/project/{project_id}/copy"
    for bad in ("\x00", "a" * 5000):
        calls = [
            ("POST", "/experimental/worktree/reset", {"directory": bad}),
            ("DELETE", "/experimental/worktree", {"directory": bad}),
            ("POST", "/experimental/worktree", {"startCommand": "\x00"}),
            ("POST", "/experimental/control-plane/move-session",
             {"sessionID": session_id, "destination": {"directory": bad}}),
            ("POST", copy, {"strategy": "worktree", "directory": bad}),
            ("DELETE", copy, {"directory": bad, "force": False}),
            ("POST", "/pty", {"cwd": bad}),
        ]  # fmt: skip
        for method, path, body in calls:
            response = await http.request(method, path, json=body)
            assert response.status_code == 400, (method, path, bad[:5], response.text)
