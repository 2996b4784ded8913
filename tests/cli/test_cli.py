"""`partwire run` as a user runs it: a real process, a real terminal-less stdout."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx

from partwire.config import Settings
from tests.served import free_port


def _env(settings: Settings, delay_ms: str = "0") -> dict[str, str]:
    return {
        **os.environ,
        "PARTWIRE_DATA_DIR": str(settings.data_dir),
        "PARTWIRE_DEMO_DELAY_MS": delay_ms,
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "PARTWIRE_CONFIG_DIR": str(settings.data_dir / "config"),
    }


async def _run(settings: Settings, *args: str, delay_ms: str = "0") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", *args,
        cwd=settings.project_dir,
        env=_env(settings, delay_ms),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_run_renders_text_reasoning_and_a_final_line(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "hello", "there")
    assert code == 0, err
    assert "The user wrote 2 words" in err  # reasoning is not the answer
    assert "You said: **hello there**" in out  # streamed text, as the model wrote it
    summary = err.splitlines()[-2]  # then the demo note
    assert summary.startswith("demo/demo · tokens in ") and "out " in summary


async def test_run_shows_tools_as_one_line_with_their_state(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "README.md")
    assert code == 0
    tool_lines = [line for line in err.splitlines() if line.startswith(("✓", "✗"))]
    assert tool_lines == ["✓ read     README.md"]
    assert "✓" not in out and "tokens in" not in out and "session ses_" not in out
    code, out, err = await _run(settings, "run", "list")
    assert "✓ list     ." in err


async def test_bad_model_is_a_message_not_a_traceback(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "--model", "nope/x", "hi")
    assert code == 1
    assert "error: Unknown model nope/x; available: demo/demo" in err
    assert "Traceback" not in out + err
    code, _, err = await _run(settings, "run", "--model", "justone", "hi")
    assert code == 1 and "must look like provider/model" in err


async def test_attach_to_an_unreachable_server_is_a_clear_error(settings: Settings) -> None:
    code, _, err = await _run(settings, "run", "--attach", "http://127.0.0.1:9", "hi")
    assert code == 1
    assert "cannot reach the server" in err and "Traceback" not in err


async def test_attach_uses_the_running_server(settings: Settings, server: str) -> None:
    code, out, err = await _run(settings, "run", "--attach", server, "long", "5")
    assert code == 0, err
    assert "w0 w1 w2 w3 w4" in out
    async with httpx.AsyncClient(base_url=server) as http:
        sessions = (await http.get("/session")).json()
    assert [s["title"] for s in sessions] == ["long 5"]


async def test_ctrl_c_aborts_the_session_cleanly(settings: Settings, server: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "run", "--attach", server, "long", "100000",
        cwd=settings.project_dir,
        env=_env(settings),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    await asyncio.wait_for(process.stdout.readuntil(b"w3 "), 30)
    process.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 130, err
    assert "aborting" not in out.decode() and "tokens" not in out.decode()
    assert "aborting" in err.decode() and "aborted · demo/demo · tokens" in err.decode()
    assert "Traceback" not in err.decode()
    async with httpx.AsyncClient(base_url=server) as http:
        [session] = (await http.get("/session")).json()
        messages = (await http.get(f"/session/{session['id']}/message")).json()
        status = (await http.get("/session/status")).json()
    assert messages[-1]["info"]["error"]["name"] == "MessageAbortedError"
    assert status == {}


def test_help_lists_the_commands(tmp_path: Path) -> None:
    from partwire.cli import _parser

    text = _parser().format_help()
    assert "serve" in text and "run" in text


async def test_models_lists_what_is_usable(settings: Settings) -> None:
    code, out, _ = await _run(settings, "models")
    assert code == 0 and out.splitlines()[0].startswith("* demo/demo")
    config = {
        "provider": {
            "local": {
                "options": {"baseURL": "http://127.0.0.1:9/v1"},
                "models": {"m": {"name": "Local M"}},
            }
        }
    }
    (settings.project_dir / "partwire.json").write_text(__import__("json").dumps(config))
    code, out, _ = await _run(settings, "models")
    assert "  local/m  Local M" in out


async def test_the_demo_note_says_why_once_and_the_summary_names_model_and_cost(
    settings: Settings,
) -> None:
    _, out, err = await _run(settings, "run", "hi")
    assert "offline demo" not in out and "You said: **hi**" in out
    assert err.count("The offline demo model answered: no model provider is configured") == 1
    last = [line for line in err.splitlines() if "tokens in" in line][-1]
    assert last.startswith("demo/demo · tokens in") and "$0.0000" in last
    _, _, err = await _run(settings, "run", "-m", "demo/demo", "hi")
    assert "offline demo model answered" not in err  # asked for by name


async def test_models_lists_the_default_first_and_cuts_long_catalogues(
    settings: Settings,
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "models",
        cwd=settings.project_dir, env={**_env(settings), "OPENAI_API_KEY": "sk-x"},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    lines = out.decode().splitlines()
    assert lines[0].startswith("* openai/gpt-4.1") and "default" in lines[0]
    assert any("more openai models" in line for line in lines) and len(lines) < 30
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "partwire", "models", "--all",
        cwd=settings.project_dir, env={**_env(settings), "OPENAI_API_KEY": "sk-x"},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    every, _ = await asyncio.wait_for(process.communicate(), 60)
    assert len(every.decode().splitlines()) > 100 and "more openai" not in every.decode()


async def test_a_bad_attach_address_and_an_unknown_session_are_one_line_each(
    settings: Settings,
) -> None:
    closed = free_port()
    code, _, err = await _run(settings, "run", "--attach", f"127.0.0.1:{closed}", "hi")
    assert code == 1 and "Traceback" not in err
    assert f"cannot reach the server at http://127.0.0.1:{closed}" in err
    code, _, err = await _run(settings, "run", "--attach", "ftp://x", "hi")
    assert code == 2 and "is not a server address: give http://host:port" in err
    code, _, err = await _run(settings, "export", "ses_nope")
    assert code == 1 and err.strip() == "error: Session not found: ses_nope"


async def test_piped_output_keeps_its_lines_whole(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "long", "300")
    assert code == 0 and len(out.splitlines()) == 1  # the answer as the model wrote it
    note = "no model provider is configured (set OPENAI_API_KEY or ANTHROPIC_API_KEY, or see"
    assert note in err  # not broken at 80 columns
