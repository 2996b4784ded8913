"""opencode's JS SDK 1.19.3: its v2 client (/api/*) and the v1 calls that used to 404."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from partwire.config import Settings
from partwire.server.runner import serve_in_background

HERE = Path(__file__).parent
MISSING = shutil.which("node") is None or not (HERE / "node_modules" / "opencode-sdk-1-19").is_dir()
pytestmark = pytest.mark.skipif(
    MISSING and not os.environ.get("CI"),
    reason="node or the SDK is missing: `make test` installs it with npm",
)


async def test_the_1_19_sdk_v2_client_and_former_404s(settings: Settings) -> None:
    if MISSING:
        pytest.fail("CI needs node and the opencode SDK: `make sdk` installs it with npm")
    async with serve_in_background(replace(settings, demo_delay_ms=0)) as url:
        process = await asyncio.create_subprocess_exec(
            "node", str(HERE / "sdk_v2.mjs"),
            cwd=HERE,
            env={**os.environ, "PARTWIRE_URL": url},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    seen = json.loads(out.decode())
    failed = [r for r in seen["results"] if not r["ok"]]
    assert failed == [], failed
    by_name = {r["name"]: r for r in seen["results"]}
    assert len(by_name) == 27
    assert by_name["v2.session.prompt"]["data"]["data"]["sessionID"] == seen["sessionID"]
    messages = by_name["v2.session.messages"]["data"]["data"]
    assert [m["type"] for m in messages][:2] == ["user", "assistant"]
    assert {a["id"] for a in by_name["v2.agent.list"]["data"]["data"]} >= {"build", "plan"}
    assert "bash" in by_name["tool.ids"]["data"]
