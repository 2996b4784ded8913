"""Running a script against the built JS client (clients/js) in Node, as its users would."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parents[1] / "clients" / "js"


def require_js_client() -> None:
    if shutil.which("node") is None or not (JS / "dist" / "src" / "index.js").exists():
        pytest.skip("needs node and clients/js built (make js)")


async def run_js(name: str, code: str, *args: str) -> tuple[str, str]:
    """Run ``code`` as ``name`` inside the package (so ``@partwire/client`` resolves);
    its stdout and stderr, once it exited 0."""
    script = JS / "dist" / name
    script.write_text(code)
    node = await asyncio.create_subprocess_exec(
        "node", str(script), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(node.communicate(), 30)
    assert node.returncode == 0, err.decode()
    return out.decode(), err.decode()
