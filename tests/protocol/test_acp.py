"""`partwire acp`: the ACP TypeScript SDK's client drives it over stdio as an editor does —
prompts with tool calls, permission asks, fs/write_text_file, the plan, cancel, and
session/load replaying what the store holds; with --attach it shares a running server."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from partwire.config import Settings
from partwire.protocol.acp import AcpUpdates, plan_of, stored_updates
from partwire.providers.demo_prompts import DEMO_TODOS
from partwire.runtime import Runtime
from partwire.schema.message import AssistantMessage, MessageWithParts
from partwire.schema.part import TextPart, ToolPart
from partwire.schema.permission import Todo
from tests.protocol.node_clients import needs_node, run_node
from tests.protocol.test_partframes import recorded_session
from tests.served import partwire_serve

ACP = [sys.executable, "-m", "partwire", "acp"]


def agent_text(updates: list[dict[str, Any]], message_id: str) -> str:
    return "".join(
        u["content"]["text"]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk" and u.get("messageId") == message_id
    )


def final_calls(updates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool call as the editor has it after every update (later fields win)."""
    calls: dict[str, dict[str, Any]] = {}
    for update in updates:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            calls.setdefault(update["toolCallId"], {}).update(update)
    return calls


@pytest.fixture
def acp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PARTWIRE_DATA_DIR", str(tmp_path / "acp-data"))
    monkeypatch.setenv("PARTWIRE_CONFIG_DIR", str(tmp_path / "acp-config"))
    monkeypatch.setenv("PARTWIRE_DEMO_DELAY_MS", "2")
    return tmp_path / "acp-data"


# ---- the pure view ---------------------------------------------------------------------------


@pytest.mark.usefixtures("settings")
async def test_live_updates_and_the_replay_agree_with_the_store(
    runtime: Runtime, project: Path
) -> None:
    session_id = await recorded_session(runtime)
    view = AcpUpdates(session_id, project)
    live = [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for e in await runtime.store.events_after(None)
        for u in view.updates(e)
    ]
    stored = await runtime.store.list_messages(session_id)
    replay = [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for u in stored_updates(stored, [], project)
    ]
    calls, replayed_calls = final_calls(live), final_calls(replay)
    for message in stored:
        if not isinstance(message.info, AssistantMessage):
            continue
        words = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        assert agent_text(live, message.info.id) == words
        assert agent_text(replay, message.info.id) == words
        for part in message.parts:
            if isinstance(part, ToolPart):
                status = {"completed": "completed", "error": "failed"}[part.state.status]
                assert calls[part.call_id]["status"] == status
                assert replayed_calls[part.call_id]["status"] == status
                assert calls[part.call_id]["title"] == replayed_calls[part.call_id]["title"]
    kinds = {c["kind"] for c in calls.values()}
    assert {"search", "edit", "think"} <= kinds  # list, edit, task
    assert any(u["sessionUpdate"] == "agent_thought_chunk" for u in live)


async def _recorded_for_acp(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, list[MessageWithParts]]:
    """A recorded session in ``settings``' data dir, then the runtime stopped (the data
    dir is free for `partwire acp`, which the environment now points at)."""
    runtime = Runtime.build(settings)
    await runtime.start()
    try:
        session_id = await recorded_session(runtime)
        stored = await runtime.store.list_messages(session_id)
    finally:
        await runtime.stop()
    monkeypatch.setenv("PARTWIRE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("PARTWIRE_CONFIG_DIR", str(settings.data_dir.parent / "config"))
    return session_id, stored


@needs_node
async def test_the_sdk_client_loads_a_recorded_session(
    settings: Settings, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, stored = await _recorded_for_acp(settings, monkeypatch)
    seen = await run_node(
        "acp.mjs", "load", str(project), session_id, "--", *ACP, "--project", str(project)
    )
    replayed = seen["replayed"]["updates"]
    expected = [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for u in stored_updates(stored, [], project)
    ]
    assert replayed == expected
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users[:2] == ["hello", "list"] and "external" in users
    assert {u["sessionUpdate"] for u in replayed} == {
        "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
    }  # fmt: skip


@needs_node
async def test_session_fork_at_a_part_then_load_replays_the_fork(
    settings: Settings, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, stored = await _recorded_for_acp(settings, monkeypatch)
    tool = next(p for m in stored for p in m.parts if isinstance(p, ToolPart))
    command = ["--", *ACP, "--project", str(project)]
    seen = await run_node("acp.mjs", "fork", str(project), session_id, tool.id, *command)
    capabilities = seen["init"]["agentCapabilities"]["sessionCapabilities"]
    assert capabilities["fork"] == {} and capabilities["list"] == {}
    fork_id = seen["forked"]["sessionId"]
    assert fork_id != session_id and seen["forked"]["modes"]["currentModeId"] == "build"
    runtime = Runtime.build(settings)
    await runtime.start()
    try:
        forked = await runtime.store.list_messages(fork_id)
        info = await runtime.store.get_session(fork_id)
    finally:
        await runtime.stop()
    assert info.metadata and info.metadata["forkedFrom"]["partID"] == tool.id
    assert forked[-1].parts[-1].type == "tool" and len(forked) < len(stored)
    expected = [
        u.model_dump(mode="json", by_alias=True, exclude_none=True)
        for u in stored_updates(forked, [], project)
    ]
    assert seen["replayed"]["updates"] == expected
    whole = await run_node("acp.mjs", "fork", str(project), session_id, "-", *command)
    user_chunks = [
        u for u in whole["replayed"]["updates"] if u["sessionUpdate"] == "user_message_chunk"
    ]
    assert len(user_chunks) == sum(1 for m in stored if m.info.role == "user")


def test_the_plan_leaves_out_cancelled_todos() -> None:
    todos = [Todo.model_validate(t) for t in DEMO_TODOS]
    todos.append(Todo(content="Dropped", status="cancelled", priority="low"))
    plan = plan_of(todos).model_dump(mode="json", by_alias=True)
    assert [e["content"] for e in plan["entries"]] == [t["content"] for t in DEMO_TODOS]
    assert plan["sessionUpdate"] == "plan"


# ---- an editor over stdio ----------------------------------------------------------------------


@needs_node
@pytest.mark.usefixtures("acp_env")
async def test_an_editor_runs_prompts_with_asks_file_writes_and_a_plan(project: Path) -> None:
    prompts = ["bash echo from-acp", "write made.txt by the editor", "todo"]
    seen = await run_node(
        "acp.mjs", str(project), "once", "plan", *prompts, "--", *ACP, "--project", str(project)
    )
    assert seen["init"]["agentCapabilities"]["loadSession"] is True
    assert [m["id"] for m in seen["modes"]["availableModes"]] == ["build", "plan"]
    assert seen["stops"] == ["end_turn"] * 3
    live = seen["live"]
    # plan mode: bash and the write asked first, each tied to its tool call
    assert [a["toolCall"]["title"] for a in live["asks"]] == [
        "bash: echo from-acp",
        "edit: made.txt",
    ]
    assert [o["kind"] for o in live["asks"][0]["options"]] == [
        "allow_once", "allow_always", "reject_once",
    ]  # fmt: skip
    calls = final_calls(live["updates"])
    bash = calls["call_demo_bash_0"]
    assert bash["kind"] == "execute" and bash["status"] == "completed"
    assert bash["content"][0]["content"]["text"] == "from-acp\n"
    write = calls["call_demo_write_0"]
    assert write["kind"] == "edit" and write["locations"] == [{"path": str(project / "made.txt")}]
    assert write["content"][0] == {
        "type": "diff", "path": str(project / "made.txt"), "newText": "by the editor\n",
    }  # fmt: skip
    # the editor got the written file through fs/write_text_file
    assert live["writes"] == [{"path": str(project / "made.txt"), "content": "by the editor\n"}]
    assert (project / "made.txt").read_text() == "by the editor\n"
    (plan,) = [u for u in live["updates"] if u["sessionUpdate"] == "plan"]
    assert [e["content"] for e in plan["entries"]] == [t["content"] for t in DEMO_TODOS]

    # session/load on a new connection replays the same conversation
    assert seen["loaded"]["modes"]["currentModeId"] == "plan"
    replayed = seen["replayed"]["updates"]
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == prompts
    again = final_calls(replayed)
    assert {k: v["status"] for k, v in again.items()} == {k: v["status"] for k, v in calls.items()}
    told = [u for u in live["updates"] if u["sessionUpdate"] == "agent_message_chunk"]
    for message_id in {u["messageId"] for u in told}:
        assert agent_text(replayed, message_id) == agent_text(live["updates"], message_id)
    assert replayed[-1]["sessionUpdate"] == "plan"


@needs_node
@pytest.mark.usefixtures("acp_env")
async def test_a_rejected_ask_fails_the_call_and_cancel_stops_the_turn(project: Path) -> None:
    seen = await run_node(
        "acp.mjs", str(project), "reject", "plan", "bash echo never", "cancel:long 2000",
        "--", *ACP, "--project", str(project),
    )  # fmt: skip
    assert seen["stops"] == ["end_turn", "cancelled"]
    bash = final_calls(seen["live"]["updates"])["call_demo_bash_0"]
    assert bash["status"] == "failed"


@needs_node
@pytest.mark.usefixtures("acp_env")
async def test_the_read_tool_reads_the_editors_unsaved_buffer(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_EDITOR_TEXT", "unsaved line one\nunsaved line two\n")
    seen = await run_node(
        "acp.mjs", str(project), "once", "build", "notes.txt",
        "--", *ACP, "--project", str(project),
    )  # fmt: skip
    assert seen["live"]["reads"] == [str(project / "notes.txt")]
    (read,) = final_calls(seen["live"]["updates"]).values()
    output = read["content"][0]["content"]["text"]
    assert "unsaved line two" in output and "alpha" not in output  # not the disk's text
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"


async def _attached_once(project: Path, url: str, env: dict[str, str]) -> dict[str, Any]:
    """One prompt through `partwire acp --attach url`, with ``env`` set meanwhile (the
    data dir given is not the server's)."""
    os.environ.update(env)
    try:
        seen: dict[str, Any] = await run_node(
            "acp.mjs", str(project), "once", "build", "hello",
            "--", *ACP, "--project", str(project), "--attach", url,
        )  # fmt: skip
    finally:
        for key in env:
            os.environ.pop(key)
    return seen


@needs_node
async def test_attach_drives_a_running_server(project: Path, tmp_path: Path) -> None:
    with partwire_serve(project, tmp_path / "server", delay_ms=1) as url:
        seen = await _attached_once(
            project, url, {"PARTWIRE_DATA_DIR": str(tmp_path / "other-data")}
        )
        async with httpx.AsyncClient(base_url=url) as http:
            stored = (await http.get(f"/session/{seen['sessionId']}/message")).json()
    assert [m["info"]["role"] for m in stored] == ["user", "assistant"]
    words = "".join(p.get("text", "") for p in stored[1]["parts"] if p["type"] == "text")
    assert agent_text(seen["live"]["updates"], stored[1]["info"]["id"]) == words
    assert not (tmp_path / "other-data" / "partwire.db").exists()  # no store of its own


@needs_node
async def test_attach_signs_in_with_partwire_token(project: Path, tmp_path: Path) -> None:
    """A server with users: `partwire acp --attach` signs in with PARTWIRE_TOKEN, and the
    session it makes is that user's."""
    from dataclasses import replace

    from partwire.config import load_settings
    from tests.server.test_team_access import add_token

    state = tmp_path / "server"
    server_settings = load_settings(project_dir=project, data_dir=state / "data", env={})
    token = add_token(replace(server_settings), "alice")
    with partwire_serve(project, state, delay_ms=1) as url:
        env = {"PARTWIRE_DATA_DIR": str(tmp_path / "other-data"), "PARTWIRE_TOKEN": token}
        seen = await _attached_once(project, url, env)
        bearer = {"authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url, headers=bearer) as http:
            access = (await http.get(f"/session/{seen['sessionId']}/access")).json()
            assert (await http.get("/session", headers={"authorization": ""})).status_code == 401
    assert access["grants"] == [{"user": "alice", "role": "owner"}]
