"""Built-in tools through the real server: agents' permissions, live bash output, abort."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import httpx
import pytest

from tests.reference import validate
from tests.scripted import ScriptedModel, text_reply, tool_reply
from tests.server.test_permission import SCRIPTED
from tests.server.watch import Watch

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


async def _prompt(http: httpx.AsyncClient, agent: str = "build") -> str:
    sid = (await http.post("/session", json={})).json()["id"]
    body = {"parts": [{"type": "text", "text": "go"}], "model": SCRIPTED, "agent": agent}
    assert (await http.post(f"/session/{sid}/prompt_async", json=body)).status_code == 204
    return str(sid)


def _idle(sid: str) -> object:
    return lambda e: e["properties"].get("sessionID") == sid


EDIT = {"filePath": "README.md", "oldString": "# Sample", "newString": "# Changed"}
UNDO = {"filePath": "README.md", "oldString": "# Changed", "newString": "# Sample"}


@pytest.mark.parametrize(
    ("tool", "args", "again"),
    [
        ("bash", {"command": "echo hi", "description": "say hi"}, None),
        ("edit", EDIT, UNDO),
        ("write", {"filePath": "new.txt", "content": "x"}, None),
    ],
)
async def test_plan_asks_before_bash_and_edits_build_does_not(
    http: httpx.AsyncClient,
    model: ScriptedModel,
    tool: str,
    args: dict[str, str],
    again: dict[str, str] | None,
) -> None:
    model.enqueue(tool_reply(tool, args), text_reply("ok"))
    async with Watch(http) as watch:
        sid = await _prompt(http, agent="plan")
        asked = await watch.wait_for("permission.asked")
        assert asked["properties"]["permission"] == ("bash" if tool == "bash" else "edit")
        await http.post(f"/permission/{asked['properties']['id']}/reply", json={"reply": "once"})
        await watch.wait_for("session.idle", _idle(sid))

    model.enqueue(tool_reply(tool, again or args), text_reply("ok"))
    async with Watch(http) as watch:
        sid = await _prompt(http, agent="build")
        await watch.wait_for("session.idle", _idle(sid))
        assert not [e for e in watch.events if e["type"] == "permission.asked"]
    messages = (await http.get(f"/session/{sid}/message")).json()
    state = next(p for p in messages[1]["parts"] if p["type"] == "tool")["state"]
    assert state["status"] == "completed", state


async def test_bash_output_streams_into_the_running_part(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    command = "for i in 1 2 3; do echo tick $i; sleep 0.2; done"
    model.enqueue(
        tool_reply("bash", {"command": command, "description": "ticks"}), text_reply("ok")
    )
    async with Watch(http) as watch:
        sid = await _prompt(http)
        await watch.wait_for("session.idle", _idle(sid))
        running = [
            e["properties"]["part"]["state"]
            for e in watch.events
            if e["type"] == "message.part.updated"
            and e["properties"]["part"]["type"] == "tool"
            and e["properties"]["part"]["state"]["status"] == "running"
        ]
    outputs = [s["metadata"]["output"] for s in running if s.get("metadata")]
    assert len(outputs) >= 2 and outputs[0].startswith("tick 1")
    assert outputs == sorted(outputs, key=len)  # it only grows


async def test_abort_stops_a_running_command_within_a_second(
    http: httpx.AsyncClient, model: ScriptedModel, project: Path
) -> None:
    command = "sleep 60 & echo $! > child.pid; wait"
    model.enqueue(tool_reply("bash", {"command": command, "description": "hang"}))
    async with Watch(http) as watch:
        sid = await _prompt(http)
        await watch.wait_for(
            "message.part.updated",
            lambda e: e["properties"]["part"].get("state", {}).get("status") == "running",
        )
        for _ in range(100):
            if (project / "child.pid").exists() and (project / "child.pid").read_text().strip():
                break
            await asyncio.sleep(0.02)
        child = int((project / "child.pid").read_text())
        started = asyncio.get_running_loop().time()
        assert (await http.post(f"/session/{sid}/abort")).json() is True
        assert asyncio.get_running_loop().time() - started < 1.0
        await watch.wait_for("session.idle", _idle(sid))
        sequence = watch.sequence(sid)
    assert sequence[-6:] == [
        "part tool error",
        "message assistant done",
        "session.updated",  # the session's spend grew by the stopped step's estimate
        "session.error",
        "status idle",
        "session.idle",
    ]
    stat = Path(f"/proc/{child}/stat")
    assert not stat.exists() or stat.read_text().split()[2] == "Z"
    messages = (await http.get(f"/session/{sid}/message")).json()
    assert messages[1]["info"]["error"]["name"] == "MessageAbortedError"


async def test_reading_an_image_attaches_it(
    http: httpx.AsyncClient, model: ScriptedModel, project: Path
) -> None:
    (project / "dot.png").write_bytes(PNG)
    model.enqueue(tool_reply("read", {"filePath": "dot.png"}), text_reply("a dot"))
    async with Watch(http) as watch:
        sid = await _prompt(http)
        await watch.wait_for("session.idle", _idle(sid))
    messages = (await http.get(f"/session/{sid}/message")).json()
    tool = next(p for p in messages[1]["parts"] if p["type"] == "tool")
    validate("ToolPart", tool)
    [attachment] = tool["state"]["attachments"]
    assert attachment["mime"] == "image/png"
    assert attachment["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert "Image read successfully" in tool["state"]["output"]


async def test_large_output_is_truncated_and_kept_in_a_file(
    http: httpx.AsyncClient, model: ScriptedModel
) -> None:
    command = "seq 1 100000"
    model.enqueue(
        tool_reply("bash", {"command": command, "description": "count"}), text_reply("ok")
    )
    async with Watch(http) as watch:
        sid = await _prompt(http)
        await watch.wait_for("session.idle", _idle(sid))
    messages = (await http.get(f"/session/{sid}/message")).json()
    state = next(p for p in messages[1]["parts"] if p["type"] == "tool")["state"]
    assert state["metadata"]["truncated"] is True
    note = state["output"].splitlines()[-1]
    assert note.startswith("[output truncated: showed")
    saved = Path(note.split("the full output is in ")[1].split(". Use")[0])
    assert saved.read_text().splitlines()[-1] == "100000"
    assert len(state["output"].splitlines()) <= 2003
