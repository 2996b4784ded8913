"""The runtime's warm-up: what the first prompt would otherwise wait for is ready first."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from partwire.runtime import Runtime
from partwire.tools.registry import all_tools


async def test_the_warm_up_makes_the_tools_schemas_and_asks_git_before_any_prompt(
    runtime: Runtime,
) -> None:
    """pydantic takes milliseconds to make a tool's schema and git answers in a
    subprocess: a fresh server's first prompt waited about 17 ms for both."""
    tools = all_tools()
    for tool in tools:
        vars(tool).pop("_spec", None)  # as a fresh process has them: not made
    snapshots = runtime.project().loop.reverts.snapshots
    snapshots._enabled = None
    runtime.warm_up()
    await runtime.warmed()
    assert tools and all("_spec" in vars(tool) for tool in tools)
    asking = [task for task in runtime.background if task.get_name() == "warm-up: git"]
    await asyncio.wait_for(asyncio.gather(*asking), 10)
    assert snapshots._enabled is False  # the test's project is not a git repository


def test_the_warm_up_imports_the_processor_the_first_prompt_would_import() -> None:
    """A fresh process (this one has imported everything): the app and its start leave the
    processor out, the warm-up brings it in (the first prompt imported it: about 3 ms)."""
    script = """
import asyncio, sys, tempfile
from pathlib import Path
from partwire.config import load_settings
from partwire.server.app import create_app

async def main():
    dirs = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    app = create_app(load_settings(project_dir=dirs[0], data_dir=dirs[1], env={}))
    runtime = app.state.runtime
    await runtime.start()
    before = "partwire.session.processor" in sys.modules
    runtime.warm_up()
    await runtime.warmed()
    print(before, "partwire.session.processor" in sys.modules)
    await runtime.stop()

asyncio.run(main())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["False", "True"]
