"""Runs the protocols' own npm clients (tests/protocol/node, installed by `make clients`)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).parent / "node"
MISSING = shutil.which("node") is None or not (NODE_DIR / "node_modules" / ".installed").exists()
# Outside CI a missing client skips; under CI it fails, as the browser tests do.
needs_node = pytest.mark.skipif(
    MISSING and not os.environ.get("CI"),
    reason="node or the protocol clients are missing: `make clients` installs them with npm",
)


async def run_node(script: str, *args: str, limit_s: float = 120) -> Any:
    """Run ``node script args`` in the clients' folder; its stdout parsed as JSON."""
    if MISSING:
        pytest.fail("CI needs node and the protocol clients: `make clients` installs them")
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / script),
        *args,
        cwd=NODE_DIR,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), limit_s)
    assert process.returncode == 0, err.decode()[-4000:]
    return json.loads(out.decode())
