"""The runtime's warm-up: what the first prompt would otherwise wait for is ready first."""

from __future__ import annotations

import asyncio

from partwire.runtime import Runtime
from partwire.tools.registry import all_tools


async def test_the_warm_up_makes_the_tools_schemas_and_asks_git_before_any_prompt(
    runtime: Runtime,
) -> None:
    """pydantic takes milliseconds to make a tool's schema and git answers in a
    subprocess: a fresh server's first prompt waited about 17 ms for both."""
    tools = all_tools()
    for tool in tools:
        vars(tool).pop("_schema_json", None)  # as a fresh process has them: not made
    snapshots = runtime.project().loop.reverts.snapshots
    snapshots._enabled = None
    runtime.warm_up()
    await runtime.warmed()
    assert tools and all("_schema_json" in vars(tool) for tool in tools)
    asking = [task for task in runtime.background if task.get_name() == "warm-up: git"]
    await asyncio.wait_for(asyncio.gather(*asking), 10)
    assert snapshots._enabled is False  # the test's project is not a git repository
