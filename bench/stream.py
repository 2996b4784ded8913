"""Streaming benchmark: the demo model, a real server process, a real SSE client.

    python bench/stream.py --words 1000 --words 10000
    python bench/stream.py --words 1000 --delay-ms 5     # paced, as a real model streams

For each size: a fresh server process and data dir, one session, the prompt
``long N``; the client reads GET /event until session.idle. Prints a table:

- deltas/s end to end (prompt sent → last delta read by the client)
- p50 / p99 latency from the processor taking a delta off the model stream to the
  SSE client parsing it (wall clock; both processes on this machine)
- bytes SQLite wrote (write syscalls of the writer's thread and of the loop's, which
  commits while the writer is idle, less the bytes of the stream the client read) per
  delta and per byte of text streamed. At delay 0 group commit batches many deltas into one
  commit; paced (``--delay-ms``), each delta is its own commit, which is what a live
  model costs
- peak RSS of the server process
- the server process's CPU time (every thread) per 1,000 deltas, from the prompt to idle
- the first delta's wait: from the client sending the prompt to its reading the first
  delta (the prompt stored, the loop started, the model's first token, its commit)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATE = 5_000
TARGET_P99_MS = 50.0
TARGET_GROWTH = 1.5


@dataclass
class Result:
    words: int
    rate: float
    p50_ms: float
    p99_ms: float
    bytes_per_byte: float
    kb_per_delta: float
    peak_rss_mb: float
    delay_ms: float = 0
    cpu_ms_per_1k: float = 0
    first_ms: float = 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_ready(http: httpx.AsyncClient, path: str = "/session") -> None:
    """Until ``path`` answers at all (any status): the process listens."""
    for _ in range(300):
        try:
            await http.get(path)
            return
        except httpx.TransportError:
            await asyncio.sleep(0.05)
    raise RuntimeError("the server did not start")


@dataclass
class Streamed:
    received: dict[str, int]  # when each delta was read (wall clock, ns)
    elapsed_s: float  # the prompt sent → the last delta read
    first_s: float  # the prompt sent → the first delta read
    body_bytes: int  # of the stream's body


async def _stream(http: httpx.AsyncClient, prompt: str) -> Streamed:
    """Prompt and read SSE until idle."""
    received: dict[str, int] = {}
    first = 0.0
    session = (await http.post("/session", json={})).json()["id"]
    async with http.stream("GET", "/event", timeout=None) as response:
        lines = response.aiter_lines()
        async for line in lines:
            if '"server.connected"' in line:
                break
        started = time.perf_counter()
        body = {"parts": [{"type": "text", "text": prompt}]}
        await http.post(f"/session/{session}/prompt_async", json=body)
        async for line in lines:
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if event["type"] == "message.part.delta":
                received[event["properties"]["delta"]] = time.time_ns()
                last = time.perf_counter()
                first = first or last
            elif event["type"] == "session.idle" and event["properties"]["sessionID"] == session:
                break
        body_bytes = response.num_bytes_downloaded
    return Streamed(received, last - started, first - started, body_bytes)


def _stall(port: int) -> socket.socket:
    """An SSE client that connects, then never reads (a tiny receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    return sock


async def measure(
    words: int,
    *,
    prompt: str | None = None,
    project: Path | None = None,
    stalled: int = 0,
    delay_ms: float = 0,
) -> Result:
    """One fresh server (and data dir); ``prompt`` defaults to the demo's ``long N``."""
    port = _free_port()
    with (
        tempfile.TemporaryDirectory(prefix="partwire-bench-") as data,
        tempfile.TemporaryDirectory(prefix="partwire-bench-project-") as empty,
    ):
        # an empty project that is not a git repository: no snapshots in the measurement
        server = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "bench" / "_server.py"),
            "--port",
            str(port),
            "--data",
            data,
            "--project",
            str(project or empty),
            "--delay-ms",
            str(delay_ms),
            "--time-grows",
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
                await _wait_ready(http)
                stuck = [_stall(port) for _ in range(stalled)]
                before = (await http.get("/bench/stats")).json()
                streamed = await _stream(http, prompt or f"long {words}")
                after = (await http.get("/bench/stats", params={"emits": "true"})).json()
                for sock in stuck:
                    sock.close()
        finally:
            server.terminate()
            await asyncio.wait_for(server.wait(), 10)
    emits: dict[str, int] = after["emits"]
    received = streamed.received
    latencies = sorted((received[d] - emits[d]) / 1e6 for d in received if d in emits)
    text_bytes = sum(len(d.encode()) for d in received)
    # the database's bytes
    written = after["writer_wchar"] - before["writer_wchar"] - streamed.body_bytes
    if len(received) != words:
        raise RuntimeError(f"expected {words} deltas, the client read {len(received)}")
    return Result(
        words=words,
        rate=words / streamed.elapsed_s,
        p50_ms=statistics.median(latencies),
        p99_ms=latencies[int(len(latencies) * 0.99) - 1],
        bytes_per_byte=written / text_bytes,
        kb_per_delta=written / words / 1024,
        peak_rss_mb=after["peak_rss_kb"] / 1024,
        delay_ms=delay_ms,
        cpu_ms_per_1k=(after["cpu_s"] - before["cpu_s"]) * 1000 / words * 1000,
        first_ms=streamed.first_s * 1000,
    )


def aligned(rows: list[tuple[str, ...]]) -> str:
    """Rows as right-aligned columns, a rule under the first (the header)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def table(results: list[Result], first: str = "long N") -> str:
    rows = [
        (
            first,
            "delay ms",
            "deltas/s",
            "p50 ms",
            "p99 ms",
            "KB/delta",
            "SQLite B/B",
            "peak RSS MB",
            "CPU ms/1k",
            "first delta ms",
        ),
        *(
            (
                f"{r.words}",
                f"{r.delay_ms:g}",
                f"{r.rate:,.0f}",
                f"{r.p50_ms:.2f}",
                f"{r.p99_ms:.2f}",
                f"{r.kb_per_delta:.2f}",
                f"{r.bytes_per_byte:.1f}",
                f"{r.peak_rss_mb:.1f}",
                f"{r.cpu_ms_per_1k:.1f}",
                f"{r.first_ms:.1f}",
            )
            for r in results
        ),
    ]
    return aligned(rows)


def _verdicts(results: list[Result]) -> list[str]:
    out = []
    for r in results:
        if r.delay_ms:
            continue  # the rate targets are for the unpaced burst
        out.append(
            f"long {r.words}: rate {'ok' if r.rate >= TARGET_RATE else 'BELOW'} "
            f"(target ≥ {TARGET_RATE:,}), p99 {'ok' if r.p99_ms < TARGET_P99_MS else 'ABOVE'} "
            f"(target < {TARGET_P99_MS:.0f} ms)"
        )
    by_words = {r.words: r for r in results if not r.delay_ms}
    if 1000 in by_words and 10000 in by_words:
        growth = by_words[10000].bytes_per_byte / by_words[1000].bytes_per_byte
        verdict = "ok" if growth <= TARGET_GROWTH else "ABOVE"
        out.append(
            f"bytes/byte at 10000 ÷ at 1000 = {growth:.2f} {verdict} (target ≤ {TARGET_GROWTH})"
        )
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, action="append", help="N for `long N` (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the median is shown")
    parser.add_argument(
        "--stalled", type=int, default=0, help="SSE clients that connect and never read"
    )
    parser.add_argument(
        "--delay-ms", type=float, default=0, help="the demo model's pause between deltas"
    )
    args = parser.parse_args()
    results = []
    for words in args.words or [1000, 10000]:
        runs = [
            await measure(words, stalled=args.stalled, delay_ms=args.delay_ms)
            for _ in range(args.repeat)
        ]
        runs.sort(key=lambda r: r.rate)
        results.append(runs[len(runs) // 2])
    stalled = f", {args.stalled} stalled clients" if args.stalled else ""
    print(
        f"partwire streaming benchmark — {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}{stalled}"
    )
    print(table(results))
    for line in _verdicts(results):
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
