"""The processes a benchmark runs against: the paced mock model (bench/_mock_paced.py)
and a fresh bench/_server.py with it as its provider, each in a process of its own, and
what a bench reads of them (a process's CPU, when the model wrote each word). Shared by
bench/capacity.py, floor.py, pair.py and scale.py."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from _watchers import Starter, follow, prompt_all
from stream import _free_port, _wait_ready

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Mock:
    """The paced model process: its port and pid (0 when there is none: ``--via ingest``)."""

    port: int
    pid: int


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy so far, every process and the kernel
    (user, nice, system, irq and softirq of every core; not idle, I/O wait or steal)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[1:8])
    return (user + nice + system + irq + softirq) / TICKS


@asynccontextmanager
async def paced_model(tokens: int, rate: float) -> AsyncIterator[int]:
    """bench/_mock_paced.py in its own process, answering ``tokens`` tokens at ``rate``
    tokens/s: its port, once it listens."""
    async with paced_model_process(tokens, rate) as mock:
        yield mock.port


@asynccontextmanager
async def paced_model_process(tokens: int, rate: float) -> AsyncIterator[Mock]:
    """As ``paced_model``: the port and the pid."""
    port = _free_port()
    model = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "_mock_paced.py"),
        "--port", str(port), "--tokens", str(tokens), "--rate", str(rate),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )  # fmt: skip
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await _wait_ready(http, "/")
        yield Mock(port, model.pid)
    finally:
        model.terminate()
        await model.wait()


@asynccontextmanager
async def serving(
    model_port: int, *extra: str, src: Path = ROOT / "src"
) -> AsyncIterator[tuple[str, int]]:
    """A fresh bench/_server.py (``extra`` arguments added) with the mock model as its
    provider, on the partwire in ``src`` (this tree's by default): its URL and pid, once
    it answers."""
    port = _free_port()
    config = {
        "model": "mock/paced",
        "provider": {"mock": {"options": {"baseURL": f"http://127.0.0.1:{model_port}/v1"}}},
    }
    with (
        tempfile.TemporaryDirectory(prefix="partwire-capacity-") as data,
        tempfile.TemporaryDirectory(prefix="partwire-capacity-project-") as project,
    ):
        await asyncio.to_thread(Path(project, "partwire.json").write_text, json.dumps(config))
        server = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "bench" / "_server.py"),
            "--port", str(port), "--data", data, "--project", project, *extra,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(src)},
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=url) as http:
                await _wait_ready(http)
            yield url, server.pid
        finally:
            server.terminate()
            await asyncio.wait_for(server.wait(), 10)


async def warmed_sessions(
    http: httpx.AsyncClient, url: str, sessions: int, start: Starter = prompt_all
) -> list[str]:
    """One answer first, not measured (the provider SDK loads, connections open), then
    ``sessions`` new sessions on the server at ``url``: their ids."""
    warm = (await http.post("/session", json={})).json()["id"]
    await follow(int(url.rsplit(":", 1)[1]), [(url, warm)], {}, start=start)
    return [(await http.post("/session", json={})).json()["id"] for _ in range(sessions)]


async def model_sent(http: httpx.AsyncClient, model_port: int) -> dict[str, int]:
    """When the mock model wrote each word since the last call (wall-clock ns, by word)."""
    answer = await http.get(f"http://127.0.0.1:{model_port}/sent")
    answer.raise_for_status()
    sent: dict[str, int] = answer.json()
    return sent
