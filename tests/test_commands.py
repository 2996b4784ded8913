"""Custom commands: discovery (files and config), templates, GET /command and
POST /session/{id}/command."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from partwire import commands
from partwire.commands import Command, discover
from tests.reference import response_schema, validate_schema
from tests.test_processes import gone, written_pid


def write_command(root: Path, folder: str, name: str, text: str) -> None:
    path = root / folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "config"


def test_discovery_from_files_and_config(project: Path, user_dir: Path) -> None:
    write_command(user_dir, "command", "review", "---\ndescription: user review\n---\nUser $1\n")
    write_command(user_dir, "commands", "notes", "Write notes on $ARGUMENTS")
    write_command(project, ".partwire/command", "review", "---\nagent: plan\n---\nReview $1\n")
    write_command(project, ".opencode/commands", "team/ship", "---\nsubtask: true\n---\nShip it")
    write_command(project, ".partwire/commands", "bad", "---\nsubtask: maybe\n---\nx")
    write_command(project, ".partwire/commands", "empty", "---\ndescription: nothing\n---\n")
    config = {"command": {"hello": {"template": "Say hi to $1", "model": "demo/demo"}, "x": 5}}
    found = {c.name: c for c in discover(project, user_dir, config)}
    assert sorted(found) == ["hello", "notes", "review", "team/ship"]
    assert found["review"].agent == "plan" and found["review"].template == "Review $1"
    assert found["team/ship"].subtask is True
    assert found["hello"].model == "demo/demo"


def test_templates_take_the_arguments() -> None:
    command = Command(name="c", template="Fix $1 in $2, then: $ARGUMENTS")
    assert command.hints == ["$1", "$2", "$ARGUMENTS"]
    assert command.expand('"a b" c d e') == 'Fix a b in c d e, then: "a b" c d e'
    assert command.expand("only") == "Fix only in , then: only"
    plain = Command(name="p", template="Run the tests")
    assert plain.hints == [] and plain.expand("") == "Run the tests"
    assert plain.expand("fast") == "Run the tests\n\nfast"
    assert Command(name="q", template="$1").expand("'unclosed") == "'unclosed"


async def test_the_routes_list_and_run_commands(server: str, project: Path) -> None:
    write_command(project, ".partwire/command", "show", "---\ndescription: List\n---\n$1")
    write_command(project, ".partwire/command", "say", "bash echo $ARGUMENTS")
    write_command(
        project, ".partwire/command", "delegate",
        "---\ndescription: Look around\nsubtask: true\n---\nlist",
    )  # fmt: skip
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        listed = (await http.get("/command")).json()
        validate_schema(response_schema("/command", "get"), listed)
        assert [c["name"] for c in listed] == ["delegate", "say", "show"]
        assert listed[2] == {
            "name": "show", "template": "$1", "source": "command", "hints": ["$1"],
            "description": "List",
        }  # fmt: skip

        session = (await http.post("/session", json={})).json()["id"]
        ran = await http.post(
            f"/session/{session}/command", json={"command": "say", "arguments": "from a command"}
        )
        assert ran.status_code == 200, ran.text
        validate_schema(response_schema("/session/{sessionID}/command", "post"), ran.json())
        messages = (await http.get(f"/session/{session}/message")).json()
        prompt = [p["text"] for p in messages[0]["parts"] if p["type"] == "text"]
        assert prompt == ["bash echo from a command"]
        tool = next(p for m in messages for p in m["parts"] if p["type"] == "tool")
        assert tool["state"]["output"] == "from a command\n"

        # a subtask command hands the prompt to a sub-agent
        await http.post(
            f"/session/{session}/command", json={"command": "delegate", "arguments": ""}
        )
        children = (await http.get(f"/session/{session}/children")).json()
        assert len(children) == 1
        subtask = [p for m in (await http.get(f"/session/{session}/message")).json()
                   for p in m["parts"] if p["type"] == "subtask"]  # fmt: skip
        assert subtask[0]["command"] == "delegate" and subtask[0]["prompt"] == "list"

        missing = await http.post(f"/session/{session}/command", json={"command": "nope"})
        assert missing.status_code == 404
        bad_model = await http.post(
            f"/session/{session}/command", json={"command": "show", "model": "nope"}
        )
        assert bad_model.status_code == 400 and "provider/model" in json.dumps(bad_model.json())


async def test_skills_are_offered_as_commands(server: str, project: Path) -> None:
    skill = project / ".partwire" / "skills" / "greet" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: greet\ndescription: Greet someone\n---\nSay hello warmly.\n")
    write_command(project, ".partwire/command", "list-all", "list")
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        listed = {c["name"]: c for c in (await http.get("/command")).json()}
        assert listed["greet"]["source"] == "skill" and listed["list-all"]["source"] == "command"
        assert listed["greet"]["description"] == "Greet someone"
        session = (await http.post("/session", json={})).json()["id"]
        ran = await http.post(
            f"/session/{session}/command", json={"command": "greet", "arguments": "Ada"}
        )
        assert ran.status_code == 200, ran.text
        messages = (await http.get(f"/session/{session}/message")).json()
        words = [p["text"] for p in messages[0]["parts"] if p["type"] == "text"]
        assert words == ["Say hello warmly.\n\nAda"]


async def test_shell_output_goes_into_a_template_as_bash_permission_allows(
    server: str, project: Path
) -> None:
    write_command(
        project, ".partwire/command", "count", "Files: !`ls | wc -l` for $1 !`echo $1-done`"
    )
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        session = (await http.post("/session", json={})).json()["id"]
        # build's rules allow bash: it runs at once, after the arguments are put in
        ran = await http.post(
            f"/session/{session}/command", json={"command": "count", "arguments": "x"}
        )
        assert ran.status_code == 200, ran.text
        messages = (await http.get(f"/session/{session}/message")).json()
        files = len([p for p in project.iterdir() if not p.name.startswith(".")])
        prompt = [p["text"] for p in messages[0]["parts"] if p["type"] == "text"]
        assert prompt == [f"Files: {files} for x x-done"]

        # plan asks first: the request waits for the answer
        async def answer(reply: str) -> None:
            for _ in range(200):
                pending = (await http.get("/permission")).json()
                if pending:
                    assert pending[0]["permission"] == "bash"
                    assert pending[0]["patterns"] == ["ls", "wc -l"]
                    await http.post(f"/permission/{pending[0]['id']}/reply", json={"reply": reply})
                    return
                await asyncio.sleep(0.02)
            raise AssertionError("no ask came")

        body = {"command": "count", "arguments": "y", "agent": "plan"}
        refused, _ = await asyncio.gather(
            http.post(f"/session/{session}/command", json=body), answer("reject")
        )
        assert refused.status_code == 403 and "ls | wc -l" in refused.text
        assert refused.json()["name"] == "PermissionRejectedError"

        # a rule that denies bash refuses without asking
        deny = [{"permission": "bash", "pattern": "*", "action": "deny"}]
        await http.patch(f"/session/{session}", json={"permission": deny})
        denied = await http.post(
            f"/session/{session}/command", json={"command": "count", "arguments": "z"}
        )
        assert denied.status_code == 403 and (await http.get("/permission")).json() == []
        after = (await http.get(f"/session/{session}/message")).json()
        assert len(after) == len(messages)  # nothing refused was prompted


async def test_template_lines_are_read_as_bash_lines_and_run_under_bash(
    server: str, project: Path
) -> None:
    """A rule for ``echo *`` covers the echo of a template, never a command that the
    arguments bring along; the line runs under bash."""
    write_command(project, ".partwire/command", "say", "Said: !`echo $ARGUMENTS`")
    write_command(project, ".partwire/command", "shell", "Shell: !`echo $BASH_VERSION`")
    rules = [
        {"permission": "bash", "pattern": "*", "action": "ask"},
        {"permission": "bash", "pattern": "echo *", "action": "allow"},
    ]
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        session = (await http.post("/session", json={"permission": rules})).json()["id"]
        ran = await http.post(f"/session/{session}/command", json={"command": "shell"})
        assert ran.status_code == 200, ran.text
        messages = (await http.get(f"/session/{session}/message")).json()
        shown = [p["text"] for p in messages[0]["parts"] if p["type"] == "text"]
        assert shown[0].startswith("Shell: ") and shown[0] != "Shell: "

        async def reject_the_ask() -> list[str]:
            for _ in range(200):
                pending = (await http.get("/permission")).json()
                if pending:
                    await http.post(
                        f"/permission/{pending[0]['id']}/reply", json={"reply": "reject"}
                    )
                    return list(pending[0]["patterns"])
                await asyncio.sleep(0.02)
            raise AssertionError("no ask came")

        body = {"command": "say", "arguments": "hi; touch pwned"}
        refused, patterns = await asyncio.gather(
            http.post(f"/session/{session}/command", json=body), reject_the_ask()
        )
        assert refused.status_code == 403
        assert patterns == ["echo hi", "touch pwned"]
        assert not (project / "pwned").exists()


async def test_a_shell_substitution_past_its_time_is_stopped_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "SHELL_TIMEOUT_S", 0.3)
    pid_file = tmp_path / "child.pid"
    text = await commands.run_shell(f"sleep 60 & echo $! > {pid_file}; wait", tmp_path)
    assert text == "\n(stopped after 0.3 s)"
    assert await gone(int(pid_file.read_text())), "its background child outlived the limit"


async def test_an_aborted_shell_substitution_leaves_nothing_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    running = asyncio.create_task(
        commands.run_shell(f"sleep 60 & echo $! > {pid_file}; wait", tmp_path)
    )
    child = await written_pid(pid_file)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await gone(child), "its background child outlived the abort"
