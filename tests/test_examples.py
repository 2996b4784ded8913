"""The examples in examples/ run as documented (against loopback mocks, offline)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from partwire.config import Settings
from tests.cli.test_cli import _env, _run
from tests.cli.test_continuity import _session_id
from tests.providers.mock_openai import MockOpenAI, text, tool_call
from tests.providers.test_openai_e2e import serve_app

EXAMPLES = Path(__file__).parents[1] / "examples"


async def _example(
    settings: Settings, name: str, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLES / name), *args,
        cwd=settings.project_dir,
        env={**_env(settings, "0"), **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _answer(settings: Settings, session_id: str) -> dict[str, Any]:
    code, out, err = await _run(settings, "export", session_id)
    assert code == 0, err
    messages: list[dict[str, Any]] = json.loads(out)["messages"]
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]
    return messages[1]


async def test_the_openai_loop_example_records_each_step(settings: Settings) -> None:
    mock = MockOpenAI(
        script=[tool_call("get_weather", {"city": "Paris"}), text("Rainy, ", "18°C.")]
    )
    async with serve_app(mock.app()) as mock_url:
        env = {"OPENAI_BASE_URL": f"{mock_url}/v1", "OPENAI_API_KEY": "sk-test"}
        code, out, err = await _example(settings, "openai_loop.py", "Weather?", env=env)
    assert code == 0, err
    assert "Rainy, 18°C." in out and "Tool result: Paris: 18°C, light rain" in out
    answer = await _answer(settings, _session_id(err))
    kinds = [p["type"] for p in answer["parts"]]
    assert kinds == ["step-start", "tool", "step-finish", "step-start", "text", "step-finish"]
    assert answer["parts"][1]["state"]["output"] == "Paris: 18°C, light rain"
    # the loop sent the tool result back to the model in OpenAI's shape
    second = mock.requests[1]["body"]["messages"]
    assert second[-1] == {
        "role": "tool", "tool_call_id": "call_1", "content": "Paris: 18°C, light rain",
    }  # fmt: skip


async def test_the_pydantic_ai_example_records_the_agent_run(settings: Settings) -> None:
    code, out, err = await _example(settings, "pydantic_ai_agent.py", "Sky colour?")
    assert code == 0, err
    answer = await _answer(settings, _session_id(err))
    tools = [p for p in answer["parts"] if p["type"] == "tool"]
    assert tools and tools[0]["tool"] == "look_up" and tools[0]["state"]["status"] == "completed"
    assert "Rayleigh" in tools[0]["state"]["output"] and "Rayleigh" in out
    # pydantic-ai's TestModel answered: the message is its, and each step has its usage
    info = answer["info"]
    assert (info["providerID"], info["modelID"]) == ("test", "test")
    steps = [p["tokens"]["input"] for p in answer["parts"] if p["type"] == "step-finish"]
    assert len(steps) == 2 and all(steps) and info["tokens"]["input"] == sum(steps)


async def test_the_subprocess_runner_example_streams_into_a_server(server: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLES / "subprocess_runner.py"), server,
        env=dict(os.environ), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert "['step-start', 'text', 'tool', 'text', 'step-finish']" in out.decode()
