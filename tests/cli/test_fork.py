"""`partwire parts`, `partwire fork --at` and `partwire run -s ID --at PART`."""

from __future__ import annotations

import json
from typing import Any

from partwire.config import Settings
from tests.cli.test_cli import _run
from tests.cli.test_continuity import _session_id
from tests.cli.test_transfer import _made_session


async def _export(settings: Settings, session_id: str) -> dict[str, Any]:
    code, out, err = await _run(settings, "export", session_id)
    assert code == 0, err
    exported: dict[str, Any] = json.loads(out)
    return exported


def _tool_part(exported: dict[str, Any]) -> dict[str, Any]:
    return next(p for m in exported["messages"] for p in m["parts"] if p["type"] == "tool")


async def test_parts_lists_what_a_fork_can_take(settings: Settings) -> None:
    session_id = await _made_session(settings)
    tool = _tool_part(await _export(settings, session_id))
    code, out, err = await _run(settings, "parts", session_id)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith(tool["id"]))
    assert row.split()[1:] == ["assistant", "tool", "bash", "(completed)"]
    assert any(line.split()[1:3] == ["user", "text"] for line in out.splitlines())


async def test_fork_at_a_part_after_and_before_it(settings: Settings) -> None:
    session_id = await _made_session(settings)
    tool = _tool_part(await _export(settings, session_id))
    code, out, err = await _run(settings, "fork", session_id, "--at", tool["id"])
    assert code == 0, err
    after = await _export(settings, out.strip())
    assert f"forked {session_id} at {tool['id']}: 2 messages" in err
    assert [p["type"] for p in after["messages"][1]["parts"]] == ["step-start", "tool"]
    assert after["info"]["metadata"]["forkedFrom"]["partID"] == tool["id"]
    code, out, err = await _run(settings, "fork", session_id, "--at", tool["id"], "--before")
    assert code == 0, err
    before = await _export(settings, out.strip())
    assert [m["info"]["role"] for m in before["messages"]] == ["user"]
    code, out, err = await _run(settings, "fork", session_id)
    assert code == 0 and len((await _export(settings, out.strip()))["messages"]) == 3


async def test_run_at_a_part_prompts_a_fork_and_leaves_the_source(settings: Settings) -> None:
    session_id = await _made_session(settings)
    source = await _export(settings, session_id)
    tool = _tool_part(source)
    code, out, err = await _run(settings, "run", "-s", session_id, "--at", tool["id"], "long 2")
    assert code == 0, err
    assert "w0 w1" in out
    fork_id = _session_id(err)
    assert fork_id != session_id
    fork = await _export(settings, fork_id)
    roles = [m["info"]["role"] for m in fork["messages"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert fork["messages"][2]["parts"][0]["text"] == "long 2"
    assert (await _export(settings, session_id))["messages"] == source["messages"]


async def test_fork_mistakes_are_one_line_errors(settings: Settings) -> None:
    session_id = await _made_session(settings)
    cases = [
        (["fork", session_id, "--before"], "--before needs --at PART"),
        (["run", "--at", "prt_x", "hello"], "--at forks a session"),
        (["fork", session_id, "--at", "prt_nope"], "prt_nope"),
        (["fork", session_id, "--at", "nope"], "partID"),
    ]
    for args, expected in cases:
        code, out, err = await _run(settings, *args)
        assert code == 1 and expected in err and "Traceback" not in err, (args, err)
        assert out == ""
