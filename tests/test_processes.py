"""Child processes: stopped, with every child of their group, on a time limit or an abort,
including one that comes while the process is still starting."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from partwire import processes

# prints its background child's pid, then waits on it
SPAWNER = "sleep 60 & echo $!; wait"


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


async def gone(pid: int, within_s: float = 1.0) -> bool:
    for _ in range(int(within_s / 0.02)):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return not alive(pid)


async def written_pid(path: Path) -> int:
    """The pid a command writes to ``path``, once written (waiting up to 2 s)."""
    for _ in range(100):
        if path.exists() and path.read_text().strip():
            break
        await asyncio.sleep(0.02)
    return int(path.read_text())


async def _spawner() -> tuple[asyncio.subprocess.Process, int]:
    process = await processes.start(
        "/bin/bash", "-c", SPAWNER, group=True, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    child = int(await process.stdout.readline())
    return process, child


async def test_a_time_limit_stops_the_group_and_what_it_printed_stays_readable() -> None:
    process, child = await _spawner()
    with pytest.raises(TimeoutError):
        await processes.finish(process, limit_s=0.2, group=True)
    assert process.returncode is not None
    assert await gone(child), "the group's background child outlived the time limit"
    out, _ = await process.communicate()
    assert out == b""  # the pid line was read above; nothing else was printed


async def test_an_abort_while_it_runs_stops_the_group() -> None:
    process, child = await _spawner()
    waiting = asyncio.create_task(processes.finish(process, group=True))
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert process.returncode is not None
    assert await gone(child)


async def test_an_abort_while_it_runs_stops_a_process_started_alone() -> None:
    process = await processes.start("sleep", "60", stdout=asyncio.subprocess.PIPE)
    waiting = asyncio.create_task(processes.finish(process))
    await asyncio.sleep(0.1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert process.returncode is not None and not alive(process.pid)


async def test_an_abort_while_it_starts_stops_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine the command runs, and starts children, before asyncio has set up
    its pipes; an abort in that window must not leave them running."""
    real = asyncio.create_subprocess_exec

    async def slow_start(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await real(*args, **kwargs)
        await asyncio.sleep(0.5)  # still starting, as far as the caller can tell
        return process

    monkeypatch.setattr(processes.asyncio, "create_subprocess_exec", slow_start)
    pid_file = tmp_path / "child.pid"
    starting = asyncio.create_task(
        processes.start("/bin/bash", "-c", f"sleep 60 & echo $! > {pid_file}; wait", group=True)
    )
    child = await written_pid(pid_file)
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert await gone(child), "the child of a command aborted while starting survived"


async def test_a_command_that_cannot_start_raises_as_asyncio_would() -> None:
    with pytest.raises(FileNotFoundError):
        await processes.start("/nonexistent/partwire-no-such-program")


async def test_what_a_process_prints_once_it_has_exited() -> None:
    process = await processes.start(
        "/bin/bash", "-c", "cat; echo err >&2",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert await processes.finish(process, b"in\n", limit_s=10) == (b"in\n", b"err\n")
    assert process.returncode == 0
