"""Capacity benchmark: how many live sessions one server carries at a model's pace.

    python bench/capacity.py [--rate 100] [--tokens 200] [--limit-ms 50] [--stagger-ms 0]
                             [--watch event|session]

Three kinds of process on loopback: a mock OpenAI-compatible model that streams every
answer at ``--rate`` tokens/s (bench/_mock_paced.py), a fresh partwire server for each
step (bench/_server.py, the mock configured as its provider), and this client, which
follows GET /event (or, with ``--watch session``, opens each session's part-frame stream,
``GET /session/{id}/stream``, as many users each watching their own). Each step starts K
sessions at once (or ``--stagger-ms`` apart, as users arriving one after another while
the others stream), each streaming ``--tokens`` tokens, and measures every delta's
latency (from the processor taking it off the provider stream to this client reading it)
and the server's CPU time. K grows until the p99 latency passes ``--limit-ms``; the table
shows each step, and the last line the largest K that stayed under it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httptools
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from stream import _free_port, _wait_ready, aligned  # noqa: E402

STEPS = (1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 125, 150, 200)
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Step:
    sessions: int
    deltas: int
    p50_ms: float
    p99_ms: float
    cpu_ms_per_1k: float


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class _EventReader:
    """GET /event on a raw socket: httptools de-chunks it in C, lines are split a read at
    a time, and every delta of one read gets that read's arrival time. The client is one
    of three busy processes on the machine; a lean one measures the server, not itself."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.pending = b""
        self.lines: list[bytes] = []

    def on_body(self, body: bytes) -> None:
        lines = (self.pending + body).split(b"\n")
        self.pending = lines.pop()
        self.lines += lines


async def _prompt_all(
    http: httpx.AsyncClient, prompts: list[tuple[str, str]], stagger_s: float
) -> None:
    """Prompt each (server URL, session), at once or one every ``stagger_s``."""
    body = {"parts": [{"type": "text", "text": "stream please"}]}

    async def prompt(server: str, session: str, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        await http.post(f"{server}/session/{session}/prompt_async", json=body)

    await asyncio.gather(*(prompt(url, sid, i * stagger_s) for i, (url, sid) in enumerate(prompts)))


async def follow(
    port: int,
    prompts: list[tuple[str, str]],
    received: dict[str, int],
    stagger_s: float = 0.0,
) -> None:
    """Prompt each (server URL, session), at once or ``stagger_s`` apart, and read GET
    /event on ``port`` until every session has gone idle; note when each delta arrived."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    events = _EventReader()
    try:
        writer.write(b"GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        while not any(b'"server.connected"' in line for line in events.lines):
            events.parser.feed_data(await reader.read(65536))
        events.lines.clear()
        async with httpx.AsyncClient(timeout=120) as http:
            # at once (K users pressing enter together) or one every stagger_s, read meanwhile
            prompting = asyncio.ensure_future(_prompt_all(http, prompts, stagger_s))
            waiting = {sid for _, sid in prompts}
            while waiting:
                if prompting.done() and prompting.exception() is not None:
                    raise RuntimeError(f"a prompt failed: {prompting.exception()}")
                data = await reader.read(262144)
                if not data:
                    raise RuntimeError("the server closed GET /event")
                now = time.time_ns()
                events.parser.feed_data(data)
                for line in events.lines:
                    if b'"message.part.delta"' in line:
                        received[json.loads(line[5:])["properties"]["delta"]] = now
                    elif b'"session.idle"' in line:
                        waiting.discard(json.loads(line[5:])["properties"]["sessionID"])
                events.lines.clear()
            await prompting
    finally:
        writer.close()


async def _watch_one(url: str, session: str, received: dict[str, int], ready: asyncio.Event,
                     go: asyncio.Event) -> None:  # fmt: skip
    """GET /session/{id}/stream (part frames) on the session's own server: note when each
    delta arrived, until the session's assistant message completes."""
    host, port = url.rsplit("//", 1)[1].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    frames = _EventReader()
    try:
        request = f"GET /session/{session}/stream?parts=partwire HTTP/1.1\r\nHost: {host}\r\n\r\n"
        writer.write(request.encode())
        await writer.drain()
        while not any(line.startswith(b"event: reset") for line in frames.lines):
            data = await reader.read(65536)
            if not data:
                raise RuntimeError(f"the server closed the stream of {session}")
            frames.parser.feed_data(data)
        frames.lines.clear()
        ready.set()
        await go.wait()
        while True:
            data = await reader.read(65536)
            if not data:
                raise RuntimeError(f"the server closed the stream of {session}")
            now = time.time_ns()
            frames.parser.feed_data(data)
            for line in frames.lines:
                if line.startswith(b"data: ") and b'"part_delta"' in line:
                    delta = json.loads(line[6:]).get("delta")
                    if delta is not None:
                        received[delta] = now
                elif b'"message_complete"' in line and b'"role":"assistant"' in line:
                    return
            frames.lines.clear()
    finally:
        writer.close()


async def watch_sessions(
    prompts: list[tuple[str, str]], received: dict[str, int], stagger_s: float = 0.0
) -> None:
    """As ``follow``, but each session is watched by a client of its own, on the server it
    was prompted through (a sticky load balancer's users, each with a session open)."""
    go = asyncio.Event()
    readies = [asyncio.Event() for _ in prompts]
    watchers = [
        asyncio.create_task(_watch_one(url, sid, received, ready, go))
        for (url, sid), ready in zip(prompts, readies, strict=True)
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 60)
        go.set()
        async with httpx.AsyncClient(timeout=120) as http:
            await _prompt_all(http, prompts, stagger_s)
            await asyncio.wait_for(asyncio.gather(*watchers), 300)
    finally:
        for watcher in watchers:
            watcher.cancel()


@asynccontextmanager
async def paced_model(tokens: int, rate: float) -> AsyncIterator[int]:
    """bench/_mock_paced.py in its own process, answering ``tokens`` tokens at ``rate``
    tokens/s: its port, once it listens."""
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
        yield port
    finally:
        model.terminate()
        await model.wait()


@asynccontextmanager
async def serving(model_port: int, *extra: str) -> AsyncIterator[tuple[str, int]]:
    """A fresh bench/_server.py (``extra`` arguments added) with the mock model as its
    provider: its URL and pid, once it answers."""
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
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=url) as http:
                await _wait_ready(http)
            yield url, server.pid
        finally:
            server.terminate()
            await asyncio.wait_for(server.wait(), 10)


async def step(
    sessions: int, tokens: int, model_port: int, stagger_s: float = 0.0, watch: str = "event"
) -> Step:
    """One fresh server, ``sessions`` sessions streaming at once (or arriving staggered),
    followed on GET /event or (``watch="session"``) each on a stream of its own."""
    async with (
        serving(model_port) as (url, pid),
        httpx.AsyncClient(base_url=url, timeout=120) as http,
    ):
        port = int(url.rsplit(":", 1)[1])
        # one answer first, not measured: the provider SDK loads, connections open
        warm = (await http.post("/session", json={})).json()["id"]
        await follow(port, [(url, warm)], {})
        ids = [(await http.post("/session", json={})).json()["id"] for _ in range(sessions)]
        received: dict[str, int] = {}
        cpu_before = _cpu_s(pid)
        prompts = [(url, sid) for sid in ids]
        if watch == "session":
            await watch_sessions(prompts, received, stagger_s)
        else:
            await follow(port, prompts, received, stagger_s)
        cpu = _cpu_s(pid) - cpu_before
        emits = (await http.get("/bench/stats", params={"emits": "true"})).json()["emits"]
    expected = sessions * tokens
    if len(received) != expected:
        raise RuntimeError(f"expected {expected} deltas, the client read {len(received)}")
    latencies = sorted((received[d] - emits[d]) / 1e6 for d in received if d in emits)
    return Step(
        sessions=sessions,
        deltas=len(received),
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[max(0, int(len(latencies) * 0.99) - 1)],
        cpu_ms_per_1k=cpu * 1000 / len(received) * 1000,
    )


def table(steps: list[Step]) -> str:
    rows = [
        ("sessions", "deltas", "p50 ms", "p99 ms", "CPU ms/1k deltas"),
        *(
            (
                str(s.sessions),
                str(s.deltas),
                f"{s.p50_ms:.1f}",
                f"{s.p99_ms:.1f}",
                f"{s.cpu_ms_per_1k:.0f}",
            )
            for s in steps
        ),
    ]
    return aligned(rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100, help="tokens/s of each stream")
    parser.add_argument("--tokens", type=int, default=200, help="tokens of each answer")
    parser.add_argument("--limit-ms", type=float, default=50, help="the p99 latency bound")
    parser.add_argument("--max-sessions", type=int, default=STEPS[-1], help="stop after this K")
    parser.add_argument(
        "--stagger-ms", type=float, default=0, help="prompt the sessions this far apart"
    )
    parser.add_argument(
        "--watch",
        choices=["event", "session"],
        default="event",
        help="one client on GET /event, or a client per session on its part-frame stream",
    )
    args = parser.parse_args()
    steps: list[Step] = []
    async with paced_model(args.tokens, args.rate) as model_port:
        for sessions in (k for k in STEPS if k <= args.max_sessions):
            steps.append(
                await step(sessions, args.tokens, model_port, args.stagger_ms / 1000, args.watch)
            )
            if steps[-1].p99_ms > args.limit_ms:
                break
    print(
        f"partwire capacity — {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{args.rate:g} tokens/s a session, {args.tokens} tokens an answer, "
        + (f"prompted {args.stagger_ms:g} ms apart" if args.stagger_ms else "prompted at once")
        + (", a client per session" if args.watch == "session" else ", one client on /event")
    )
    print(table(steps))
    under = [s for s in steps if s.p99_ms <= args.limit_ms]
    best = max((s.sessions for s in under), default=0)
    cpu = next((s.cpu_ms_per_1k for s in under if s.sessions == best), float("nan"))
    capped = " (the last step tried: more may fit)" if len(under) == len(steps) else ""
    print(
        f"largest K with p99 <= {args.limit_ms:g} ms: {best} sessions "
        f"({cpu:.0f} ms CPU per 1k deltas there){capped}"
    )


if __name__ == "__main__":
    asyncio.run(main())
