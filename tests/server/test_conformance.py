"""Every implemented operation, called on the real server, answers with the reference's shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.reference import document, validate_schema

# (method, path template, body) — the template's {s}, {m}, {p}, {c} are filled per run.
CASES: list[tuple[str, str, Any]] = [
    ("get", "/session?roots=true&limit=5", None),
    ("post", "/session", {}),
    ("get", "/session/status", None),
    ("get", "/session/{s}", None),
    ("patch", "/session/{s}", {"title": "renamed"}),
    ("get", "/session/{s}/children", None),
    ("get", "/session/{s}/todo", None),
    ("get", "/session/{s}/diff", None),
    ("get", "/session/{s}/message?limit=2", None),
    ("get", "/session/{s}/message/{m}", None),
    ("post", "/session/{s}/message", {"parts": [{"type": "text", "text": "hello"}]}),
    ("post", "/session/{s}/shell", {"agent": "build", "command": "echo conformance"}),
    (
        "post",
        "/session/{s}/init",
        {"providerID": "demo", "modelID": "demo", "messageID": "msg_init"},
    ),
    ("post", "/session/{s}/summarize", {"providerID": "demo", "modelID": "demo"}),
    ("post", "/session/{s}/fork", {}),
    ("post", "/session/{s}/revert", {"messageID": "{m}"}),
    ("post", "/session/{s}/unrevert", None),
    ("patch", "/session/{s}/message/{m}/part/{p}", {"type": "text", "text": "edited"}),
    ("delete", "/session/{s}/message/{m}/part/{p}", None),
    ("delete", "/session/{s}/message/{m}", None),
    ("post", "/session/{s}/abort", None),
    ("delete", "/session/{c}", None),
    ("get", "/permission", None),
    ("get", "/question", None),
    ("get", "/agent", None),
    ("get", "/command", None),
    ("get", "/path", None),
    ("get", "/project", None),
    ("get", "/project/current", None),
    ("get", "/file?path=.", None),
    ("get", "/file/content?path=README.md", None),
    ("get", "/file/status", None),
    ("get", "/find?pattern=sample", None),
    ("get", "/find/file?query=read", None),
    ("get", "/vcs", None),
    ("get", "/lsp", None),
    ("get", "/formatter", None),
    ("get", "/mcp", None),
    ("get", "/global/health", None),
    ("get", "/config", None),
    ("get", "/config/providers", None),
    ("get", "/provider", None),
    ("post", "/instance/dispose", None),
    ("get", "/vcs/status", None),
    ("get", "/vcs/diff?mode=git", None),
    ("get", "/vcs/diff?mode=branch&context=1", None),
    ("get", "/find/symbol?query=main", None),
    ("get", "/project/{project}/directories", None),
    ("get", "/provider/auth", None),
    ("get", "/global/config", None),
    ("patch", "/global/config", {"logLevel": "INFO"}),
    ("post", "/log", {"service": "tui", "level": "info", "message": "hello", "extra": {"a": 1}}),
    ("get", "/experimental/tool/ids", None),
    ("get", "/experimental/capabilities", None),
    ("get", "/experimental/console", None),
    ("get", "/experimental/resource", None),
    ("get", "/experimental/workspace", None),
    ("get", "/skill", None),
    ("get", "/experimental/tool?provider=demo&model=demo", None),
    ("get", "/experimental/worktree", None),
    ("get", "/experimental/workspace/adapter", None),
    ("get", "/experimental/workspace/status", None),
    ("get", "/experimental/console/orgs", None),
    ("get", "/pty/shells", None),
    ("post", "/global/dispose", None),
    ("post", "/project/git/init", None),
    ("get", "/experimental/session?roots=true&limit=5", None),
    ("post", "/session/{s}/share", None),  # share.url: a read-only link
    ("delete", "/session/{s}/share", None),
]
# answered by dedicated tests: streams, 204s, and the clear-501 and 404 answers
ELSEWHERE = {
    ("get", "/event"), ("get", "/global/event"), ("post", "/session/{sessionID}/prompt_async"),
    ("post", "/mcp"), ("post", "/session/{sessionID}/command"), ("patch", "/config"),
    ("post", "/permission/{requestID}/reply"), ("post", "/question/{requestID}/reply"),
    ("post", "/question/{requestID}/reject"),
    ("post", "/session/{sessionID}/permissions/{permissionID}"),
    ("post", "/experimental/project/{projectID}/copy/refresh"),  # tests/server/test_app_routes.py
    ("get", "/vcs/diff/raw"),  # text/x-diff: tests/server/test_app_routes.py
    ("put", "/auth/{providerID}"),  # writes a key: tests/server/test_app_routes.py
    ("delete", "/auth/{providerID}"),  # tests/server/test_app_routes.py
    ("patch", "/project/{projectID}"),  # tests/server/test_instance.py
    # terminals: tests/server/test_pty.py
    ("get", "/pty"), ("post", "/pty"), ("get", "/pty/{ptyID}"), ("put", "/pty/{ptyID}"),
    ("delete", "/pty/{ptyID}"), ("post", "/pty/{ptyID}/connect-token"),
    ("get", "/pty/{ptyID}/connect"),
    # worktrees, copies, moving sessions, patches: tests/server/test_worktree.py and
    # tests/server/test_elsewhere.py
    ("post", "/experimental/worktree"), ("delete", "/experimental/worktree"),
    ("post", "/experimental/worktree/reset"), ("post", "/vcs/apply"),
    ("post", "/experimental/project/{projectID}/copy"),
    ("delete", "/experimental/project/{projectID}/copy"),
    ("post", "/experimental/project/{projectID}/copy/generate-name"),
    ("post", "/experimental/control-plane/move-session"),
    # what lives outside partwire: tests/server/test_elsewhere.py
    ("post", "/experimental/console/switch"), ("post", "/global/upgrade"),
    ("post", "/experimental/session/{sessionID}/background"),
    ("post", "/mcp/{name}/auth"), ("delete", "/mcp/{name}/auth"),
    ("post", "/mcp/{name}/auth/callback"), ("post", "/mcp/{name}/auth/authenticate"),
    ("post", "/mcp/{name}/connect"), ("post", "/mcp/{name}/disconnect"),
    ("post", "/provider/{providerID}/oauth/authorize"),
    ("post", "/provider/{providerID}/oauth/callback"),
    ("post", "/sync/start"), ("post", "/sync/replay"), ("post", "/sync/steal"),
    ("post", "/sync/history"), ("post", "/experimental/workspace"),
    ("post", "/experimental/workspace/sync-list"), ("delete", "/experimental/workspace/{id}"),
    ("post", "/experimental/workspace/warp"),
}  # fmt: skip
# partwire's own routes, not in opencode's document; each has its own tests
PARTWIRE_ONLY = {
    ("post", "/session/import"),  # tests/server/test_import.py
    ("post", "/session/{sessionID}/ingest"),  # tests/server/test_ingest.py
    ("get", "/session/{sessionID}/stream"),  # tests/server/test_frames.py
    ("post", "/ui/chat"),  # tests/protocol/test_aisdk.py
    ("get", "/ui/chat/{chatID}/stream"),  # tests/protocol/test_aisdk.py
    ("get", "/ui/chat/{chatID}/messages"),  # tests/protocol/test_aisdk.py
    ("post", "/agui"),  # tests/protocol/test_agui.py
    ("post", "/session/{sessionID}/editor"),  # tests/server/test_editor.py
    ("delete", "/session/{sessionID}/editor"),  # tests/server/test_editor.py
    ("post", "/editor/{requestID}/reply"),  # tests/server/test_editor.py
    ("post", "/session/{sessionID}/replay"),  # tests/server/test_replay_session.py
    ("get", "/session/{sessionID}/compare"),  # tests/server/test_replay_session.py
    ("get", "/session/{sessionID}/access"),  # tests/server/test_team_access.py
    ("post", "/session/{sessionID}/access"),  # tests/server/test_team_access.py
    ("get", "/user"),  # tests/server/test_team_access.py
}

_NAMES = {
    "{s}": "{sessionID}",
    "{c}": "{sessionID}",
    "{m}": "{messageID}",
    "{p}": "{partID}",
    "{project}": "{projectID}",
}


def _template(path: str) -> str:
    bare = path.split("?")[0]
    for short, name in _NAMES.items():
        bare = bare.replace(short, name)
    return bare


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, real in ids.items():
            value = value.replace(key, real)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


async def _fresh_ids(http: httpx.AsyncClient) -> dict[str, str]:
    sid = (await http.post("/session", json={})).json()["id"]
    child = (await http.post("/session", json={"parentID": sid})).json()["id"]
    await http.post(f"/session/{sid}/message", json={"parts": [{"type": "text", "text": "hi"}]})
    user = (await http.get(f"/session/{sid}/message")).json()[0]
    project = (await http.get("/project/current")).json()["id"]
    return {
        "{s}": sid,
        "{c}": child,
        "{m}": user["info"]["id"],
        "{p}": user["parts"][0]["id"],
        "{project}": project,
    }


async def test_every_operation_answers_with_the_reference_shape(http: httpx.AsyncClient) -> None:
    for method, path, body in CASES:
        ids = await _fresh_ids(http)
        url = _fill(path, ids)
        payload = _fill(body, ids)
        if path.endswith("/{s}/init"):
            payload["messageID"] = "msg_" + "z" * 26  # a new message id of the caller's choosing
        response = await http.request(method.upper(), url, json=payload)
        assert response.status_code == 200, (
            f"{method} {url}: {response.status_code} {response.text}"
        )
        template = _template(path)
        schema = document()["paths"][template][method]["responses"]["200"]["content"][
            "application/json"
        ]["schema"]
        validate_schema(schema, response.json())
        if path.endswith("/{s}/init"):  # answered exactly once, linked by parentID
            history = (await http.get(f"/session/{ids['{s}']}/message")).json()
            answers = [m for m in history if m["info"].get("parentID") == payload["messageID"]]
            assert len(answers) == 1 and len(history) == 4


async def test_every_route_has_a_conformance_case(http: httpx.AsyncClient) -> None:
    # FastAPI names the wildcard of /api/fs/read/* as a parameter
    ours = {
        p.replace("/api/fs/read/{path}", "/api/fs/read/*"): ops
        for p, ops in (await http.get("/doc")).json()["paths"].items()
    }
    covered = {(m, _template(p)) for m, p, _ in CASES} | ELSEWHERE
    # the v2 API: tests/server/test_v2.py validates each of its answers; /tui/*:
    # tests/server/test_tui.py
    covered |= {(m, p) for p, ops in ours.items() for m in ops if p.startswith(("/api/", "/tui/"))}
    missing = [(m, p) for p, ops in ours.items() for m in ops if (m, p) not in covered]
    assert sorted(missing) == sorted(PARTWIRE_ONLY)
    unknown = [(m, p) for m, p in covered if p not in document()["paths"]]
    assert unknown == []


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("post", "/mcp", 501),
        ("post", "/session/{s}/command", 404),
    ],
)
async def test_what_partwire_does_not_have_is_said_clearly(
    http: httpx.AsyncClient, method: str, path: str, status: int
) -> None:
    ids = await _fresh_ids(http)
    body = {"command": "deploy", "arguments": ""} if path.endswith("command") else None
    response = await http.request(method.upper(), _fill(path, ids), json=body)
    assert response.status_code == status
    assert response.json()["data"]["message"]
