"""One server, several projects: chosen per request by `directory` or `x-opencode-directory`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.reference import validate


@pytest.fixture
def other(tmp_path: Path) -> Path:
    root = tmp_path / "other-project"
    root.mkdir()
    (root / "OTHER.md").write_text("# the other project\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def test_sessions_tools_and_files_follow_the_directory(
    http: httpx.AsyncClient, project: Path, other: Path
) -> None:
    here = (await http.post("/session", json={})).json()
    there = (await http.post("/session", params={"directory": str(other)}, json={})).json()
    validate("Session", there)
    assert here["directory"] == str(project) and there["directory"] == str(other)
    assert here["projectID"] != there["projectID"]

    default_list = [s["id"] for s in (await http.get("/session")).json()]
    other_list = [
        s["id"] for s in (await http.get("/session", params={"directory": str(other)})).json()
    ]
    assert default_list == [here["id"]] and other_list == [there["id"]]

    # the tools of a session run in its own project, whichever way the request names it
    header = {"x-opencode-directory": quote(str(other))}
    body = {"parts": [{"type": "text", "text": "list"}]}
    await http.post(f"/session/{there['id']}/message", json=body, headers=header)
    messages = (await http.get(f"/session/{there['id']}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    assert "OTHER.md" in tool["state"]["output"] and "README.md" not in tool["state"]["output"]
    step = next(p for p in messages[1]["parts"] if p["type"] == "step-start")
    assert step.get("snapshot")  # the other project is a git repository: it is snapshotted

    files = (await http.get("/file", params={"directory": str(other)})).json()
    assert [f["name"] for f in files] == [".git", "OTHER.md"]
    path = (await http.get("/path", headers=header)).json()
    assert path["directory"] == str(other)
    assert (await http.get("/path")).json()["directory"] == str(project)


async def test_an_unknown_directory_is_a_400(http: httpx.AsyncClient, tmp_path: Path) -> None:
    response = await http.get("/session", params={"directory": str(tmp_path / "nope")})
    assert response.status_code == 400
    assert response.json()["data"]["field"] == "directory"
    assert "does not exist" in response.json()["data"]["message"]
