"""The benchmark script still runs end to end (figures are not asserted: see README)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def test_stream_bench_prints_its_table() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "stream.py"), "--words", "200",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[1].split() == [
        "long",
        "N",
        "deltas/s",
        "p50",
        "ms",
        "p99",
        "ms",
        "SQLite",
        "B/B",
        "peak",
        "RSS",
        "MB",
    ]
    assert lines[3].split()[0] == "200"


async def test_provider_bench_prints_its_table() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "provider.py"), "--words", "200",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[1].split()[:2] == ["tokens", "deltas/s"]
    assert lines[3].split()[0] == "200"
