"""The partwire server, instrumented for bench/stream.py (run as a separate process).

It is the real app with additions that exist only here: with ``--time-grows`` the builder
records when each delta of the model's stream reaches it (wall clock, comparable across
processes on one machine; a plain function around ``grow``, the processor's one call per
delta; bench/stream.py's clock, whose demo model runs in the server; the other benches time
a delta from their mock model's write and run the server without it), a task measures the event
loop's lag (how late a 1 ms timer fires; started by the first ``?reset_lag=true``), and
GET /bench/stats reports those times, the lag since the last ``?reset_lag=true``, the
SQLite writer thread's write-syscall byte count, each thread's CPU and the process's peak
RSS. With ``--profile FILE`` the loop's thread runs under cProfile from SIGUSR1 to SIGUSR2
(bench/per_delta.py sends them around a capacity step's streaming window), and the profile
is written to FILE when it stops.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from partwire.builder import StreamingMessageBuilder, StreamKind
from partwire.config import load_settings
from partwire.server.app import build_route_tables, create_app
from partwire.server.runner import PartwireServer, freeze_after_warm_up

EMITS: dict[str, int] = {}
LAGS_MS: list[float] = []
LAG_TICK_S = 0.001
_original_grow = StreamingMessageBuilder.grow


def _timed_grow(self: StreamingMessageBuilder, kind: StreamKind, stream_id: str, text: str) -> int:
    EMITS[text] = time.time_ns()
    return _original_grow(self, kind, stream_id, text)


def _writer_wchar() -> int:
    """Bytes written (write syscalls) by the threads that commit: the writer's and, since
    SQLite commits also run on the loop's thread while the writer is idle, the loop's. The
    loop's thread also writes the HTTP responses: bench/stream.py takes off the bytes its
    client read."""
    total = 0
    for thread in threading.enumerate():
        if thread.name in ("partwire-writer", "MainThread") and thread.native_id is not None:
            io = Path(f"/proc/self/task/{thread.native_id}/io").read_text()
            total += int(
                next(line for line in io.splitlines() if line.startswith("wchar:")).split()[1]
            )
    return total


def _thread_cpu_s() -> dict[str, float]:
    """CPU seconds of each named thread of the server so far (the loop's is MainThread)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        stat = Path(f"/proc/self/task/{thread.native_id}/stat")
        if thread.native_id is None or not stat.exists():
            continue
        fields = stat.read_text().rsplit(")", 1)[1].split()
        pooled = thread.name.startswith(("uvloop", "asyncio", "ThreadPool"))
        name = "workers" if pooled else thread.name
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return out


async def _measure_lag() -> None:
    """How late each 1 ms sleep wakes: the loop's lag (a commit on its thread adds to it).
    uvloop keeps timers in whole milliseconds, so an idle loop shows up to about 1 ms."""
    while True:
        due = time.perf_counter() + LAG_TICK_S
        await asyncio.sleep(LAG_TICK_S)
        LAGS_MS.append((time.perf_counter() - due) * 1000)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)] if ordered else 0.0


def _peak_rss_kb() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def build(
    data_dir: Path,
    project: Path,
    delay_ms: float = 0,
    database_url: str | None = None,
    redis_url: str | None = None,
    time_grows: bool = False,
) -> FastAPI:
    if time_grows:
        StreamingMessageBuilder.grow = _timed_grow  # type: ignore[method-assign]
    env = {"PARTWIRE_DEMO_DELAY_MS": str(delay_ms)}
    if database_url:
        env["PARTWIRE_DATABASE_URL"] = database_url
    if redis_url:
        env["PARTWIRE_REDIS_URL"] = redis_url
    settings = load_settings(project_dir=project, data_dir=data_dir, env=env)
    app = create_app(settings)

    probes: list[asyncio.Task[None]] = []

    @app.get("/bench/stats")
    async def stats(emits: bool = False, reset_lag: bool = False) -> dict[str, Any]:
        lag_p99_ms = _p99(LAGS_MS)
        if reset_lag:  # the first reset starts the probe
            LAGS_MS.clear()
            if not probes:
                probes.append(asyncio.create_task(_measure_lag()))
        return {
            "lag_p99_ms": lag_p99_ms,
            "writer_wchar": _writer_wchar(),
            "peak_rss_kb": _peak_rss_kb(),
            "cpu_s": time.process_time(),  # every thread of the server process
            "thread_cpu_s": _thread_cpu_s(),
            "emits": EMITS if emits else {},
        }

    return app


async def _serve(app: FastAPI, port: int) -> None:
    """As ``partwire serve`` runs: its uvicorn server (``PartwireServer``), and once the
    port is bound the warm-up (``Runtime.warm_up``: what the first prompt would otherwise
    wait for), then the heap that start-up made is frozen out of the collector's scans."""
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = PartwireServer(config, app.state.runtime)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            return serving.result()
        await asyncio.sleep(0.01)
    app.state.runtime.warm_up()
    freezing = asyncio.create_task(freeze_after_warm_up(app.state.runtime))
    await serving
    freezing.cancel()


def _profile_between_signals(path: Path) -> None:
    """cProfile of the loop's thread from SIGUSR1 to SIGUSR2 (the handlers run on it),
    written to ``path`` at SIGUSR2 (uvicorn ends a server it stopped on SIGTERM by the
    signal itself: nothing runs at exit)."""
    profile = cProfile.Profile()

    def stop(*_: object) -> None:
        profile.disable()
        profile.dump_stats(str(path))

    signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
    signal.signal(signal.SIGUSR2, stop)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--project", type=Path, default=Path.cwd())
    parser.add_argument("--delay-ms", type=float, default=0, help="demo model pacing")
    parser.add_argument("--database-url", help="a Postgres database (bench/scale.py)")
    parser.add_argument("--redis-url", help="events between servers through Redis")
    parser.add_argument(
        "--time-grows", action="store_true", help="record each delta's arrival (bench/stream.py)"
    )
    parser.add_argument(
        "--profile", type=Path, help="cProfile from SIGUSR1 to SIGUSR2 (bench/per_delta.py)"
    )
    args = parser.parse_args()
    if args.profile is not None:
        _profile_between_signals(args.profile)
    app = build(
        args.data, args.project, args.delay_ms, args.database_url, args.redis_url, args.time_grows
    )
    build_route_tables(app)  # as `partwire serve` does, before it serves
    try:
        import uvloop
    except ImportError:
        asyncio.run(_serve(app, args.port))
    else:
        uvloop.run(_serve(app, args.port))


if __name__ == "__main__":
    main()
