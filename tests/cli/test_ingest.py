"""`partwire ingest --from FORMAT`: JSON lines from stdin or a command, recorded live."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from partwire.client.http import PartwireClient
from partwire.config import Settings
from tests.cli.test_cli import _env, _run
from tests.cli.test_continuity import _session_id

FIXTURES = Path(__file__).parents[1] / "protocol" / "fixtures"


async def _ingest(settings: Settings, *args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "ingest", *args,
        cwd=settings.project_dir,
        env=_env(settings, "0"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _messages(settings: Settings, session_id: str) -> list[dict[str, Any]]:
    code, out, err = await _run(settings, "export", session_id)
    assert code == 0, err
    messages: list[dict[str, Any]] = json.loads(out)["messages"]
    return messages


def _kinds(message: dict[str, Any]) -> list[str]:
    return [part["type"] for part in message["parts"]]


async def test_stdin_lines_become_a_message_answering_the_prompt(settings: Settings) -> None:
    lines = (FIXTURES / "anthropic.jsonl").read_bytes()
    code, _, err = await _ingest(
        settings, "--from", "anthropic", "--prompt", "list the files", "--title", "Mirror",
        stdin=lines,
    )  # fmt: skip
    assert code == 0, err
    assert "1 message(s) recorded" in err
    messages = await _messages(settings, _session_id(err))
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["parts"][0]["text"] == "list the files"
    answer = messages[1]
    assert _kinds(answer) == ["step-start", "reasoning", "text", "tool", "step-finish"]
    # nothing in the input gave the call a result: it ends in error, the message ends cleanly
    assert answer["parts"][3]["state"]["status"] == "error"
    assert "error" not in answer["info"]


async def test_a_command_is_run_and_its_output_recorded(settings: Settings) -> None:
    script = f"import sys; sys.stdout.write(open({str(FIXTURES / 'claude-code.jsonl')!r}).read())"
    code, _, err = await _ingest(
        settings, "--from", "claude-code", "--prompt", "go", "--", sys.executable, "-c", script
    )
    assert code == 0, err
    answer = (await _messages(settings, _session_id(err)))[1]
    assert _kinds(answer) == [
        "step-start", "reasoning", "text", "tool", "step-finish", "step-start", "text",
        "step-finish",
    ]  # fmt: skip
    assert answer["parts"][3]["state"]["status"] == "completed"


async def test_an_opencode_stream_is_mirrored_message_by_message(settings: Settings) -> None:
    sse = (FIXTURES / "trace-tool.sse").read_text().splitlines()
    lines = "".join(line[5:].strip() + "\n" for line in sse if line.startswith("data:"))
    code, _, err = await _ingest(settings, "--from", "opencode", stdin=lines.encode())
    assert code == 0, err
    assert "3 message(s) recorded" in err
    messages = await _messages(settings, _session_id(err))
    assert [m["info"]["role"] for m in messages] == ["user", "assistant", "assistant"]
    assert messages[0]["parts"][0]["text"] == "Run echo please"


async def test_a_bad_line_stops_with_its_number_and_keeps_what_came_before(
    settings: Settings,
) -> None:
    kept, lost = (
        b'{"type": "text-delta", "delta": "kept"}',
        b'{"type": "text-delta", "delta": "lost"}',
    )
    lines = kept + b"\n\n{broken\n" + lost + b"\n"
    code, _, err = await _ingest(settings, "--from", "partwire", "--prompt", "go", stdin=lines)
    assert code == 1 and "input line 3: not JSON" in err and "Traceback" not in err
    answer = (await _messages(settings, _session_id(err)))[1]
    assert [p["text"] for p in answer["parts"]] == ["kept"]
    assert "input line 3" in answer["info"]["error"]["data"]["message"]


async def test_a_failing_command_ends_the_message_with_its_status(settings: Settings) -> None:
    script = 'print(\'{"type": "text-delta", "delta": "half"}\', flush=True); raise SystemExit(3)'
    code, _, err = await _ingest(
        settings, "--from", "partwire", "--prompt", "go", "--", sys.executable, "-c", script
    )
    assert code == 1 and "exited with status 3" in err
    answer = (await _messages(settings, _session_id(err)))[1]
    assert answer["info"]["error"]["data"]["message"].endswith("exited with status 3")


async def test_bad_arguments_are_clear_errors(settings: Settings) -> None:
    code, _, err = await _ingest(settings, "--from", "smoke-signals")
    assert code == 1 and "unknown format" in err and "openai-chat" in err
    assert "Traceback" not in err
    code, _, err = await _ingest(settings, "--from", "partwire", "-s", "ses_nope")
    assert code == 1 and "not found" in err.lower() and "Traceback" not in err
    code, _, err = await _ingest(settings, "--from", "partwire", "--", "/no/such/program")
    assert code == 1 and "cannot run /no/such/program" in err


async def test_run_watch_renders_an_external_message_live(server: str, settings: Settings) -> None:
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        watcher = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "partwire", "run", "--watch", "-s", session_id,
            "--attach", server,
            cwd=settings.project_dir, env=_env(settings, "0"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert watcher.stderr is not None
        assert b"session " + session_id.encode() in await watcher.stderr.readline()
        await asyncio.sleep(2)  # it subscribes to /event right after saying which session
        await client.ingest(
            session_id,
            [
                {"type": "start", "prompt": "hi", "model": {"providerID": "ext", "modelID": "m"}},
                {"type": "text-delta", "delta": "Hello from "},
                {"type": "text-delta", "delta": "another process."},
                {"type": "tool-call", "callID": "c1", "tool": "bash", "input": {"command": "ls"}},
                {"type": "tool-result", "callID": "c1", "output": "README.md"},
            ],
        )
        out, err = await asyncio.wait_for(watcher.communicate(), 30)
    assert watcher.returncode == 0, err.decode()
    assert "Hello from another process." in out.decode()
    assert "bash" in err.decode() and "ext/m" in err.decode()


async def test_run_watch_needs_a_session_and_no_prompt(settings: Settings) -> None:
    code, _, err = await _run(settings, "run", "--watch")
    assert code == 1 and "--watch renders an existing session" in err
    code, _, err = await _run(settings, "run", "--watch", "-c", "hello")
    assert code == 1 and "no prompt" in err


async def test_claude_code_without_a_prompt_takes_the_streams_and_its_sub_agent(
    settings: Settings,
) -> None:
    """No --prompt: the user's words in the stream are the prompt; the model and the
    reported cost are kept; the Task's sub-agent is a child session, over the real route."""
    lines = (FIXTURES / "claude-code-task.jsonl").read_bytes()
    code, _, err = await _ingest(settings, "--from", "claude-code", stdin=lines)
    assert code == 0, err
    session_id = _session_id(err)
    asked, answer = await _messages(settings, session_id)
    assert asked["parts"][0]["text"] == "Count the files, and read the README."
    info = answer["info"]
    assert (info["providerID"], info["modelID"]) == ("anthropic", "claude-sonnet-4-5")
    assert abs(info["cost"] - 0.0421) < 1e-9
    task = next(p for p in answer["parts"] if p.get("tool") == "Task")
    child = task["state"]["metadata"]["sessionId"]
    child_messages = await _messages(settings, child)
    tools = [p["tool"] for m in child_messages for p in m["parts"] if p["type"] == "tool"]
    assert tools == ["Bash"]
