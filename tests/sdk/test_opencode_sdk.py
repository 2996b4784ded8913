"""The official opencode JS SDK (npm @opencode-ai/sdk 1.18.33, the reference's) as a client."""

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
MISSING = (
    shutil.which("node") is None or not (HERE / "node_modules" / "@opencode-ai" / "sdk").is_dir()
)
# Outside CI a missing SDK skips; under CI it fails, as the browser tests do.
pytestmark = pytest.mark.skipif(
    MISSING and not os.environ.get("CI"),
    reason="node or the SDK is missing: `make test` installs the SDK with npm",
)


async def test_the_opencode_sdk_drives_a_partwire_session(settings: Settings) -> None:
    if MISSING:
        pytest.fail("CI needs node and the opencode SDK: `make sdk` installs it with npm")
    fast = replace(settings, demo_delay_ms=1)
    async with serve_in_background(fast) as url:
        process = await asyncio.create_subprocess_exec(
            "node", str(HERE / "sdk_client.mjs"),
            cwd=HERE,
            env={**os.environ, "PARTWIRE_URL": url},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["promptRole"] == "assistant"
    assert seen["promptParts"] == ["step-start", "reasoning", "text", "step-finish"]
    assert seen["deltas"] == "".join(f"w{i} " for i in range(40))
    assert seen["messageRoles"] == ["user", "assistant", "user", "assistant"]
    assert seen["lastText"] == seen["deltas"]
    assert seen["permission"] == "bash"
    assert seen["bashOutput"] == "sdk-approved"
    assert seen["abort"] is True and seen["abortError"] == "MessageAbortedError"
    assert seen["shareURL"].startswith(f"{url}/share/pwt_") and seen["shareStatus"] == 303
    assert seen["unshared"] == seen["sessionID"]
    assert seen["deleted"] is True and seen["getAfterDelete"] == 404
