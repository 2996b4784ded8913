"""Every operation of opencode's official JS SDK against partwire: 1.18.33 and 1.19.3, each
with its v1 and its v2 client (tests/sdk/sweep.mjs finds the operations by walking the
client, so none is skipped). Each call must answer 2xx with a body the reference document's
schema accepts, or the same non-2xx status opencode 1.18.33 itself gave the same call
(``opencode_answers.json``, recorded by ``record_opencode.py``), or be one of the few
answers below that differ from opencode's on purpose, each with its reason."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jsonschema import ValidationError

from partwire.config import Settings
from partwire.server.app import create_app
from partwire.server.runner import serve_in_background
from tests.reference import document, validate_schema

HERE = Path(__file__).parent
CLIENTS = ("@opencode-ai/sdk", "@opencode-ai/sdk/v2", "opencode-sdk-1-19", "opencode-sdk-1-19/v2")
MISSING = shutil.which("node") is None or not (HERE / "node_modules" / "opencode-sdk-1-19").is_dir()
pytestmark = pytest.mark.skipif(
    MISSING and not os.environ.get("CI"),
    reason="node or the SDK is missing: `make test` installs it with npm",
)

# operationId → (partwire's status, why it is not opencode's)
DIFFERENT_ON_PURPOSE: dict[str, tuple[int, str]] = {
    "provider.oauth.authorize": (
        400,
        "opencode signs in to ChatGPT Plus/Pro with its own OAuth plugin; partwire takes API "
        "keys only and says so (ProviderAuthOauthMissing)",
    ),
    "mcp.add": (501, "partwire has no MCP client; opencode adds the server (200)"),
    "session.share": (
        501,
        "sharing needs opencode's hosted service: opencode fails with a 500 when it cannot "
        "reach it (as on a loopback-only machine), partwire says it does not share",
    ),
    "experimental.workspace.remove": (
        404,
        "opencode answers 200 with null (which its own schema refuses) for a workspace that "
        "does not exist; partwire has none, so every id is unknown",
    ),
    "v2.integration.attempt.status": (
        404,
        "opencode fails with a 500 for an unknown OAuth attempt; partwire starts none: 404",
    ),
    "v2.fs.read": (
        404,
        "the SDK asks for the literal path /api/fs/read/*; opencode fails with a 500, "
        "partwire says there is no file named *",
    ),
}


def make_project(root: Path) -> Path:
    """The project the sweep runs in, for partwire and for the opencode recording."""
    project = root / "project"
    (project / ".opencode" / "command").mkdir(parents=True)
    (project / "notes.txt").write_text("alpha\nbeta\n")
    (project / ".opencode" / "command" / "sweep.md").write_text(
        "---\ndescription: read a file\n---\nRead $ARGUMENTS\n"
    )
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    return project


async def run_sweep(
    url: str, client: str, project: Path, timeout_ms: int = 15000
) -> list[dict[str, Any]]:
    process = await asyncio.create_subprocess_exec(
        "node", str(HERE / "sweep.mjs"),
        cwd=HERE,
        env={**os.environ, "SWEEP_URL": url, "SWEEP_SDK": client, "SWEEP_DIR": str(project),
             "SWEEP_TIMEOUT_MS": str(timeout_ms)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 600)
    assert process.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


def _operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        op["operationId"]: (path, method, op)
        for path, item in document()["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }


def _schema_problem(call: dict[str, Any]) -> str | None:
    """Why a 2xx answer's body does not fit the reference, or None."""
    op = _operations()[call["operationId"]][2]
    response = op["responses"].get(str(call["status"]))
    if response is None:
        return f"opencode never answers {call['status']} here"
    content = response.get("content") or {}
    if not content:
        return None if call["body"] in (None, "", {}) else "a body where opencode sends none"
    kind, declared = next(iter(content.items()))
    schema = declared.get("schema")
    if schema is None or kind.startswith("text/plain") or kind.startswith("text/x-diff"):
        return None
    if kind == "text/event-stream":
        schema = _event_schema(schema)
    try:
        validate_schema(schema, call["body"])
    except ValidationError as error:
        return f"{error.message[:200]} at {list(error.absolute_path)}"
    return None


def _event_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A stream frame's schema ({id, event, data: a JSON string}) → the schema of the
    data the SDK parsed; an event union as it is."""
    data = schema.get("properties", {}).get("data")
    if data is None:
        return schema
    if "$ref" in data:
        data = document()["components"]["schemas"][data["$ref"].rsplit("/", 1)[1]]
    content_schema: dict[str, Any] = data.get("contentSchema", data)
    return content_schema


def _judge(client: str, call: dict[str, Any], opencode: dict[str, Any]) -> str | None:
    name, op, status = call["name"], call["operationId"], call["status"]
    if op is None:
        return f"{client} {name}: no reference operation (or no arguments) for it"
    if status is not None and 200 <= status < 300:
        problem = _schema_problem(call)
        return None if problem is None else f"{client} {name} {status}: {problem}"
    theirs = opencode.get(name)
    if status is not None and status == theirs:
        return None
    if op in DIFFERENT_ON_PURPOSE and status == DIFFERENT_ON_PURPOSE[op][0]:
        return None
    return f"{client} {name}: {status} {str(call['body'])[:160]} (opencode: {theirs})"


async def test_every_sdk_operation_answers_as_opencode_does(
    settings: Settings, tmp_path: Path
) -> None:
    if MISSING:
        pytest.fail("CI needs node and the opencode SDK: `make sdk` installs it with npm")
    project = make_project(tmp_path)
    config = tmp_path / "user-config"
    config.mkdir()
    # an API key set during the sweep must not make a remote model the default
    (config / "partwire.json").write_text('{"model": "demo/demo", "small_model": "demo/demo"}')
    env = {**settings.source_env, "PARTWIRE_CONFIG_DIR": str(config)}
    swept = replace(settings, project_dir=project, source_env=env).reload()
    app = create_app(swept)
    recorded = json.loads((HERE / "opencode_answers.json").read_text())
    problems: list[str] = []
    differed: set[str] = set()  # each difference listed must be one the sweep meets
    async with serve_in_background(swept, app=app) as url:
        # tui.control.next long-polls until something asks the TUI: one request per client
        asks = [asyncio.create_task(app.state.runtime.tui.call("/tui/open-help")) for _ in CLIENTS]
        for client in CLIENTS:
            calls = await run_sweep(url, client, project)
            names = [c["name"] for c in calls]
            assert len(names) == len(set(names)) and len(calls) >= 78, client
            if client.endswith("/v2"):  # the v2 client covers the whole document
                assert {c["operationId"] for c in calls} == set(_operations()), client
            theirs = recorded["answers"][client]
            assert set(theirs) == set(names), f"{client}: record opencode's answers again"
            problems += [p for c in calls if (p := _judge(client, c, theirs)) is not None]
            differed |= {
                c["operationId"] for c in calls
                if c["operationId"] in DIFFERENT_ON_PURPOSE and c["status"] != theirs[c["name"]]
            }  # fmt: skip
        answered = await asyncio.wait_for(asyncio.gather(*asks), 10)
    assert problems == [], "\n".join(problems)
    assert differed == set(DIFFERENT_ON_PURPOSE), set(DIFFERENT_ON_PURPOSE) - differed
    assert answered == [{"ok": True}] * len(CLIENTS)  # the TUI's answers reached the asks
