"""The opencode routes for features partwire has not got answer truthfully (what partwire
has, or opencode's own error shape saying why not); project copies are worktrees; a
session moves between the work trees of its repository; v2 integrations are providers."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from partwire.config import Settings
from tests.reference import document, response_schema, validate, validate_schema
from tests.server.conftest import git


def _error_schema(path: str, method: str, status: int) -> dict[str, object]:
    responses = document()["paths"][path][method]["responses"]
    schema: dict[str, object] = responses[str(status)]["content"]["application/json"]["schema"]
    return schema


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/mcp/{name}/auth", None, 404),
        ("DELETE", "/mcp/{name}/auth", None, 404),
        ("POST", "/mcp/{name}/auth/callback", {"code": "x"}, 404),
        ("POST", "/mcp/{name}/auth/authenticate", None, 404),
        ("POST", "/mcp/{name}/connect", None, 404),
        ("POST", "/mcp/{name}/disconnect", None, 404),
        ("POST", "/provider/{providerID}/oauth/authorize", {"method": 0}, 400),
        ("POST", "/provider/{providerID}/oauth/callback", {"method": 0, "code": "x"}, 400),
        ("POST", "/experimental/workspace", {"type": "ssh"}, 400),
    ],
)
async def test_absent_features_say_so_in_opencodes_error_shape(
    http: httpx.AsyncClient, method: str, path: str, body: object, status: int
) -> None:
    url = path.replace("{name}", "github").replace("{providerID}", "openai")
    response = await http.request(method, url, json=body)
    assert response.status_code == status, response.text
    validate_schema(_error_schema(path, method.lower(), status), response.json())


async def test_absent_features_answer_what_is_true(http: httpx.AsyncClient) -> None:
    session_id = (await http.post("/session", json={})).json()["id"]
    capabilities = (await http.get("/experimental/capabilities")).json()
    assert capabilities == {"backgroundSubagents": False}
    background = await http.post(f"/experimental/session/{session_id}/background")
    assert background.json() is False  # nothing runs in the background here
    assert (await http.post("/experimental/session/ses_nope/background")).status_code == 404
    assert (await http.post("/sync/start")).json() is False
    sync_list = await http.post("/experimental/workspace/sync-list")
    assert sync_list.status_code == 204
    local = await http.post(
        "/experimental/workspace/warp", json={"id": None, "sessionID": session_id}
    )
    assert local.status_code == 204  # to the local project: it is there already
    remote = {"id": "wrk_1", "sessionID": session_id}
    assert (await http.post("/experimental/workspace/warp", json=remote)).status_code == 404
    assert (await http.delete("/experimental/workspace/wrk_1")).status_code == 404
    switch = await http.post("/experimental/console/switch", json={"accountID": "a", "orgID": "o"})
    assert switch.status_code == 400 and "Console" in switch.text
    steal = await http.post("/sync/steal", json={"sessionID": session_id})
    assert steal.status_code == 400 and "workspace" in steal.text
    events = [{"id": "evt_1", "aggregateID": session_id, "seq": 0, "type": "x", "data": {}}]
    replay = await http.post("/sync/replay", json={"directory": "/tmp", "events": events})
    assert replay.status_code == 400 and "/session/import" in replay.text
    upgrade = await http.post("/global/upgrade", json={"target": "9.9.9"})
    assert upgrade.json()["success"] is False and "pip install" in upgrade.json()["error"]
    # opencode answers a failed upgrade with a 400 carrying its result's failure shape
    validate_schema(response_schema("/global/upgrade", "post"), upgrade.json())


async def test_sync_history_is_the_sessions_durable_events(http: httpx.AsyncClient) -> None:
    session_id = (await http.post("/session", json={})).json()["id"]
    prompt = {"parts": [{"type": "text", "text": "hello"}]}
    assert (await http.post(f"/session/{session_id}/message", json=prompt)).status_code == 200
    everything = (await http.post("/sync/history", json={})).json()
    validate_schema(response_schema("/sync/history", "post"), everything)
    mine = [e for e in everything if e["aggregate_id"] == session_id]
    assert [e["seq"] for e in mine] == list(range(1, len(mine) + 1))
    assert mine[0]["type"] == "session.next.prompted"
    v2 = (await http.get(f"/api/session/{session_id}/history")).json()["data"]
    assert [e["id"] for e in mine] == [e["id"] for e in v2]  # one history, two routes
    later = (await http.post("/sync/history", json={session_id: 2})).json()
    assert [e["seq"] for e in later if e["aggregate_id"] == session_id] == [
        e["seq"] for e in mine[2:]
    ]
    assert (await http.post("/sync/history", json={session_id: -1})).status_code == 400


async def test_project_copies_are_worktrees(http: httpx.AsyncClient, repo: Path) -> None:
    project_id = (await http.get("/project/current")).json()["id"]
    base = f"/experimental/project/{project_id}/copy"
    named = await http.post(f"{base}/generate-name", json={"context": "Fix the login bug, fast"})
    validate_schema(
        response_schema(f"{base.replace(project_id, '{projectID}')}/generate-name", "post"),
        named.json(),
    )
    assert named.json() == {"name": "fix-login-bug"}
    made = await http.post(
        base, json={"strategy": "worktree", "directory": str(repo), "name": "copy"}
    )
    assert made.status_code == 200, made.text
    directory = Path(made.json()["directory"])
    assert (directory / "notes.txt").is_file()
    assert str(directory) in (await http.get("/experimental/worktree")).json()
    (directory / "notes.txt").write_text("changed\n")
    keep = await http.request("DELETE", base, json={"directory": str(directory), "force": False})
    assert keep.status_code == 400 and keep.json()["data"]["forceRequired"] is True
    validate("ProjectCopyError", keep.json())
    assert directory.is_dir()
    forced = await http.request("DELETE", base, json={"directory": str(directory), "force": True})
    assert forced.status_code == 204 and not directory.exists()
    wrong = await http.post(base, json={"strategy": "clone", "directory": str(repo)})
    assert wrong.status_code == 400 and "strategy unavailable" in wrong.text
    assert (await http.post(f"{base}/refresh")).status_code == 204
    unknown = "/experimental/project/0000/copy/refresh"
    assert (await http.post(unknown)).status_code == 404


async def test_a_session_moves_between_work_trees_of_its_repository(
    http: httpx.AsyncClient, repo: Path, tmp_path: Path
) -> None:
    session_id = (await http.post("/session", json={})).json()["id"]
    tree = (await http.post("/experimental/worktree", json={"name": "side"})).json()
    move = "/experimental/control-plane/move-session"
    to_tree = {"sessionID": session_id, "destination": {"directory": tree["directory"]}}
    assert (await http.post(move, json=to_tree)).status_code == 204
    moved = (await http.get(f"/session/{session_id}")).json()
    assert moved["directory"] == tree["directory"]
    prompt = {"parts": [{"type": "text", "text": "hello"}]}
    answer = (await http.post(f"/session/{session_id}/message", json=prompt)).json()
    assert answer["info"]["path"]["cwd"] == tree["directory"]  # it runs there now
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    refused = await http.post(
        move, json={"sessionID": session_id, "destination": {"directory": str(elsewhere)}}
    )
    assert refused.status_code == 400
    validate("MoveSessionError", refused.json())
    with_changes = {**to_tree, "moveChanges": True}
    assert (await http.post(move, json=with_changes)).status_code == 400
    back = {"sessionID": session_id, "destination": {"directory": str(repo)}}
    assert (await http.post(move, json=back)).status_code == 204
    assert (await http.get(f"/session/{session_id}")).json()["directory"] == str(repo)


async def test_integrations_are_providers_and_credentials_their_stored_keys(
    http: httpx.AsyncClient, settings: Settings
) -> None:
    listed = (await http.get("/api/integration")).json()
    validate_schema(response_schema("/api/integration", "get"), listed)
    openai = next(i for i in listed["data"] if i["id"] == "openai")
    assert {"type": "env", "names": ["OPENAI_API_KEY"]} in openai["methods"]
    assert openai["connections"] == []
    connected = await http.post(
        "/api/integration/openai/connect/key", json={"key": "sk-test", "label": "work"}
    )
    assert connected.status_code == 204
    stored = json.loads((settings.data_dir / "auth.json").read_text())
    assert stored["openai"] == {"type": "api", "key": "sk-test", "label": "work"}
    one = (await http.get("/api/integration/openai")).json()
    validate_schema(response_schema("/api/integration/{integrationID}", "get"), one)
    assert one["data"]["connections"] == [
        {"type": "credential", "id": "crd_openai", "label": "work"}
    ]
    assert (
        await http.patch("/api/credential/crd_openai", json={"label": "home"})
    ).status_code == 204
    relabeled = (await http.get("/api/integration/openai")).json()["data"]["connections"]
    assert relabeled[0]["label"] == "home" and "sk-test" not in json.dumps(relabeled)
    oauth = await http.post(
        "/api/integration/openai/connect/oauth", json={"methodID": "browser", "inputs": {}}
    )
    assert oauth.status_code == 400 and "API key" in oauth.text
    assert (await http.get("/api/integration/attempt/att_1")).status_code == 404
    assert (await http.delete("/api/credential/crd_openai")).status_code == 204
    assert "openai" not in json.loads((settings.data_dir / "auth.json").read_text())
    assert (await http.delete("/api/credential/crd_openai")).status_code == 404
    assert (await http.get("/api/integration/nope")).status_code == 404
    assert (
        await http.post("/api/integration/nope/connect/key", json={"key": "k"})
    ).status_code == 404
