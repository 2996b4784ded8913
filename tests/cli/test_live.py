"""`partwire run` while it waits and works: what a terminal shows, what a pipe gets."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pyte
import pytest

from partwire.config import Settings
from tests.cli.test_asks import Terminal
from tests.cli.test_cli import _run
from tests.cli.test_continuity import _session_id


async def _finish(terminal: Terminal, process: asyncio.subprocess.Process) -> int:
    code = await asyncio.wait_for(process.wait(), 30)
    await asyncio.sleep(0.1)  # the last bytes
    terminal.close()
    return code


async def test_markdown_renders_on_a_terminal_and_stays_plain_in_a_pipe(
    settings: Settings,
) -> None:
    terminal = Terminal(settings, "run", "hello", "there")
    process = await terminal.start()
    await terminal.expect("tokens in")
    assert await _finish(terminal, process) == 0
    assert "You said: hello there" in terminal.screen  # bold, not asterisks
    assert "## Demo model" not in terminal.screen and "Demo model" in terminal.screen
    assert "```python" not in terminal.screen and "counted by the demo model" in terminal.screen

    code, out, err = await _run(settings, "run", "hello", "there")
    assert code == 0, err
    assert out.startswith("## Demo model\n") and "```python\n" in out


CLI_ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "cli"


def _final_screen(raw: bytes) -> list[str]:
    """What the terminal shows once the run is over, redraws applied."""
    screen = pyte.Screen(200, 300)
    pyte.ByteStream(screen).feed(raw)
    return [line.rstrip() for line in screen.display if line.strip()]


@pytest.mark.parametrize("delay_ms", ["15"])
async def test_streamed_markdown_leaves_each_block_once(settings: Settings, delay_ms: str) -> None:
    terminal = Terminal(settings, "run", "hello", "there", delay_ms=delay_ms)
    process = await terminal.start()
    await terminal.expect("tokens in")
    assert await _finish(terminal, process) == 0
    lines = _final_screen(terminal.raw)
    CLI_ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (CLI_ARTIFACTS / "run-on-a-terminal.txt").write_text("\n".join(lines) + "\n")
    answer = lines[
        lines.index("Demo model") : next(i for i, line in enumerate(lines) if "tokens in" in line)
    ]
    assert answer == [
        "Demo model",
        "You said: hello there",
        " • words: 2",
        " • characters: 11",
        " words = 2  # counted by the demo model",
        "Try list, a file path such as README.md, glob **/*.py, bash ls, todo, question, task list,"
        " loop, retry or long 200.",
    ], "each block once, in its final form, no partial frames left behind"


async def test_a_spinner_waits_and_a_running_command_shows_its_output(
    settings: Settings,
) -> None:
    command = "echo first-line; sleep 1.5; echo second-line"
    terminal = Terminal(settings, "run", "--yes", "bash", command, delay_ms="20")
    process = await terminal.start()
    await terminal.expect("waiting for the model…")
    await terminal.expect("│ first-line")
    assert "second-line" not in terminal.screen, "the tail is live, not printed at the end"
    await terminal.expect("│ second-line")
    await terminal.expect("✓ bash")
    assert await _finish(terminal, process) == 0


async def test_sub_agent_tools_are_indented_under_the_task(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "--yes", "task", "list")
    assert code == 0, err
    lines = err.splitlines()
    child = lines.index("  ✓ list     .")
    parent = next(i for i, line in enumerate(lines) if line.startswith("✓ task"))
    assert child < parent
    assert "✓" not in out


async def test_format_json_prints_opencode_run_events(settings: Settings) -> None:
    code, out, err = await _run(
        settings, "run", "--format", "json", "--yes", "bash", "echo", "json-out"
    )
    assert code == 0, err
    session_id = _session_id(err)
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [event["type"] for event in events]
    assert kinds == ["step_start", "tool_use", "step_finish", "step_start", "text", "step_finish"]
    assert all(event["sessionID"] == session_id for event in events)
    assert all(isinstance(event["timestamp"], int) for event in events)
    tool = events[1]["part"]
    assert tool["tool"] == "bash" and tool["state"]["status"] == "completed"
    assert tool["state"]["output"].strip() == "json-out"
    assert "json-out" in events[4]["part"]["text"]
    assert events[5]["part"]["reason"] == "stop"
    assert "✓" not in err and "tokens in" not in err


async def test_ctrl_c_at_a_prompt_ends_the_run_at_once(settings: Settings) -> None:
    terminal = Terminal(settings, "run", "--agent", "plan", "bash", "echo", "never")
    process = await terminal.start()
    await terminal.expect("allow [o]nce, [a]lways, or [r]eject?")
    process.send_signal(signal.SIGINT)
    assert await _finish(terminal, process) == 130  # no Enter needed
    assert "Traceback" not in terminal.screen
    assert "aborted · demo/demo" in terminal.screen
    code, out, err = await _run(settings, "export", _session_id(terminal.screen))
    assert code == 0, err
    [tool] = [p for m in json.loads(out)["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert tool["state"]["status"] == "error", "the ask was answered, nothing left running"


async def test_a_second_ctrl_c_ends_the_run_without_a_traceback(settings: Settings) -> None:
    terminal = Terminal(settings, "run", "long", "100000", delay_ms="5")
    process = await terminal.start()
    await terminal.expect("w3 ")
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    assert await _finish(terminal, process) == 130
    assert "Traceback" not in terminal.screen


async def test_junk_at_a_prompt_asks_again(settings: Settings) -> None:
    terminal = Terminal(settings, "run", "--agent", "plan", "bash", "echo", "typed")
    process = await terminal.start()
    await terminal.expect("allow [o]nce, [a]lways, or [r]eject?")
    terminal.type("maybe")
    await terminal.expect("type o, a or r")
    terminal.type("once")
    await terminal.expect("✓ bash")
    assert await _finish(terminal, process) == 0

    terminal = Terminal(settings, "run", "question")
    process = await terminal.start()
    await terminal.expect("number(s), comma separated")
    terminal.type("7")
    await terminal.expect("pick numbers from 1 to 2")
    terminal.type("1")
    await terminal.expect("tokens in")
    assert await _finish(terminal, process) == 0
    assert '"Which colour should the demo use?"="Red"' in terminal.screen


async def test_a_doom_loop_ask_says_what_it_saw(settings: Settings) -> None:
    code, _, err = await _run(settings, "run", "--yes", "loop")
    assert code == 0, err
    assert "the model made the same list call three times in a row" in err
    assert "allowed once (--yes)" in err


async def test_ctrl_c_while_streaming_prints_the_answer_once_and_counts_it(
    settings: Settings,
) -> None:
    """Ctrl-C while the answer streams: the partial answer stays on screen once, and the
    stopped step's tokens are counted as an estimate, and said to be one."""
    terminal = Terminal(settings, "run", "long", "2000", delay_ms="5")
    process = await terminal.start()
    await terminal.expect("w40 ")
    process.send_signal(signal.SIGINT)
    assert await _finish(terminal, process) == 130
    lines = _final_screen(terminal.raw)
    starts = [line for line in lines if line.startswith("w0 w1 w2")]
    assert len(starts) == 1, lines
    summary = next(line for line in lines if "tokens in" in line)
    assert "out ~" in summary and "(estimated" in summary, summary
    code, out, err = await _run(settings, "export", _session_id(terminal.screen))
    assert code == 0, err
    answer = json.loads(out)["messages"][-1]["info"]
    assert answer["error"]["name"] == "MessageAbortedError"
    assert answer["tokens"]["output"] > 0 and answer["tokens"]["input"] > 0
