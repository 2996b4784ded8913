"""The README speaks to a stranger: a quick start first, nothing only the team has, and
counts that match the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from partwire.tools import registry

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
NUMBERS = {"twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16}


def test_it_starts_with_a_quick_start() -> None:
    headings = [line for line in README.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Quick start"
    block = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert "make serve" in block and "make test" in block and len(block.splitlines()) <= 10


def test_it_names_nothing_a_user_of_the_repository_lacks() -> None:
    for private in ("../shared", "shared folder", "side_by_side.py", "the team"):
        assert private not in README, private
    assert not re.search(r"issue \d+'s notes", README)


def test_its_tool_count_matches_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_TOOLS", {})  # the built-ins alone, not tests' own tools
    registry.load_builtin_tools()
    said = re.findall(r"the (\w+) built-ins", README)
    assert said and all(NUMBERS[word] == len(registry.all_tools()) for word in said), said


def test_the_own_loop_example_uses_only_exported_names() -> None:
    import ast

    import partwire

    section = README.split("## Use partwire with your own agent loop", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    imports = [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.ImportFrom)]
    assert imports and all(node.module == "partwire" for node in imports)
    for node in imports:
        for alias in node.names:
            assert alias.name in partwire.__all__, alias.name


async def test_the_seed_orchestrator_example_streams_its_message_live(server: str) -> None:
    import asyncio

    import httpx

    section = README.split("**Seed 003's builder, from another process.**", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), namespace)  # the block as written
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        session_id = (await http.post("/session", json={})).json()["id"]
        seen: list[str] = []

        async def watch() -> None:  # a client of the seed's frames, open before it runs
            async with http.stream("GET", f"/session/{session_id}/stream") as response:
                async for line in response.aiter_lines():
                    seen.append(line)
                    if line.startswith("data: ") and '"id":"msg_xagent_1"' in line:
                        return

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0.3)
        built = await namespace["main"](server, session_id, "Weather in Tokyo?")
        await asyncio.wait_for(watcher, 10)
        stored = (await http.get(f"/session/{session_id}/message/msg_xagent_1")).json()
    assert built.content == "Let me check the weather.\n\n\nTool result: 72°F, sunny"
    assert [p["type"] for p in stored["parts"]] == ["text", "tool"]
    assert stored["parts"][1]["state"]["output"] == "72°F, sunny"
    events = [line[7:] for line in seen if line.startswith("event: ")]
    assert events[-1] == "message_complete" and "part_delta" in events
    assert events.count("part_complete") == 4  # the prompt; the text, the call, its result


async def test_the_seed_004_client_example_renders_a_session(server: str, tmp_path: Path) -> None:
    """The seed-004 client, as written, against a session with a sub-agent: it prints the
    conversation the shared reducer folded, sub-agent included."""
    from partwire.client.http import PartwireClient
    from tests.jsclient import require_js_client, run_js

    require_js_client()
    section = README.split("node client.mjs URL SESSION_ID", 1)[1]
    code = section.split("```js", 1)[1].split("```", 1)[0]
    async with PartwireClient(server) as client:
        session_id = (await client.create_session()).id
        await client.prompt(session_id, "task list")
        answer = (await client.messages(session_id))[-1]
    out, err = await run_js("readme-client.mjs", code, server, session_id)
    lines = out.splitlines()
    assert lines[0] == "user: task list"
    assert "subagent general: list [complete]" in lines
    assert "  user: list" in lines and any(line.startswith("  tool list ") for line in lines)
    final = [p.text for p in answer.parts if p.type == "text"][-1]  # type: ignore[union-attr]
    assert f"assistant: {final.splitlines()[0]}" in lines
    assert "ready" in err
