"""`partwire run` answering asks: --yes, no terminal, and a real pseudo-terminal."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import sys

from partwire.config import Settings
from tests.cli.test_cli import _env, _run


async def test_yes_allows_each_ask_once(settings: Settings) -> None:
    code, out, err = await _run(settings, "run", "--yes", "--agent", "plan", "bash", "echo", "ok")
    assert code == 0, err
    assert "? permission bash: echo ok\n  allowed once (--yes)" in err
    assert "✓ bash" in err and out.strip() == "The `bash` tool returned 1 line:\n\n    ok"


async def test_without_a_terminal_asks_are_rejected_with_a_hint(settings: Settings) -> None:
    _, _, err = await _run(settings, "run", "--agent", "plan", "bash", "echo", "ok")
    assert "rejected: no terminal to ask at (pass --yes to allow)" in err
    assert "✗ bash     The user rejected permission to use this tool." in err
    _, _, err = await _run(settings, "run", "question")
    assert "dismissed (no terminal)" in err


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal:
    """A child process on a pseudo-terminal: read what it prints, type answers."""

    def __init__(self, settings: Settings, *args: str, delay_ms: str = "0") -> None:
        self.master, self.slave = pty.openpty()
        self.delay_ms = delay_ms
        os.set_blocking(self.master, False)
        self.settings, self.args = settings, args
        self.screen = ""
        self.raw = b""  # what a terminal emulator would be fed
        self._changed = asyncio.Event()

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            asyncio.get_running_loop().remove_reader(self.master)
            return
        self.raw += data
        self.screen += ANSI.sub("", data.decode(errors="replace")).replace("\r", "")
        self._changed.set()

    async def start(self) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "partwire", *self.args,
            cwd=self.settings.project_dir,
            env=_env(self.settings, self.delay_ms),
            stdin=self.slave, stdout=self.slave, stderr=self.slave,
        )  # fmt: skip
        os.close(self.slave)
        asyncio.get_running_loop().add_reader(self.master, self._readable)
        return process

    async def expect(self, text: str, within: float = 20) -> None:
        async with asyncio.timeout(within):
            while text not in self.screen:
                self._changed.clear()
                await self._changed.wait()

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self.master)
        os.close(self.master)


async def test_a_terminal_user_answers_a_permission_and_a_question(settings: Settings) -> None:
    terminal = Terminal(settings, "run", "--agent", "plan", "bash", "echo", "typed")
    process = await terminal.start()
    await terminal.expect("allow [o]nce, [a]lways, or [r]eject?")
    terminal.type("o")
    await terminal.expect("tokens in")
    assert await asyncio.wait_for(process.wait(), 20) == 0
    assert "✓ bash" in terminal.screen and "typed" in terminal.screen
    terminal.close()

    terminal = Terminal(settings, "run", "question")
    process = await terminal.start()
    await terminal.expect("number(s), comma separated")
    terminal.type("2")
    await terminal.expect("tokens in")
    assert await asyncio.wait_for(process.wait(), 20) == 0
    assert '"Which colour should the demo use?"="Blue"' in terminal.screen
    terminal.close()
