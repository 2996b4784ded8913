"""bash: output, exit codes, timeouts, streaming metadata, and killing the whole group."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from partwire.errors import ToolArgumentsError
from partwire.tools import bash
from partwire.tools.base import ToolContext
from tests.test_processes import alive, gone, written_pid
from tests.tools.conftest import Asks


async def test_runs_in_the_project_and_returns_output(
    ctx: ToolContext, project: Path, asks: Asks
) -> None:
    result = await bash.TOOL.run({"command": "pwd; echo err >&2", "description": "where"}, ctx)
    assert result.output.splitlines() == [str(project), "err"]
    assert result.metadata["exit"] == 0
    assert asks.asks[0][:2] == ("bash", ["pwd", "echo err"])  # a redirect is not a word


async def test_non_zero_exit_is_reported(ctx: ToolContext) -> None:
    result = await bash.TOOL.run({"command": "echo out; exit 3", "description": "fail"}, ctx)
    assert result.output == "out\n\n\nExit code 3."
    assert result.metadata["exit"] == 3


async def test_description_is_required_for_the_model(ctx: ToolContext) -> None:
    with pytest.raises(ToolArgumentsError, match="description: Field required"):
        await bash.TOOL.run({"command": "true"}, ctx)


async def test_timeout_kills_the_command(ctx: ToolContext) -> None:
    started = asyncio.get_running_loop().time()
    args = {"command": "echo start; sleep 30", "description": "slow", "timeout": 300}
    result = await bash.TOOL.run(args, ctx)
    assert asyncio.get_running_loop().time() - started < 5
    assert result.output.startswith("start")
    assert "timed out after 300 ms" in result.output
    assert result.metadata["timedOut"] is True


async def test_output_streams_into_metadata(ctx: ToolContext) -> None:
    updates: list[dict[str, Any]] = []

    async def record(title: str | None, metadata: dict[str, Any]) -> None:
        updates.append(metadata)

    ctx.update_metadata = record
    command = "for i in 1 2 3; do echo tick $i; sleep 0.15; done"
    await bash.TOOL.run({"command": command, "description": "ticks"}, ctx)
    assert len(updates) >= 2
    assert updates[0]["output"].startswith("tick 1")
    assert all(u["description"] == "ticks" for u in updates)


async def test_cancel_kills_the_command_and_its_children(ctx: ToolContext, project: Path) -> None:
    command = "sleep 60 & echo $! > child.pid; wait"
    task = asyncio.create_task(bash.TOOL.run({"command": command, "description": "spawn"}, ctx))
    pid_file = project / "child.pid"
    child = await written_pid(pid_file)
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(child), "the background child survived the abort"


async def test_workdir_runs_elsewhere_and_asks_when_outside(
    ctx: ToolContext, project: Path, asks: Asks
) -> None:
    result = await bash.TOOL.run({"command": "pwd", "workdir": "src", "description": "in src"}, ctx)
    assert result.output.strip() == str(project / "src")
    await bash.TOOL.run({"command": "pwd", "workdir": "..", "description": "outside"}, ctx)
    assert ("external_directory", [f"{project.parent}/*"]) in [
        (p, pats) for p, pats, _ in asks.asks
    ]
